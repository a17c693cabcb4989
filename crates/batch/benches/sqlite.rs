//! Targets stored per second: the SQLite store (WAL, `synchronous = NORMAL`) against the
//! in-memory store in the same run, and SQLite with `synchronous = FULL` (one fsync per
//! stored target) as the fsync-bound ceiling of this machine.
//!
//! Run: `cargo bench -p batch --bench sqlite -- --warm-up-time 1 --measurement-time 5`.
//! Each iteration runs 10 jobs of `TARGETS_PER_JOB` targets with an instant fetch and 4
//! workers to the end; criterion reports targets/s.

use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use batch::store::{SqliteStore, Synchronous};
use batch::{Caller, Config, FetchError, Hooks, JobStatus, MemoryStore, Runner, Store};
use criterion::{Criterion, Throughput, criterion_main};
use tokio::sync::Notify;

const JOBS: usize = 10;
const TARGETS_PER_JOB: usize = 100;

#[derive(Default)]
struct Ended {
    jobs: AtomicUsize,
    all: Notify,
}

impl Hooks for Ended {
    fn job(&self, _status: JobStatus) {
        if self.jobs.fetch_add(1, Ordering::AcqRel) + 1 == JOBS {
            self.all.notify_waiters();
        }
    }
}

async fn run_batch<S: Store>(store: S, callers: &[Caller], targets: &[u32]) {
    let ended = Arc::new(Ended::default());
    let config = Config::default()
        .workers(4)
        .max_live_jobs(JOBS)
        .hooks(ended.clone());
    let fetch = |_cancel, _caller: &Caller, n: &u32| {
        let n = *n;
        async move { Ok::<u32, FetchError>(n.wrapping_mul(2)) }
    };
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let mut all = pin!(ended.all.notified());
    all.as_mut().enable();
    for caller in callers {
        runner.submit(caller, targets).await.unwrap();
    }
    if ended.jobs.load(Ordering::Acquire) < JOBS {
        all.await;
    }
    runner.close().await;
}

/// A new database file per iteration, so every run starts from the same empty store.
struct Files {
    dir: PathBuf,
    next: usize,
}

impl Files {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("batch-bench-sqlite-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self { dir, next: 0 }
    }

    fn open(&mut self, mode: Synchronous) -> SqliteStore {
        self.next += 1;
        let path = self.dir.join(format!("{}.db", self.next));
        SqliteStore::options().synchronous(mode).open(path).unwrap()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let callers: Vec<Caller> = (0..JOBS).map(|i| Caller::new(format!("c{i}"))).collect();
    let targets: Vec<u32> = (0..TARGETS_PER_JOB as u32).collect();
    let mut files = Files::new();

    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements((JOBS * TARGETS_PER_JOB) as u64));
    group.sample_size(10);
    group.bench_function("memory", |b| {
        b.iter(|| rt.block_on(run_batch(MemoryStore::new(), &callers, &targets)));
    });
    group.bench_function("sqlite_wal_normal", |b| {
        b.iter_batched(
            || files.open(Synchronous::Normal),
            |store| rt.block_on(run_batch(store, &callers, &targets)),
            criterion::BatchSize::PerIteration,
        );
    });
    group.bench_function("sqlite_wal_full_fsync", |b| {
        b.iter_batched(
            || files.open(Synchronous::Full),
            |store| rt.block_on(run_batch(store, &callers, &targets)),
            criterion::BatchSize::PerIteration,
        );
    });
    group.finish();
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
