//! [`Cursor`]: this store's place in the rotation, where its claims start their walk.
//!
//! The rotation of `Store`'s docs is one list of live jobs in submit order (id order) and a
//! cursor after the job claimed last. The list is the table, shared by every replica; the
//! cursor is this `PostgresStore` value's own, kept here in memory, so that no row is
//! written by every claim and claims of several replicas run side by side (`queries.rs`).
//! A claim walks `jobs_claimable` from the cursor's id, and from the lowest id only when
//! that finds nothing (wrapping once).
//!
//! Claims of one store may overlap in time (several workers, claims held ahead), and their
//! answers may come back in another order than they were asked. So the cursor is a
//! [`Position`] on an ever-growing line, a lap count beside the id: a claim that started at
//! `from` and took job `id` took it on `from`'s lap if `id` lies at or after `from`'s id,
//! else on the next one (it wrapped). The cursor only ever moves forward on that line, to
//! just after the furthest job any answered claim took.
//!
//! Invariants:
//!
//! 1. **The cursor never moves back.** [`Cursor::claimed`] keeps the furthest position, so
//!    an answer that arrives late (its claim started from an older cursor) cannot send the
//!    next claim over jobs the rotation has already passed.
//! 2. **One claim at a time reads the rule's cursor exactly.** A claim that starts after the
//!    last one was answered starts where the rule says: after the job claimed last. Claims
//!    that overlap start from the cursor the last answered claim left, which is the bound
//!    `Store`'s docs state for a shared store.

use std::sync::Mutex;

/// A point on the rotation's line: lap `lap`, at the first id at or above `id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Position {
    lap: u64,
    id: i64,
}

impl Position {
    /// The id a claim from here walks from.
    pub(super) fn id(self) -> i64 {
        self.id
    }
}

/// This store's cursor (module docs); it starts at the list's start.
#[derive(Debug, Default)]
pub(super) struct Cursor(Mutex<Position>);

impl Cursor {
    /// Where the next claim starts.
    pub(super) fn start(&self) -> Position {
        *self.lock()
    }

    /// A claim that started at `from` took job `id`: the cursor moves to just after it,
    /// unless another claim already moved it further (invariant 1).
    pub(super) fn claimed(&self, from: Position, id: i64) {
        let lap = if id >= from.id {
            from.lap
        } else {
            from.lap + 1
        };
        let after = Position { lap, id: id + 1 };
        let mut cursor = self.lock();
        *cursor = (*cursor).max(after);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Position> {
        // A panic cannot happen under this lock; should one ever, the position is still whole.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_moves_the_cursor_after_its_job_and_a_wrap_starts_a_lap() {
        let cursor = Cursor::default();
        let from = cursor.start();
        assert_eq!(from.id(), 0);
        cursor.claimed(from, 5);
        assert_eq!(cursor.start().id(), 6);
        // Wrapped: job 2 lies before the cursor, so it was taken on the next lap.
        let from = cursor.start();
        cursor.claimed(from, 2);
        assert_eq!(cursor.start(), Position { lap: 1, id: 3 });
    }

    #[test]
    fn a_late_answer_never_moves_the_cursor_back() {
        let cursor = Cursor::default();
        let from = cursor.start();
        // Two claims from the same start: the one that took job 9 is answered first.
        cursor.claimed(from, 9);
        cursor.claimed(from, 4);
        assert_eq!(cursor.start().id(), 10);
        // A late answer from an older start that wrapped is still behind a later lap.
        let later = cursor.start();
        cursor.claimed(later, 1); // wrapped: lap 1, after job 1
        cursor.claimed(from, 12); // lap 0, after job 12: behind lap 1
        assert_eq!(cursor.start(), Position { lap: 1, id: 2 });
    }
}
