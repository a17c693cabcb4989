//! [`MetricsHooks`]: the [`Hooks`] of a pool, or of an `AdmissionLayer` (feature `tower`),
//! reported through the `metrics` facade, under the names of the "Metrics" section of the
//! crate docs: the pool's `lockgate_pdfpool_*` names, or the layer's
//! `lockgate_pdfpool_layer_*` (made by `MetricsHooks::layer`), which name its requests'
//! events as a layer's (admitted, refused by cause including `wait_expired`).
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
const LAYER_REQUESTS: &str = "lockgate_pdfpool_layer_requests_total";
const LAYER_REFUSED: &str = "lockgate_pdfpool_layer_requests_refused_total";
const LAYER_QUEUE_WAIT: &str = "lockgate_pdfpool_layer_queue_wait_seconds";
const LAYER_INSIDE: &str = "lockgate_pdfpool_layer_requests_inside";
const LAYER_QUEUED: &str = "lockgate_pdfpool_layer_requests_queued";

/// [`Hooks`] that report a pool's requests and jobs through the [`metrics`] facade, then call
/// the hooks they wrap (none by default). Made by [`layer`](MetricsHooks::layer) instead, they
/// report the requests of an `AdmissionLayer` (feature `tower`) under the layer's names.
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
///   lock is dropped, on different tasks) they may lag by the events not yet reported. The
///   layer's gauges likewise equal its `inside` and `queued` once every request has been
///   polled since its last step (a slot passed to a queued request is reported when that
///   request is next polled).
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

/// The registered handles: a pool's names or a layer's.
enum Handles {
    Pool(PoolHandles),
    Layer(LayerHandles),
}

/// A layer's handles, one per metric and label value.
struct LayerHandles {
    admitted: Counter,
    queued: Counter,
    refused: Counter,
    refused_queue_full: Counter,
    refused_wait_expired: Counter,
    waited_admitted: Histogram,
    waited_expired: Histogram,
    waited_abandoned: Histogram,
    inside: Gauge,
    queued_now: Gauge,
}

/// A pool's handles, one per metric and label value.
struct PoolHandles {
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
        let handles = PoolHandles {
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
        Self {
            handles: Handles::Pool(handles),
            inner: (),
        }
    }

    /// Registers an `AdmissionLayer`'s metrics (feature `tower`; the `lockgate_pdfpool_layer_*`
    /// names of the crate docs) with the current recorder, without constant labels. Give the
    /// hooks to `AdmissionLayer::with_hooks`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tower")] {
    /// # use std::time::Duration;
    /// let layer = lockgate_pdfpool::AdmissionLayer::with_hooks(
    ///     8, 32, Duration::from_secs(5), lockgate_pdfpool::MetricsHooks::layer(),
    /// );
    /// # drop(layer);
    /// # }
    /// ```
    pub fn layer() -> Self {
        Self::layer_with_labels(Vec::<Label>::new())
    }

    /// As [`layer`](Self::layer), each metric with the constant `labels` (for example
    /// `&[("layer", "api")]`) before its own.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "tower")] {
    /// use std::time::Duration;
    ///
    /// use lockgate_pdfpool::{AdmissionLayer, MetricsHooks};
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let recorder = PrometheusBuilder::new().build_recorder();
    /// let scrape = recorder.handle();
    /// let hooks = metrics::with_local_recorder(&recorder, || {
    ///     MetricsHooks::layer_with_labels(&[("layer", "api")])
    /// });
    /// let layer = AdmissionLayer::with_hooks(1, 0, Duration::from_secs(5), hooks);
    /// let service = layer.layer(service_fn(|n: u32| async move {
    ///     Ok::<_, std::convert::Infallible>(n)
    /// }));
    /// assert_eq!(service.oneshot(7).await.unwrap(), 7);
    /// assert!(scrape.render().contains(
    ///     r#"lockgate_pdfpool_layer_requests_total{layer="api",admission="admitted"} 1"#
    /// ));
    /// # });
    /// # }
    /// ```
    pub fn layer_with_labels(labels: impl IntoLabels) -> Self {
        describe_layer();
        let base = labels.into_labels();
        let with = |key: &'static str, value: &'static str| {
            let mut labels = base.clone();
            labels.push(Label::new(key, value));
            labels
        };
        let admission = |value| counter!(LAYER_REQUESTS, with("admission", value));
        let refused = |value| counter!(LAYER_REFUSED, with("cause", value));
        let waited = |value| histogram!(LAYER_QUEUE_WAIT, with("exit", value));
        let handles = LayerHandles {
            admitted: admission("admitted"),
            queued: admission("queued"),
            refused: admission("refused"),
            refused_queue_full: refused("queue_full"),
            refused_wait_expired: refused("wait_expired"),
            waited_admitted: waited("admitted"),
            waited_expired: waited("expired"),
            waited_abandoned: waited("abandoned"),
            inside: gauge!(LAYER_INSIDE, base.clone()),
            queued_now: gauge!(LAYER_QUEUED, base),
        };
        Self {
            handles: Handles::Layer(handles),
            inner: (),
        }
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
        match &self.handles {
            Handles::Pool(pool) => {
                pool.queued.increment(1);
                pool.queued_now.increment(1.0);
            }
            Handles::Layer(layer) => {
                layer.queued.increment(1);
                layer.queued_now.increment(1.0);
            }
        }
        self.inner.queued();
    }

