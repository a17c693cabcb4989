//! How late a 1 ms ticker runs beside a runner on one current-thread runtime: the measure of
//! "the runner never stalls its executor" (issue: `batch` inside a real service).
//!
//! Each case runs one job of N targets over a store, with instant fetches or fetches that
//! sleep 200 µs (tokio's timer rounds that up to its 1 ms tick), while a ticker task on the
//! same thread asks for a tick every millisecond (`MissedTickBehavior::Skip`). Reported per
//! case: the ticks it got against the milliseconds that passed, and its worst and p99
//! lateness (how long after its deadline each tick ran). The ticker alone, for as long, is
//! the baseline in the same run. Every case runs quiet and then loaded, with as many
//! busy-looping threads as the machine has CPUs beside it.
//!
//! Not a criterion bench: the result is a distribution of latencies, not a time per
//! iteration. `cargo bench -p lockgate-batch --bench lateness` prints a markdown table;
//! `LATENESS_QUICK=1` leaves out the 20,000-target `FULL` cases (an fsync per target).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{MemoryStore, Store};
use lockgate_batch::store::{SqliteStore, Synchronous};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};
use tokio::time::MissedTickBehavior;

#[path = "support/busy_loops.rs"]
mod busy_loops;
use busy_loops::BusyLoops;

/// Sends each terminal status to the bench.
struct EndSignal(tokio::sync::mpsc::UnboundedSender<JobStatus>);

impl Hooks for EndSignal {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

#[derive(Clone, Copy)]
enum StoreKind {
    Memory,
    Sqlite(Synchronous),
}

impl StoreKind {
    fn name(self) -> &'static str {
        match self {
            StoreKind::Memory => "memory",
            StoreKind::Sqlite(Synchronous::Normal) => "SQLite NORMAL",
            StoreKind::Sqlite(_) => "SQLite FULL",
        }
    }
}

/// What the ticker saw.
#[derive(Default)]
struct Ticks {
    lateness: Vec<Duration>,
    elapsed: Duration,
}

impl Ticks {
    fn row(&mut self) -> String {
        self.lateness.sort();
        let worst = self.lateness.last().copied().unwrap_or_default();
        let p99 = self
            .lateness
            .get(self.lateness.len() * 99 / 100)
            .copied()
            .unwrap_or_default();
        let wanted = self.elapsed.as_millis().max(1);
        format!(
            "{} / {} ({:.0}%) | {:.2} | {:.2}",
            self.lateness.len(),
            wanted,
            self.lateness.len() as f64 * 100.0 / wanted as f64,
            worst.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
        )
    }
}

/// Runs `work` beside the ticker on a fresh current-thread runtime.
fn beside_ticker<F: Future<Output = ()>>(work: impl FnOnce() -> F) -> Ticks {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = tokio::spawn({
            let stop = Arc::clone(&stop);
            async move {
                let mut interval = tokio::time::interval(Duration::from_millis(1));
                interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
                let mut ticks = Ticks::default();
                let start = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    let due = interval.tick().await;
                    ticks.lateness.push(due.elapsed());
                }
                ticks.elapsed = start.elapsed();
                ticks
            }
        });
        // The ticker's first tick is immediate: let it start before the work does.
        tokio::task::yield_now().await;
        work().await;
        stop.store(true, Ordering::Relaxed);
        ticker.await.unwrap()
    })
}

fn run_case(kind: StoreKind, targets: u64, sleep: bool, dir: &std::path::Path) -> Ticks {
    let db = dir.join(format!("lateness-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    // Opening reads and checks the file on the calling thread: a start-up cost, kept out of
    // the measured window as a service would keep it out of its serving time.
    let store = match kind {
        StoreKind::Memory => None,
        StoreKind::Sqlite(mode) => {
            Some(SqliteStore::options().synchronous(mode).open(&db).unwrap())
        }
    };
    let ticks = beside_ticker(|| async move {
        match store {
            None => run_job(MemoryStore::new(), targets, sleep).await,
            Some(store) => run_job(store, targets, sleep).await,
        }
    });
    for suffix in ["", "-wal", "-shm", ".lock"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    ticks
}

async fn run_job<S: Store>(store: S, targets: u64, sleep: bool) {
    let fetch = move |_ctx: FetchContext, n: u64| async move {
        if sleep {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        Ok::<u64, FetchError>(n + 1)
    };
    let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let config = Config::default()
        .max_targets(targets as usize)
        .hooks(Arc::new(EndSignal(ended_tx)));
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let all: Vec<u64> = (0..targets).collect();
    runner.submit(&Caller::new("bench"), &all).await.unwrap();
    assert_eq!(ended.recv().await, Some(JobStatus::Done));
    runner.close().await;
}

fn main() {
    let quick = std::env::var_os("LATENESS_QUICK").is_some();
    let dir = std::env::temp_dir();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    println!("| case | load | ticks got / wanted | worst ms | p99 ms |");
    println!("|---|---|---|---|---|");
    for loaded in [false, true] {
        let load_name = if loaded {
            format!("{cpus} busy threads")
        } else {
            "quiet".to_owned()
        };
        let _load = loaded.then(|| BusyLoops::start(busy_loops::cores()));
        // As long as the longer cases: a worst case is the worst of a run's length, and the OS
        // alone makes a 1 ms ticker late by milliseconds now and then.
        let baseline = Duration::from_secs(if quick { 5 } else { 20 });
        let mut alone = beside_ticker(|| tokio::time::sleep(baseline));
        println!(
            "| ticker alone, {} s | {load_name} | {} |",
            baseline.as_secs(),
            alone.row()
        );
        for kind in [
            StoreKind::Memory,
            StoreKind::Sqlite(Synchronous::Normal),
            StoreKind::Sqlite(Synchronous::Full),
        ] {
            for targets in [2_000, 20_000] {
                if quick
                    && targets == 20_000
                    && matches!(kind, StoreKind::Sqlite(Synchronous::Full))
                {
                    continue;
                }
                for sleep in [false, true] {
                    let mut ticks = run_case(kind, targets, sleep, &dir);
                    let fetch = if sleep { "sleep 200 µs" } else { "instant" };
                    println!(
                        "| {}, {targets} targets, {fetch} | {load_name} | {} |",
                        kind.name(),
                        ticks.row()
                    );
                }
            }
        }
    }
}
