//! How late a 1 ms ticker runs beside a loop that spawns into a full pool, on one
//! current-thread runtime: the measure of "an async submit does not block the runtime's
//! thread" (issue 39: spawning 40 short tasks with the blocking `spawn` into a pool of
//! capacity 10 kept a ticker beside it waiting 226 ms).
//!
//! Each case runs for [`RUN`] on a fresh runtime, with a ticker task asking for a tick every
//! millisecond (`MissedTickBehavior::Skip`) and recording how long after its deadline each
//! tick ran. Beside it, a loop spawns rounds of [`TASKS`] tasks of [`TASK`] each (a worker's
//! `thread::sleep`) into a pool of [`WORKERS`] workers and capacity 10 (`max / 2 +
//! submit_buffer`), and awaits their handles: with `spawn_async` (the async path), and with
//! the blocking `spawn` for comparison. The ticker alone, for as long, is the baseline.
//!
//! Not a criterion bench: the result is a distribution of latencies, not a time per
//! iteration. `cargo bench -p lockgate-worker --bench ticker` prints a markdown table.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lockgate_worker::Pool;
use tokio::time::MissedTickBehavior;

/// How long each case runs.
const RUN: Duration = Duration::from_secs(3);
/// Tasks spawned per round.
const TASKS: usize = 40;
/// How long one task keeps its worker.
const TASK: Duration = Duration::from_millis(5);
/// The pool's workers (`min = max`); with `submit_buffer` 8 its capacity is 10.
const WORKERS: usize = 4;
const SUBMIT_BUFFER: usize = 8;

/// What the ticker saw.
#[derive(Default)]
struct Ticks {
    lateness: Vec<Duration>,
    elapsed: Duration,
    rounds: usize,
}

impl Ticks {
    fn row(&mut self, case: &str) -> String {
        self.lateness.sort();
        let worst = self.lateness.last().copied().unwrap_or_default();
        let p99 = self
            .lateness
            .get(self.lateness.len() * 99 / 100)
            .copied()
            .unwrap_or_default();
        let total: Duration = self.lateness.iter().sum();
        let mean = total / u32::try_from(self.lateness.len().max(1)).unwrap_or(u32::MAX);
        let wanted = self.elapsed.as_millis().max(1);
        format!(
            "| {case} | {} | {} of {wanted} ({:.0} %) | {:.2} | {:.2} | {:.3} |",
            self.rounds,
            self.lateness.len(),
            self.lateness.len() as f64 * 100.0 / wanted as f64,
            worst.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3,
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Spawner {
    /// The ticker alone.
    None,
    /// `spawn_async(..).await` for each task.
    Async,
    /// The blocking `spawn` for each task.
    Blocking,
}

/// Runs the ticker, and beside it the spawning loop, on a fresh current-thread runtime.
fn run_case(spawner: Spawner) -> Ticks {
    let pool = Arc::new(
        Pool::builder(WORKERS, WORKERS)
            .submit_buffer(SUBMIT_BUFFER)
            .build()
            .unwrap(),
    );
    assert_eq!(pool.capacity(), 10);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut ticks = rt.block_on(async {
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
        let start = Instant::now();
        let mut rounds = 0;
        while start.elapsed() < RUN {
            match spawner {
                Spawner::None => tokio::time::sleep(RUN).await,
                Spawner::Async => {
                    let mut handles = Vec::with_capacity(TASKS);
                    for _ in 0..TASKS {
                        let handle = pool.spawn_async(|| std::thread::sleep(TASK)).await;
                        handles.push(handle.unwrap());
                    }
                    for handle in handles {
                        handle.await.unwrap();
                    }
                }
                Spawner::Blocking => {
                    let mut handles = Vec::with_capacity(TASKS);
                    for _ in 0..TASKS {
                        handles.push(pool.spawn(|| std::thread::sleep(TASK)));
                    }
                    for handle in handles {
                        handle.await.unwrap();
                    }
                }
            }
            rounds += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let mut ticks = ticker.await.unwrap();
        ticks.rounds = rounds;
        ticks
    });
    drop(rt);
    pool.close().unwrap();
    if spawner == Spawner::None {
        ticks.rounds = 0;
    }
    ticks
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` from other tools is ignored.
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    println!(
        "{} workers, capacity 10, rounds of {TASKS} tasks of {} ms, {} s per case, {} CPUs",
        WORKERS,
        TASK.as_millis(),
        RUN.as_secs(),
        std::thread::available_parallelism().map_or(1, usize::from),
    );
    println!();
    println!("| case | rounds | ticks | worst ms | p99 ms | mean ms |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (case, spawner) in [
        ("ticker alone", Spawner::None),
        ("beside `spawn_async` into a full pool", Spawner::Async),
        (
            "beside blocking `spawn` (for comparison)",
            Spawner::Blocking,
        ),
    ] {
        println!("{}", run_case(spawner).row(case));
    }
}
