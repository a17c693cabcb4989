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
//! else on the next one (it wrapped). A claim only ever moves the cursor forward on that
//! line, to just after the furthest job any answered claim took.
//!
//! A claim that ends released (never fetched, or given up) hands its turn back
//! ([`Cursor::released`]): each answered claim that moved the cursor keeps, by its token
//! until it ends ([`Cursor::ended`]), where the cursor stood before its answer and where it
//! put it; if the cursor still stands there when the claim is released, it goes back. With
//! one claim at a time, "before its answer" is where the claim's walk started (the rule);
//! with overlapping claims it may be further on, past a claim answered meanwhile, whose turn
//! stays taken.
//!
//! Invariants:
//!
//! 1. **The cursor never moves back over another claim's turn.** [`Cursor::claimed`] keeps
//!    the furthest position, so an answer that arrives late (its claim started from an older
//!    cursor) cannot send the next claim over jobs the rotation has already passed. Only a
//!    release moves it back, and only from the very position its own claim put it at (the
//!    compare is lap-aware: the same id on a later lap is another claim's).
//! 2. **One claim at a time reads the rule's cursor exactly.** A claim that starts after the
//!    last one was answered starts where the rule says: after the job claimed last. Claims
//!    that overlap start from the cursor the last answered claim left, which is the bound
//!    `Store`'s docs state for a shared store.

use std::collections::HashMap;
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

/// The most claims whose turns are kept at once (see [`Cursor::claimed`]): far above what
/// the workers of one store hold, so the table stays bounded however many claims end
/// without a word to this store.
const MAX_TURNS_KEPT: usize = 4096;

/// The cursor and the turns of the claims out.
#[derive(Debug, Default)]
struct Turns {
    /// Where the next claim starts.
    at: Position,
    /// Per claim still out that moved the cursor, by token: where the cursor stood before
    /// its answer, and where it put it (just after its job).
    out: HashMap<u64, (Position, Position)>,
}

/// This store's cursor (module docs); it starts at the list's start.
#[derive(Debug, Default)]
pub(super) struct Cursor(Mutex<Turns>);

impl Cursor {
    /// Where the next claim starts.
    pub(super) fn start(&self) -> Position {
        self.lock().at
    }

    /// A claim that started at `from` took job `id` under `token`: the cursor moves to just
    /// after it, unless another claim already moved it further (invariant 1).
    pub(super) fn claimed(&self, from: Position, id: i64, token: u64) {
        let lap = if id >= from.id {
            from.lap
        } else {
            from.lap + 1
        };
        let after = Position { lap, id: id + 1 };
        let mut turns = self.lock();
        if after > turns.at {
            let before = std::mem::replace(&mut turns.at, after);
            if turns.out.len() >= MAX_TURNS_KEPT {
                // Claims that never ended here (a lease lost with its claim unanswered, a
                // replica's rescue): a worker holds at most three claims, so a table this
                // full is made of those, whose turns nobody will hand back.
                turns.out.clear();
            }
            turns.out.insert(token, (before, after));
        }
    }

    /// The claim `token` ended released: it hands its turn back if the cursor still stands
    /// where it put it (invariant 1).
    pub(super) fn released(&self, token: u64) {
        let mut turns = self.lock();
        if let Some((before, after)) = turns.out.remove(&token)
            && turns.at == after
        {
            turns.at = before;
        }
    }

    /// The claim `token` ended otherwise (stored, busy, stale): its turn stays taken.
    pub(super) fn ended(&self, token: u64) {
        self.lock().out.remove(&token);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
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
        cursor.claimed(from, 5, 1);
        assert_eq!(cursor.start().id(), 6);
        // Wrapped: job 2 lies before the cursor, so it was taken on the next lap.
        let from = cursor.start();
        cursor.claimed(from, 2, 2);
        assert_eq!(cursor.start(), Position { lap: 1, id: 3 });
    }

    #[test]
    fn a_late_answer_never_moves_the_cursor_back() {
        let cursor = Cursor::default();
        let from = cursor.start();
        // Two claims from the same start: the one that took job 9 is answered first.
        cursor.claimed(from, 9, 1);
        cursor.claimed(from, 4, 2);
        assert_eq!(cursor.start().id(), 10);
        // A late answer from an older start that wrapped is still behind a later lap.
        let later = cursor.start();
        cursor.claimed(later, 1, 3); // wrapped: lap 1, after job 1
        cursor.claimed(from, 12, 4); // lap 0, after job 12: behind lap 1
        assert_eq!(cursor.start(), Position { lap: 1, id: 2 });
    }

    #[test]
    fn a_released_claim_hands_its_turn_back_unless_another_moved_the_cursor() {
        let cursor = Cursor::default();
        let from = cursor.start();
        cursor.claimed(from, 5, 1);
        cursor.released(1);
        assert_eq!(cursor.start(), from);
        // Wrapped onto lap 1, then released: back to lap 0, after job 5.
        cursor.claimed(from, 5, 2);
        let at = cursor.start();
        cursor.claimed(at, 2, 3);
        cursor.released(3);
        assert_eq!(cursor.start(), at);
        // Another claim moved the cursor since: the release moves nothing.
        cursor.claimed(at, 7, 4);
        cursor.released(2);
        assert_eq!(cursor.start(), Position { lap: 0, id: 8 });
        // A claim ended otherwise keeps its turn; a later release of it changes nothing.
        let at = cursor.start();
        cursor.claimed(at, 9, 5);
        cursor.ended(5);
        cursor.released(5);
        assert_eq!(cursor.start(), Position { lap: 0, id: 10 });
    }

    #[test]
    fn a_release_never_moves_the_cursor_back_over_a_claim_answered_meanwhile() {
        let cursor = Cursor::default();
        let from = cursor.start();
        // Two overlapping claims from the same start: job 3's answered first, then job 5's.
        cursor.claimed(from, 3, 1);
        cursor.claimed(from, 5, 2);
        cursor.released(2);
        assert_eq!(
            cursor.start(),
            Position { lap: 0, id: 4 },
            "job 3's turn stays"
        );
        // A late answer moved nothing, so its release moves nothing either.
        cursor.claimed(from, 1, 3);
        cursor.released(3);
        assert_eq!(cursor.start(), Position { lap: 0, id: 4 });
    }
}
