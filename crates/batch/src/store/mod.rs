//! The [`Store`] trait: where jobs, targets, results and the rotation live.
//!
//! The runner never keeps job state of its own. A worker asks the store for a [`Claim`] (the
//! next target by the rotation rules), fetches it, and hands the result back under the claim's
//! fencing token. That keeps one runner code path over every store:
//!
//! - [`MemoryStore`]: everything behind one lock in this process;
//! - a SQLite store (one process owns the file; claims end with the process, and
//!   [`Store::recover`] hands them back on restart);
//! - a PostgreSQL store shared by several runner processes (claims carry a lease renewed by a
//!   heartbeat, and the fencing token rejects a late write from a replica that lost its lease).
//!
//! Targets and results cross this trait as JSON text, so a store is not generic over the
//! user's types; the typed [`Runner`](crate::Runner) serializes on its side. See
//! `docs/batch.md` for why the trait is shaped around claims.

pub(crate) mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresError, PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{MAX_BUSY_TIMEOUT, SqliteError, SqliteOptions, SqliteStore, Synchronous};

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId, JobStatus, TargetState};
pub use crate::time::Timestamp;

/// A job to add, as [`Store::submit`] receives it.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// Who submits it.
    pub caller: Caller,
    /// Its targets, each serialized to JSON, in order.
    pub targets: Vec<String>,
    /// The submit time.
    pub now: Timestamp,
    /// Refuse with [`SubmitError::Full`] if this many jobs are live already.
    pub max_live_jobs: usize,
}

/// A job the store accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// Its new id.
    pub id: JobId,
    /// Live jobs right after, this one included.
    pub live_jobs: usize,
}

/// One target handed to one worker: the right to fetch it and store its result.
///
/// Only the holder of the current claim of a job can store, retry or release its target: each
/// claim carries a fresh fencing `token`, and the store ignores calls under an older one.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The job.
    pub job: JobId,
    /// Its caller, passed to the fetch.
    pub caller: Caller,
    /// The target's index in the job.
    pub index: usize,
    /// The target, as JSON.
    pub target_json: Arc<str>,
    /// The fencing token: unique per claim within the store, increasing.
    pub token: u64,
    /// When this target first came back busy, if it has.
    pub busy_since: Option<Timestamp>,
    /// This claim takes over one whose lease lapsed (its holder died or stalled): the target
    /// may have been fetched before. The runner reports it through
    /// [`Hooks::rescued`](crate::Hooks::rescued) and `tracing`.
    pub rescued: bool,
}

/// A job that just reached a terminal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// Its terminal status.
    pub status: JobStatus,
    /// How long after its submit it ended.
    pub after: Duration,
    /// Live jobs right after.
    pub live_jobs: usize,
}

/// What [`Store::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The result is stored.
    Stored {
        /// The bytes it added to the store's budget.
        bytes: u64,
        /// Set when this was the job's last target and the job was live: it ended now.
        ended: Option<Ended>,
    },
    /// The claim is no longer current (its lease lapsed and another worker took the target,
    /// or the job was evicted): nothing was stored.
    Stale,
}

/// What [`Store::cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// No such job for this caller.
    NotFound,
    /// The job had ended already; nothing changed.
    Terminal,
    /// The job is cancelled now.
    Cancelled(Ended),
}

/// What [`Store::evict_oldest`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evicted {
    /// Jobs removed.
    pub jobs: usize,
    /// Bytes freed.
    pub bytes: u64,
    /// The bytes of the largest job removed (0 if none): above the budget, that job could not
    /// be kept at all, which the runner logs.
    pub largest: u64,
}

