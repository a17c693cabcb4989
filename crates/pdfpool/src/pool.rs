//! The public facade: [`Pool`], a cheap handle on the admission table and the job tasks.

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::Error;
use crate::job;
use crate::sync::Arc;
use crate::table::{Admission, JobId, Refusal, Table};
use crate::wait::{Waiter, deliver};

/// What every sharer of a job receives.
pub(crate) type Outcome<V> = Result<V, Error>;
/// A waiter's mailbox, held by the table.
pub(crate) type Mailbox<V> = oneshot::Sender<Outcome<V>>;
/// Starts a job: spawns its task. Held by the table while the job is queued.
pub(crate) type Launch<K, C, V> = Box<dyn FnOnce(Arc<Shared<K, C, V>>, JobId) + Send>;
/// The admission table as the pool uses it.
pub(crate) type CoreTable<K, C, V> = Table<K, C, Instant, Mailbox<V>, Launch<K, C, V>>;

/// What every clone of a [`Pool`] and every job task shares.
pub(crate) struct Shared<K, C, V> {
    pub(crate) table: CoreTable<K, C, V>,
    wait: Duration,
}

/// An admission pool for expensive jobs: `slots` jobs run at once, at most `queue` jobs wait
/// (first come, first served, each at most `wait`), identical requests share one job, and a
/// caller has at most one job in flight.
///
/// `K` keys a job (identical requests have equal keys), `C` names a caller, and `V` is the
/// job's output, cloned to every sharer (put a `Result` inside `V` for jobs that can fail).
/// Cloning a `Pool` is cheap and every clone is the same pool.
///
/// See the [crate docs](crate) for the rules, the guarantees and a worked example.
pub struct Pool<K, C, V> {
    shared: Arc<Shared<K, C, V>>,
}

