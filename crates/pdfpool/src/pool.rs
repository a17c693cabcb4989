//! The public facade: [`Pool`], a cheap handle on the admission table and the job tasks.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::{BusyCause, Error};
use crate::fast::Fast;
use crate::hooks::Hooks;
use crate::job;
use crate::shared::{Mailbox, Shared};
use crate::sync::Arc;
use crate::table::{Admission, Refusal};
use crate::wait::{self, Waiter, deliver};

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
    /// let pool: lockgate_pdfpool::Pool<String, String, usize> = lockgate_pdfpool::Pool::new(2, 4, Duration::from_secs(10));
    /// assert_eq!((pool.running(), pool.queued()), (0, 0));
    /// ```
    #[track_caller]
    pub fn new(slots: usize, queue: usize, wait: Duration) -> Self {
        Self::build(slots, queue, wait, None)
    }

    /// As [`new`](Self::new), reporting every request and job to `hooks` (see [`Hooks`]).
    ///
    /// # Panics
    ///
    /// If `slots` is 0, as for [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// See [`Hooks`].
    #[track_caller]
    pub fn with_hooks(slots: usize, queue: usize, wait: Duration, hooks: impl Hooks) -> Self {
        Self::build(slots, queue, wait, Some(Box::new(hooks)))
    }

    #[track_caller]
    fn build(slots: usize, queue: usize, wait: Duration, hooks: Option<Box<dyn Hooks>>) -> Self {
        assert!(slots > 0, "pdfpool::Pool::new: `slots` must be at least 1");
        Self {
            shared: Arc::new(Shared::new(slots, queue, wait.min(Self::MAX_WAIT), hooks)),
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
    /// - [`Error::Busy`]: no slot and a full queue ([`BusyCause::QueueFull`], at once), or the
    ///   job waited in the queue past `wait` ([`BusyCause::WaitExpired`], to every waiter of
    ///   the job). [`Error::retry_after`] is the pool's `wait` for both.
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
    /// let pool = lockgate_pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    /// let pages = pool.run("report.pdf", "alice", || async { 12 }).await;
    /// assert_eq!(pages, Ok(12));
    /// # }
    /// ```
    pub async fn run<F, Fut>(&self, key: K, caller: C, job: F) -> Result<V, Error>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = V> + Send + 'static,
    {
        let shared = &*self.shared;
        let wait = shared.wait;
        // The request's span: the parent of the job's span, which is opened only when the job
        // starts, and for a queued job later, in another job's task. Taken here, not under the
        // table's lock (it asks the subscriber); a clone of a span, not a new one.
        let mut request = Some(tracing::Span::current());
        let mut receiver = None;
        let mut job = Some(job);
        // Under the lock these closures only allocate and move: the receiver is stashed
        // here, the user's closure is boxed only if the job has to wait in the queue.
        let admission = shared.table.admit(
            key,
            caller,
            |new_waiter| match wait::task_mailbox(new_waiter) {
                Fast::Done(mailbox) => mailbox,
                Fast::FallBack => {
                    let (mailbox, outcome) = oneshot::channel();
                    receiver = Some(outcome);
                    Mailbox::Channel(mailbox)
                }
            },
            || {
                let job = job.take().expect("the closure is taken once");
                let request = request.take().expect("the request's span is taken once");
                let queued_at = Instant::now();
                (queued_at + wait, job::launch(queued_at, request, job))
            },
        );
        // Each arm guards its registration before anything else can unwind or await.
        let (waiter, deadline) = match admission {
            Admission::Joined { waiter, deadline } => {
                let waiter = Waiter::new(shared, waiter);
                tracing::debug!(name: "pdfpool.joined", "joined the job in flight for this key");
                shared.hooks.call(|hooks| hooks.joined());
                (waiter, deadline)
            }
            Admission::Started { waiter } => {
                let job_id = waiter.job;
                let waiter = Waiter::new(shared, waiter);
                shared.hooks.call(|hooks| hooks.started(Duration::ZERO));
                let job = job.take().expect("a started job's closure was not queued");
                let request = request.take().expect("a started job's span was not queued");
                let span = job::span(&request, None);
                drop(request);
                let task = job::spawn(Arc::clone(&self.shared), job_id, job, span);
                // The fast entry gave this request no channel: the task's output is its
                // outcome. Fallen back, it waits on its channel like any waiter, and the task's
                // output (`None`) goes unread. Two awaits of `run`, not one nested future: the
                // nesting added work to every immediate start (counted with callgrind).
                return match receiver {
                    None => waiter.wait_for_task(task).await,
                    Some(outcome) => {
                        drop(task);
                        waiter.wait(outcome, None).await
                    }
                };
            }
            Admission::Queued { waiter, deadline } => {
                let waiter = Waiter::new(shared, waiter);
                tracing::debug!(name: "pdfpool.queued", "every slot is taken: the job is queued");
                shared.hooks.call(|hooks| hooks.queued());
                (waiter, Some(deadline))
            }
            Admission::Refused(reason) => {
                // The cause as the metrics name it (`MetricsHooks`).
                let (error, cause) = match reason {
                    Refusal::Busy => (
                        Error::Busy {
                            cause: BusyCause::QueueFull,
                            retry_after: wait,
                        },
                        "queue_full",
                    ),
                    Refusal::CallerBusy => (Error::CallerBusy, "caller_busy"),
                    Refusal::Closed => (Error::Closed, "closed"),
                };
                tracing::debug!(name: "pdfpool.refused", cause, "refused: {error}");
                shared.hooks.call(|hooks| hooks.refused(&error));
                return Err(error);
            }
        };
        // A closure and a span not needed (joined) are dropped here, outside the lock and the
        // guard.
        drop((job, request));
        let outcome = receiver.expect("a waiter that did not start its job has a receiver");
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
    /// let pool: lockgate_pdfpool::Pool<String, String, u32> = lockgate_pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    /// assert_eq!(pool.join("report.pdf").await, None, "nothing in flight");
    /// # }
    /// ```
    ///
    /// `key` may be any borrowed form of `K`, as for [`HashMap::get`](std::collections::HashMap::get):
    /// a `Pool<String, _, _>` is asked with a `&str`.
    pub async fn join<Q>(&self, key: &Q) -> Option<Result<V, Error>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (mailbox, outcome) = oneshot::channel();
        let shared = &*self.shared;
        let (waiter, deadline) = shared.table.join(key, Mailbox::Channel(mailbox)).ok()?;
        let waiter = Waiter::new(shared, waiter);
        tracing::debug!(name: "pdfpool.joined", "joined the job in flight for this key");
        shared.hooks.call(|hooks| hooks.joined());
        Some(waiter.wait(outcome, deadline).await)
    }

    /// How many jobs are running now (at most `slots`).
    pub fn running(&self) -> usize {
        self.shared.table.running()
    }

    /// How many jobs wait in the queue now (at most `queue`).
    pub fn queued(&self) -> usize {
        self.shared.table.queued()
    }

    /// How many requests share the job in flight for `key`, not counting the one that started
    /// it: the joiners still waiting (by [`run`](Self::run) or [`join`](Self::join)). 0 if no
    /// job for `key` is in flight, or only its starter waits.
    ///
    /// A job may outlive every request (rule 4): a running job whose waiters all left still
    /// runs, and `waiting` is 0 for it.
    ///
    /// `key` may be any borrowed form of `K` (a `&str` for `String` keys).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    ///
    /// let pool: lockgate_pdfpool::Pool<String, String, u32> = lockgate_pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    /// let (release, released) = tokio::sync::oneshot::channel::<()>();
    /// let job = || async move {
    ///     released.await.ok();
    ///     7
    /// };
    /// let starter = tokio::spawn({
    ///     let pool = pool.clone();
    ///     async move { pool.run("a.pdf".into(), "alice".into(), job).await }
    /// });
    /// let joiner = tokio::spawn({
    ///     let pool = pool.clone();
    ///     async move { pool.join("a.pdf").await }
    /// });
    /// tokio::task::yield_now().await; // both requests reach the pool: a start and a join
    /// assert_eq!(pool.waiting("a.pdf"), 1, "the joiner, not the starter");
    /// release.send(()).unwrap();
    /// assert_eq!(starter.await.unwrap(), Ok(7));
    /// assert_eq!(joiner.await.unwrap(), Some(Ok(7)));
    /// assert_eq!(pool.waiting("a.pdf"), 0);
    /// # }
    /// ```
    pub fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shared.table.waiting(key)
    }

    /// How many jobs run at once at most, as given to [`new`](Self::new).
    pub fn slots(&self) -> usize {
        self.shared.slots
    }

    /// How many jobs wait in the queue at most, as given to [`new`](Self::new).
    pub fn queue_limit(&self) -> usize {
        self.shared.queue_limit
    }

    /// How long a queued job waits at most: as given to [`new`](Self::new), capped at
    /// [`MAX_WAIT`](Self::MAX_WAIT).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool: lockgate_pdfpool::Pool<u8, u8, u8> = lockgate_pdfpool::Pool::new(2, 4, Duration::MAX);
    /// assert_eq!((pool.slots(), pool.queue_limit()), (2, 4));
    /// assert_eq!(pool.wait(), lockgate_pdfpool::Pool::<u8, u8, u8>::MAX_WAIT);
    /// ```
    pub fn wait(&self) -> Duration {
        self.shared.wait
    }

    /// Closes the pool: new jobs are refused with [`Error::Closed`], queued jobs are dropped
    /// (never started; their waiters get `Closed`), and running jobs finish and reach their
    /// waiters as usual. Joining a running job still works. Closing twice is harmless.
    /// [`shutdown`](Self::shutdown) also waits for the running jobs.
    pub fn close(&self) {
        let dropped = self.shared.table.close();
        if !dropped.is_empty() {
            tracing::debug!(jobs = dropped.len(), "closing dropped queued jobs");
        }
        for job in dropped {
            let queue_wait = job.launch.queued_for();
            self.shared.hooks.call(|hooks| hooks.abandoned(queue_wait));
            // A queued job's waiters all have channels: nothing comes back for a task.
            let _none = deliver(job.waiters, Err(Error::Closed));
            drop(job.launch);
        }
    }

    /// Closes the pool (as [`close`](Self::close)), then resolves once every running job has
    /// ended, its outcome has reached its waiters, and its task is gone.
    ///
    /// Call it after the service stopped taking requests (say, after axum's graceful shutdown
    /// returned) and before the runtime goes away: a job still running when the runtime is
    /// dropped is cut off at its next await (its waiters get [`Error::Closed`]).
    ///
    /// # Guarantees
    ///
    /// Once it resolves, no job of this pool runs and none ever will: the pool is closed, its
    /// queue is empty, and every job task has ended (tokio-util's `TaskTracker`). It waits
    /// without bound: bound it with [`tokio::time::timeout`] if jobs may hang.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future only stops waiting (the pool stays closed, the jobs
    /// run on), and calling `shutdown` again picks up where it was.
    ///
    /// # Examples
    ///
    /// An axum service: stop taking connections first, then drain the pool.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    ///
    /// use axum::{Router, extract::State, routing::get};
    ///
    /// type Extractor = lockgate_pdfpool::Pool<String, String, String>;
    ///
    /// async fn extract(State(pool): State<Extractor>) -> String {
    ///     let job = || async { "text of a.pdf".to_owned() };
    ///     pool.run("a.pdf".into(), "alice".into(), job)
    ///         .await
    ///         .unwrap_or_else(|error| error.to_string())
    /// }
    ///
    /// let pool = Extractor::new(2, 4, Duration::from_secs(10));
    /// let app = Router::new().route("/", get(extract)).with_state(pool.clone());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// // Here a signal handler (ctrl-c, SIGTERM); this example stops at once.
    /// let stop = async {};
    /// axum::serve(listener, app).with_graceful_shutdown(stop).await?;
    /// // No new requests; jobs started by the last ones may still run.
    /// pool.shutdown().await;
    /// assert_eq!(pool.running(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(&self) {
        self.close();
        loop {
            let idle = self.shared.idle.notified();
            let mut idle = std::pin::pin!(idle);
            // Registered before the check: the last job's end cannot slip in between.
            idle.as_mut().enable();
            if self.shared.table.running() == 0 {
                break;
            }
            idle.await;
        }
        // Every job has ended (none can start after close); wait for their tasks to be gone.
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
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
            .field("slots", &self.slots())
            .field("queue_limit", &self.queue_limit())
            .field("running", &self.running())
            .field("queued", &self.queued())
            .field("closed", &self.is_closed())
            .field("wait", &self.shared.wait)
            .finish_non_exhaustive()
    }
}
