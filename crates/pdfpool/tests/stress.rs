//! Stress: 1,000 requests over 20 keys on a two-worker runtime, with random drops (aborted
//! requests) and panicking jobs. Every request that survives gets its key's value (or its
//! key's panic, or `CallerBusy`), and at the end every counter is back to 0 and the number of
//! live tokio tasks is back to where it started: no task, waiter or job leaks.
//!
//! `TEST_SCALE=small` (TSan) or Miri shrinks the run to 200 requests.

use std::time::Duration;

use lockgate_pdfpool::{Error, Pool};
use tokio::task::JoinHandle;

const KEYS: u64 = 20;
/// Jobs for keys below this always panic, so each key has one expected outcome.
const PANICKING_KEYS: u64 = 3;

fn requests() -> usize {
    let small = cfg!(miri) || std::env::var("TEST_SCALE").is_ok_and(|scale| scale == "small");
    if small { 200 } else { 1_000 }
}

/// The value every job for `key` returns.
fn value_of(key: u64) -> u64 {
    key * 1_000 + 7
}

/// xorshift64*: a fixed-seed generator, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

/// Runs a job for `key`: yields `yields` times (other tasks interleave), then returns the
/// key's value, or panics if `key` is one of the panicking keys.
async fn job(key: u64, yields: u64) -> u64 {
    for _ in 0..yields {
        tokio::task::yield_now().await;
    }
    assert!(key >= PANICKING_KEYS, "job {key} panics on purpose");
    value_of(key)
}

/// A spawned request: `None` if it only joined and found no job in flight.
type Request = JoinHandle<Option<Result<u64, Error>>>;

#[derive(Debug, Default)]
struct Tally {
    values: usize,
    panics: usize,
    caller_busy: usize,
    no_job: usize,
    dropped: usize,
}

/// Checks one request's outcome against its key.
fn check(key: u64, outcome: Option<Result<u64, Error>>, tally: &mut Tally) {
    match outcome {
        Some(Ok(value)) => {
            assert!(key >= PANICKING_KEYS, "a panicking job returned {value}");
            assert_eq!(value, value_of(key), "a sharer got another key's value");
            tally.values += 1;
        }
        Some(Err(Error::Panicked(panic))) => {
            assert_eq!(panic.message(), format!("job {key} panics on purpose"));
            tally.panics += 1;
        }
        Some(Err(Error::CallerBusy)) => tally.caller_busy += 1,
        None => tally.no_job += 1,
        Some(Err(other)) => panic!("request for key {key} failed with {other:?}"),
    }
}

#[test]
fn many_requests_with_drops_and_panics_leak_nothing() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let metrics = tokio::runtime::Handle::current().metrics();
        let alive_at_start = metrics.num_alive_tasks();
        // slots + queue >= KEYS: at most one job per key, so the queue never overflows; the
        // wait limit is far beyond the test's length, so nothing is refused as Busy.
        let pool: Pool<u64, u64, u64> = Pool::new(4, 16, Duration::from_secs(3_600));
        let total = requests();
        let callers = total as u64 / 10;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut handles: Vec<(u64, Request)> = Vec::new();
        let mut to_drop = Vec::new();
        for index in 0..total {
            let key = rng.below(KEYS);
            let caller = index as u64 % callers;
            let yields = rng.below(20);
            let joins_only = rng.below(10) == 0;
            let pool = pool.clone();
            let handle = tokio::spawn(async move {
                if joins_only {
                    pool.join(&key).await
                } else {
                    Some(pool.run(key, caller, move || job(key, yields)).await)
                }
            });
            if rng.below(5) == 0 {
                to_drop.push(handles.len());
            }
            handles.push((key, handle));
            if rng.below(8) == 0 {
                tokio::task::yield_now().await;
            }
        }
        for &index in &to_drop {
            handles[index].1.abort();
        }
        let mut tally = Tally::default();
        for (key, handle) in handles {
            match handle.await {
                Ok(outcome) => check(key, outcome, &mut tally),
                Err(error) if error.is_cancelled() => tally.dropped += 1,
                Err(error) => panic!("request task failed: {error}"),
            }
        }
        // Orphan jobs (all their waiters dropped) may still run: let them end.
        let mut spins = 0_u64;
        while pool.running() + pool.queued() > 0 || metrics.num_alive_tasks() > alive_at_start {
            spins += 1;
            assert!(spins < 10_000_000, "the pool never drained");
            tokio::task::yield_now().await;
        }
        assert_eq!((pool.running(), pool.queued()), (0, 0));
        for key in 0..KEYS {
            assert_eq!(pool.waiting(&key), 0, "key {key} still has waiters");
        }
        assert_eq!(metrics.num_alive_tasks(), alive_at_start, "a task leaked");
        // The mix of outcomes depends on scheduling; print it, assert none of it.
        eprintln!("stress outcomes: {tally:?}");
    });
}
