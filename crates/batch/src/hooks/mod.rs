//! Hooks: callbacks a service implements for metrics ([`Hooks`]), and the events they get;
//! with the feature `metrics`, `MetricsHooks` implements them through the `metrics` facade.
//!
//! Set them with [`Config::hooks`](crate::Config::hooks). Every call runs under panicguard on
//! the runner's tasks and never under a lock.

use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreError;
use crate::job::{JobId, JobStatus};

#[cfg(feature = "metrics")]
mod metrics;

#[cfg(feature = "metrics")]
pub use metrics::MetricsHooks;

/// How a stored target ended, for [`Hooks::target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TargetOutcome {
    /// Stored done.
    Done,
    /// Stored failed (an error, a panic, or busy for longer than `retry_for`).
    Failed,
}

/// A stored target, for [`Hooks::target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TargetEvent {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: usize,
    /// How it ended.
    pub outcome: TargetOutcome,
    /// How long its last fetch took.
    pub elapsed: Duration,
    /// The bytes stored for it (the output JSON, or the error text and hint).
    pub result_bytes: u64,
}

/// A job that reached a terminal status, for [`Hooks::job`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobEvent {
    /// The job.
    pub job: JobId,
    /// Its terminal status.
    pub status: JobStatus,
    /// How long after its submit it ended.
    pub after: Duration,
}

/// A target taken over from a claim whose lease lapsed, for [`Hooks::rescued`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RescueEvent {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: usize,
}

/// Callbacks for metrics; every method defaults to doing nothing.
///
/// Hooks run on the runner's tasks, never under a lock, and should return quickly. A hook
/// that panics is caught and logged (`tracing::error!`); the runner goes on as if it had
/// returned, and calls it again at the next event.
///
/// Each change of a count makes exactly one call carrying the count right after it.
/// [`inflight`](Self::inflight) calls arrive in the order of the changes, so the last one
/// carries the latest count. [`depth`](Self::depth) calls do not promise that: when two
/// submits, cancels or job ends overlap, their calls may arrive in the other order than the
/// store applied them, so the last call seen may carry an older count until the next change.
///
/// The events are structs marked `#[non_exhaustive]`: fields may be added without breaking a
/// hook that reads the ones it knows.
pub trait Hooks: Send + Sync + 'static {
    /// The number of live (queued or running) jobs changed: on submit, when a job ends, on
    /// cancel (and at [`Runner::new`](crate::Runner::new) when the store holds live jobs).
    ///
    /// `live_jobs` is the store's count, read in the transaction that changed it; the calls
    /// of overlapping changes may arrive out of order (see the trait docs). On a shared store
    /// (PostgreSQL) it counts every replica's jobs, but only this runner's own submits,
    /// cancels and job ends make a call here.
    fn depth(&self, live_jobs: usize) {
        let _ = live_jobs;
    }

    /// The number of targets this runner has in flight changed.
    ///
    /// Calls arrive in the order of the changes, one at a time: a gauge set from them ends at
    /// the runner's count. The call may come from another worker's task than the one that
    /// made the change (the worker reporting at that moment makes the calls of the changes
    /// that arrive meanwhile), and a hook that blocks holds up that worker.
    fn inflight(&self, in_flight: usize) {
        let _ = in_flight;
    }

    /// A target was stored. Not called for busy retries.
    fn target(&self, event: &TargetEvent) {
        let _ = event;
    }

    /// A job reached a terminal status (also `cancelled`); exactly once per job, before the
    /// [`depth`](Self::depth) call its end makes.
    fn job(&self, event: &JobEvent) {
        let _ = event;
    }

    /// A target is fetched again because an earlier claim of it was lost: its lease lapsed
    /// (its holder died or stalled without renewing) and a worker took it over, reported by
    /// that worker; or a server crash undid the claim ([`Completion::Lost`]), reported by the
    /// claim's holder when its result is refused. So the count of rescues is the count of
    /// second fetches; each result is still stored once. Only stores with leases make this
    /// happen.
    ///
    /// [`Completion::Lost`]: crate::store::Completion::Lost
    fn rescued(&self, event: &RescueEvent) {
        let _ = event;
    }

    /// A store call failed; the runner waits `retry_wait` and tries it again (a claimed
    /// target keeps its claim meanwhile, so nothing is dropped). Logged with `tracing` too.
    fn store_error(&self, error: &StoreError) {
        let _ = error;
    }
}

/// Hooks that do nothing: the default.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoHooks;

impl Hooks for NoHooks {}

/// The user's [`Hooks`] as the runner calls them: each call under panicguard.
///
/// A hook is user code; a panic in one must not unwind through a worker (which holds a claim
/// its job needs) or through `submit`. It is logged with `tracing::error!` and otherwise
/// changes nothing: the claim completes or is released as usual, and the next event calls the
/// hook again.
#[derive(Clone)]
pub(crate) struct GuardedHooks(Arc<dyn Hooks>);

impl GuardedHooks {
    pub(crate) fn new(hooks: Arc<dyn Hooks>) -> Self {
        Self(hooks)
    }

    /// Runs one hook call, turning a panic into a log line.
    fn call(&self, hook: &'static str, f: impl FnOnce(&dyn Hooks)) {
        if let Err(panic) = lockgate_panicguard::catch(|| f(&*self.0)) {
            tracing::error!(hook, panic = panic.message(), "a batch hook panicked");
        }
    }

    pub(crate) fn depth(&self, live_jobs: usize) {
        self.call("depth", |h| h.depth(live_jobs));
    }

    pub(crate) fn inflight(&self, in_flight: usize) {
        self.call("inflight", |h| h.inflight(in_flight));
    }

    pub(crate) fn target(&self, event: &TargetEvent) {
        self.call("target", |h| h.target(event));
    }

    pub(crate) fn job(&self, event: &JobEvent) {
        self.call("job", |h| h.job(event));
    }

    pub(crate) fn rescued(&self, event: &RescueEvent) {
        self.call("rescued", |h| h.rescued(event));
    }

    pub(crate) fn store_error(&self, error: &StoreError) {
        self.call("store_error", |h| h.store_error(error));
    }
}
