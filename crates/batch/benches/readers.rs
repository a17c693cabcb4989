//! A SQLite store's writer beside a reader: 1,000 instant targets over 10 jobs and 4 workers,
//! stored alone, and stored while a client polls the `status` of a job of 100,000 targets
//! every 5 ms (each answer is every target of that job, a URL of about 70 bytes each).
//!
//! Run: `cargo bench -p lockgate-batch --bench readers --features sqlite`.
//!
//! The reference is `batch_sqlite_alone` (first in alphabetical order, as `cargo xtask bench`
//! takes it): the ratio of `batch_sqlite_beside_a_reader` to it is what the reader costs the
//! writer. Reads run on their own connection beside the writer's (`store/sqlite/reader.rs`);
//! on one connection, every poll held the stores behind it for the whole read.
//!
//! The polled job is submitted once per subject and cancelled, so it stays whole and no
//! worker fetches it; each iteration runs a new runner over the same file (`Arc<SqliteStore>`),
//! with the poller started after the runner and stopped once every job ended. The runtime has
//! as many threads as the machine has cores.
//!
//! The `sqlite_writer_loaded` group runs both subjects again beside one busy-looping thread
//! per core: on a busy machine the reader's thread competes with the writer's for the CPU,
//! not only for the database.

use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_main};
#[path = "support/busy_loops.rs"]
mod busy_loops;
use busy_loops::BusyLoops;
use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{CallerStore, CancelOutcome, NewJob, SqliteStore, Timestamp};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobId, Runner};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

const JOBS: usize = 10;
const TARGETS_PER_JOB: u32 = 100;
const POLLED_TARGETS: u32 = 100_000;
const POLL_EVERY: Duration = Duration::from_millis(5);

/// Counts ended jobs and wakes the bench when all have.
struct Ended {
    jobs: AtomicUsize,
    all: Notify,
}

impl Hooks for Ended {
    fn job(&self, _event: &lockgate_batch::hooks::JobEvent) {
        if self.jobs.fetch_add(1, Ordering::AcqRel) + 1 == JOBS {
            self.all.notify_waiters();
        }
    }
}

/// The polled job: who owns it, and its id.
struct Polled {
    caller: Caller,
    id: JobId,
}

/// One iteration: a runner over `store` stores every bench job's targets, with a poller of
/// `polled` beside it if there is one.
async fn run(
    store: Arc<SqliteStore>,
    callers: &[Caller],
    targets: &[u32],
    polled: Option<&Arc<Polled>>,
) {
    let ended = Arc::new(Ended {
        jobs: AtomicUsize::new(0),
        all: Notify::new(),
    });
    let config = Config::default()
        .workers(4)
        .max_live_jobs(JOBS + 1)
        .hooks(ended.clone());
    let fetch = |_ctx: FetchContext, n: u32| async move { Ok::<u32, FetchError>(n) };
    let runner = Arc::new(Runner::new(config, store, fetch).await.unwrap());
    let poller = polled.map(|polled| {
        let (runner, polled) = (Arc::clone(&runner), Arc::clone(polled));
        tokio::spawn(async move {
            loop {
                let job = runner.status(&polled.caller, polled.id).await.unwrap();
                std::hint::black_box(job);
                tokio::time::sleep(POLL_EVERY).await;
            }
        })
    });
    let mut all = pin!(ended.all.notified());
    all.as_mut().enable();
    for caller in callers {
        runner.submit(caller, targets).await.unwrap();
    }
    if ended.jobs.load(Ordering::Acquire) < JOBS {
        all.await;
    }
    if let Some(poller) = poller {
        poller.abort();
        let _ = poller.await;
    }
    runner.close().await;
}

/// A database file of its own, with the polled job in it: submitted and cancelled through
/// the store's own calls, so that no worker ever fetches it.
async fn open(dir: &std::path::Path, name: &str) -> (Arc<SqliteStore>, Arc<Polled>) {
    let store = Arc::new(SqliteStore::open(dir.join(format!("{name}.db"))).unwrap());
    let caller = Caller::new("poller");
    // A target as a service would name one: a URL of about 70 bytes.
    let targets: Vec<String> = (0..POLLED_TARGETS)
        .map(|n| format!("\"https://reports.example.com/2026/12/customer-{n:06}/invoice.pdf\""))
        .collect();
    let now = Timestamp::from_micros(1);
    let job = NewJob::new(caller.clone(), targets, now, JOBS + 1);
    let id = store.submit(job).await.unwrap().id;
    let cancelled = store.cancel(id, &caller, now).await.unwrap();
    assert!(matches!(cancelled, CancelOutcome::Cancelled(_)));
    (store, Arc::new(Polled { caller, id }))
}

fn bench(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_time()
        .build()
        .unwrap();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("batch-bench-readers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let callers: Vec<Caller> = (0..JOBS).map(|i| Caller::new(format!("s{i}"))).collect();
    let targets: Vec<u32> = (0..TARGETS_PER_JOB).collect();

    let cores = busy_loops::cores();
    for (group_name, busy_loops) in [
        ("sqlite_writer/1k_targets_10_jobs", 0),
        ("sqlite_writer_loaded/1k_targets_10_jobs", cores),
    ] {
        let _load = BusyLoops::start(busy_loops);
        let mut group = c.benchmark_group(group_name);
        group.sample_size(10);
        group.throughput(Throughput::Elements(
            JOBS as u64 * u64::from(TARGETS_PER_JOB),
        ));
        for (name, poll) in [
            ("batch_sqlite_alone", false),
            ("batch_sqlite_beside_a_reader", true),
        ] {
            let file = format!("{name}-{busy_loops}");
            let (store, polled) = rt.block_on(open(&dir, &file));
            let polled = poll.then_some(&polled);
            group.bench_function(name, |b| {
                b.iter(|| rt.block_on(run(Arc::clone(&store), &callers, &targets, polled)));
            });
        }
        group.finish();
    }
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
