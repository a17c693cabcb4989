//! 10,000 targets over 100 jobs with an instant fetch and 4 workers on the in-memory store,
//! against a bare `tokio::spawn` per target: the runner's overhead per target.
//!
//! Run: `cargo bench -p lockgate-batch --bench runner -- --warm-up-time 1 --measurement-time 3`.
//! Both peers report time per iteration of 10,000 targets (and targets/s); the ratio
//! `spawn time / runner time` is the runner's speed relative to the bare baseline.
//!
//! The `store` group (feature `sqlite`) stores 1,000 targets over 10 jobs the same way on the
//! in-memory store, on SQLite in WAL mode with `synchronous = NORMAL` (the default), and with
//! `synchronous = FULL` (an fsync per commit: this machine's fsync-bound ceiling). Each SQLite
//! iteration starts from a new, empty file.
//!
//! With the feature `metrics`, the runner group also runs the same batch with
//! `MetricsHooks` (over a Prometheus recorder) wrapping the same hooks: the cost of the
//! metrics per target. `cargo bench -p lockgate-batch --bench runner --features metrics --
//! batch_runner_memory_store`.
//!
//! The `current_thread` group also runs the batch under a `tracing` subscriber listening at
//! INFO (`…_traced`), so each fetch's `batch.fetch` span is built, entered and left: the
//! spans' cost per target, against the same run without a listener.
//!
//! The `multi_thread_2_loaded` group runs the multi-thread case again beside one busy-looping
//! thread per core: the workers and the runtime's threads wake each other, and a design that
//! wins only on an idle machine shows it there.
//!
//! Subjects named `batch_…` are ours; `cargo xtask bench` takes the first of them in
//! alphabetical order as the reference of its ratios (the runner, the memory store).

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, Throughput, criterion_main};
use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{MemoryStore, Store};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};
use tokio::sync::Notify;

#[path = "support/busy_loops.rs"]
mod busy_loops;
use busy_loops::BusyLoops;

const JOBS: usize = 100;
const TARGETS_PER_JOB: usize = 100;

/// Counts ended jobs and wakes the bench when all have.
struct Ended {
    jobs: AtomicUsize,
    expected: usize,
    all: Notify,
}

impl Hooks for Ended {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let _status = event.status;
        if self.jobs.fetch_add(1, Ordering::AcqRel) + 1 == self.expected {
            self.all.notify_waiters();
        }
    }
}

/// The fetch both peers run: instant.
async fn fetch_one(n: u32) -> Result<u32, FetchError> {
    Ok(n.wrapping_mul(2))
}

/// Runs one job of `targets` per caller on `store` with 4 workers, until every job ended.
async fn run_batch<S: Store>(store: S, callers: &[Caller], targets: &[u32]) {
    run_batch_with(store, callers, targets, |ended| ended).await;
}

