//! Watching jobs: [`JobWatch`], what [`Runner::watch`](crate::Runner::watch) and
//! [`Runner::wait`](crate::Runner::wait) are built on, and the runner's table of watched jobs.
//!
//! # Protocol
//!
//! The runner keeps one `tokio::sync::watch` channel per watched job, in a table behind a
//! mutex. Nothing is read from the store per event:
//!
//! - **Local events.** A worker that stored a target publishes the
//!   [`Progress`] the store returned with it; a claim that started a job publishes the move to
//!   `running`; a cancel publishes `cancelled` with the counts the store returned.
//! - **Remote events.** Over a shared store (PostgreSQL) a task forwards the store's
//!   [`StoreEvent`](crate::store::StoreEvent)s: the changes other replicas make (and this
//!   runner's own, which arrive twice and merge away). When events may have been lost
//!   (`Missed`, or a lagging receiver) it re-reads the summary of every watched job, once.
//! - **Merge.** Events of one job may arrive out of order or twice; each channel keeps the
//!   newer value by [`Progress::is_newer_than`], so a watcher never moves backwards.
//!
//! # No lost event
//!
//! A watcher first registers its job in the table (`watched` is bumped, SeqCst), then reads
//! the job's summary from the store and merges it in. A worker changes the store first, then
//! reads `watched` (SeqCst) and publishes only if it is not zero. If the worker read zero, its
//! read came before the watcher's registration in the SeqCst order, so the watcher's summary
//! read comes after the store change and shows it; otherwise the worker publishes into the
//! registered channel. Either way the watcher sees the change. (The same argument as the
//! workers' idle count in `worker/mod.rs`; `src/tests/loom_watch.rs` checks it under every
//! interleaving, and fails if the watcher reads before it registers.)
//!
//! A start carries no counts, so it can only move a channel that already holds a progress
//! from `queued` to `running`. One that arrives while the channel is still empty (the first
//! watcher registered, its read not merged yet) is remembered beside the channel and applied
//! to that read when it is merged: the read may come from before the claim.
//!
//! # Ends
//!
//! A terminal progress closes the job's channel (its sender leaves the table): a watcher
//! then sees the final value and [`JobWatch::changed`] returns `None`. `close` empties the
//! table, which ends every watch (a closed runner reports nothing more).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::job::{Caller, JobId, JobStatus};
use crate::summary::Progress;

/// One watched job: the channel its watchers read, and its caller (a resync re-reads the
/// summary as that caller).
struct Watched {
    sender: watch::Sender<Option<Progress>>,
    caller: Caller,
    /// A claim started the job while the channel was still empty (its first watcher had
    /// registered but not yet merged its read): the start is applied to that read when it
    /// arrives (see "No lost event").
    started_before_read: bool,
}

/// The runner's watched jobs.
#[derive(Default)]
pub(crate) struct Watchers {
    /// Jobs in `table`, read without the lock on every event (see "No lost event").
    watched: AtomicUsize,
    table: Mutex<HashMap<JobId, Watched>>,
}

impl Watchers {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Watched>> {
        // Nothing panics under this lock (no user code runs here): a poisoned lock still
        // holds a consistent table.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a watcher of `job`; the caller then reads the job's summary and hands it to
    /// [`publish`](Self::publish) (see "No lost event").
    pub(crate) fn register(self: &Arc<Self>, job: JobId, caller: &Caller) -> JobWatch {
        let mut table = self.table();
        let receiver = match table.get(&job) {
            Some(watched) => watched.sender.subscribe(),
            None => {
                let (sender, receiver) = watch::channel(None);
                table.insert(
                    job,
                    Watched {
                        sender,
                        caller: caller.clone(),
                        started_before_read: false,
                    },
                );
                self.watched.store(table.len(), Ordering::SeqCst);
                receiver
            }
        };
        JobWatch {
            job,
            receiver,
            watchers: Arc::clone(self),
        }
    }

    /// Whether any job is watched: the publishers' cheap check.
    pub(crate) fn any(&self) -> bool {
        self.watched.load(Ordering::SeqCst) > 0
    }

    /// Merges the summary a new watcher read as `caller`, which proves the job is that
    /// caller's: later resyncs read it as them.
    pub(crate) fn publish_summary(&self, job: JobId, caller: &Caller, progress: Progress) {
        let mut table = self.table();
        let mut progress = progress;
        if let Some(watched) = table.get_mut(&job) {
            watched.caller = caller.clone();
            // A start published before this read was merged, which the read may predate.
            if std::mem::take(&mut watched.started_before_read)
                && progress.status == JobStatus::Queued
            {
                progress = Progress::new(JobStatus::Running, progress.counts, None);
            }
        }
        self.merge(&mut table, job, progress);
    }

