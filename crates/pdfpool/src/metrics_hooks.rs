//! [`MetricsHooks`]: the pool's [`Hooks`] reported through the `metrics` facade, under the
//! names of the "Metrics" section of the crate docs.
//!
//! Every handle is registered once, when the hooks are made, so an event costs an atomic
//! update in the recorder and no name lookup. The gauges are kept from the events (which
//! balance, see [`Hooks`]), not read from the pool: the hooks know no pool.

use std::fmt;
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, IntoLabels, Label, Unit, counter, describe_counter, describe_gauge,
    describe_histogram, gauge, histogram,
};

use crate::error::{BusyCause, Error};
use crate::hooks::Hooks;

const REQUESTS: &str = "lockgate_pdfpool_requests_total";
const REFUSED: &str = "lockgate_pdfpool_requests_refused_total";
const JOBS_ENDED: &str = "lockgate_pdfpool_jobs_ended_total";
const QUEUE_WAIT: &str = "lockgate_pdfpool_queue_wait_seconds";
const JOB_DURATION: &str = "lockgate_pdfpool_job_duration_seconds";
const RUNNING: &str = "lockgate_pdfpool_jobs_running";
const QUEUED: &str = "lockgate_pdfpool_jobs_queued";

/// [`Hooks`] that report a pool's requests and jobs through the [`metrics`] facade, then call
/// the hooks they wrap (none by default).
///
/// The metrics, their labels and their meaning are listed in the "Metrics" section of the
/// [crate docs](crate). Constant labels given at construction (say `pool="render"`) are added
/// to every metric, to tell pools apart; keep them bounded (a pool's name, never a key or a
/// caller).
///
/// Make one per pool, after installing the recorder: its handles are registered with the
/// recorder current when it is made (the global one, or the one
/// [`metrics::with_local_recorder`] sets), and keep reporting there from any thread. Shared
/// between pools (through an `Arc`) it reports their sum.
///
/// # Guarantees
///
/// - Counters and histograms count every event once (the pool calls each hook once).
/// - The gauges `lockgate_pdfpool_jobs_running` and `lockgate_pdfpool_jobs_queued` equal the
///   pool's [`running`](crate::Pool::running) and [`queued`](crate::Pool::queued) whenever no
///   pool call is in the middle of a step; within a step (the hooks run after the pool's
///   lock is dropped, on different tasks) they may lag by the events not yet reported.
/// - The metrics are recorded before the wrapped hooks are called: a panic in those (caught
///   by the pool) loses none of them.
///
/// Cost per event: one or two atomic updates of the recorder's handles, plus a histogram
/// record for the events carrying a duration; no allocation, no lock in this crate.
///
/// # Examples
///
/// Counting in a test recorder; a service installs its exporter instead (see
/// `examples/pdfpool_metrics.rs`), and may wrap its own hooks with [`wrap`](MetricsHooks::wrap).
///
/// ```
/// use std::time::Duration;
///
/// use lockgate_pdfpool::{MetricsHooks, Pool};
/// use metrics_exporter_prometheus::PrometheusBuilder;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let recorder = PrometheusBuilder::new().build_recorder();
/// let scrape = recorder.handle();
/// let hooks = metrics::with_local_recorder(&recorder, || {
///     MetricsHooks::with_labels(&[("pool", "render")])
/// });
/// let pool: Pool<&str, &str, u32> = Pool::with_hooks(1, 0, Duration::from_secs(5), hooks);
/// assert_eq!(pool.run("a.pdf", "alice", || async { 1 }).await, Ok(1));
///
/// let text = scrape.render();
/// assert!(text.contains(r#"lockgate_pdfpool_requests_total{pool="render",admission="started"} 1"#));
/// assert!(text.contains(r#"lockgate_pdfpool_jobs_ended_total{pool="render",outcome="finished"} 1"#));
/// # }
/// ```
pub struct MetricsHooks<H = ()> {
    handles: Handles,
    inner: H,
}