/// `run_batch`, with the hooks `wrap` makes of the bench's own.
async fn run_batch_with<S: Store>(
    store: S,
    callers: &[Caller],
    targets: &[u32],
    wrap: impl FnOnce(Arc<dyn Hooks>) -> Arc<dyn Hooks>,
) {
    let ended = Arc::new(Ended {
        jobs: AtomicUsize::new(0),
        expected: callers.len(),
        all: Notify::new(),
    });
    let config = Config::default()
        .workers(4)
        .max_live_jobs(callers.len())
        .hooks(wrap(ended.clone()));
    let fetch = |_ctx: FetchContext, n: u32| fetch_one(n);
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let mut all = pin!(ended.all.notified());
    all.as_mut().enable();
    for caller in callers {
        runner.submit(caller, targets).await.unwrap();
    }
    if ended.jobs.load(Ordering::Acquire) < ended.expected {
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
    let cases = [
        ("multi_thread_2", &multi, false),
        ("current_thread", &single, false),
        ("multi_thread_2_loaded", &multi, true),
    ];
    for (name, rt, loaded) in cases {
        let _load = BusyLoops::start(if loaded { busy_loops::cores() } else { 0 });
        group_of(c, name, rt, &callers, &targets);
    }
    #[cfg(feature = "sqlite")]
    sqlite::bench(c, &multi);
}

/// The runner against a spawn per target, on `rt`.
fn group_of(
    c: &mut Criterion,
    name: &str,
    rt: &tokio::runtime::Runtime,
    callers: &[Caller],
    targets: &[u32],
) {
    {
        let mut group = c.benchmark_group(format!("10k_targets_100_jobs/{name}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements((JOBS * TARGETS_PER_JOB) as u64));
        group.bench_function("batch_runner_memory_store_4_workers", |b| {
            b.iter(|| rt.block_on(run_batch(MemoryStore::new(), callers, targets)));
        });
        #[cfg(feature = "metrics")]
        {
            use lockgate_batch::hooks::MetricsHooks;
            let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            group.bench_function("batch_runner_memory_store_4_workers_metrics", |b| {
                b.iter(|| {
                    let wrap = |ended: Arc<dyn Hooks>| -> Arc<dyn Hooks> {
                        let hooks = metrics::with_local_recorder(&recorder, || {
                            MetricsHooks::with_labels(&[("runner", "bench")]).with_inner(ended)
                        });
                        Arc::new(hooks)
                    };
                    rt.block_on(run_batch_with(MemoryStore::new(), callers, targets, wrap));
                    // What a scrape does first: fold the histogram samples recorded since the
                    // last one (they pile up otherwise).
                    handle.run_upkeep();
                });
            });
        }
        if name == "current_thread" {
            // The same run with a subscriber that listens at INFO, so every `batch.fetch` span
            // is built, entered and left: the spans' cost per target. (The default subscriber
            // is a thread's, and this runtime runs every task on the bench's thread.)
            group.bench_function("batch_runner_memory_store_4_workers_traced", |b| {
                b.iter(|| {
                    let subscriber = tracing_subscriber::fmt()
                        .with_writer(std::io::sink)
                        .with_max_level(tracing::Level::INFO)
                        .finish();
                    tracing::subscriber::with_default(subscriber, || {
                        rt.block_on(run_batch(MemoryStore::new(), callers, targets));
                    });
                });
            });
        }
        group.bench_function("tokio_spawn_per_target", |b| {
            b.iter(|| rt.block_on(spawn_each(JOBS * TARGETS_PER_JOB)));
        });
        group.finish();
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::path::PathBuf;

    use criterion::{BatchSize, Criterion, Throughput};
    use lockgate_batch::Caller;
    use lockgate_batch::store::MemoryStore;
    use lockgate_batch::store::{SqliteStore, Synchronous};
    use tokio::runtime::Runtime;

    use super::run_batch;

    const JOBS: usize = 10;
    const TARGETS_PER_JOB: u32 = 100;

    /// A new database file per iteration, removed with the folder at the end.
    struct Files {
        dir: PathBuf,
        next: usize,
    }

    impl Files {
        fn new() -> Self {
            let dir = std::env::temp_dir().join(format!("batch-bench-{}", std::process::id()));
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

    pub(super) fn bench(c: &mut Criterion, rt: &Runtime) {
        let callers: Vec<Caller> = (0..JOBS).map(|i| Caller::new(format!("s{i}"))).collect();
        let targets: Vec<u32> = (0..TARGETS_PER_JOB).collect();
        let mut files = Files::new();
        let mut group = c.benchmark_group("store/1k_targets_10_jobs");
        group.sample_size(10);
        group.throughput(Throughput::Elements(
            JOBS as u64 * u64::from(TARGETS_PER_JOB),
        ));
        group.bench_function("batch_memory", |b| {
            b.iter(|| rt.block_on(run_batch(MemoryStore::new(), &callers, &targets)));
        });
        for (name, mode) in [
            ("batch_sqlite_wal_normal", Synchronous::Normal),
            ("batch_sqlite_wal_full_fsync", Synchronous::Full),
        ] {
            group.bench_function(name, |b| {
                b.iter_batched(
                    || files.open(mode),
                    |store| rt.block_on(run_batch(store, &callers, &targets)),
                    BatchSize::PerIteration,
                );
            });
        }
        group.finish();
    }
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
