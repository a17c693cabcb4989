//! [`MetricsHooks`]: the runner's [`Hooks`] reported through the `metrics` facade.

use std::fmt;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, IntoLabels, Label, Unit};

use super::{Hooks, JobEvent, RescueEvent, TargetEvent, TargetOutcome};
use crate::error::StoreError;
use crate::job::JobStatus;

const TARGETS: &str = "lockgate_batch_targets_total";
const RESULT_BYTES: &str = "lockgate_batch_result_bytes_total";
const FETCH_DURATION_SECONDS: &str = "lockgate_batch_fetch_duration_seconds";
const JOBS: &str = "lockgate_batch_jobs_total";
const JOB_DURATION_SECONDS: &str = "lockgate_batch_job_duration_seconds";
const RESCUED: &str = "lockgate_batch_rescued_total";
const STORE_ERRORS: &str = "lockgate_batch_store_errors_total";
const LIVE_JOBS: &str = "lockgate_batch_live_jobs";
const IN_FLIGHT: &str = "lockgate_batch_targets_in_flight";

/// The label keys this type sets itself; a constant label may not reuse them.
const OWN_KEYS: [&str; 3] = ["outcome", "status", "kind"];

/// The terminal statuses, in the order of [`MetricsHooks::jobs`].
const TERMINAL: [(JobStatus, &str); 4] = [
    (JobStatus::Done, "done"),
    (JobStatus::Partial, "partial"),
    (JobStatus::Failed, "failed"),
    (JobStatus::Cancelled, "cancelled"),
];

/// [`Hooks`] that report every event as a `lockgate_batch_*` metric (feature `metrics`).
///
/// Set it with [`Config::hooks`](crate::Config::hooks). The metric handles are registered
/// with the recorder installed when it is built ([`metrics::set_global_recorder`], or a
/// [`metrics::with_local_recorder`] around the constructor), once: an event updates the
/// recorder's handles directly, never a lookup by name. The crate docs' "Metrics" section lists the
/// names, types, units and labels.
///
/// Labels are bounded: a target's outcome, a job's terminal status, a store error's kind, and
/// the constant labels given to [`with_labels`](Self::with_labels) (to tell two runners of one
/// process apart). Never a job id, a caller or an error's text.
///
/// Hooks of your own keep working beside it: [`with_inner`](Self::with_inner) records each
/// event, then passes it on.
///
/// # Guarantees
///
/// - Counters and histogram counts are exact: one increment per hook call, and the runner
///   calls each hook exactly once per event.
/// - `lockgate_batch_targets_in_flight` ends exact: the runner reports its in-flight count in
///   the order it changed, so once no target changes flight the gauge holds the runner's count.
/// - `lockgate_batch_live_jobs` is the count the last [`depth`](Hooks::depth) call carried. It
///   is exact once the runner's submits, cancels and job ends have not overlapped since its
///   last change; when two of them overlap (two tasks submitting at once, a cancel while a
///   worker ends a job), their calls may arrive in the other order than the store applied
///   them, and the gauge keeps the older count until the next change. On a shared store
///   (PostgreSQL) it is the count of the whole database as this runner last saw it: changes
///   made by other replicas are not reported here. For an exact gauge, set it from the store
///   with [`record_live_jobs`](Self::record_live_jobs) (for example on each scrape).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// use lockgate_batch::hooks::MetricsHooks;
/// use lockgate_batch::store::MemoryStore;
/// use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // With no recorder installed the metrics go nowhere; a service installs one at start-up
/// // (see `examples/batch_metrics.rs` for Prometheus).
/// let hooks = Arc::new(MetricsHooks::with_labels(&[("runner", "pages")]));
/// let store = Arc::new(MemoryStore::new());
/// let fetch = |_ctx: FetchContext, page: u32| async move { Ok::<u32, FetchError>(page * 2) };
/// let config = Config::default().hooks(hooks.clone());
/// let runner = Runner::new(config, Arc::clone(&store), fetch).await?;
/// let ann = Caller::new("ann");
/// let id = runner.submit(&ann, &[1, 2, 3]).await?;
/// runner.wait(&ann, id).await?;
/// hooks.record_live_jobs(store.live_jobs()); // exact, whatever the order of the hook calls
/// runner.close().await;
/// # Ok(())
/// # }
/// ```
pub struct MetricsHooks {
    /// Indexed by [`outcome_index`]: done, failed.
    targets: [Counter; 2],
    /// Indexed as `targets`.
    fetch_duration_seconds: [Histogram; 2],
    result_bytes: Counter,
    /// Indexed as [`TERMINAL`].
    jobs: [Counter; 4],
    /// Indexed as [`TERMINAL`].
    job_duration_seconds: [Histogram; 4],
    rescued: Counter,
    /// Indexed by [`error_index`]: unavailable, failed.
    store_errors: [Counter; 2],
    live_jobs: Gauge,
    in_flight: Gauge,
    inner: Option<Arc<dyn Hooks>>,
}

