//! The conformance kit (feature `store-spec`): the executable spec of the
//! [`Store`] contract, for a store of your own to pass in its tests.
//!
//! The contract's docs promise a lot in prose: the rotation (the first ready job from the
//! cursor on is claimed next), fencing and leases, caller isolation, idempotency keys,
//! counts and summaries, pages of jobs and of targets (scopes, filters, keys and limits),
//! bytes and eviction order, wake-ups. The kit writes those promises
//! down as a reference model (the simplest code that keeps them), generates random sequences
//! of store calls, runs each against the reference and your store side by side, and compares
//! every answer. The first sequence that disagrees is shrunk to a minimal one, and the
//! [`Failure`] shows it, what ran of it, and both answers. The crate's own stores (memory,
//! SQLite, PostgreSQL) pass the same 1,000 sequences.
//!
//! Ids and tokens are the store's own business: ids are matched submit by submit, and tokens
//! are only checked to increase. So is whether [`finish`](crate::store::WorkerStore::finish)
//! hands a next claim back when asked to `take_next`; when it does, the claim must be the one
//! the rotation gives among the other jobs.
//!
//! Where stores may differ (a lease, what `recover` does, a fallback poll), [`Rules`] says
//! what yours promises.
//!
//! # Examples
//!
//! In a test of your store (here the in-memory one, and fewer sequences than the 1,000 a
//! test should run):
//!
//! ```
//! use lockgate_batch::spec::{Conformance, Rules};
//! use lockgate_batch::store::MemoryStore;
//!
//! # fn main() -> Result<(), lockgate_batch::spec::Failure> {
//! // In your tests: `lockgate_batch::spec::conformance(Rules::owned(), MyStore::new)?`.
//! let report = Conformance::new(MemoryStore::new)
//!     .rules(Rules::owned())
//!     .cases(20)
//!     .run()?;
//! println!("{report}");
//! # Ok(())
//! # }
//! ```
//!
//! The crate's example `btree_store` (`examples/btree_store/`) is a complete store
//! of its own, over a `Mutex<BTreeMap>`, that passes.

mod answer;
mod check;
mod conformance;
mod coverage;
mod ops;
mod reference;
mod report;
mod rules;
mod wakeup;

pub use conformance::Conformance;
pub use report::{Failure, Report};
pub use rules::Rules;

use crate::store::Store;

/// Runs the conformance check on the stores `make_store` makes (each call a fresh, empty
/// store) under `rules`: 1,000 sequences (`PROPTEST_CASES` overrides that), as
/// [`Conformance::new`]`(make_store).rules(rules).run()`.
///
/// # Errors
///
/// The [`Failure`] of the minimal sequence on which the store disagreed with the reference
/// (or failed a call, or panicked).
pub fn conformance<S: Store>(
    rules: Rules,
    make_store: impl FnMut() -> S,
) -> Result<Report, Failure> {
    Conformance::new(make_store).rules(rules).run()
}