/// The registered handles, one per metric and label value.
struct Handles {
    started: Counter,
    queued: Counter,
    joined: Counter,
    refused: Counter,
    refused_queue_full: Counter,
    refused_caller_busy: Counter,
    refused_closed: Counter,
    ended_finished: Counter,
    ended_panicked: Counter,
    ended_dropped: Counter,
    ended_expired: Counter,
    ended_abandoned: Counter,
    waited_started: Histogram,
    waited_expired: Histogram,
    waited_abandoned: Histogram,
    ran_finished: Histogram,
    ran_panicked: Histogram,
    ran_dropped: Histogram,
    running: Gauge,
    queued_now: Gauge,
}

impl MetricsHooks {
    /// Registers the pool's metrics with the current recorder, without constant labels.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// let pool: lockgate_pdfpool::Pool<String, String, u32> = lockgate_pdfpool::Pool::with_hooks(
    ///     2, 4, Duration::from_secs(10), lockgate_pdfpool::MetricsHooks::new(),
    /// );
    /// # drop(pool);
    /// ```
    pub fn new() -> Self {
        Self::with_labels(Vec::<Label>::new())
    }

    /// Registers the pool's metrics with the current recorder, each with the constant
    /// `labels` (for example `&[("pool", "render")]`) before its own.
    ///
    /// # Examples
    ///
    /// See [`MetricsHooks`].
    pub fn with_labels(labels: impl IntoLabels) -> Self {
        describe();
        let base = labels.into_labels();
        let with = |key: &'static str, value: &'static str| {
            let mut labels = base.clone();
            labels.push(Label::new(key, value));
            labels
        };
        let admission = |value| counter!(REQUESTS, with("admission", value));
        let refused = |value| counter!(REFUSED, with("cause", value));
        let ended = |value| counter!(JOBS_ENDED, with("outcome", value));
        let waited = |value| histogram!(QUEUE_WAIT, with("exit", value));
        let ran = |value| histogram!(JOB_DURATION, with("outcome", value));
        let handles = Handles {
            started: admission("started"),
            queued: admission("queued"),
            joined: admission("joined"),
            refused: admission("refused"),
            refused_queue_full: refused("queue_full"),
            refused_caller_busy: refused("caller_busy"),
            refused_closed: refused("closed"),
            ended_finished: ended("finished"),
            ended_panicked: ended("panicked"),
            ended_dropped: ended("dropped"),
            ended_expired: ended("expired"),
            ended_abandoned: ended("abandoned"),
            waited_started: waited("started"),
            waited_expired: waited("expired"),
            waited_abandoned: waited("abandoned"),
            ran_finished: ran("finished"),
            ran_panicked: ran("panicked"),
            ran_dropped: ran("dropped"),
            running: gauge!(RUNNING, base.clone()),
            queued_now: gauge!(QUEUED, base),
        };
        Self { handles, inner: () }
    }

    /// These metrics, then `inner`: every event is recorded and then passed on to `inner`.
    /// Keep a handle on `inner` by passing an `Arc` (hooks are implemented for it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    ///
    /// /// The service's own hooks: counts slow jobs for its log.
    /// #[derive(Default)]
    /// struct SlowJobs(AtomicU64);
    ///
    /// impl lockgate_pdfpool::Hooks for SlowJobs {
    ///     fn finished(&self, job_time: Duration) {
    ///         if job_time > Duration::from_secs(30) {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    ///
    /// let slow = Arc::new(SlowJobs::default());
    /// let hooks = lockgate_pdfpool::MetricsHooks::with_labels(&[("pool", "render")])
    ///     .wrap(Arc::clone(&slow));
    /// let pool: lockgate_pdfpool::Pool<String, String, u32> =
    ///     lockgate_pdfpool::Pool::with_hooks(2, 4, Duration::from_secs(10), hooks);
    /// # drop(pool);
    /// assert_eq!(slow.0.load(Ordering::Relaxed), 0);
    /// ```
    pub fn wrap<H: Hooks>(self, inner: H) -> MetricsHooks<H> {
        MetricsHooks {
            handles: self.handles,
            inner,
        }
    }
}

