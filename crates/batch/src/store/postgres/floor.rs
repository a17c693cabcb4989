//! [`ServedFloor`]: where a claim's walk of `jobs_claimable` starts.
//!
//! The claim's pick walks `jobs_claimable` (`served, id`) from its low end and stops at the
//! first job it can take (`queries.rs`). Every claim moves its job's stamp to the high end and
//! leaves the old entry behind, dead. Scans mark dead entries as they pass, but the leaf pages
//! holding them stay until a vacuum, and they all lie *below* every live entry (a stamp only
//! grows). So a pick that starts at the low end reads every page of dead entries left since
//! the last vacuum, a cost that grows with the claims made since (about 21 leaf pages per
//! 5,000 claims, `docs/batch.md`). A pick bounded by `served >= floor` descends the tree
//! straight to the floor instead, and walks only the entries left since the floor was read.
//!
//! Invariants:
//!
//! 1. **A floor is never above a live job's stamp.** The floor is the lowest stamp of a live
//!    job, read in a `READ COMMITTED` transaction that holds the submit lock shared before
//!    it reads (`queries::served_floor`), so no submit that drew its stamp before the read is
//!    still uncommitted (invisible to it). After the read, a live job's stamp only grows (a
//!    claim draws a new one from the `serves` sequence, nothing lowers one), and a job
//!    submitted later draws a stamp above every stamp drawn before, the floor's included. So
//!    a floor once read stays one, and the next read may start its own walk at it.
//! 2. **One read at a time per store, at most every [`READ_EVERY`].** [`ServedFloor::due`]
//!    hands out one [`Reading`]; the next is due [`READ_EVERY`] after that one began, whether
//!    it succeeded, failed or was dropped (so an unreachable server costs a claim at most one
//!    failed read per interval). A failed read keeps the floor it had, which invariant 1
//!    keeps valid.
//! 3. **A read at least [`WHOLE_READ_EVERY`] after the last whole one starts its own walk
//!    at 0**, not at the floor it replaces. Invariant 1 leans on stamps only ever growing;
//!    should one still lie below the floor (a job restored from a backup, the `serves`
//!    sequence set back by hand), its job waits for that read (a second under load, one
//!    poll interval on an idle store) instead of forever.
//!
//! The floor starts at 0, which bounds nothing: a store's first claim reads it, whole.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a floor serves before the next claim reads it again. Between two reads a pick
/// walks past the entries of the claims made since the last (about 50 at 5,000 claims a
/// second, each a heap visit while it is only recently dead); a read costs the claim that
/// makes it one round trip (`queries::served_floor`). Read every 100 ms, the store-and-claim
/// statement read twice the buffers it reads at 10 ms (`docs/batch.md`).
pub(super) const READ_EVERY: Duration = Duration::from_millis(10);

/// How long reads start their walk at the floor before one starts it at 0 (invariant 3).
pub(super) const WHOLE_READ_EVERY: Duration = Duration::from_secs(1);

/// The lowest stamp a claim's pick needs to look at, read from the table at most every
/// [`READ_EVERY`].
#[derive(Debug, Default)]
pub(super) struct ServedFloor(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    floor: i64,
    /// When the last read began.
    read_at: Option<Instant>,
    /// A read is under way.
    reading: bool,
    /// When the last whole read began.
    whole_at: Option<Instant>,
}

impl ServedFloor {
    /// The floor for the pick now.
    pub(super) fn get(&self) -> i64 {
        self.lock().floor
    }

    /// A read to make now, if one is due and none is under way.
    pub(super) fn due(&self) -> Option<Reading<'_>> {
        self.due_at(Instant::now())
    }

    fn due_at(&self, now: Instant) -> Option<Reading<'_>> {
        let mut state = self.lock();
        let due = state
            .read_at
            .is_none_or(|at| now.saturating_duration_since(at) >= READ_EVERY);
        if state.reading || !due {
            return None;
        }
        state.reading = true;
        state.read_at = Some(now);
        let whole = state
            .whole_at
            .is_none_or(|at| now.saturating_duration_since(at) >= WHOLE_READ_EVERY);
        let from = if whole {
            state.whole_at = Some(now);
            0
        } else {
            state.floor
        };
        Some(Reading { floor: self, from })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The one read under way: [`set`](Self::set) what it found; dropped without, the floor
/// stays as it was.
#[derive(Debug)]
pub(super) struct Reading<'a> {
    floor: &'a ServedFloor,
    from: i64,
}

impl Reading<'_> {
    /// Where the read's own walk starts: the floor, or 0 once every [`WHOLE_READ_EVERY`].
    pub(super) fn from(&self) -> i64 {
        self.from
    }

    /// The lowest stamp of a live job, or `None` when no job is live (the floor then stays:
    /// every job submitted later gets a higher stamp anyway).
    pub(super) fn set(self, lowest: Option<i64>) {
        if let Some(lowest) = lowest {
            self.floor.lock().floor = lowest;
        }
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.floor.lock().reading = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_claim_reads_and_the_next_read_waits_its_interval() {
        let floor = ServedFloor::default();
        let start = Instant::now();
        assert_eq!(floor.get(), 0, "no bound before the first read");
        let reading = floor.due_at(start).expect("the first claim reads");
        assert_eq!(reading.from(), 0, "the first read is whole");
        assert!(floor.due_at(start).is_none(), "one read at a time");
        reading.set(Some(42));
        assert_eq!(floor.get(), 42);
        let almost = start + READ_EVERY - Duration::from_millis(1);
        assert!(
            floor.due_at(almost).is_none(),
            "not due within the interval"
        );
        let reading = floor.due_at(start + READ_EVERY).expect("due after it");
        assert_eq!(reading.from(), 42, "the next starts at the floor");
        reading.set(Some(17));
        assert_eq!(floor.get(), 17, "a read replaces the floor");
    }

    #[test]
    fn a_failed_or_empty_read_keeps_the_floor_and_waits_its_interval() {
        let floor = ServedFloor::default();
        let start = Instant::now();
        floor.due_at(start).unwrap().set(Some(9));
        let later = start + READ_EVERY;
        drop(floor.due_at(later).unwrap()); // failed, or its call dropped
        assert_eq!(floor.get(), 9);
        assert!(
            floor.due_at(later).is_none(),
            "a failed read counts for its interval"
        );
        floor.due_at(later + READ_EVERY).unwrap().set(None); // no live job
        assert_eq!(floor.get(), 9);
    }

    #[test]
    fn a_read_is_whole_once_a_second() {
        let floor = ServedFloor::default();
        let start = Instant::now();
        let mut whole = Vec::new();
        for n in 0..250u32 {
            let reading = floor.due_at(start + READ_EVERY * n).unwrap();
            if reading.from() == 0 {
                whole.push(n);
            }
            reading.set(Some(1_000));
        }
        assert_eq!(whole, [0, 100, 200], "reads 10 ms apart");
        // On an idle store reads are rarer (a claim at each poll): each is whole.
        let later = start + Duration::from_secs(10);
        assert_eq!(floor.due_at(later).unwrap().from(), 0);
        let next_poll = floor.due_at(later + Duration::from_secs(5)).unwrap();
        assert_eq!(next_poll.from(), 0);
    }
}
