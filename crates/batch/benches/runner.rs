//! 10,000 targets over 100 jobs with an instant fetch and 4 workers on the in-memory store,
//! against a bare `tokio::spawn` per target: the runner's overhead per target.
//!
//! Run: `cargo bench -p batch --bench runner -- --warm-up-time 1 --measurement-time 3`.
//! Both peers report time per iteration of 10,000 targets (and targets/s); the ratio
//! `spawn time / runner time` is the runner's speed relative to the bare baseline.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use batch::{Caller, Config, FetchError, Hooks, JobStatus, MemoryStore, Runner};
use criterion::{Criterion, Throughput, criterion_main};
use tokio::sync::Notify;

const JOBS: usize = 100;
const TARGETS_PER_JOB: usize = 100;

/// Counts ended jobs and wakes the bench when all have.
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

/// The fetch both peers run: instant.
async fn fetch_one(n: u32) -> Result<u32, FetchError> {
    Ok(n.wrapping_mul(2))
}

async fn run_batch(callers: &[Caller], targets: &[u32]) {
    let ended = Arc::new(Ended::default());
    let config = Config::default()
        .workers(4)
        .max_live_jobs(JOBS)
        .hooks(ended.clone());
    let fetch = |_cancel, _caller: &Caller, n: &u32| fetch_one(*n);
    let runner = Runner::new(config, MemoryStore::new(), fetch)
        .await
        .unwrap();
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

async fn spawn_each(total: usize) {
    let handles: Vec<_> = (0..total as u32)
        .map(|n| {
            tokio::spawn(async move {
                let output = fetch_one(n).await.unwrap();
                serde_json::to_string(&output).unwrap()
            })
        })
        .collect();
    for handle in handles {
        std::hint::black_box(handle.await.unwrap());
    }
}

fn bench(c: &mut Criterion) {
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    // One thread: no cross-thread wake-ups, so the ratio shows the runner's own work.
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let callers: Vec<Caller> = (0..JOBS).map(|i| Caller::new(format!("c{i}"))).collect();
    let targets: Vec<u32> = (0..TARGETS_PER_JOB as u32).collect();
    for (name, rt) in [("multi_thread_2", &multi), ("current_thread", &single)] {
        let mut group = c.benchmark_group(format!("10k_targets_100_jobs/{name}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements((JOBS * TARGETS_PER_JOB) as u64));
        group.bench_function("runner_memory_store_4_workers", |b| {
            b.iter(|| rt.block_on(run_batch(&callers, &targets)));
        });
        group.bench_function("tokio_spawn_per_target", |b| {
            b.iter(|| rt.block_on(spawn_each(JOBS * TARGETS_PER_JOB)));
        });
        group.finish();
    }
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
