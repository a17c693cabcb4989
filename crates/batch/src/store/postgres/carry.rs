//! What one call of the store leaves for the next, to save a statement per stored target.
//!
//! - [`PendingNotes`]: the progress notes of stored targets whose jobs go on. The store
//!   statement cannot send them (a `NOTIFY` there would hold the server's notify lock through
//!   the flush to disk); the next claim statement of the same process sends them all, and a
//!   worker that stored a target claims again at once. A note still pending when the process
//!   stops claiming is lost, which only delays other replicas' watchers until that job's next
//!   note (its end is always announced inside the store statement).
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

use std::sync::Mutex;

/// Progress-note payloads waiting for this process's next claim statement.
#[derive(Debug, Default)]
pub(super) struct PendingNotes(Mutex<Vec<String>>);

impl PendingNotes {
    /// Queues `payload` for the next claim.
    pub(super) fn push(&self, payload: String) {
        self.lock().push(payload);
    }

    /// Every queued payload, oldest first, leaving none.
    pub(super) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // A push or a take cannot panic halfway; a poisoned lock still holds whole payloads.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
