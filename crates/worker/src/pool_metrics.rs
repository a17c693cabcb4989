//! [`PoolMetrics`]: a pool's counters reported through the `metrics` facade on demand, under
//! the names of the "Metrics" section of the crate docs.
//!
//! Sampled, not pushed: a busy pool's submit and finish take no lock, and a recorder update
//! on each would add work to every task for counts a scrape reads now and then. The pool's
//! core already keeps what matters: finished and panicked tasks in the tallies
//! [`Pool::completed`] reads, and rare events (thread starts, exits, deaths, refused spawns)
//! under the lock their transition takes anyway. [`PoolMetrics::record`] copies one snapshot
//! of those counts into handles registered once, when it is made.

use std::fmt;

use metrics::{
    Counter, Gauge, IntoLabels, Label, Unit, counter, describe_counter, describe_gauge, gauge,
};

use crate::Pool;
use crate::core::Shared;
use crate::sync::Arc;

const WORKERS: &str = "lockgate_worker_workers";
const IDLE: &str = "lockgate_worker_idle";
const QUEUED: &str = "lockgate_worker_queued";
const RUNNING: &str = "lockgate_worker_running";
const BLOCKED_SUBMITTERS: &str = "lockgate_worker_blocked_submitters";
const CAPACITY: &str = "lockgate_worker_capacity";
const MIN_WORKERS: &str = "lockgate_worker_min_workers";
const MAX_WORKERS: &str = "lockgate_worker_max_workers";
const COMPLETED: &str = "lockgate_worker_tasks_completed_total";
const PANICKED: &str = "lockgate_worker_tasks_panicked_total";
const STARTED: &str = "lockgate_worker_threads_started_total";
const EXITED: &str = "lockgate_worker_threads_exited_total";
const DIED: &str = "lockgate_worker_threads_died_total";
const SPAWN_FAILURES: &str = "lockgate_worker_thread_spawn_failures_total";

/// Reports a [`Pool`]'s counters through the [`metrics`] facade each time
/// [`record`](Self::record) is called: call it before each scrape, or on an interval (as
/// `metrics-process`'s `Collector::collect` is called).
///
/// The metrics, their labels and their meaning are listed in the "Metrics" section of the
/// [crate docs](crate). Constant labels given at construction (say `pool="render"`) are added
/// to every metric; two pools reporting to one recorder need different ones, or the later
/// `record` overwrites the earlier.
///
/// Make it after installing the recorder: its handles are registered with the recorder
/// current when it is made (the global one, or the one [`metrics::with_local_recorder`]
/// sets), and keep reporting there from any thread.
///
/// It holds the pool's counters, not the pool: dropping the [`Pool`] closes it as usual, and a
/// `record` after that reports the final counts.
///
/// # Guarantees
///
/// - One `record` reads every count once, under the pool's lock (the same one
///   [`Pool::workers`] and the other getters take once each). The counts a busy pool changes
///   without that lock (queued, running, completed, panicked) are each exact as of their
///   read, and the panicked count never exceeds the completed one.
/// - The `_total` counters are set with `absolute` from the pool's own counts, so they are
///   exact as of the last `record`, never double counted, and a missed scrape loses nothing.
/// - Not promised: anything between two `record`s. A gauge shows the state at the last call,
///   not its peak; the counters catch up at the next call.
///
/// What it costs: nothing per task (the pool counts what it counted before, plus a few rare
/// events under a lock it already holds); per `record`, one acquisition of the pool's lock and
/// an atomic store per metric.
///
/// # Examples
///
/// ```
/// use metrics_exporter_prometheus::PrometheusBuilder;
///
/// let recorder = PrometheusBuilder::new().build_recorder();
/// let scrape = recorder.handle();
/// let pool = lockgate_worker::Pool::new(1, 2)?;
/// let metrics = metrics::with_local_recorder(&recorder, || {
///     lockgate_worker::PoolMetrics::with_labels(&pool, &[("pool", "render")])
/// });
///
/// assert_eq!(pool.spawn(|| 6 * 7).join()?, 42);
/// pool.join()?;
/// metrics.record(); // what a `/metrics` handler does before `render`
/// let text = scrape.render();
/// assert!(text.contains(r#"lockgate_worker_tasks_completed_total{pool="render"} 1"#));
/// assert!(text.contains(r#"lockgate_worker_max_workers{pool="render"} 2"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PoolMetrics {
    shared: Arc<Shared>,
    workers: Gauge,
    idle: Gauge,
    queued: Gauge,
    running: Gauge,
    blocked_submitters: Gauge,
    capacity: Gauge,
    min_workers: Gauge,
    max_workers: Gauge,
    completed: Counter,
    panicked: Counter,
    started: Counter,
    exited: Counter,
    died: Counter,
    spawn_failures: Counter,
}