impl MetricsHooks {
    /// Metrics with no constant labels, registered with the current recorder.
    pub fn new() -> Self {
        Self::with_labels(Vec::<Label>::new())
    }

    /// Metrics carrying the constant `labels` (for example `&[("runner", "pages")]`) beside
    /// their own, registered with the current recorder.
    ///
    /// A constant label named `outcome`, `status` or `kind` (this type's own keys) is left out,
    /// with a `tracing::warn!`: a metric cannot carry one key twice.
    pub fn with_labels(labels: impl IntoLabels) -> Self {
        describe();
        let base: Vec<Label> = labels
            .into_labels()
            .into_iter()
            .filter(|label| {
                let own = OWN_KEYS.contains(&label.key());
                if own {
                    tracing::warn!(
                        key = label.key(),
                        "constant metrics label left out: the key is taken"
                    );
                }
                !own
            })
            .collect();
        let with = |key: &'static str, value: &'static str| {
            let mut labels = base.clone();
            labels.push(Label::new(key, value));
            labels
        };
        let outcomes = ["done", "failed"];
        let errors = ["unavailable", "failed"];
        Self {
            targets: outcomes.map(|o| metrics::counter!(TARGETS, with("outcome", o))),
            fetch_duration_seconds: outcomes
                .map(|o| metrics::histogram!(FETCH_DURATION_SECONDS, with("outcome", o))),
            result_bytes: metrics::counter!(RESULT_BYTES, base.clone()),
            jobs: TERMINAL.map(|(_, s)| metrics::counter!(JOBS, with("status", s))),
            job_duration_seconds: TERMINAL
                .map(|(_, s)| metrics::histogram!(JOB_DURATION_SECONDS, with("status", s))),
            rescued: metrics::counter!(RESCUED, base.clone()),
            store_errors: errors.map(|k| metrics::counter!(STORE_ERRORS, with("kind", k))),
            live_jobs: metrics::gauge!(LIVE_JOBS, base.clone()),
            in_flight: metrics::gauge!(IN_FLIGHT, base),
            inner: None,
        }
    }

    /// The same metrics, also passing each event on to `inner` after recording it.
    ///
    /// A panic in `inner` is caught and logged as any hook's is; the event is recorded
    /// already.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use lockgate_batch::Config;
    /// use lockgate_batch::hooks::{Hooks, JobEvent, MetricsHooks};
    ///
    /// struct LogEnds;
    ///
    /// impl Hooks for LogEnds {
    ///     fn job(&self, event: &JobEvent) {
    ///         println!("job {} ended {}", event.job, event.status);
    ///     }
    /// }
    ///
    /// let hooks = MetricsHooks::new().with_inner(Arc::new(LogEnds));
    /// let config = Config::default().hooks(Arc::new(hooks));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn with_inner(mut self, inner: Arc<dyn Hooks>) -> Self {
        self.inner = Some(inner);
        self
    }

    /// Sets `lockgate_batch_live_jobs` to `live_jobs`, read from the store (for example
    /// `MemoryStore::live_jobs`, `SqliteStore::live_jobs`, `PostgresStore::live_jobs`), without
    /// calling the inner hooks: the gauge is then exact whatever order the runner's
    /// [`depth`](Hooks::depth) calls arrived in, and on a shared store it includes the
    /// other replicas' changes.
    pub fn record_live_jobs(&self, live_jobs: usize) {
        self.live_jobs.set(live_jobs as f64);
    }
}

