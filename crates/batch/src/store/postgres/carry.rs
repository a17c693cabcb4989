//! What one call of the store leaves for the next, to save a statement per stored target.
//!
//! - [`PendingNotes`]: the notes of claims and stores that the notifier (`notifier.rs`) is
//!   to send after their commits, newest per job. A job's start and end are due at once;
//!   progress of a job that goes on at most every [`PostgresOptions::progress_interval`]
//!   after the last send (every `NOTIFY` wakes the listening connection of every replica, so
//!   sending one per stored target cost each replica work per target of all the others: the
//!   flat scaling measured in the commit that brought this carry in; a job's progress only ever needs its newest
//!   note). A send that fails on a lost connection, or is dropped halfway, puts its notes
//!   back unless a newer note of the job came meanwhile; any other failure drops them, so
//!   that a note the server refuses cannot fail every later send; and at most 4,096 jobs'
//!   notes wait. A note still waiting when the process stops is lost. Each loss or delay
//!   only delays other replicas' watchers until that job's next note or the listener's next
//!   `Missed` (`listen.rs`), and a note sent twice is harmless (watchers keep the newer).
//! - [`StoredTotal`]: the bytes the store holds, as last read from the table, plus the
//!   results this process stored since. The runner asks
//!   [`WorkerStore::evict_oldest`](crate::store::WorkerStore::evict_oldest) right after every stored target, and
//!   nearly always the store is under its budget: the total answers that without a
//!   statement. It is read from the table (one statement) when it is older than
//!   [`TOTAL_READ_EVERY`], and dropped by a submit through this store, by a check that finds
//!   the store over its budget, and by an eviction. So what other replicas stored or
//!   submitted within the last [`TOTAL_READ_EVERY`] can be missing from a check: the store can
//!   stay over its budget by those bytes until a check reads the table again (the type's
//!   docs say so). Summing the table inside every store statement instead cost that
//!   statement a scan of the whole `jobs` heap (measured in the commit that brought this carry in).
//!
//! Both are plain locks held for a push or a swap, never across an `.await`.
//!
//! [`PostgresOptions::progress_interval`]: super::PostgresOptions::progress_interval

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::StoreError;
use crate::job::JobId;

/// How long a total read from the table answers budget checks, with this process's own
/// stored results added to it.
pub(super) const TOTAL_READ_EVERY: Duration = Duration::from_millis(100);

/// The most jobs whose notes wait; a note of one more job is dropped. A note only matters
/// until its job's next one, so a process that stopped claiming (or a server refusing
/// `NOTIFY`) must not make the map grow without bound.
const MAX_PENDING: usize = 4096;

/// Note payloads waiting for the notifier, newest per job.
#[derive(Debug)]
pub(super) struct PendingNotes {
    state: Mutex<Notes>,
    /// The shortest time between two sends of progress alone.
    interval: Duration,
}

#[derive(Debug, Default)]
struct Notes {
    by_job: HashMap<JobId, String>,
    /// A start or an end waits: the notes are due at once.
    urgent: bool,
    /// When the notifier last took notes to send.
    last_sent: Option<Instant>,
}

impl PendingNotes {
    /// No notes; progress alone is sent at most once per `interval` (`Duration::ZERO`: at once).
    pub(super) fn new(interval: Duration) -> Self {
        Self {
            state: Mutex::new(Notes::default()),
            interval,
        }
    }

    /// Keeps `payload` as job `job`'s newest note, replacing an older one still waiting;
    /// `at_once` (a start or an end) makes the waiting notes due now. Answers whether the
    /// notifier must be woken: nothing was waiting before, or the notes just became due.
    pub(super) fn push(&self, job: JobId, payload: String, at_once: bool) -> bool {
        let mut notes = self.lock();
        let was_empty = notes.by_job.is_empty();
        let was_urgent = notes.urgent;
        if notes.by_job.len() < MAX_PENDING || notes.by_job.contains_key(&job) {
            notes.by_job.insert(job, payload);
            notes.urgent |= at_once;
        }
        was_empty || (notes.urgent && !was_urgent)
    }

    /// How long until the waiting notes are due (zero: now); `None` when none wait.
    pub(super) fn due_in(&self, now: Instant) -> Option<Duration> {
        self.due_in_locked(&self.lock(), now)
    }

    fn due_in_locked(&self, notes: &Notes, now: Instant) -> Option<Duration> {
        if notes.by_job.is_empty() {
            return None;
        }
        let since = notes
            .last_sent
            .map_or(self.interval, |last| now.saturating_duration_since(last));
        Some(if notes.urgent {
            Duration::ZERO
        } else {
            self.interval.saturating_sub(since)
        })
    }

