//! The in-memory store's page indexes: every stored job's id by status and by caller and
//! status, and one job's stored targets by state, so that a page ([`crate::page`]) costs
//! O(log n + page) however many jobs the store holds or targets a job has.
//!
//! # Invariants
//!
//! 1. `all` holds exactly the stored jobs' ids; `by_status[s]` exactly those in status `s`;
//!    `by_caller_status[(c, s)]` exactly caller `c`'s in status `s`. No empty set is kept.
//!    (A caller's jobs of every status are `State::by_caller`, invariant 10 of `state.rs`.)
//! 2. A job's `done_at` and `failed_at` hold the indexes of its `Done` and `Failed` results,
//!    ascending (targets are stored in index order, so each store appends); its pending
//!    targets are those from `next` on (`state.rs`, invariant 4).
//!
//! `State` keeps them in the same critical section as the change they follow: a job's
//! status changes only at its submit, its first claim, its end and its eviction, each of
//! which calls [`Listing::insert`], [`Listing::moved`] or [`Listing::remove`].

use std::collections::{BTreeSet, HashMap};

use crate::job::{Caller, JobStatus};

/// Every stored job's id by status, and by caller and status (invariant 1).
#[derive(Debug, Default)]
pub(super) struct Listing {
    all: BTreeSet<u64>,
    by_status: HashMap<JobStatus, BTreeSet<u64>>,
    by_caller_status: HashMap<(Caller, JobStatus), BTreeSet<u64>>,
}

/// Removes `id` from the set under `key`, and the set if it is empty now.
fn take_out<K: std::hash::Hash + Eq>(map: &mut HashMap<K, BTreeSet<u64>>, key: K, id: u64) {
    if let std::collections::hash_map::Entry::Occupied(mut set) = map.entry(key) {
        set.get_mut().remove(&id);
        if set.get().is_empty() {
            set.remove();
        }
    }
}

impl Listing {
    /// A new job `id` of `caller`, in `status`.
    pub(super) fn insert(&mut self, caller: &Caller, status: JobStatus, id: u64) {
        self.all.insert(id);
        self.by_status.entry(status).or_default().insert(id);
        self.by_caller_status
            .entry((caller.clone(), status))
            .or_default()
            .insert(id);
    }

    /// Job `id` of `caller` moved from status `from` to `to`.
    pub(super) fn moved(&mut self, caller: &Caller, from: JobStatus, to: JobStatus, id: u64) {
        if from == to {
            return;
        }
        take_out(&mut self.by_status, from, id);
        take_out(&mut self.by_caller_status, (caller.clone(), from), id);
        self.by_status.entry(to).or_default().insert(id);
        self.by_caller_status
            .entry((caller.clone(), to))
            .or_default()
            .insert(id);
    }

    /// Job `id` of `caller`, in `status`, is no longer stored.
    pub(super) fn remove(&mut self, caller: &Caller, status: JobStatus, id: u64) {
        self.all.remove(&id);
        take_out(&mut self.by_status, status, id);
        take_out(&mut self.by_caller_status, (caller.clone(), status), id);
    }

    /// Every stored job's id.
    pub(super) fn all(&self) -> &BTreeSet<u64> {
        &self.all
    }

    /// The ids of the stored jobs in `status`, if any.
    pub(super) fn in_status(&self, status: JobStatus) -> Option<&BTreeSet<u64>> {
        self.by_status.get(&status)
    }

    /// The ids of `caller`'s stored jobs in `status`, if any.
    pub(super) fn of_caller_in(
        &self,
        caller: &Caller,
        status: JobStatus,
    ) -> Option<&BTreeSet<u64>> {
        self.by_caller_status.get(&(caller.clone(), status))
    }

    /// Whether job `id` of `caller` is listed under `status` (invariant 1, for `State`'s
    /// checks).
    pub(super) fn lists(&self, caller: &Caller, status: JobStatus, id: u64) -> bool {
        self.all.contains(&id)
            && self.by_status.get(&status).is_some_and(|s| s.contains(&id))
            && self
                .of_caller_in(caller, status)
                .is_some_and(|s| s.contains(&id))
    }

    /// How many ids each index holds: `(all, by status, by caller and status)`; the three
    /// agree when invariant 1 holds.
    pub(super) fn sizes(&self) -> (usize, usize, usize) {
        let sum = |sets: &mut dyn Iterator<Item = &BTreeSet<u64>>| sets.map(BTreeSet::len).sum();
        (
            self.all.len(),
            sum(&mut self.by_status.values()),
            sum(&mut self.by_caller_status.values()),
        )
    }
}

/// The indexes past `after` (all of them if `None`) in `sorted`, an ascending list: where a
/// targets page of one state starts (invariant 2), found by binary search.
pub(super) fn from_after(sorted: &[usize], after: Option<usize>) -> &[usize] {
    let start = after.map_or(0, |after| sorted.partition_point(|&i| i <= after));
    &sorted[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_listed_under_its_one_status() {
        let ann = Caller::new("ann");
        let mut listing = Listing::default();
        listing.insert(&ann, JobStatus::Queued, 1);
        listing.moved(&ann, JobStatus::Queued, JobStatus::Running, 1);
        assert!(listing.lists(&ann, JobStatus::Running, 1));
        assert!(listing.in_status(JobStatus::Queued).is_none());
        assert_eq!(listing.sizes(), (1, 1, 1));
        listing.remove(&ann, JobStatus::Running, 1);
        assert_eq!(listing.sizes(), (0, 0, 0));
    }

    #[test]
    fn a_page_of_one_state_starts_past_its_key() {
        assert_eq!(from_after(&[1, 4, 9], None), &[1, 4, 9]);
        assert_eq!(from_after(&[1, 4, 9], Some(4)), &[9]);
        assert_eq!(from_after(&[1, 4, 9], Some(5)), &[9]);
        assert_eq!(from_after(&[1, 4, 9], Some(usize::MAX)), &[] as &[usize]);
    }
}
