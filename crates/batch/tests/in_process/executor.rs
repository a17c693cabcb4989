//! The runner never stalls the executor it shares: on a current-thread runtime, a 1 ms interval
//! task keeps ticking while a runner works through 20,000 instant targets.
//!
//! The same over the in-memory store, whose calls never wait: there only the coop budget the
//! workers spend lets the ticker in.
//!
//! A smoke test, not a latency measurement (`benches/lateness.rs` measures the ticker's worst
//! and p99 lateness against a ticker alone). Its bound is deliberately generous, so that a
//! loaded CI machine cannot fail it: the longest gap between two ticks must stay under
//! [`GENEROUS_GAP`]. Before the SQLite store had its own thread and the workers spent tokio's
//! coop budget, the ticker got no tick at all until the job ended (seconds here).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{MemoryStore, Store};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

const TARGETS: u64 = 20_000;
/// Far above what a healthy run shows (about a millisecond), far below a starved one.
const GENEROUS_GAP: Duration = Duration::from_millis(500);

/// Sends each terminal status to the test.
struct EndSignal(tokio::sync::mpsc::UnboundedSender<JobStatus>);

impl Hooks for EndSignal {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

/// Runs `jobs` jobs of `TARGETS` instant targets over `store` beside a 1 ms ticker on one
/// thread; the longest gap the ticker saw, up to the moment the last job ended.
fn longest_tick_gap<S: Store>(store: S, jobs: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ticker = tokio::spawn(async {
            let mut interval = tokio::time::interval(Duration::from_millis(1));
            let mut longest = Duration::ZERO;
            let mut last = Instant::now();
            loop {
                interval.tick().await;
                let now = Instant::now();
                longest = longest.max(now - last);
                last = now;
                // The ticker is aborted, never returns: publish as it goes.
                TICKER.with(|cell| cell.set((longest, last)));
            }
        });
        let fetch = |_ctx: FetchContext, n: u64| async move { Ok::<u64, FetchError>(n + 1) };
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let config = Config::default()
            .max_targets(TARGETS as usize)
            .hooks(Arc::new(EndSignal(ended_tx)));
        let runner = Runner::new(config, store, fetch).await.unwrap();
        let targets: Vec<u64> = (0..TARGETS).collect();
        for job in 0..jobs {
            let caller = Caller::new(format!("caller {job}"));
            runner.submit(&caller, &targets).await.unwrap();
        }
        for _ in 0..jobs {
            assert_eq!(ended.recv().await, Some(JobStatus::Done));
        }
        // A ticker starved until now shows it here: the gap since its last tick counts too.
        let (longest, last) = TICKER.with(|cell| cell.get());
        let gap = longest.max(last.elapsed());
        runner.close().await;
        ticker.abort();
        let _ = ticker.await;
        gap
    })
}

thread_local! {
    /// The ticker's longest gap and last tick; it runs on the test's one runtime thread.
    static TICKER: std::cell::Cell<(Duration, Instant)> =
        std::cell::Cell::new((Duration::ZERO, Instant::now()));
}

#[cfg(feature = "sqlite")]
#[test]
fn a_ticker_keeps_ticking_beside_a_sqlite_runner() {
    let dir = crate::scratch::Scratch::new("executor", "sqlite");
    let store = lockgate_batch::store::SqliteStore::open(dir.db()).unwrap();
    let gap = longest_tick_gap(store, 1);
    drop(dir);
    assert!(
        gap < GENEROUS_GAP,
        "the ticker waited {gap:?} between ticks"
    );
}

#[test]
fn a_ticker_keeps_ticking_beside_a_memory_runner() {
    // Five jobs: the in-memory store is fast enough that one job could end inside the bound.
    let gap = longest_tick_gap(MemoryStore::new(), 5);
    assert!(
        gap < GENEROUS_GAP,
        "the ticker waited {gap:?} between ticks"
    );
}