impl Default for MetricsHooks {
    /// As [`MetricsHooks::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl<H> MetricsHooks<H> {
    /// The hooks these wrap (`()` if none).
    pub fn inner(&self) -> &H {
        &self.inner
    }
}

impl<H: fmt::Debug> fmt::Debug for MetricsHooks<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsHooks")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<H: Hooks> Hooks for MetricsHooks<H> {
    fn queued(&self) {
        self.handles.queued.increment(1);
        self.handles.queued_now.increment(1.0);
        self.inner.queued();
    }

    fn started(&self, queue_wait: Duration) {
        self.handles.started.increment(1);
        self.handles.running.increment(1.0);
        self.inner.started(queue_wait);
    }

    fn started_from_queue(&self, queue_wait: Duration) {
        self.handles.queued_now.decrement(1.0);
        self.handles.running.increment(1.0);
        self.handles.waited_started.record(queue_wait);
        self.inner.started_from_queue(queue_wait);
    }

    fn joined(&self) {
        self.handles.joined.increment(1);
        self.inner.joined();
    }

    fn refused(&self, why: &Error) {
        self.handles.refused.increment(1);
        let cause = match why {
            Error::Busy {
                cause: BusyCause::QueueFull,
                ..
            } => Some(&self.handles.refused_queue_full),
            Error::CallerBusy => Some(&self.handles.refused_caller_busy),
            Error::Closed => Some(&self.handles.refused_closed),
            // Never a refusal (see `Hooks::refused`): these end a job that was admitted.
            Error::Busy {
                cause: BusyCause::WaitExpired,
                ..
            }
            | Error::Panicked(_) => None,
        };
        if let Some(cause) = cause {
            cause.increment(1);
        }
        self.inner.refused(why);
    }

    fn expired(&self, queue_wait: Duration) {
        self.handles.queued_now.decrement(1.0);
        self.handles.ended_expired.increment(1);
        self.handles.waited_expired.record(queue_wait);
        self.inner.expired(queue_wait);
    }

    fn abandoned(&self, queue_wait: Duration) {
        self.handles.queued_now.decrement(1.0);
        self.handles.ended_abandoned.increment(1);
        self.handles.waited_abandoned.record(queue_wait);
        self.inner.abandoned(queue_wait);
    }

    fn finished(&self, job_time: Duration) {
        self.handles.running.decrement(1.0);
        self.handles.ended_finished.increment(1);
        self.handles.ran_finished.record(job_time);
        self.inner.finished(job_time);
    }

    fn panicked(&self, job_time: Duration) {
        self.handles.running.decrement(1.0);
        self.handles.ended_panicked.increment(1);
        self.handles.ran_panicked.record(job_time);
        self.inner.panicked(job_time);
    }

    fn dropped(&self, job_time: Duration) {
        self.handles.running.decrement(1.0);
        self.handles.ended_dropped.increment(1);
        self.handles.ran_dropped.record(job_time);
        self.inner.dropped(job_time);
    }
}

/// Gives the current recorder every metric's unit and description.
fn describe() {
    describe_counter!(
        REQUESTS,
        Unit::Count,
        "Requests to the pool by how they were admitted: started, queued, joined or refused."
    );
    describe_counter!(
        REFUSED,
        Unit::Count,
        "Requests refused at once, by cause: queue_full, caller_busy or closed."
    );
    describe_counter!(
        JOBS_ENDED,
        Unit::Count,
        "Jobs ended, by outcome: finished, panicked or dropped after running; expired or \
         abandoned in the queue without running."
    );
    describe_histogram!(
        QUEUE_WAIT,
        Unit::Seconds,
        "How long queued jobs waited, by how they left the queue: started, expired or abandoned."
    );
    describe_histogram!(
        JOB_DURATION,
        Unit::Seconds,
        "How long started jobs ran, by outcome: finished, panicked or dropped."
    );
    describe_gauge!(RUNNING, Unit::Count, "Jobs running now.");
    describe_gauge!(QUEUED, Unit::Count, "Jobs waiting in the queue now.");
}
