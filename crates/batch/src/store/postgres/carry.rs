//! What one call of the store leaves for the next, to save a statement per stored target.
//!
//! - [`PendingNotes`]: the progress notes of stored targets whose jobs go on. The store
//!   statement cannot send them (a `NOTIFY` there would hold the server's notify lock through
//!   the flush to disk); the next claim statement of the same process sends them all, and a
//!   worker that stored a target claims again at once. A claim that fails on a lost
//!   connection, or is dropped halfway, puts its notes back; any other failure drops them, so
//!   that a note the server refuses cannot fail every later claim; and at most 4,096 wait.
//!   A note still pending when the process stops claiming is lost. Each loss only delays
//!   other replicas' watchers until that job's next note (its end is always announced inside
//!   the store statement), and a note sent twice is harmless (watchers keep the newer).
//! - [`StoredTotal`]: the bytes the store held right after a stored target, as that store
//!   statement saw them. The runner asks [`Store::evict_oldest`](crate::store::Store) right
//!   after every stored target, and nearly always the store is under its budget: the total
//!   answers that without a statement. It is taken once (a second check reads the table), and
//!   a submit through this store drops it (its targets count too), so a stale total never
//!   outlives the check it was made for. Changes committed by other connections while the
//!   store statement ran are not in it: the store can stay over its budget by their bytes
//!   until the next stored target's check (the type's docs say so).
//!
//! Both are plain locks held for a push or a swap, never across an `.await`.

use std::collections::VecDeque;
use std::sync::Mutex;

/// The most notes kept waiting; a newer one pushes the oldest out. A note only matters until
/// its job's next one, so a process that stopped claiming (or a server refusing `NOTIFY`)
/// must not make the queue grow without bound.
const MAX_PENDING: usize = 4096;

/// Progress-note payloads waiting for this process's next claim statement.
#[derive(Debug, Default)]
pub(super) struct PendingNotes(Mutex<VecDeque<String>>);

impl PendingNotes {
    /// Queues `payload` for the next claim.
    pub(super) fn push(&self, payload: String) {
        let mut queue = self.lock();
        if queue.len() == MAX_PENDING {
            queue.pop_front();
        }
        queue.push_back(payload);
    }

    /// Every queued payload, oldest first, for one claim statement to send. Unless
    /// [`Sending::settle`] is called, they go back to the front of the queue when it drops: a
    /// claim that failed on a lost connection, or was dropped halfway, loses none.
    pub(super) fn sending(&self) -> Sending<'_> {
        Sending {
            notes: self,
            payloads: Vec::from(std::mem::take(&mut *self.lock())),
            settled: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        // A push or a take cannot panic halfway; a poisoned lock still holds whole payloads.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Payloads on their way out with one claim statement ([`PendingNotes::sending`]).
#[derive(Debug)]
pub(super) struct Sending<'a> {
    notes: &'a PendingNotes,
    payloads: Vec<String>,
    settled: bool,
}

impl Sending<'_> {
    /// The payloads, for the statement's parameter.
    pub(super) fn payloads(&self) -> &[String] {
        &self.payloads
    }

    /// These notes are not to be sent again: the statement ran, or the server refused it for
    /// any reason but a lost connection (a `NOTIFY` it cannot take, for one), so that one bad
    /// note cannot fail every later claim. Notes are progress, superseded by the next.
    pub(super) fn settle(mut self) {
        self.settled = true;
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if self.settled || self.payloads.is_empty() {
            return;
        }
        let mut queue = self.notes.lock();
        for payload in self.payloads.drain(..).rev() {
            if queue.len() == MAX_PENDING {
                break; // the queue holds newer notes already
            }
            queue.push_front(payload);
        }
    }
}

/// The stored bytes the most recent store statement saw, until a budget check takes them.
#[derive(Debug, Default)]
pub(super) struct StoredTotal(Mutex<Option<u64>>);

impl StoredTotal {
    /// Remembers `bytes` as the newest total.
    pub(super) fn set(&self, bytes: u64) {
        *self.lock() = Some(bytes);
    }

    /// The total, if a store statement left one since the last take.
    pub(super) fn take(&self) -> Option<u64> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(notes: &PendingNotes) -> Vec<String> {
        notes.lock().iter().cloned().collect()
    }

    #[test]
    fn notes_sent_are_gone_and_notes_not_sent_come_back_first() {
        let notes = PendingNotes::default();
        notes.push("a".into());
        notes.push("b".into());
        let sending = notes.sending();
        assert_eq!(sending.payloads(), ["a", "b"]);
        notes.push("c".into()); // stored while the claim runs
        drop(sending); // the claim was dropped halfway
        assert_eq!(queued(&notes), ["a", "b", "c"]);
        drop(notes.sending()); // a lost connection: tried again
        assert_eq!(queued(&notes), ["a", "b", "c"]);
        notes.sending().settle(); // sent, or refused for good
        assert!(queued(&notes).is_empty());
    }

    #[test]
    fn at_most_max_pending_wait_and_the_oldest_go_first() {
        let notes = PendingNotes::default();
        for n in 0..MAX_PENDING + 2 {
            notes.push(n.to_string());
        }
        let queue = queued(&notes);
        assert_eq!(queue.len(), MAX_PENDING);
        assert_eq!(queue[0], "2");
        let sending = notes.sending();
        notes.push("new".into());
        drop(sending); // put back only while there is room: the newer note stays
        let queue = queued(&notes);
        assert_eq!(queue.len(), MAX_PENDING);
        assert_eq!(queue.last().map(String::as_str), Some("new"));
    }

    #[test]
    fn a_total_is_taken_once() {
        let total = StoredTotal::default();
        assert_eq!(total.take(), None);
        total.set(7);
        total.set(9);
        assert_eq!(total.take(), Some(9));
        assert_eq!(total.take(), None);
    }
}