impl Default for MetricsHooks {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MetricsHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsHooks")
            .field("inner", &self.inner.is_some())
            .finish_non_exhaustive()
    }
}

/// Describes every metric to the current recorder: their help text and unit.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        TARGETS,
        Unit::Count,
        "Targets stored, by outcome (done or failed)."
    );
    describe_counter!(
        RESULT_BYTES,
        Unit::Bytes,
        "Bytes stored for targets (outputs, or error texts and hints)."
    );
    describe_histogram!(
        FETCH_DURATION_SECONDS,
        Unit::Seconds,
        "Duration of a stored target's last fetch, by outcome."
    );
    describe_counter!(
        JOBS,
        Unit::Count,
        "Jobs that reached a terminal status, by status."
    );
    describe_histogram!(
        JOB_DURATION_SECONDS,
        Unit::Seconds,
        "Time from a job's submit to its terminal status, by status."
    );
    describe_counter!(
        RESCUED,
        Unit::Count,
        "Targets fetched again because a claim was lost (its lease lapsed, or a crash undid it)."
    );
    describe_counter!(
        STORE_ERRORS,
        Unit::Count,
        "Store calls that failed and were retried, by kind."
    );
    describe_gauge!(
        LIVE_JOBS,
        Unit::Count,
        "Live (queued or running) jobs in the store, as last reported."
    );
    describe_gauge!(
        IN_FLIGHT,
        Unit::Count,
        "Targets this runner has claimed and not yet stored."
    );
}

fn outcome_index(outcome: TargetOutcome) -> usize {
    match outcome {
        TargetOutcome::Done => 0,
        TargetOutcome::Failed => 1,
    }
}

fn error_index(error: &StoreError) -> usize {
    match error {
        StoreError::Unavailable(_) => 0,
        StoreError::Failed(_) => 1,
    }
}

impl Hooks for MetricsHooks {
    fn depth(&self, live_jobs: usize) {
        self.live_jobs.set(live_jobs as f64);
        if let Some(inner) = &self.inner {
            inner.depth(live_jobs);
        }
    }

    fn inflight(&self, in_flight: usize) {
        self.in_flight.set(in_flight as f64);
        if let Some(inner) = &self.inner {
            inner.inflight(in_flight);
        }
    }

    fn target(&self, event: &TargetEvent) {
        let outcome = outcome_index(event.outcome);
        self.targets[outcome].increment(1);
        self.fetch_duration_seconds[outcome].record(event.elapsed.as_secs_f64());
        self.result_bytes.increment(event.result_bytes);
        if let Some(inner) = &self.inner {
            inner.target(event);
        }
    }

    fn job(&self, event: &JobEvent) {
        // The runner reports terminal statuses only.
        if let Some(status) = TERMINAL.iter().position(|(s, _)| *s == event.status) {
            self.jobs[status].increment(1);
            self.job_duration_seconds[status].record(event.after.as_secs_f64());
        }
        if let Some(inner) = &self.inner {
            inner.job(event);
        }
    }

    fn rescued(&self, event: &RescueEvent) {
        self.rescued.increment(1);
        if let Some(inner) = &self.inner {
            inner.rescued(event);
        }
    }

    fn store_error(&self, error: &StoreError) {
        self.store_errors[error_index(error)].increment(1);
        if let Some(inner) = &self.inner {
            inner.store_error(error);
        }
    }
}