    fn started(&self, queue_wait: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.started.increment(1);
                pool.running.increment(1.0);
            }
            Handles::Layer(layer) => {
                layer.admitted.increment(1);
                layer.inside.increment(1.0);
            }
        }
        self.inner.started(queue_wait);
    }

    fn started_from_queue(&self, queue_wait: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.queued_now.decrement(1.0);
                pool.running.increment(1.0);
                pool.waited_started.record(queue_wait);
            }
            Handles::Layer(layer) => {
                layer.queued_now.decrement(1.0);
                layer.inside.increment(1.0);
                layer.waited_admitted.record(queue_wait);
            }
        }
        self.inner.started_from_queue(queue_wait);
    }

    fn joined(&self) {
        // A layer has no keys: nothing joins.
        if let Handles::Pool(pool) = &self.handles {
            pool.joined.increment(1);
        }
        self.inner.joined();
    }

    fn refused(&self, why: &Error) {
        let queue_full = matches!(
            why,
            Error::Busy {
                cause: BusyCause::QueueFull,
                ..
            }
        );
        match &self.handles {
            Handles::Pool(pool) => {
                pool.refused.increment(1);
                let cause = match why {
                    Error::Busy {
                        cause: BusyCause::QueueFull,
                        ..
                    } => Some(&pool.refused_queue_full),
                    Error::CallerBusy => Some(&pool.refused_caller_busy),
                    Error::Closed => Some(&pool.refused_closed),
                    // Never a refusal (see `Hooks::refused`): these end a job that was
                    // admitted.
                    Error::Busy {
                        cause: BusyCause::WaitExpired,
                        ..
                    }
                    | Error::Panicked(_) => None,
                };
                if let Some(cause) = cause {
                    cause.increment(1);
                }
            }
            Handles::Layer(layer) => {
                layer.refused.increment(1);
                // The only refusal at once a layer makes.
                if queue_full {
                    layer.refused_queue_full.increment(1);
                }
            }
        }
        self.inner.refused(why);
    }

    fn expired(&self, queue_wait: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.queued_now.decrement(1.0);
                pool.ended_expired.increment(1);
                pool.waited_expired.record(queue_wait);
            }
            Handles::Layer(layer) => {
                layer.queued_now.decrement(1.0);
                layer.refused_wait_expired.increment(1);
                layer.waited_expired.record(queue_wait);
            }
        }
        self.inner.expired(queue_wait);
    }

    fn abandoned(&self, queue_wait: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.queued_now.decrement(1.0);
                pool.ended_abandoned.increment(1);
                pool.waited_abandoned.record(queue_wait);
            }
            Handles::Layer(layer) => {
                layer.queued_now.decrement(1.0);
                layer.waited_abandoned.record(queue_wait);
            }
        }
        self.inner.abandoned(queue_wait);
    }

    fn finished(&self, job_time: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.running.decrement(1.0);
                pool.ended_finished.increment(1);
                pool.ran_finished.record(job_time);
            }
            Handles::Layer(layer) => layer.inside.decrement(1.0),
        }
        self.inner.finished(job_time);
    }

    fn panicked(&self, job_time: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.running.decrement(1.0);
                pool.ended_panicked.increment(1);
                pool.ran_panicked.record(job_time);
            }
            // Never called by a layer; a request that was inside is no longer.
            Handles::Layer(layer) => layer.inside.decrement(1.0),
        }
        self.inner.panicked(job_time);
    }

    fn dropped(&self, job_time: Duration) {
        match &self.handles {
            Handles::Pool(pool) => {
                pool.running.decrement(1.0);
                pool.ended_dropped.increment(1);
                pool.ran_dropped.record(job_time);
            }
            Handles::Layer(layer) => layer.inside.decrement(1.0),
        }
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

/// Gives the current recorder every layer metric's unit and description.
fn describe_layer() {
    describe_counter!(
        LAYER_REQUESTS,
        Unit::Count,
        "Requests to the admission layer by how they were admitted: admitted, queued or refused."
    );
    describe_counter!(
        LAYER_REFUSED,
        Unit::Count,
        "Requests the admission layer refused, by cause: queue_full (at once) or wait_expired \
         (after waiting)."
    );
    describe_histogram!(
        LAYER_QUEUE_WAIT,
        Unit::Seconds,
        "How long queued requests waited, by how they left the queue: admitted, expired or \
         abandoned."
    );
    describe_gauge!(
        LAYER_INSIDE,
        Unit::Count,
        "Requests inside the admission layer's service now."
    );
    describe_gauge!(
        LAYER_QUEUED,
        Unit::Count,
        "Requests waiting in the admission layer's queue now."
    );
}