    /// Merges `progress` into `job`'s channel if it is watched and `progress` is newer; a
    /// terminal progress then ends the channel.
    pub(crate) fn publish(&self, job: JobId, progress: Progress) {
        if self.any() {
            self.merge(&mut self.table(), job, progress);
        }
    }

    /// Moves `job` from `queued` to `running` (a claim started it; the counts are unchanged).
    pub(crate) fn publish_start(&self, job: JobId) {
        if !self.any() {
            return;
        }
        let mut table = self.table();
        let Some(watched) = table.get_mut(&job) else {
            return;
        };
        let known = *watched.sender.borrow();
        match known {
            Some(known) if known.status == JobStatus::Queued => {
                let running = Progress::new(JobStatus::Running, known.counts, None);
                self.merge(&mut table, job, running);
            }
            Some(_) => {}
            // Registered, its read not merged yet: that read may be from before the claim.
            None => watched.started_before_read = true,
        }
    }

    /// [`publish`](Self::publish) under the table's lock, taken once by each caller.
    fn merge(&self, table: &mut HashMap<JobId, Watched>, job: JobId, progress: Progress) {
        let Some(watched) = table.get(&job) else {
            return;
        };
        watched.sender.send_if_modified(|current| match current {
            Some(known) if !progress.is_newer_than(known) => false,
            _ => {
                *current = Some(progress);
                true
            }
        });
        let ended = watched
            .sender
            .borrow()
            .is_some_and(|known| !known.status.is_live());
        if ended || watched.sender.receiver_count() == 0 {
            table.remove(&job);
            self.watched.store(table.len(), Ordering::SeqCst);
        }
    }

    /// The watched jobs and their callers, for a resync after lost events.
    pub(crate) fn snapshot(&self) -> Vec<(JobId, Caller)> {
        self.table()
            .iter()
            .map(|(job, watched)| (*job, watched.caller.clone()))
            .collect()
    }

    /// Ends every watch (the runner closed).
    pub(crate) fn clear(&self) {
        let mut table = self.table();
        table.clear();
        self.watched.store(0, Ordering::SeqCst);
    }

    /// Drops `job`'s channel if no watcher is left (a [`JobWatch`] was dropped).
    fn release(&self, job: JobId) {
        let mut table = self.table();
        if table
            .get(&job)
            .is_some_and(|watched| watched.sender.receiver_count() == 0)
        {
            table.remove(&job);
            self.watched.store(table.len(), Ordering::SeqCst);
        }
    }
}

/// A live view of one job's [`Progress`], from [`Runner::watch`](crate::Runner::watch).
///
/// Each event of the job (a start, a stored target, a cancel, the end; on a shared store
/// also those made by other replicas) updates it; reading it never touches the store.
/// Events that arrive while nobody looks are merged: [`changed`](Self::changed) returns the
/// latest progress, not every step.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use lockgate_batch::store::MemoryStore;
/// use lockgate_batch::{Caller, Config, FetchError, Runner, fetch_fn};
///
/// let fetch = fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n * 2) });
/// let runner = Runner::new(Config::default(), MemoryStore::new(), fetch).await?;
/// let ann = Caller::new("ann");
/// let id = runner.submit(&ann, &[1, 2, 3]).await?;
/// let mut watch = runner.watch(&ann, id).await?;
/// while let Some(progress) = watch.changed().await {
///     println!("{}: {} of 3 stored", progress.status, progress.counts.stored());
/// }
/// assert_eq!(watch.progress().counts.done, 3);
/// # runner.close().await;
/// # Ok(())
/// # }
/// ```
pub struct JobWatch {
    job: JobId,
    receiver: watch::Receiver<Option<Progress>>,
    watchers: Arc<Watchers>,
}

impl std::fmt::Debug for JobWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobWatch")
            .field("job", &self.job)
            .field("progress", &*self.receiver.borrow())
            .finish_non_exhaustive()
    }
}

impl JobWatch {
    /// The latest progress known.
    pub fn progress(&self) -> Progress {
        self.receiver
            .borrow()
            .expect("a watch is returned only after its first progress is known")
    }