impl PoolMetrics {
    /// Registers `pool`'s metrics with the current recorder, without constant labels.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::new(1, 4)?;
    /// let metrics = lockgate_worker::PoolMetrics::new(&pool);
    /// metrics.record(); // no recorder installed: reports nowhere, costs little
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(pool: &Pool) -> Self {
        Self::with_labels(pool, Vec::<Label>::new())
    }

    /// Registers `pool`'s metrics with the current recorder, each with the constant `labels`
    /// (for example `&[("pool", "render")]`).
    ///
    /// # Examples
    ///
    /// See [`PoolMetrics`].
    pub fn with_labels(pool: &Pool, labels: impl IntoLabels) -> Self {
        describe();
        let labels = labels.into_labels();
        let gauge = |name| gauge!(name, labels.clone());
        let counter = |name| counter!(name, labels.clone());
        Self {
            shared: Arc::clone(pool.shared()),
            workers: gauge(WORKERS),
            idle: gauge(IDLE),
            queued: gauge(QUEUED),
            running: gauge(RUNNING),
            blocked_submitters: gauge(BLOCKED_SUBMITTERS),
            capacity: gauge(CAPACITY),
            min_workers: gauge(MIN_WORKERS),
            max_workers: gauge(MAX_WORKERS),
            completed: counter(COMPLETED),
            panicked: counter(PANICKED),
            started: counter(STARTED),
            exited: counter(EXITED),
            died: counter(DIED),
            spawn_failures: counter(SPAWN_FAILURES),
        }
    }

    /// Reports the pool's counters now: call it before each scrape, or on an interval.
    ///
    /// Takes the pool's lock once, briefly, like a getter such as [`Pool::workers`].
    ///
    /// # Examples
    ///
    /// See [`PoolMetrics`].
    pub fn record(&self) {
        let now = self.shared.counters();
        let config = self.shared.config();
        // Counts far below 2^53 (workers, tasks waiting): exact as f64.
        self.workers.set(now.workers as f64);
        self.idle.set(now.idle as f64);
        self.queued.set(now.queued as f64);
        self.running.set(now.running as f64);
        self.blocked_submitters.set(now.blocked_submitters as f64);
        self.capacity.set(config.capacity as f64);
        self.min_workers.set(config.min as f64);
        self.max_workers.set(config.max as f64);
        self.completed.absolute(now.finished);
        self.panicked.absolute(now.panicked);
        self.started.absolute(now.threads_started);
        self.exited.absolute(now.threads_exited);
        self.died.absolute(now.threads_died);
        self.spawn_failures.absolute(now.spawn_failures);
    }
}

impl fmt::Debug for PoolMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolMetrics").finish_non_exhaustive()
    }
}

/// Gives the current recorder every metric's unit and description.
fn describe() {
    describe_gauge!(
        WORKERS,
        Unit::Count,
        "Worker threads alive (idle, claimed, running or starting)."
    );
    describe_gauge!(IDLE, Unit::Count, "Workers waiting for a task.");
    describe_gauge!(QUEUED, Unit::Count, "Accepted tasks that have not started.");
    describe_gauge!(RUNNING, Unit::Count, "Tasks running now.");
    describe_gauge!(
        BLOCKED_SUBMITTERS,
        Unit::Count,
        "Submitters blocked until the full pool has room."
    );
    describe_gauge!(
        CAPACITY,
        Unit::Count,
        "Waiting places beyond the workers: max / 2 + submit_buffer."
    );
    describe_gauge!(MIN_WORKERS, Unit::Count, "The min the pool was built with.");
    describe_gauge!(MAX_WORKERS, Unit::Count, "The max the pool was built with.");
    describe_counter!(
        COMPLETED,
        Unit::Count,
        "Tasks finished since the pool started, panicked ones included."
    );
    describe_counter!(
        PANICKED,
        Unit::Count,
        "Tasks that panicked (caught; the worker went on)."
    );
    describe_counter!(STARTED, Unit::Count, "Worker threads started.");
    describe_counter!(
        EXITED,
        Unit::Count,
        "Worker threads that left the pool: by the exit rule, the idle timeout, close, or dying."
    );
    describe_counter!(
        DIED,
        Unit::Count,
        "Worker threads that died outside a task (a panic in the pool or a subscriber)."
    );
    describe_counter!(
        SPAWN_FAILURES,
        Unit::Count,
        "Worker threads the OS refused to start; their tasks stayed queued."
    );
}