    /// Every waiting note, for one send, if they are due (else none). Unless
    /// [`Sending::answered`] settles them, they go back when it drops (a newer note of the
    /// same job wins): a send that failed on a lost connection, or was dropped halfway,
    /// loses none.
    pub(super) fn sending(&self) -> Sending<'_> {
        self.sending_at(Instant::now(), false)
    }

    /// Every waiting note, due or not: the last send before the store goes away.
    pub(super) fn sending_all(&self) -> Sending<'_> {
        self.sending_at(Instant::now(), true)
    }

    fn sending_at(&self, now: Instant, all: bool) -> Sending<'_> {
        let mut notes = self.lock();
        let due = all || self.due_in_locked(&notes, now) == Some(Duration::ZERO);
        let taken: Vec<(JobId, String)> = if due {
            notes.last_sent = Some(now);
            notes.urgent = false;
            notes.by_job.drain().collect()
        } else {
            Vec::new()
        };
        Sending {
            notes: self,
            payloads: taken.iter().map(|(_, payload)| payload.clone()).collect(),
            taken,
            settled: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Notes> {
        // A push or a take cannot panic halfway; a poisoned lock still holds whole payloads.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Payloads on their way out with one send ([`PendingNotes::sending`]).
#[derive(Debug)]
pub(super) struct Sending<'a> {
    notes: &'a PendingNotes,
    taken: Vec<(JobId, String)>,
    /// The same payloads, as the statement's parameter.
    payloads: Vec<String>,
    settled: bool,
}

impl Sending<'_> {
    /// The payloads, for the statement's parameter (empty when none are due).
    pub(super) fn payloads(&self) -> &[String] {
        &self.payloads
    }

    /// Takes the send's answer: these notes are not to be sent again if it ran, or if
    /// the server refused it for any reason but a lost connection (a `NOTIFY` it cannot
    /// take, for one), so that one bad note cannot fail every later send; after a lost
    /// connection they are put back (on drop). Notes are progress, superseded by the next.
    pub(super) fn answered<R>(mut self, answer: &Result<R, StoreError>) {
        self.settled = !matches!(answer, Err(StoreError::Unavailable(_)));
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if self.settled || self.taken.is_empty() {
            return;
        }
        let mut notes = self.notes.lock();
        // Due again at once: they were meant to go out now.
        notes.last_sent = None;
        for (job, payload) in self.taken.drain(..) {
            if notes.by_job.len() < MAX_PENDING || notes.by_job.contains_key(&job) {
                notes.by_job.entry(job).or_insert(payload); // a newer note wins
            }
        }
    }
}

/// The bytes the store holds, as last read from the table plus this process's results since
/// (while younger than [`TOTAL_READ_EVERY`]).
#[derive(Debug, Default)]
pub(super) struct StoredTotal(Mutex<Option<Reading>>);

#[derive(Debug, Clone, Copy)]
struct Reading {
    bytes: u64,
    at: Instant,
}

impl StoredTotal {
    /// Remembers `bytes`, just read from the table.
    pub(super) fn read(&self, bytes: u64) {
        self.read_at(bytes, Instant::now());
    }

    fn read_at(&self, bytes: u64, at: Instant) {
        *self.lock() = Some(Reading { bytes, at });
    }

    /// Counts a result this process stored.
    pub(super) fn add(&self, bytes: u64) {
        if let Some(reading) = self.lock().as_mut() {
            reading.bytes = reading.bytes.saturating_add(bytes);
        }
    }

    /// The total, if one was read less than [`TOTAL_READ_EVERY`] ago and not dropped since.
    pub(super) fn current(&self) -> Option<u64> {
        self.current_at(Instant::now())
    }

    fn current_at(&self, now: Instant) -> Option<u64> {
        let reading = (*self.lock())?;
        (now.saturating_duration_since(reading.at) < TOTAL_READ_EVERY).then_some(reading.bytes)
    }

