//! The pool's core types: what every clone of a [`Pool`](crate::Pool) and every job task
//! shares, and the values the admission table holds for the pool (a waiter's [`Mailbox`], a
//! queued job's [`Launch`]).
//!
//! They live here, below the files that use them, so that the crate's imports form no circle:
//! the facade (`pool.rs`) imports the core (`job.rs`, `wait.rs`, this file, the table), and
//! nothing in the core imports the facade. `job.rs` makes a launch (it knows how to spawn a
//! job) and imports this file; this file names the launch's start only as a boxed closure.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::hooks::{Hooks, Installed};
use crate::sync::Arc;
use crate::table::{JobId, Table};

/// What every sharer of a job receives.
pub(crate) type Outcome<V> = Result<V, Error>;

/// A waiter's mailbox, held by the table.
pub(crate) enum Mailbox<V> {
    /// The waiter awaits this channel's receiver.
    Channel(oneshot::Sender<Outcome<V>>),
    /// The request that started the job at once awaits the job's task itself: the task's
    /// output is the outcome (as for a plain `tokio::spawn`), so it needs no channel.
    Task,
}

/// The admission table as the pool uses it.
pub(crate) type CoreTable<K, C, V> = Table<K, C, Instant, Mailbox<V>, Launch<K, C, V>>;

/// What every clone of a [`Pool`](crate::Pool) and every job task shares.
pub(crate) struct Shared<K, C, V> {
    pub(crate) table: CoreTable<K, C, V>,
    /// The table's limits again, readable without its lock.
    pub(crate) slots: usize,
    pub(crate) queue_limit: usize,
    pub(crate) wait: Duration,
    pub(crate) hooks: Installed,
    /// Every job task, for `shutdown` to wait on.
    pub(crate) tasks: TaskTracker,
    /// Notified when the last running job of a closed pool has ended.
    pub(crate) idle: Notify,
}

impl<K, C, V> Shared<K, C, V>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
{
    /// The state of a new pool: `wait` is already capped by the facade.
    pub(crate) fn new(
        slots: usize,
        queue_limit: usize,
        wait: Duration,
        hooks: Option<Box<dyn Hooks>>,
    ) -> Self {
        Self {
            table: Table::new(slots, queue_limit),
            slots,
            queue_limit,
            wait,
            hooks: Installed::new(hooks),
            tasks: TaskTracker::new(),
            idle: Notify::new(),
        }
    }
}

/// Spawns a job's task, given the pool and the id the table gave the job.
pub(crate) type Start<K, C, V> = Box<dyn FnOnce(Arc<Shared<K, C, V>>, JobId) + Send>;

/// A queued job's way to start, held by the table as its opaque launch. Starting it spawns the
/// job; dropping it unstarted (expired, abandoned, closed) drops the user's closure unrun.
/// Made by `job::launch`.
pub(crate) struct Launch<K, C, V> {
    pub(crate) queued_at: Instant,
    pub(crate) start: Start<K, C, V>,
}

impl<K, C, V> Launch<K, C, V> {
    /// Starts the job the table just promoted to `Running` as `job_id`.
    pub(crate) fn start(self, shared: Arc<Shared<K, C, V>>, job_id: JobId) {
        shared
            .hooks
            .call(|hooks| hooks.started_from_queue(self.queued_for()));
        (self.start)(shared, job_id);
    }

    /// How long the job has been queued.
    pub(crate) fn queued_for(&self) -> Duration {
        Instant::now().saturating_duration_since(self.queued_at)
    }
}

impl<K, C, V> fmt::Debug for Launch<K, C, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch")
            .field("queued_at", &self.queued_at)
            .finish_non_exhaustive()
    }
}
