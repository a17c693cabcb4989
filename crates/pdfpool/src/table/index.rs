//! Finding a live job by its key (rule 1) and by its owner (rule 2).
//!
//! A pool holds at most `slots + queue_limit` live jobs, and the usual pool is small (a few
//! slots, a short queue). Up to [`SCAN_LIMIT`] live jobs the index is the job slab itself,
//! scanned: one pass compares every job's key and owner with the request's, without hashing,
//! and nothing has to be inserted or removed besides the job. Past that, two hash maps (key →
//! job, owner → job) keep each lookup O(1); keys and owners are then cloned into the maps.
//!
//! The mode is fixed when the table is made, so it never changes under live jobs. Why scan:
//! docs/pdfpool.md, "Allocation and lookups per request".
//!
//! # Invariant
//!
//! In `Maps` mode, `by_key` and `callers` hold exactly the live jobs' keys and owners (the
//! table's invariants 4 and 5). In `Scan` mode there is nothing to keep in step: the slab is
//! the index.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

use super::{Job, JobId};
use crate::slab::Slab;

/// The largest `slots + queue_limit` served by scanning the jobs.
pub(super) const SCAN_LIMIT: usize = 16;

/// The maps' hasher. Both maps hold at most `slots + queue_limit` entries (live jobs only), so
/// even crafted colliding keys cost at most a scan of that many: a fast seeded hasher is safe,
/// and SipHash's cost per admission would buy nothing.
type Hasher = foldhash::fast::RandomState;

/// What a request for a key finds among the live jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// A job for the key is in flight (rule 1 wins over rule 2).
    Key(JobId),
    /// No job for the key, but the caller owns a job for another key.
    CallerBusy,
    /// Neither: the request may start or queue a job.
    Neither,
}

/// How the table finds jobs by key and by owner.
#[derive(Debug)]
pub(super) enum Index<K, C> {
    /// Few live jobs at most: scan the job slab.
    Scan,
    /// Many: a map for each.
    Maps {
        by_key: HashMap<K, JobId, Hasher>,
        /// Each owner of a live job, with that job.
        callers: HashMap<C, JobId, Hasher>,
    },
}

impl<K, C> Index<K, C>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
{
    /// The index for a table of at most `capacity` live jobs.
    pub(super) fn new(capacity: usize) -> Self {
        if capacity <= SCAN_LIMIT {
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

    /// The job for `key`, or whether `caller` owns a job.
    pub(super) fn find<D, W, L>(
        &self,
        jobs: &Slab<Job<K, C, D, W, L>>,
        key: &K,
        caller: &C,
    ) -> Found {
        match self {
            Self::Scan => {
                let mut caller_busy = false;
                for (index, job) in jobs.iter_indexed() {
                    if job.key == *key {
                        return Found::Key(job_id(index, job));
                    }
                    caller_busy |= job.owner == *caller;
                }
                if caller_busy {
                    Found::CallerBusy
                } else {
                    Found::Neither
                }
            }
            Self::Maps { by_key, callers } => match by_key.get(key) {
                Some(&job_id) => Found::Key(job_id),
                None if callers.contains_key(caller) => Found::CallerBusy,
                None => Found::Neither,
            },
        }
    }

    /// The job for `key`, if one is in flight.
    pub(super) fn by_key<Q, D, W, L>(
        &self,
        jobs: &Slab<Job<K, C, D, W, L>>,
        key: &Q,
    ) -> Option<JobId>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match self {
            Self::Scan => jobs
                .iter_indexed()
                .find(|(_, job)| job.key.borrow() == key)
                .map(|(index, job)| job_id(index, job)),
            Self::Maps { by_key, .. } => by_key.get(key).copied(),
        }
    }

    /// The job `caller` owns, if any.
    pub(super) fn by_owner<D, W, L>(
        &self,
        jobs: &Slab<Job<K, C, D, W, L>>,
        caller: &C,
    ) -> Option<JobId> {
        match self {
            Self::Scan => jobs
                .iter_indexed()
                .find(|(_, job)| job.owner == *caller)
                .map(|(index, job)| job_id(index, job)),
            Self::Maps { callers, .. } => callers.get(caller).copied(),
        }
    }

    /// Records the new live job `job_id` for `key`, owned by `caller` (neither has one: the
    /// caller checked with [`find`](Self::find)).
    pub(super) fn insert(&mut self, key: &K, caller: &C, job_id: JobId) {
        if let Self::Maps { by_key, callers } = self {
            let known_key = by_key.insert(key.clone(), job_id);
            let known_caller = callers.insert(caller.clone(), job_id);
            debug_assert!(known_key.is_none() && known_caller.is_none());
        }
    }

    /// Forgets the job `job_id` for `key`, owned by `owner`, being removed from the slab.
    pub(super) fn remove(&mut self, key: &K, owner: &C, job_id: JobId) {
        if let Self::Maps { by_key, callers } = self {
            let keyed = by_key.remove(key);
            debug_assert_eq!(keyed, Some(job_id), "by_key lost a live job");
            let owned = callers.remove(owner);
            debug_assert_eq!(owned, Some(job_id), "callers lost a live job's owner");
        }
    }

    /// Asserts the index invariant against the live jobs (debug builds only).
    pub(super) fn check<D, W, L>(&self, jobs: &Slab<Job<K, C, D, W, L>>) {
        if let Self::Maps { by_key, callers } = self {
            assert_eq!(
                by_key.len(),
                jobs.len(),
                "invariant 4: one key per live job"
            );
            assert_eq!(
                callers.len(),
                jobs.len(),
                "invariant 5: one owner per live job"
            );
            for (index, job) in jobs.iter_indexed() {
                let job_id = job_id(index, job);
                assert_eq!(by_key.get(&job.key), Some(&job_id), "invariant 4");
                assert_eq!(callers.get(&job.owner), Some(&job_id), "invariant 5");
            }
        }
    }
}

/// The id of the job in slot `index` of the job slab.
pub(super) fn job_id<K, C, D, W, L>(index: usize, job: &Job<K, C, D, W, L>) -> JobId {
    JobId {
        index,
        serial: job.serial,
    }
}