    /// Waits for the job's next change and returns its progress then; `None` once the job has
    /// ended (its last progress stays readable through [`progress`](Self::progress)) or the
    /// runner closed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a change that arrives while the future is dropped is returned by the next
    /// call.
    pub async fn changed(&mut self) -> Option<Progress> {
        // An unseen value is returned even after the channel closed; a terminal one closes
        // it (see "Ends"), so the call after it returns `None`.
        self.receiver.changed().await.ok()?;
        // Marks what it returns as seen: a change sent between `changed` resolving and this
        // read would otherwise be returned now and again by the next call.
        Some(self.mark_seen())
    }

    /// Marks the current progress seen without returning it (so [`changed`](Self::changed)
    /// waits for the next change), and returns it.
    pub(crate) fn mark_seen(&mut self) -> Progress {
        self.receiver
            .borrow_and_update()
            .expect("a watch is returned only after its first progress is known")
    }

    /// Takes the watcher's first read, `read`, after it was handed to
    /// [`Watchers::publish_summary`], and returns the progress the watch starts from.
    ///
    /// If `close` emptied the table between the registration and that publish, the channel
    /// never received `read` and its sender is gone: the watch then ends at once, holding
    /// `read` (a closed runner reports nothing more).
    pub(crate) fn settle(&mut self, read: Progress) -> Progress {
        if self.receiver.borrow().is_none() {
            let (sender, receiver) = watch::channel(Some(read));
            drop(sender);
            drop(std::mem::replace(&mut self.receiver, receiver));
            self.watchers.release(self.job);
        }
        self.mark_seen()
    }
}

impl Drop for JobWatch {
    fn drop(&mut self) {
        // Our receiver still counts until this returns: release after dropping it.
        let (dummy_sender, dummy) = watch::channel(None);
        drop(dummy_sender);
        drop(std::mem::replace(&mut self.receiver, dummy));
        self.watchers.release(self.job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Counts;

    fn progress(status: JobStatus) -> Progress {
        Progress::new(status, Counts::default(), None)
    }

    /// `close` empties the table between a watcher's registration and its first publish:
    /// the watch ends at once and holds what the watcher read.
    #[tokio::test]
    async fn a_watch_emptied_by_close_before_its_first_read_ends_with_that_read() {
        for read in [JobStatus::Running, JobStatus::Done] {
            let watchers = Arc::new(Watchers::default());
            let ann = Caller::new("ann");
            let mut watch = watchers.register(JobId::new(1), &ann);
            watchers.clear();
            watchers.publish_summary(JobId::new(1), &ann, progress(read));
            assert_eq!(watch.settle(progress(read)).status, read);
            assert_eq!(watch.progress().status, read);
            assert_eq!(watch.changed().await, None);
            assert!(!watchers.any());
        }
    }

    /// A claim starts the job between a watcher's registration and the merge of its read,
    /// which was taken before the claim (`queued`): the watch still starts `running`.
    #[tokio::test]
    async fn a_start_between_registration_and_first_read_is_not_lost() {
        let watchers = Arc::new(Watchers::default());
        let ann = Caller::new("ann");
        let mut watch = watchers.register(JobId::new(1), &ann);
        watchers.publish_start(JobId::new(1));
        watchers.publish_summary(JobId::new(1), &ann, progress(JobStatus::Queued));
        let settled = watch.settle(progress(JobStatus::Queued));
        assert_eq!(settled.status, JobStatus::Running);
        // A later watcher of the same job reads the channel as it is.
        let second = watchers.register(JobId::new(1), &ann);
        watchers.publish_summary(JobId::new(1), &ann, progress(JobStatus::Queued));
        assert_eq!(watch.progress().status, JobStatus::Running);
        drop(second);
    }

    /// Without a close in between, the first read goes through the channel: later
    /// publishes reach the watch.
    #[tokio::test]
    async fn a_watch_settled_on_its_channel_sees_later_changes() {
        let watchers = Arc::new(Watchers::default());
        let ann = Caller::new("ann");
        let mut watch = watchers.register(JobId::new(1), &ann);
        watchers.publish_summary(JobId::new(1), &ann, progress(JobStatus::Queued));
        assert_eq!(
            watch.settle(progress(JobStatus::Queued)).status,
            JobStatus::Queued
        );
        watchers.publish(JobId::new(1), progress(JobStatus::Done));
        assert_eq!(
            watch.changed().await.map(|p| p.status),
            Some(JobStatus::Done)
        );
        assert_eq!(watch.changed().await, None);
    }
}
