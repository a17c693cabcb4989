//! An executable spec of the [`Store`] trait: random sequences of store calls, run against a
//! plain reference store and against every real store, comparing every answer.
//!
//! The trait's docs (`src/store/mod.rs`) promise a lot in prose: the rotation (the first ready job
//! from the cursor on is claimed next), fencing and leases, caller isolation, idempotency
//! keys, counts and summaries, eviction order. `spec/reference.rs` writes those promises down
//! as the simplest code that keeps them (a `Vec` scanned naively); `spec/ops.rs` generates
//! sequences of calls (submits with and without keys and limits, claims, renews, completions
//! (alone, and with `complete_and_claim`, which the PostgreSQL store answers with a claim too),
//! busy retries, releases, cancels, touches, reads, wake-ups, evictions with various budgets,
//! recovers, stale calls with old claims, calls naming other callers' jobs, and the clock
//! moving); `spec/check.rs` runs one sequence on both sides and stops at the first answer
//! that differs, printing the sequence, what ran, and both answers. Proptest then shrinks it
//! to a minimal sequence.
//!
//! The stores:
//!
//! - `MemoryStore::new()` and SQLite on a file: claims never lapse, `recover` frees them;
//! - `MemoryStore::with_lease` with a 1 s lease on the simulated clock: the only store whose
//!   lease lapses are checked (rescues, stale tokens, lease ends in `next_wakeup`); and the
//!   same behind an `Arc`, so through `StoreWrapper`'s forwarding;
//! - PostgreSQL, when `BATCH_TEST_POSTGRES_URL` is set (else it prints why it skipped): a
//!   lease of an hour, so no claim lapses in real time (the store judges leases by the server's
//!   clock), shorter sequences, `recover` leaving claims to their leases, and `next_wakeup`
//!   allowed its fallback poll and, while a claim is out, a lease end it converted from the
//!   server's clock (no later than an hour ahead, nor than the reference's wake-up).
//!
//! Every sequence ends by draining the store through the API (cancel every live job, release
//! every claim, evict everything; all compared too), so the memory stores get a fresh store
//! per sequence, while SQLite and PostgreSQL keep one store (one file, one schema) from
//! sequence to sequence, which is much faster and also shows that a store's history (ids,
//! tokens and sequences far from 1) changes nothing, and that over its whole life it never
//! mints an id twice and its tokens keep increasing; after a failing sequence the next one
//! gets a fresh store, so proptest shrinks on clean stores.
//!
//! Some submits have no target at all: every store refuses them as `InvalidJob::Empty`
//! before anything else (before this spec generated them, the memory store panicked on one
//! and SQLite kept a job that could never be claimed or end).
//!
//! Cases: 1,000 sequences per store, 64 under `TEST_SCALE=small` (the sanitizer and Miri
//! steps of the gate); `PROPTEST_CASES` overrides both (a longer soak, say).

// The spec's parts: the reference store, the generated operations, and the comparison.
mod check;
mod ops;
mod reference;

#[cfg(feature = "postgres")]
#[path = "../pg/mod.rs"]
mod pg;
#[cfg(feature = "sqlite")]
#[path = "../scratch/mod.rs"]
mod scratch;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use lockgate_batch::store::{MemoryStore, Store, Timestamp};
use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, TestCaseError, TestError, TestRunner,
};

use check::{Coverage, Flavor, History, Wakeups, check};
use reference::Rules;

/// Where the first sequence's clock starts (a date in 2023, in microseconds); each later
/// sequence starts a second after the one before ended, so that a store kept from one
/// sequence to the next never sees its callers' clock go back.
const START: Timestamp = Timestamp::from_micros(1_700_000_000_000_000);

/// The lease of the leased in-memory store, on the sequences' simulated clock.
const LEASE: Duration = Duration::from_secs(1);

/// The longest sequence for an in-process store.
const MAX_OPS: usize = 60;

/// Sequences per store.
const CASES: u32 = 1000;

/// A store owned by one process: no lease, and `recover` frees every claim.
const OWNED: Rules = Rules {
    lease: None,
    recover_frees_claims: true,
    claims_with_complete: false,
};

/// `TEST_SCALE=small` (TSan, Miri) shrinks the run.
fn small() -> bool {
    std::env::var("TEST_SCALE").is_ok_and(|v| v == "small")
}

