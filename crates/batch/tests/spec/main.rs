//! Our stores against the executable spec of the [`Store`] contract: the public conformance
//! kit (`lockgate_batch::spec`, feature `store-spec`) runs random sequences of store calls
//! against its reference model and against each store, comparing every answer, and shrinks
//! the first disagreement to a minimal sequence (see `src/spec/` for the model, the
//! generator and the checker).
//!
//! The stores, each with what it promises where the contract lets stores differ:
//!
//! - `MemoryStore::new()` and SQLite on a file: claims never lapse, `recover` frees them;
//! - `MemoryStore::with_lease` with a 1 s lease on the simulated clock: the only store whose
//!   lease lapses are checked (rescues, stale tokens, lease ends in `next_wakeup`); and the
//!   same behind an `Arc`, so through `Arc<S>`'s forwarding;
//! - PostgreSQL, when `BATCH_TEST_POSTGRES_URL` is set (else it prints why it skipped): a
//!   lease of an hour, so no claim lapses in real time (the store judges leases by the
//!   server's clock), shorter sequences, `recover` leaving claims to their leases, and
//!   `next_wakeup` allowed its fallback poll and, while a claim is out, a lease end it
//!   converted from the server's clock (no later than an hour ahead, nor than the
//!   reference's wake-up). Its `finish` takes the next claim when asked, which the kit
//!   compares with the reference's;
//! - `custom_store.rs`: the example `btree_store`, a store written from the docs alone,
//!   through the one-line `spec::conformance` a third party would call.
//!
//! The memory stores get a fresh store per sequence, while SQLite and PostgreSQL keep one
//! store (one file, one schema) from sequence to sequence (every sequence drains its store
//! through the API), which is much faster and also shows that a store's history (ids,
//! tokens and sequences far from 1) changes nothing, and that over its whole life it never
//! mints an id twice and its tokens keep increasing; after a failing sequence the next one
//! gets a fresh store, so proptest shrinks on clean stores.
//!
//! Cases: 1,000 sequences per store, 64 under `TEST_SCALE=small` (the sanitizer and Miri
//! steps of the gate); `PROPTEST_CASES` overrides both (a longer soak, say). Failing seeds
//! are kept in `main.proptest-regressions` beside this file and replayed first.
//!
//! [`Store`]: lockgate_batch::store::Store

mod custom_store;
mod kit;
#[cfg(feature = "postgres")]
#[path = "../pg/mod.rs"]
mod pg;
#[cfg(feature = "sqlite")]
#[path = "../scratch/mod.rs"]
mod scratch;

use std::time::Duration;

use lockgate_batch::spec::{Conformance, Rules};
use lockgate_batch::store::{MemoryStore, Store};

/// The lease of the leased in-memory store, on the sequences' simulated clock.
const LEASE: Duration = Duration::from_secs(1);

/// Sequences per store: `PROPTEST_CASES`, else 64 under `TEST_SCALE=small` (TSan, Miri),
/// else the kit's 1,000.
fn cases() -> u32 {
    let small = std::env::var("TEST_SCALE").is_ok_and(|v| v == "small");
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(if small { 64 } else { 1000 })
}

/// The kit as every store here runs it: [`cases`] sequences, failing seeds kept beside this
/// file.
fn spec<F, S>(name: &str, rules: Rules, make_store: F) -> Conformance<F>
where
    F: FnMut() -> S,
    S: Store,
{
    Conformance::new(make_store)
        .name(name)
        .rules(rules)
        .cases(cases())
        .regressions(file!())
}

/// Runs `conformance` and prints its report; panics with the failure, which shows the
/// minimal sequence, what ran of it, and both answers.
fn pass<F, S>(conformance: Conformance<F>)
where
    F: FnMut() -> S,
    S: Store,
{
    match conformance.run() {
        Ok(report) => println!("{report}"),
        Err(failure) => panic!("{failure}"),
    }
}

/// The in-memory store without leases, a fresh one per sequence.
#[test]
fn memory() {
    pass(spec("memory", Rules::owned(), MemoryStore::new));
}

/// The in-memory store with a lease of [`LEASE`] on the simulated clock, a fresh one per
/// sequence: lapses, rescues and lease ends in `next_wakeup` are checked here.
#[test]
fn memory_leased() {
    let rules = Rules::owned().lease(LEASE);
    pass(spec("memory with leases", rules, || {
        MemoryStore::with_lease(LEASE)
    }));
}

/// The leased in-memory store behind an `Arc`: every call goes through `Arc<S>`'s
/// forwarding impls, which must change nothing.
#[test]
fn memory_behind_an_arc() {
    let rules = Rules::owned().lease(LEASE);
    pass(spec("Arc<MemoryStore> with leases", rules, || {
        std::sync::Arc::new(MemoryStore::with_lease(LEASE))
    }));
}

/// SQLite on a file, kept while sequences pass; a fresh file after a failure.
#[cfg(feature = "sqlite")]
#[test]
fn sqlite() {
    let folder = scratch::Scratch::new("spec", "sqlite");
    let mut files = 0;
    let open = || {
        files += 1;
        // A file of its own for each store, beside the folder's `jobs.db`.
        let path = folder.db().with_file_name(format!("spec-{files}.db"));
        lockgate_batch::store::SqliteStore::open(path).expect("open the database")
    };
    pass(spec("sqlite", Rules::owned(), open).reuse_store(true));
}

/// PostgreSQL (skipped, saying why, without `BATCH_TEST_POSTGRES_URL`): one schema kept
/// while sequences pass, a fresh one after a failure. Claims hold a lease of an hour, so none
/// lapses in real time, and the fallback poll is a day, so it never hides a wake-up within a
/// sequence; sequences are shorter, since every call is a transaction on the server. The kit
/// makes each store inside its runtime, where the store's pooled connections then live.
#[cfg(feature = "postgres")]
#[test]
fn postgres() {
    if !pg::available() {
        return;
    }
    const POLL: Duration = Duration::from_secs(24 * 3600);
    const PG_LEASE: Duration = Duration::from_secs(3600);
    let rules = Rules::shared()
        .fallback_poll(POLL)
        .lease_on_store_clock(PG_LEASE)
        .replays_stores(true);
    let open = || {
        let options = pg::options()
            .lease_ttl(PG_LEASE)
            .poll_interval(POLL)
            .pool_size(2);
        pg::open(options)
    };
    pass(spec("postgres", rules, open).max_ops(30).reuse_store(true));
}
