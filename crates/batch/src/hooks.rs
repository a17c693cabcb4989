//! Hooks: what the runner reports for metrics.

use std::time::Duration;

use crate::error::StoreError;
use crate::job::JobStatus;

/// How a stored target ended, for [`Hooks::target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetOutcome {
    /// Stored done.
    Done,
    /// Stored failed (an error, a panic, or busy for longer than `retry_for`).
    Failed,
}

/// Callbacks for metrics; every method defaults to doing nothing.
///
/// Hooks run on the runner's tasks, never under a lock, and should return quickly. When two
/// workers change a count at once, their calls may arrive in either order: each change makes
/// exactly one call carrying the count right after it, but the last call seen need not carry
/// the latest count.
pub trait Hooks: Send + Sync + 'static {
    /// The number of live (queued or running) jobs changed: on submit, when a job ends, on
    /// cancel.
    fn depth(&self, live_jobs: usize) {
        let _ = live_jobs;
    }

    /// The number of targets this runner has in flight changed.
    fn inflight(&self, in_flight: usize) {
        let _ = in_flight;
    }

    /// A target was stored: how it ended, how long its last fetch took, and the bytes stored
    /// for it (the output JSON, or the error text and hint). Not called for busy retries.
    fn target(&self, outcome: TargetOutcome, elapsed: Duration, result_bytes: u64) {
        let _ = (outcome, elapsed, result_bytes);
    }

    /// A job reached a terminal status; exactly once per job.
    fn job(&self, status: JobStatus) {
        let _ = status;
    }

    /// A worker took over a target whose previous claim's lease lapsed (its holder died or
    /// stalled without renewing): that target may be fetched twice, its result is still stored
    /// once. Only stores with leases make this happen.
    fn rescued(&self) {}

    /// A store call failed; the runner waits `retry_wait` and tries it again (a claimed
    /// target keeps its claim meanwhile, so nothing is dropped). Logged with `tracing` too.
    fn store_error(&self, error: &StoreError) {
        let _ = error;
    }

    /// A job reached a terminal status, this long after it was submitted; exactly once per job,
    /// right after [`job`](Self::job) (also for `cancelled`).
    fn job_seconds(&self, seconds: f64) {
        let _ = seconds;
    }
}

/// Hooks that do nothing: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}