/// A current-thread runtime for one test's store calls.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Runs [`CASES`] sequences (64 under `TEST_SCALE=small`; `PROPTEST_CASES` overrides both)
/// of up to `max_ops` operations
/// against the reference and a store from `open`, on `runtime`; a store is kept for the next
/// sequence if `keep` and the sequence passed. Panics with the shrunk sequence and both
/// answers on a disagreement, and (with [`CASES`] or more) if some kind of answer never came
/// up (see [`Coverage`]).
fn run_spec<S: Store>(
    flavor: Flavor,
    max_ops: usize,
    keep: bool,
    runtime: &tokio::runtime::Runtime,
    open: impl Fn() -> S,
) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(if small() { 64 } else { CASES });
    let config = Config {
        cases,
        source_file: Some(file!()),
        // Failing sequences are kept beside this file, in `main.proptest-regressions`.
        // (The default looks for the folder holding a `main.rs` or `lib.rs` and writes to a
        // `proptest-regressions/` folder beside it, named after this file: `main.txt`.)
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // ChaCha, the default, took most of the time in a debug build.
        rng_algorithm: RngAlgorithm::XorShift,
        ..Config::default()
    };
    let kept: RefCell<Option<(S, History)>> = RefCell::new(None);
    let clock = Cell::new(START);
    let coverage = RefCell::new(Coverage::default());
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&ops::sequence(max_ops), |ops| {
        let (store, mut history) = kept.take().unwrap_or_else(|| (open(), History::default()));
        let start = clock.get().saturating_add(Duration::from_secs(1));
        let end = runtime
            .block_on(check(
                &store,
                &mut history,
                &mut coverage.borrow_mut(),
                flavor,
                &ops,
                start,
            ))
            .map_err(TestCaseError::fail)?;
        clock.set(end);
        if keep {
            kept.replace(Some((store, history)));
        }
        Ok(())
    });
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(why, ops)) => {
            panic!("{why}\nminimal failing sequence: {ops:#?}")
        }
        Err(TestError::Abort(why)) => panic!("the spec aborted: {why}"),
    }
    let coverage = coverage.into_inner();
    println!("{}: {cases} sequences; answers by kind:", flavor.name);
    for (kind, count) in &coverage.0 {
        println!("  {count:>6}  {kind}");
    }
    let missing = coverage.missing(flavor.rules.lease.is_some());
    assert!(
        cases < CASES || missing.is_empty(),
        "{}: the sequences never reached {missing:?}",
        flavor.name
    );
}

/// The in-memory store without leases, a fresh one per sequence.
#[test]
fn memory() {
    let flavor = Flavor {
        name: "memory",
        rules: OWNED,
        wakeups: Wakeups::Exact,
    };
    run_spec(flavor, MAX_OPS, false, &runtime(), MemoryStore::new);
}

/// The in-memory store with a lease of [`LEASE`] on the simulated clock, a fresh one per
/// sequence: lapses, rescues and lease ends in `next_wakeup` are checked here.
#[test]
fn memory_leased() {
    let flavor = Flavor {
        name: "memory with leases",
        rules: Rules {
            lease: Some(LEASE),
            recover_frees_claims: true,
            claims_with_complete: false,
        },
        wakeups: Wakeups::Exact,
    };
    run_spec(flavor, MAX_OPS, false, &runtime(), || {
        MemoryStore::with_lease(LEASE)
    });
}

/// The leased in-memory store behind an `Arc`: every call goes through [`StoreWrapper`]'s
/// forwarding (`Arc<S>` is a wrapper that overrides nothing), which must change nothing.
///
/// [`StoreWrapper`]: lockgate_batch::store::StoreWrapper
#[test]
fn memory_behind_a_wrapper() {
    let flavor = Flavor {
        name: "Arc<MemoryStore> with leases",
        rules: Rules {
            lease: Some(LEASE),
            recover_frees_claims: true,
            claims_with_complete: false,
        },
        wakeups: Wakeups::Exact,
    };
    run_spec(flavor, MAX_OPS, false, &runtime(), || {
        std::sync::Arc::new(MemoryStore::with_lease(LEASE))
    });
}

/// SQLite on a file, kept while sequences pass; a fresh file after a failure.
#[cfg(feature = "sqlite")]
#[test]
fn sqlite() {
    let folder = scratch::Scratch::new("spec", "sqlite");
    let files = Cell::new(0);
    let flavor = Flavor {
        name: "sqlite",
        rules: OWNED,
        wakeups: Wakeups::Exact,
    };
    run_spec(flavor, MAX_OPS, true, &runtime(), || {
        files.set(files.get() + 1);
        // A file of its own for each store, beside the folder's `jobs.db`.
        let path = folder
            .db()
            .with_file_name(format!("spec-{}.db", files.get()));
        lockgate_batch::store::SqliteStore::open(path).expect("open the database")
    });
}

/// PostgreSQL (skipped, saying why, without `BATCH_TEST_POSTGRES_URL`): one schema kept
/// while sequences pass, a fresh one after a failure. Claims hold a lease of an hour, so none
/// lapses in real time, and the fallback poll is a day, so it never hides a wake-up within a
/// sequence; sequences are shorter, since every call is a transaction on the server. See
/// [`Wakeups::Shared`] for how its `next_wakeup` is compared.
#[cfg(feature = "postgres")]
#[test]
fn postgres() {
    if !pg::available() {
        return;
    }
    const POLL: Duration = Duration::from_secs(24 * 3600);
    const PG_LEASE: Duration = Duration::from_secs(3600);
    let flavor = Flavor {
        name: "postgres",
        rules: Rules {
            lease: None,
            recover_frees_claims: false,
            claims_with_complete: true,
        },
        wakeups: Wakeups::Shared {
            poll: POLL,
            lease: PG_LEASE,
        },
    };
    // The store's pooled connections live on the runtime that opened them: one for the test.
    let runtime = runtime();
    run_spec(flavor, 30, true, &runtime, || {
        let options = pg::options()
            .lease_ttl(PG_LEASE)
            .poll_interval(POLL)
            .pool_size(2);
        let _enter = runtime.enter();
        pg::open(options)
    });
}
