//! What a pool reports as requests and jobs go through it: the [`Hooks`] a service implements
//! to count them (metrics), and how the pool calls them. An `AdmissionLayer` (feature
//! `tower`) reports its requests to the same trait, through the same `Installed`.

// The std `Arc` a user shares hooks with; not shared state of the pool (see `sync.rs`).
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;

/// Callbacks for the events of a pool, to feed metrics. Every method does nothing by default;
/// implement those you count. Install with [`Pool::with_hooks`](crate::Pool::with_hooks).
/// With feature `metrics`, `MetricsHooks` implements them all for the `metrics` facade (and
/// can wrap yours).
///
/// With feature `tower`, `AdmissionLayer::with_hooks` reports to the same trait, a request of
/// the layer standing for a job (its docs map each hook); the guarantees below hold there too.
///
/// Events balance: every job `queued` leaves the queue as exactly one of `started_from_queue`,
/// `expired` or `abandoned`; every job `started` (at once) or `started_from_queue` ends as
/// exactly one of `finished`, `panicked` or `dropped`. Every request is exactly one of a start
/// or a queueing (by its starter), `joined`, or `refused`. Unless overridden,
/// `started_from_queue` calls `started`, so `started` alone sees every start.
///
/// # Guarantees
///
/// - A hook never runs while the pool's lock is held, and may call back into the pool.
/// - A hook runs under `panicguard`: a panic in it is caught, logged (`tracing` warning) and
///   dropped; the pool and the request go on as if the hook had returned.
/// - A hook runs on the task that caused the event (the request's, or the job's for its end
///   and for the start of the queued job that takes its slot), right after the event, so it
///   should be quick (a counter, a histogram record).
/// - Durations come from Tokio's clock, so a paused clock makes them exact in tests.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// #[derive(Default)]
/// struct Metrics {
///     started: AtomicU64,
///     refused: AtomicU64,
/// }
///
/// impl lockgate_pdfpool::Hooks for Metrics {
///     fn started(&self, _queue_wait: Duration) {
///         self.started.fetch_add(1, Ordering::Relaxed);
///     }
///     fn refused(&self, _why: &lockgate_pdfpool::Error) {
///         self.refused.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let metrics = Arc::new(Metrics::default());
/// let pool = lockgate_pdfpool::Pool::with_hooks(1, 0, Duration::from_secs(5), Arc::clone(&metrics));
/// assert_eq!(pool.run("a.pdf", "alice", || async { 1 }).await, Ok(1));
/// assert_eq!(metrics.started.load(Ordering::Relaxed), 1);
/// # }
/// ```
pub trait Hooks: Send + Sync + 'static {
    /// A job was queued: every slot was taken. It will be `started`, `expired` or `abandoned`.
    fn queued(&self) {}

    /// A job started: its closure is about to be called in its own task. `queue_wait` is how
    /// long it waited in the queue (zero if a slot was free at once).
    ///
    /// A job that waited in the queue is reported through
    /// [`started_from_queue`](Self::started_from_queue), which calls this unless overridden.
    fn started(&self, queue_wait: Duration) {
        let _ = queue_wait;
    }

    /// A queued job left the queue and started after waiting `queue_wait` (which may be zero
    /// on a paused clock). Implement it to tell such starts from those at once, for example to
    /// keep a count of the jobs queued; by default it calls [`started`](Self::started).
    fn started_from_queue(&self, queue_wait: Duration) {
        self.started(queue_wait);
    }

    /// A request joined the job in flight for its key (through `run` or `join`).
    fn joined(&self) {}

    /// A request was refused at once: `why` is [`Error::Busy`] with
    /// [`BusyCause::QueueFull`](crate::BusyCause::QueueFull), [`Error::CallerBusy`] or
    /// [`Error::Closed`].
    fn refused(&self, why: &Error) {
        let _ = why;
    }

    /// A queued job reached the wait limit after `queue_wait` and was dropped unstarted; its
    /// waiters got `Busy` ([`BusyCause::WaitExpired`](crate::BusyCause::WaitExpired)).
    fn expired(&self, queue_wait: Duration) {
        let _ = queue_wait;
    }

    /// A queued job left the queue unstarted after `queue_wait` for another reason than the
    /// limit: its last waiter went away, or [`close`](crate::Pool::close) dropped it.
    fn abandoned(&self, queue_wait: Duration) {
        let _ = queue_wait;
    }

    /// A job ended with a value after running for `job_time`.
    fn finished(&self, job_time: Duration) {
        let _ = job_time;
    }

    /// A job panicked after running for `job_time`; its waiters got [`Error::Panicked`].
    fn panicked(&self, job_time: Duration) {
        let _ = job_time;
    }

    /// A job's task was dropped after `job_time` before the job ended (its runtime shut
    /// down); its waiters got [`Error::Closed`].
    fn dropped(&self, job_time: Duration) {
        let _ = job_time;
    }
}

/// Shares one set of hooks between pools, or keeps a handle to read its counters.
impl<H: Hooks + ?Sized> Hooks for Arc<H> {
    fn queued(&self) {
        (**self).queued();
    }
    fn started(&self, queue_wait: Duration) {
        (**self).started(queue_wait);
    }
    fn started_from_queue(&self, queue_wait: Duration) {
        (**self).started_from_queue(queue_wait);
    }
    fn joined(&self) {
        (**self).joined();
    }
    fn refused(&self, why: &Error) {
        (**self).refused(why);
    }
    fn expired(&self, queue_wait: Duration) {
        (**self).expired(queue_wait);
    }
    fn abandoned(&self, queue_wait: Duration) {
        (**self).abandoned(queue_wait);
    }
    fn finished(&self, job_time: Duration) {
        (**self).finished(job_time);
    }
    fn panicked(&self, job_time: Duration) {
        (**self).panicked(job_time);
    }
    fn dropped(&self, job_time: Duration) {
        (**self).dropped(job_time);
    }
}

/// No hooks: what `MetricsHooks` (feature `metrics`) wraps unless given others.
impl Hooks for () {}

/// The pool's installed hooks, if any: calls them under `panicguard`.
pub(crate) struct Installed(Option<Box<dyn Hooks>>);

impl Installed {
    pub(crate) fn new(hooks: Option<Box<dyn Hooks>>) -> Self {
        Self(hooks)
    }

    /// Whether any hooks are installed: timings are only taken for them.
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }

    /// Calls `event` on the hooks, if any; a panic in it is logged and dropped. Inlined, so a
    /// pool without hooks pays one branch per event.
    #[inline]
    pub(crate) fn call(&self, event: impl FnOnce(&dyn Hooks)) {
        if let Some(hooks) = &self.0 {
            call_caught(&**hooks, event);
        }
    }
}

fn call_caught(hooks: &dyn Hooks, event: impl FnOnce(&dyn Hooks)) {
    if let Err(panic) = lockgate_panicguard::catch(|| event(hooks)) {
        tracing::warn!(panic = panic.message(), "a pdfpool hook panicked");
    }
}