/// Where jobs live. Every method is one atomic step: a store behind one lock takes it once, a
/// database runs one transaction.
///
/// # The rotation (what [`claim`](Self::claim) must pick)
///
/// Live jobs form one rotation in submit order. A claim picks, scanning from a cursor and
/// wrapping once, the first job that is live (not cancelled, not ended), has a pending target,
/// has **no target in flight** (no current claim), and whose retry time, if any, has come. It
/// claims that job's first pending target, marks the job `running`, and moves the cursor just
/// past the job. So every job is serial and, when all are ready, jobs alternate.
///
/// # Fencing and leases
///
/// A claim holds its job until [`complete`](Self::complete), [`retry_later`](Self::retry_later)
/// or [`release`](Self::release) under its token. A store whose claims can outlive their holder
/// (several processes share it) returns a lease from [`lease_ttl`](Self::lease_ttl): the runner
/// then calls [`renew`](Self::renew) every third of it while the fetch runs, and the store may
/// hand a claim whose lease lapsed to another worker with a new token. A store owned by one
/// process returns `None`: its claims never lapse, and [`recover`](Self::recover) frees those
/// a dead process left behind.
///
/// # Caller isolation
///
/// `status`, `touch` and `cancel` answer for another caller's job exactly as for a job that
/// does not exist.
pub trait Store: Send + Sync + 'static {
    /// The lease a claim holds without renewal, or `None` when claims never lapse.
    fn lease_ttl(&self) -> Option<Duration> {
        None
    }

    /// Called once by [`Runner::new`](crate::Runner::new): makes the live jobs claimable again.
    /// A store owned by one process frees every claim (their holder is gone); a shared store
    /// leaves them to their leases. Returns the live-job count.
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Adds a job, atomically refusing it with [`SubmitError::Full`] when `max_live_jobs` jobs
    /// are live, then with [`SubmitError::CallerBusy`] when its caller has a live job.
    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send;

    /// Claims the next target by the rotation, or `None` when no job is ready.
    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send;

    /// Extends a claim's lease; `false` if the claim is no longer current.
    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Stores the claimed target's result (never [`TargetState::Pending`]) and ends the claim.
    /// When it was the job's last target and the job is live, the job ends: all done → `done`,
    /// all failed → `failed`, else `partial`. A cancelled job stays `cancelled`.
    fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<Completion, StoreError>> + Send;

    /// Ends a claim whose target was only busy: it stays pending, first busy at `busy_since`,
    /// and its job is not ready again before `at`. `false` if the claim is no longer current.
    fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Ends a claim without a result (the runner is closing): the target stays pending and its
    /// job is ready again at once. `false` if the claim is no longer current.
    fn release(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// When to claim next if nothing else wakes the workers: the earliest retry time of a job
    /// that waits only for it, or the earliest lease to lapse, if any. A shared store may also
    /// return a bounded fallback poll time here. A time at or before now promises that a
    /// claim now finds work (or consumes the reason for that time, as a rescue does);
    /// otherwise idle workers would wake again at once.
    fn next_wakeup(&self) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send;

    /// Resolves when another process may have made a job claimable (a submit, a stored target
    /// or a cancel elsewhere; for PostgreSQL a `LISTEN/NOTIFY` message). Idle workers wait on
    /// it beside their own wake-ups; each call is a fresh wait. A store owned by one process
    /// sees every change through the runner and keeps the default, which never resolves.
    fn changed(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }

    /// A snapshot of `caller`'s job `id`, or `None`.
    fn status(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send;

    /// Marks `caller`'s job `id` recently used, so eviction takes it last; `false` if not found.
    fn touch(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Cancels `caller`'s job `id` if it is live. Its in-flight target, if any, keeps its
    /// claim and is stored when it finishes; no other target is claimed again.
    fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;

    /// Removes whole ended jobs with no target in flight, least recently touched first
    /// (a job's touch time is its submit, its end, or its last `touch`), until the stored bytes
    /// are at or below `max_bytes` or none is left. Never removes a live job.
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send;
}

/// A shared store is a store: several runners, one after another, can use one `Arc<MemoryStore>`.
impl<S: Store> Store for Arc<S> {
    fn lease_ttl(&self) -> Option<Duration> {
        (**self).lease_ttl()
    }
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        (**self).recover(now)
    }
    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send {
        (**self).submit(job)
    }
    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        (**self).claim(now)
    }
    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).renew(claim, now)
    }
    fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<Completion, StoreError>> + Send {
        (**self).complete(claim, result, now)
    }
    fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).retry_later(claim, busy_since, at, now)
    }
    fn release(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).release(claim, now)
    }
    fn next_wakeup(&self) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        (**self).next_wakeup()
    }
    fn changed(&self) -> impl Future<Output = ()> + Send {
        (**self).changed()
    }
    fn status(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send {
        (**self).status(id, caller)
    }
    fn touch(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).touch(id, caller, now)
    }
    fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        (**self).cancel(id, caller, now)
    }
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        (**self).evict_oldest(max_bytes)
    }
}