impl<K, C, V> Clone for Pool<K, C, V> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K, C, V> Pool<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    /// A pool running at most `slots` jobs at once, with at most `queue` jobs waiting for a
    /// slot, each for at most `wait`.
    ///
    /// `queue` may be 0 (refuse with [`Error::Busy`] as soon as every slot is taken). A `wait`
    /// beyond [`MAX_WAIT`](Self::MAX_WAIT) (say `Duration::MAX`, "no limit") is capped to it.
    /// Creating a pool needs no runtime; using it does (see [`run`](Self::run)).
    ///
    /// # Panics
    ///
    /// If `slots` is 0: such a pool could never run anything.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool: pdfpool::Pool<String, String, usize> = pdfpool::Pool::new(2, 4, Duration::from_secs(10));
    /// assert_eq!((pool.running(), pool.queued()), (0, 0));
    /// ```
    #[track_caller]
    pub fn new(slots: usize, queue: usize, wait: Duration) -> Self {
        assert!(slots > 0, "pdfpool::Pool::new: `slots` must be at least 1");
        Self {
            shared: Arc::new(Shared {
                table: Table::new(slots, queue),
                wait: wait.min(Self::MAX_WAIT),
            }),
        }
    }

    /// The longest wait limit a pool keeps (about 30 years): deadlines stay representable.
    pub const MAX_WAIT: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

    /// Runs `job` for `key` on behalf of `caller`, or shares the job already in flight for
    /// `key`, and returns its output.
    ///
    /// The rules, in the order they are applied:
    ///
    /// 1. **Join.** If a job for `key` is running or queued, wait for its outcome (this
    ///    request counts in [`waiting`](Self::waiting)). Joining takes no slot and no queue
    ///    place, is allowed even if `caller` has another job in flight or the pool is closed,
    ///    and `job` is not called.
    /// 2. **Caller.** If `caller` has a job in flight for another key, return
    ///    [`Error::CallerBusy`] at once. (Before this, a closed pool returns
    ///    [`Error::Closed`].)
    /// 3. **Slot.** If fewer than `slots` jobs run, start `job` now. Otherwise, if `queue`
    ///    jobs already wait, return [`Error::Busy`] at once. Otherwise wait in the queue until
    ///    a slot frees (then the job starts), or `wait` passes (then every waiter of the job
    ///    gets [`Error::Busy`] and `job` is never called).
    /// 4. **The job outlives its caller.** A started job runs in its own Tokio task until it
    ///    ends, whoever still waits for it.
    /// 5. **No cache.** When it ends its key is forgotten, and its output (or its panic),
    ///    cloned, reaches every waiter.
    ///
    /// The first poll of the returned future applies the rules; nothing happens before.
    ///
    /// # Errors
    ///
    /// - [`Error::Busy`]: no slot and a full queue, or the job waited in the queue past
    ///   `wait`.
    /// - [`Error::CallerBusy`]: `caller` owns a job in flight for another key.
    /// - [`Error::Panicked`]: the job panicked (every sharer gets the panic).
    /// - [`Error::Closed`]: the pool was closed before this request started or queued a job,
    ///   or while the job it waited on was still queued; or the job's task was dropped
    ///   unfinished because its runtime shut down, or could not be spawned (polled outside
    ///   a Tokio runtime).
    ///
    /// # Panics
    ///
    /// If a job must wait in the queue and the current Tokio runtime has no time driver (the
    /// wait limit needs a timer), as [`tokio::time::sleep`] does.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future at any await point only stops this request from waiting: its
    /// registration is taken off the job at once. What is given up depends on the job's state:
    /// a **running** job goes on for its other sharers (and for no one, if none is left), and
    /// `caller` stays busy until it ends; a **queued** job that loses its last waiter gives up
    /// its queue place, is never started, and its owner is free again. So dropping and
    /// re-creating the future may lose the queue place, and may find the job still running
    /// and join it.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let pool = pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    /// let pages = pool.run("report.pdf", "alice", || async { 12 }).await;
    /// assert_eq!(pages, Ok(12));
    /// # }
    /// ```
    pub async fn run<F, Fut>(&self, key: K, caller: C, job: F) -> Result<V, Error>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = V> + Send + 'static,
    {
        let wait = self.shared.wait;
        let table = &self.shared.table;
        let mut receiver = None;
        let mut job = Some(job);
        // Under the lock these closures only allocate and move: the receiver is stashed
        // here, the user's closure is boxed only if the job has to wait in the queue.
        let admission = table.admit(
            key,
            caller,
            || {
                let (mailbox, outcome) = oneshot::channel();
                receiver = Some(outcome);
                mailbox
            },
            || {
                let job = job.take().expect("the closure is taken once");
                (Instant::now() + wait, job::launch(job))
            },
        );
        // Each arm guards its registration before anything else can unwind or await.
        let (waiter, deadline) = match admission {
            Admission::Joined { waiter, deadline } => (Waiter::new(table, waiter), deadline),
            Admission::Started { waiter } => {
                let job_id = waiter.job;
                let waiter = Waiter::new(table, waiter);
                let job = job.take().expect("a started job's closure was not queued");
                job::spawn(Arc::clone(&self.shared), job_id, job);
                (waiter, None)
            }
            Admission::Queued { waiter, deadline } => {
                tracing::debug!("every slot is taken: the job is queued");
                (Waiter::new(table, waiter), Some(deadline))
            }
            Admission::Refused(reason) => {
                return Err(match reason {
                    Refusal::Busy => Error::Busy,
                    Refusal::CallerBusy => Error::CallerBusy,
                    Refusal::Closed => Error::Closed,
                });
            }
        };
        // A closure not needed (joined) is dropped here, outside the lock and the guard.
        drop(job);
        let outcome = receiver.expect("a registered waiter has a receiver");
        waiter.wait(outcome, deadline).await
    }

    /// Waits for the job in flight for `key`, without being able to start one: `None` if no
    /// job for `key` is running or queued.
    ///
    /// A joiner is a sharer like any other: it counts in [`waiting`](Self::waiting), keeps a
    /// queued job alive, and gets the same outcome, including [`Error::Busy`] if the queued
    /// job waits past the limit. It needs no caller id, takes no slot and no queue place, and
    /// works after [`close`](Self::close) too.
    ///
    /// # Errors
    ///
    /// `Some(Err(_))` as for [`run`](Self::run), except that `CallerBusy` never happens.
    ///
    /// # Cancel safety
    ///
    /// As for [`run`](Self::run): dropping the future stops waiting; if it was the last waiter
    /// of a queued job, that job gives up its queue place and never runs.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let pool: pdfpool::Pool<&str, &str, u32> = pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    /// assert_eq!(pool.join(&"report.pdf").await, None, "nothing in flight");
    /// # }
    /// ```
    pub async fn join(&self, key: &K) -> Option<Result<V, Error>> {
        let (mailbox, outcome) = oneshot::channel();
        let table = &self.shared.table;
        let (waiter, deadline) = table.join(key, mailbox).ok()?;
        Some(Waiter::new(table, waiter).wait(outcome, deadline).await)
    }

    /// How many jobs are running now (at most `slots`).
    pub fn running(&self) -> usize {
        self.shared.table.running()
    }

    /// How many jobs wait in the queue now (at most `queue`).
    pub fn queued(&self) -> usize {
        self.shared.table.queued()
    }

    /// How many requests wait for the job in flight for `key` (the one that started it
    /// included, while it still waits); 0 if no job for `key` is in flight.
    ///
    /// A running job may have no waiter left: it still runs (rule 4).
    pub fn waiting(&self, key: &K) -> usize {
        self.shared.table.waiting(key)
    }

    /// Closes the pool: new jobs are refused with [`Error::Closed`], queued jobs are dropped
    /// (never started; their waiters get `Closed`), and running jobs finish and reach their
    /// waiters as usual. Joining a running job still works. Closing twice is harmless.
    pub fn close(&self) {
        let dropped = self.shared.table.close();
        if !dropped.is_empty() {
            tracing::debug!(jobs = dropped.len(), "closing dropped queued jobs");
        }
        for job in dropped {
            deliver(job.waiters, Err(Error::Closed));
            drop(job.launch);
        }
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.shared.table.is_closed()
    }
}

impl<K, C, V> fmt::Debug for Pool<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("running", &self.running())
            .field("queued", &self.queued())
            .field("closed", &self.is_closed())
            .field("wait", &self.shared.wait)
            .finish_non_exhaustive()
    }
}
