//! A worker whose queue just ran dry looks for the next task a little, without the lock,
//! before it goes idle.
//!
//! Going idle costs three lock round trips: the worker's own, the submit that then finds an
//! idle worker and claims it (instead of accepting by compare-and-swap), and the worker's
//! again when it takes the claim. With one fast producer feeding faster workers that is
//! every few tasks. A searching worker is between states (neither idle nor running, so
//! submits still skip the lock) and takes a task that arrives within a few microseconds
//! with one [`Lane::reserve`](super::lane::Lane::reserve), lock-free. This is the search
//! entry ([`fast::search`](super::fast::search)), which says why it is equivalent to the
//! locked step it stands in for.
//!
//! Whether it searches follows the rules of [`spin`](super::spin), their one home, read and
//! updated here without the lock (they are hints: a wrong guess costs time, never a rule).
//! What differs: the threads counted against the CPUs are the running tasks and the
//! searching workers, this one included; a search is the pause rounds only
//! ([`Plan::PAUSES`]), never a yield; and all workers share one credit for searching, kept
//! in atomics rather than under the lock.

use super::lane::Lane;
use super::spin::{Budget, CREDIT_MAX, Outcome, PROBE_EVERY, Plan, spin};
use crate::sync::{AtomicUsize, Ordering};

/// The searching workers and whether searching paid lately.
pub(super) struct Search {
    searching: AtomicUsize,
    credit: AtomicUsize,
    refused: AtomicUsize,
}

impl Search {
    pub(super) fn new() -> Self {
        Self {
            searching: AtomicUsize::new(0),
            credit: AtomicUsize::new(CREDIT_MAX as usize),
            refused: AtomicUsize::new(0),
        }
    }

    /// Searches the lane for a queued task, if the rules allow; `true` when one was
    /// reserved (the caller pops it).
    pub(super) fn find(&self, lane: &Lane, cpus: usize) -> bool {
        let searching = self.searching.fetch_add(1, Ordering::AcqRel) + 1;
        let found = cpus >= 2
            && lane.counts().running + searching <= cpus
            && self.pays()
            && self.spin(lane);
        self.searching.fetch_sub(1, Ordering::AcqRel);
        found
    }

    fn pays(&self) -> bool {
        if self.credit.load(Ordering::Relaxed) > 0 {
            return true;
        }
        let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        if refused >= PROBE_EVERY as usize {
            self.refused.store(0, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// The search itself; records whether it paid.
    fn spin(&self, lane: &Lane) -> bool {
        // `spin::spin` stops at the first `true`, so at most one task is reserved.
        let mut budget = Budget::default();
        if spin(&mut budget, Plan::PAUSES, || lane.reserve()) == Outcome::Paid {
            self.credit.store(CREDIT_MAX as usize, Ordering::Relaxed);
            return true;
        }
        let _ = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |credit| {
                credit.checked_sub(1)
            });
        false
    }
}