    /// Drops the total: the next check reads the table.
    pub(super) fn forget(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Reading>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(notes: &PendingNotes) -> Vec<String> {
        let mut payloads: Vec<String> = notes.lock().by_job.values().cloned().collect();
        payloads.sort();
        payloads
    }

    fn job(n: u64) -> JobId {
        JobId::new(n)
    }

    #[test]
    fn notes_sent_are_gone_and_notes_not_sent_come_back_unless_newer() {
        let notes = PendingNotes::new(Duration::ZERO);
        notes.push(job(1), "1a".into(), false);
        notes.push(job(2), "2a".into(), false);
        let sending = notes.sending();
        let mut sent = sending.payloads().to_vec();
        sent.sort();
        assert_eq!(sent, ["1a", "2a"]);
        notes.push(job(2), "2b".into(), false); // stored while the send runs
        notes.push(job(3), "3a".into(), false);
        drop(sending); // the send was dropped halfway
        assert_eq!(
            queued(&notes),
            ["1a", "2b", "3a"],
            "job 2's newer note wins"
        );
        let lost: Result<(), StoreError> = Err(StoreError::Unavailable("connection lost".into()));
        notes.sending().answered(&lost); // tried again
        assert_eq!(queued(&notes), ["1a", "2b", "3a"]);
        let refused: Result<(), StoreError> = Err(StoreError::Failed("no".into()));
        notes.sending().answered(&refused); // refused for good
        assert!(queued(&notes).is_empty());
        notes.push(job(4), "4a".into(), false);
        notes.sending().answered(&Ok(())); // sent
        assert!(queued(&notes).is_empty());
    }

    #[test]
    fn only_the_newest_note_of_a_job_waits() {
        let notes = PendingNotes::new(Duration::ZERO);
        notes.push(job(1), "1a".into(), false);
        notes.push(job(1), "1b".into(), false);
        notes.push(job(2), "2a".into(), false);
        assert_eq!(queued(&notes), ["1b", "2a"]);
        notes.push(job(2), "2 ended".into(), true);
        assert_eq!(
            queued(&notes),
            ["1b", "2 ended"],
            "an end replaces the job's progress"
        );
    }

    #[test]
    fn a_start_or_an_end_is_due_at_once_and_wakes_the_notifier_once() {
        let interval = Duration::from_millis(100);
        let notes = PendingNotes::new(interval);
        let start = Instant::now();
        assert_eq!(notes.due_in(start), None, "nothing waits");
        assert!(
            notes.push(job(1), "1a".into(), false),
            "the first note wakes"
        );
        notes.sending_at(start, false).answered(&Ok(()));
        assert!(
            notes.push(job(1), "1b".into(), false),
            "the first note since the send"
        );
        assert!(
            !notes.push(job(2), "2a".into(), false),
            "progress waits its turn"
        );
        let soon = start + Duration::from_millis(40);
        assert_eq!(notes.due_in(soon), Some(Duration::from_millis(60)));
        assert!(
            notes.sending_at(soon, false).payloads().is_empty(),
            "not due yet"
        );
        assert!(
            notes.push(job(3), "3 ended".into(), true),
            "an end makes them due"
        );
        assert!(!notes.push(job(4), "4 started".into(), true), "already due");
        assert_eq!(notes.due_in(soon), Some(Duration::ZERO));
        let sending = notes.sending_at(soon, false);
        let mut sent = sending.payloads().to_vec();
        sent.sort();
        assert_eq!(
            sent,
            ["1b", "2a", "3 ended", "4 started"],
            "everything waiting goes"
        );
        sending.answered(&Ok(()));
        notes.push(job(1), "1c".into(), false);
        assert_eq!(
            notes.due_in(soon),
            Some(interval),
            "progress is due an interval after the last send"
        );
    }

    #[test]
    fn notes_go_out_at_most_once_per_interval() {
        let notes = PendingNotes::new(Duration::from_millis(100));
        let start = Instant::now();
        notes.push(job(1), "1a".into(), false);
        let first = notes.sending_at(start, false);
        assert_eq!(first.payloads(), ["1a"], "the first send goes at once");
        first.answered(&Ok(()));
        notes.push(job(1), "1b".into(), false);
        let early = notes.sending_at(start + Duration::from_millis(99), false);
        assert!(early.payloads().is_empty(), "not yet due");
        early.answered(&Ok(())); // an empty take drops nothing
        assert_eq!(queued(&notes), ["1b"]);
        let due = notes.sending_at(start + Duration::from_millis(100), false);
        assert_eq!(due.payloads(), ["1b"]);
        drop(due); // a lost connection puts it back, due again at once
        let retry = notes.sending_at(start + Duration::from_millis(101), false);
        assert_eq!(retry.payloads(), ["1b"]);
    }

    #[test]
    fn at_most_max_pending_jobs_wait_and_a_waiting_job_still_updates() {
        let notes = PendingNotes::new(Duration::ZERO);
        for n in 0..MAX_PENDING as u64 + 2 {
            notes.push(job(n), n.to_string(), false);
        }
        assert_eq!(notes.lock().by_job.len(), MAX_PENDING);
        notes.push(job(0), "newer".into(), false);
        assert_eq!(
            notes.lock().by_job.get(&job(0)).map(String::as_str),
            Some("newer")
        );
        let sending = notes.sending();
        notes.push(job(1_000_000), "new".into(), false);
        drop(sending); // put back: the new job's note and all the old ones fit again?
        let pending = notes.lock().by_job.len();
        assert_eq!(pending, MAX_PENDING, "never more than the cap");
        assert!(
            notes.lock().by_job.contains_key(&job(1_000_000)),
            "the newer note stays"
        );
    }

    #[test]
    fn a_total_counts_own_results_until_it_is_old_or_dropped() {
        let total = StoredTotal::default();
        let start = Instant::now();
        assert_eq!(total.current_at(start), None, "nothing read yet");
        total.add(5);
        assert_eq!(total.current_at(start), None, "a result alone is no total");
        total.read_at(100, start);
        total.add(7);
        let soon = start + TOTAL_READ_EVERY / 2;
        assert_eq!(total.current_at(soon), Some(107));
        assert_eq!(total.current_at(start + TOTAL_READ_EVERY), None, "too old");
        total.read_at(50, soon);
        assert_eq!(
            total.current_at(soon),
            Some(50),
            "a new reading replaces the old"
        );
        total.forget();
        assert_eq!(total.current_at(soon), None);
    }
}
