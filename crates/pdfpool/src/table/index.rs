//! Finding a live job by its key (rule 1) and by its owner (rule 2).
//!
//! This is a data-structure choice, not a rule: both representations answer every question
//! identically (the proptest in `index/tests.rs` holds each against a plain map), and the
//! table's rules read only the answers.
//!
//! A pool holds at most `slots + queue_limit` live jobs, and the usual pool is small (a few
//! slots, a short queue). Up to [`SCAN_LIMIT`] live jobs the index is the table's list of live
//! jobs itself, scanned: one pass compares every job's key and owner with the request's,
//! without hashing, and nothing has to be inserted or removed besides the job. Past that, two
//! hash maps (key → job, owner → job) keep each lookup O(1); keys and owners are then cloned
//! into the maps.
//!
//! The index knows nothing of the table's jobs: every question comes with the live jobs as
//! `(id, key, owner)` triples, which the scan reads and the maps ignore. So this file imports
//! nothing from the table, and the proptest drives it with a plain vector.
//!
//! The mode is fixed when the table is made, so it never changes under live jobs; the
//! reference build (`--cfg lockgate_reference`, see `fast.rs`) always takes the maps. Why
//! scan: docs/pdfpool.md, "Allocation and lookups per request".
//!
//! # Invariant
//!
//! In `Maps` mode, `by_key` and `callers` hold exactly the live jobs' keys and owners, each
//! with its job's id (the table's invariants 4 and 5). In `Scan` mode there is nothing to keep
//! in step: the live jobs are the index.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;

use crate::fast::REFERENCE;

/// The largest `slots + queue_limit` served by scanning the jobs.
pub(super) const SCAN_LIMIT: usize = 16;

/// The maps' hasher. Both maps hold at most `slots + queue_limit` entries (live jobs only), so
/// even crafted colliding keys cost at most a scan of that many: a fast seeded hasher is safe,
/// and SipHash's cost per admission would buy nothing.
type Hasher = foldhash::fast::RandomState;

/// What a request for a key finds among the live jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found<I> {
    /// A job for the key is in flight (rule 1 wins over rule 2).
    Key(I),
    /// No job for the key, but the caller owns a job for another key.
    CallerBusy,
    /// Neither: the request may start or queue a job.
    Neither,
}

/// How the table finds jobs (named by ids `I`) by key and by owner.
#[derive(Debug)]
pub(super) enum Index<K, C, I> {
    /// Few live jobs at most: scan them.
    Scan,
    /// Many: a map for each.
    Maps {
        by_key: HashMap<K, I, Hasher>,
        /// Each owner of a live job, with that job.
        callers: HashMap<C, I, Hasher>,
    },
}

impl<K, C, I> Index<K, C, I>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
    I: Copy + Eq + Debug,
{
    /// The index for a table of at most `capacity` live jobs: the maps in the reference build
    /// (`fast.rs`), so that it runs on one representation whatever the size.
    pub(super) fn new(capacity: usize) -> Self {
        if !REFERENCE && capacity <= SCAN_LIMIT {
            Self::Scan
        } else {
            Self::maps()
        }
    }

    /// The index of hash maps, empty.
    pub(super) fn maps() -> Self {
        Self::Maps {
            by_key: HashMap::default(),
            callers: HashMap::default(),
        }
    }

    /// The job for `key`, or whether `caller` owns a job, among the `live` jobs.
    pub(super) fn find<'a>(
        &self,
        live: impl IntoIterator<Item = (I, &'a K, &'a C)>,
        key: &K,
        caller: &C,
    ) -> Found<I>
    where
        K: 'a,
        C: 'a,
    {
        match self {
            Self::Scan => {
                let mut caller_busy = false;
                for (id, job_key, owner) in live {
                    if job_key == key {
                        return Found::Key(id);
                    }
                    caller_busy |= owner == caller;
                }
                if caller_busy {
                    Found::CallerBusy
                } else {
                    Found::Neither
                }
            }
            Self::Maps { by_key, callers } => match by_key.get(key) {
                Some(&id) => Found::Key(id),
                None if callers.contains_key(caller) => Found::CallerBusy,
                None => Found::Neither,
            },
        }
    }

    /// The job for `key` among the `live` jobs, if one is in flight.
    pub(super) fn by_key<'a, Q>(
        &self,
        live: impl IntoIterator<Item = (I, &'a K, &'a C)>,
        key: &Q,
    ) -> Option<I>
    where
        K: Borrow<Q> + 'a,
        C: 'a,
        Q: Hash + Eq + ?Sized,
    {
        match self {
            Self::Scan => live
                .into_iter()
                .find(|&(_, job_key, _)| job_key.borrow() == key)
                .map(|(id, _, _)| id),
            Self::Maps { by_key, .. } => by_key.get(key).copied(),
        }
    }

    /// The job `caller` owns among the `live` jobs, if any.
    pub(super) fn by_owner<'a>(
        &self,
        live: impl IntoIterator<Item = (I, &'a K, &'a C)>,
        caller: &C,
    ) -> Option<I>
    where
        K: 'a,
        C: 'a,
    {
        match self {
            Self::Scan => live
                .into_iter()
                .find(|&(_, _, owner)| owner == caller)
                .map(|(id, _, _)| id),
            Self::Maps { callers, .. } => callers.get(caller).copied(),
        }
    }

    /// Records the new live job `id` for `key`, owned by `caller` (neither has one: the caller
    /// checked with [`find`](Self::find)).
    pub(super) fn insert(&mut self, key: &K, caller: &C, id: I) {
        if let Self::Maps { by_key, callers } = self {
            let known_key = by_key.insert(key.clone(), id);
            let known_caller = callers.insert(caller.clone(), id);
            debug_assert!(known_key.is_none() && known_caller.is_none());
        }
    }

    /// Forgets the job `id` for `key`, owned by `owner`, which is no longer live.
    pub(super) fn remove(&mut self, key: &K, owner: &C, id: I) {
        if let Self::Maps { by_key, callers } = self {
            let keyed = by_key.remove(key);
            debug_assert_eq!(keyed, Some(id), "by_key lost a live job");
            let owned = callers.remove(owner);
            debug_assert_eq!(owned, Some(id), "callers lost a live job's owner");
        }
    }

    /// Asserts the index invariant against the `live` jobs (debug builds only).
    pub(super) fn check<'a>(&self, live: impl IntoIterator<Item = (I, &'a K, &'a C)>)
    where
        K: 'a,
        C: 'a,
    {
        if let Self::Maps { by_key, callers } = self {
            let mut count = 0;
            for (id, key, owner) in live {
                count += 1;
                assert_eq!(by_key.get(key), Some(&id), "invariant 4");
                assert_eq!(callers.get(owner), Some(&id), "invariant 5");
            }
            assert_eq!(by_key.len(), count, "invariant 4: one key per live job");
            assert_eq!(callers.len(), count, "invariant 5: one owner per live job");
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
