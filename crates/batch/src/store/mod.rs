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
//!
//! Beside the claims, a store answers what a service shows its callers without reading
//! targets: [`Store::summary`] and [`Store::jobs`] ([`JobSummary`]: status and counts, O(1) per
//! job), idempotent submits ([`NewJob::key`]), and, for a shared store, [`Store::events`]
//! ([`StoreEvent`]). [`StoreWrapper`] lets a wrapper override only the calls it changes.

pub(crate) mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
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
use crate::job::{Caller, Counts, Job, JobId, JobStatus, TargetState};
use crate::summary::{JobSummary, Progress};
pub use crate::time::Timestamp;

/// A job to add, as [`Store::submit`] receives it.
///
/// Build one with [`NewJob::new`] (and [`with_key`](Self::with_key)); the fields stay public
/// for stores to read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewJob {
    /// Who submits it.
    pub caller: Caller,
    /// Its targets, each serialized to JSON, in order.
    pub targets: Vec<String>,
    /// The submit time.
    pub now: Timestamp,
    /// Refuse with [`SubmitError::Full`] if this many jobs are live already.
    pub max_live_jobs: usize,
    /// An idempotency key: if the caller has a job still stored with this key (any status,
    /// not evicted), `submit` returns that job instead of adding one (see
    /// [`Store::submit`]).
    pub key: Option<String>,
}

impl NewJob {
    /// A job of `caller` with `targets`, submitted at `now`, refused if `max_live_jobs` jobs
    /// are live; no idempotency key.
    pub fn new(caller: Caller, targets: Vec<String>, now: Timestamp, max_live_jobs: usize) -> Self {
        Self {
            caller,
            targets,
            now,
            max_live_jobs,
            key: None,
        }
    }

    /// The same job with idempotency key `key`.
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// A job the store accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Submitted {
    /// Its id: new, or the id of the caller's stored job with the same key.
    pub id: JobId,
    /// Live jobs right after, this one included (if it is live).
    pub live_jobs: usize,
    /// `true` when the caller had a job stored with the same idempotency key: `id` is that
    /// job's, and nothing was added.
    pub existing: bool,
}

/// One target handed to one worker: the right to fetch it and store its result.
///
/// Only the holder of the current claim of a job can store, retry or release its target: each
/// claim carries a fresh fencing `token`, and the store ignores calls under an older one.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// [`Hooks::rescued`](crate::hooks::Hooks::rescued) and `tracing`.
    pub rescued: bool,
    /// This claim moved its job from `queued` to `running` (the job's first claim).
    pub started: bool,
}

/// A job that just reached a terminal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ended {
    /// The job.
    pub job: JobId,
    /// Its terminal status.
    pub status: JobStatus,
    /// Its counts when it ended (a cancelled job's pending targets stay pending).
    pub counts: Counts,
    /// How long after its submit it ended.
    pub after: Duration,
    /// Live jobs right after.
    pub live_jobs: usize,
}

/// What [`Store::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// The result is stored.
    Stored {
        /// The bytes it added to the store's budget.
        bytes: u64,
        /// Set when this was the job's last target and the job was live: it ended now.
        ended: Option<Ended>,
        /// The job right after the store: its status, its counts, and
        /// `last: Some((index, outcome))` of this target.
        progress: Progress,
    },
    /// The claim is no longer current (its lease lapsed and another worker took the target,
    /// or the job was evicted): nothing was stored.
    Stale,
}

/// A change to a shared store, as [`Store::events`] announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreEvent {
    /// Job `job` changed (a submit, a start, a stored target, a busy retry, a release or a
    /// cancel); `progress` is the job right after. Events of one job may arrive out of order
    /// or twice: keep the newer by [`Progress::is_newer_than`].
    Progress {
        /// The job.
        job: JobId,
        /// Its status and counts right after the change.
        progress: Progress,
    },
    /// Events may have been lost (the store's listener reconnected, or announcements sent
    /// after their changes' commits were lost with the process that was to send them; the
    /// PostgreSQL store says so at least every poll interval): re-read what you watch. A
    /// [`broadcast`](tokio::sync::broadcast) receiver that lagged (`RecvError::Lagged`) has
    /// lost events the same way and should do the same.
    Missed,
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
/// A job is **ready** when it is live (queued or running), has a pending target, has no
/// target in flight (no current claim; a claim whose lease lapsed by `now` is none), and its
/// retry time, if any, has come. The live jobs form one list in **submit order** (a new job
/// joins the end), and the store keeps one **cursor** into it: the place after the job it
/// claimed last (the start, before any claim). A claim scans the list from the cursor to the
/// end, then from the start back to the cursor (wrapping once), takes the first ready job,
/// claims its first pending target, marks it `running`, and sets the cursor after it. A job
/// the scan passes over (in flight, waiting to retry) falls behind the cursor like any
/// other and waits for the next lap. Since ids grow with submits, "from the cursor" is "the
/// first ready id above the last one claimed, else the lowest ready id".
///
/// So every job is serial, and when all are ready, jobs alternate: with jobs `a` and `b`
/// and one worker, `a1 b1 a2 b2 …`, also when `b` was submitted while `a1` was in flight.
///
/// **Fairness bound.** Once a job is ready, every other job is claimed at most once before
/// it (the scan that passes a job claims it, and the cursor reaches the waiting job before
/// it comes back round): with `n` live jobs, a ready job waits for at most `n − 1` claims.
///
/// A store shared by several processes may keep one cursor per process (the PostgreSQL
/// store keeps one per `PostgresStore` value) over the one shared list, and lets claims run
/// in parallel, each skipping the rows other transactions hold at that moment. With one
/// process claiming the order is the rule's; with several, each process's cursor passes a
/// waiting job's rivals at most once, so every other job is claimed at most **once per
/// claiming process** before it, plus once by a claim already on its way when the job
/// became ready (claims of one process that overlap in time start from the cursor the last
/// answered one left).
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
/// `status`, `summary`, `jobs`, `touch` and `cancel` answer for another caller's job exactly
/// as for a job that does not exist.
///
/// # Idempotency keys
///
/// A [`NewJob`] may carry a `key`. If its caller has a job still stored with that key (in
/// any status, until eviction removes it), [`submit`](Self::submit) adds nothing and returns
/// that job's id with [`Submitted::existing`] set; the new targets are ignored. This check
/// comes before the [`SubmitError::Full`] and [`SubmitError::CallerBusy`] checks, so a client
/// that retries a submit whose answer it lost gets its job back rather than a refusal. Keys
/// are per caller: two callers may use the same key.
///
/// # Counts and summaries
///
/// Each job's [`Counts`] are kept beside its status and updated in the same atomic step that
/// stores a target, so [`summary`](Self::summary) costs O(1) whatever the job's size, and
/// [`jobs`](Self::jobs) O(the caller's jobs). A claim reports whether it started its job
/// ([`Claim::started`]), a stored target the job's [`Progress`] right after
/// ([`Completion::Stored`]), and an ended job its final counts ([`Ended::counts`]): a runner
/// can tell a job's watchers everything without reading the job back.
///
/// # Events
///
/// A store shared by several processes returns a receiver from [`events`](Self::events): a
/// [`StoreEvent::Progress`] for each change to a job made through the store, at least those
/// made by other processes (this process's own may arrive too), and [`StoreEvent::Missed`]
/// when some may have been lost. Two exceptions: a store may announce a stored target of a
/// job that goes on late, or leave it to be superseded by the job's next change (the
/// PostgreSQL store sends the newest per job at most every
/// `PostgresOptions::progress_interval`); and it may announce changes after their commits,
/// so that the announcement of a change whose process died right after it is lost (the
/// PostgreSQL store then sends `Missed` within its poll interval). A store owned by one
/// process keeps the default, `None`: every change goes through its own runner, which
/// reports it itself.
///
/// # Wrappers
///
/// A type that adds behaviour to a store (logging, failure injection, a test clock)
/// implements [`StoreWrapper`] rather than this trait, and overrides only the calls it
/// changes; a blanket impl makes every wrapper a `Store`.
pub trait Store: Send + Sync + 'static {
    /// The lease a claim holds without renewal, or `None` when claims never lapse.
    fn lease_ttl(&self) -> Option<Duration> {
        None
    }

    /// Called once by [`Runner::new`](crate::Runner::new): makes the live jobs claimable again.
    /// A store owned by one process frees every claim (their holder is gone); a shared store
    /// leaves them to their leases. Returns the live-job count.
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Adds a job, atomically. Refuses a job without targets with
    /// [`SubmitError::Invalid`]`(`[`InvalidJob::Empty`](crate::InvalidJob::Empty)`)` before
    /// anything else; returns the caller's stored job with the same key if there is
    /// one (see "Idempotency keys"), else refuses it with [`SubmitError::Full`] when
    /// `max_live_jobs` jobs are live, then with [`SubmitError::CallerBusy`] (naming the live
    /// job) when its caller has a live job.
    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send;

    /// Claims the next target by the rotation, or `None` when no job is ready.
    /// [`Claim::started`] is set when the claim moved its job from `queued` to `running`.
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

    /// Stores the claimed target's result as [`complete`](Self::complete) does and, in the
    /// same atomic step, may claim the next target by the rotation as [`claim`](Self::claim)
    /// would, among the other jobs (never the stored one): `Some` only when it did. A stale
    /// claim ([`Completion::Stale`]) claims nothing.
    ///
    /// The runner calls this instead of `complete` only when
    /// [`claims_with_complete`](Self::claims_with_complete) says so, while its fetches are
    /// short, and fetches the claim it returns after the fetch it is running (holding it
    /// meanwhile): a store that pays a round trip and a commit per call thus claims with
    /// neither of its own. The default stores and claims nothing.
    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        async move { Ok((self.complete(claim, result, now).await?, None)) }
    }

    /// Whether [`complete_and_claim`](Self::complete_and_claim) claims: then the runner's
    /// workers claim their next target with the store of their last one while fetches are
    /// short (each holds one claim ahead of the fetch it runs). The default, `false`, keeps
    /// a claim per call to [`claim`](Self::claim), right when a worker needs one: right for
    /// a store in this process, whose claim costs little.
    fn claims_with_complete(&self) -> bool {
        false
    }

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

    /// When to claim next if nothing else wakes the workers, on the clock `now` is read from:
    /// the earliest retry time of a job that waits only for it, or the earliest lease to
    /// lapse, if any. A shared store may also return a bounded fallback poll time here, and
    /// one that judges leases by another clock (the database server's) converts their ends
    /// to `now`'s clock. A time at or before now promises that a
    /// claim now finds work (or consumes the reason for that time, as a rescue does);
    /// otherwise idle workers would wake again at once.
    fn next_wakeup(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send;

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

    /// `caller`'s job `id` without its targets (status, counts, times), or `None`; O(1).
    fn summary(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<JobSummary>, StoreError>> + Send;

    /// Every job of `caller` the store holds (live or ended, not yet evicted), in submit order.
    fn jobs(
        &self,
        caller: &Caller,
    ) -> impl Future<Output = Result<Vec<JobSummary>, StoreError>> + Send;

    /// A receiver of the changes other processes make to a shared store (see "Events"), or
    /// `None` (the default) for a store owned by one process. Each call is a new receiver
    /// that sees changes from then on.
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        None
    }

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
    /// (a job's touch time is its submit, its end, or its last `touch`; a job cancelled with a
    /// claim out ends, for this order, when that claim ends), until the stored bytes
    /// are at or below `max_bytes` or none is left. Never removes a live job.
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send;
}

/// A store around another store, forwarding every call it does not override.
///
/// Implement this instead of [`Store`] for a wrapper: a blanket impl makes every
/// `StoreWrapper` a `Store`, and each method defaults to calling the same method of
/// [`inner`](Self::inner), its future passed through [`around`](Self::around). So a wrapper
/// that logs claims overrides `claim` alone, and one that runs every call elsewhere overrides
/// `around` alone. `Arc<S>` is a wrapper of `S`.
///
/// The methods have the names of [`Store`]'s: with both traits in scope, call a wrapper's
/// store methods as `Store::claim(&wrapper, now)`.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// use lockgate_batch::StoreError;
/// use lockgate_batch::store::{Claim, MemoryStore, Store, StoreWrapper, Timestamp};
///
/// /// Counts claims; everything else is the memory store's.
/// struct Counted {
///     store: MemoryStore,
///     claims: AtomicU64,
/// }
///
/// impl StoreWrapper for Counted {
///     type Inner = MemoryStore;
///     fn inner(&self) -> &MemoryStore {
///         &self.store
///     }
///     async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
///         self.claims.fetch_add(1, Ordering::Relaxed);
///         Store::claim(&self.store, now).await
///     }
/// }
///
/// fn runnable(_: impl Store) {}
/// runnable(Counted { store: MemoryStore::new(), claims: AtomicU64::new(0) });
/// ```
pub trait StoreWrapper: Send + Sync + 'static {
    /// The wrapped store.
    type Inner: Store;

    /// The wrapped store, which every call not overridden goes to.
    fn inner(&self) -> &Self::Inner;

    /// Runs a forwarded call's future; the default returns it as is. Not used for
    /// [`changed`](Store::changed), which may wait forever, nor for the synchronous calls.
    fn around<F>(&self, call: F) -> impl Future<Output = F::Output> + Send
    where
        F: Future + Send,
        F::Output: Send,
    {
        call
    }

    /// As [`Store::lease_ttl`].
    fn lease_ttl(&self) -> Option<Duration> {
        self.inner().lease_ttl()
    }
    /// As [`Store::recover`].
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        self.around(self.inner().recover(now))
    }
    /// As [`Store::submit`].
    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send {
        self.around(self.inner().submit(job))
    }
    /// As [`Store::claim`].
    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        self.around(self.inner().claim(now))
    }
    /// As [`Store::renew`].
    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.around(self.inner().renew(claim, now))
    }
    /// As [`Store::complete`].
    fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<Completion, StoreError>> + Send {
        self.around(self.inner().complete(claim, result, now))
    }
    /// Stores through this wrapper's own [`complete`](StoreWrapper::complete) and claims
    /// nothing: forwarding to the inner store's `complete_and_claim` would skip a `complete`
    /// this wrapper overrides. A wrapper that wants the inner store's combined call
    /// overrides this and [`claims_with_complete`](StoreWrapper::claims_with_complete)
    /// together (`Arc` does).
    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        async move {
            let completion = StoreWrapper::complete(self, claim, result, now).await?;
            Ok((completion, None))
        }
    }
    /// `false`, as the default [`complete_and_claim`](StoreWrapper::complete_and_claim)
    /// claims nothing.
    fn claims_with_complete(&self) -> bool {
        false
    }
    /// As [`Store::retry_later`].
    fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.around(self.inner().retry_later(claim, busy_since, at, now))
    }
    /// As [`Store::release`].
    fn release(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.around(self.inner().release(claim, now))
    }
    /// As [`Store::next_wakeup`].
    fn next_wakeup(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        self.around(self.inner().next_wakeup(now))
    }
    /// As [`Store::changed`] (not passed through `around`).
    fn changed(&self) -> impl Future<Output = ()> + Send {
        self.inner().changed()
    }
    /// As [`Store::status`].
    fn status(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send {
        self.around(self.inner().status(id, caller))
    }
    /// As [`Store::summary`].
    fn summary(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<JobSummary>, StoreError>> + Send {
        self.around(self.inner().summary(id, caller))
    }
    /// As [`Store::jobs`].
    fn jobs(
        &self,
        caller: &Caller,
    ) -> impl Future<Output = Result<Vec<JobSummary>, StoreError>> + Send {
        self.around(self.inner().jobs(caller))
    }
    /// As [`Store::events`].
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        self.inner().events()
    }
    /// As [`Store::touch`].
    fn touch(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.around(self.inner().touch(id, caller, now))
    }
    /// As [`Store::cancel`].
    fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        self.around(self.inner().cancel(id, caller, now))
    }
    /// As [`Store::evict_oldest`].
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        self.around(self.inner().evict_oldest(max_bytes))
    }
}

/// Every wrapper is a store: each call goes to the wrapper's method (its override, or the
/// default that forwards to the inner store).
impl<W: StoreWrapper> Store for W {
    fn lease_ttl(&self) -> Option<Duration> {
        StoreWrapper::lease_ttl(self)
    }
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        StoreWrapper::recover(self, now)
    }
    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send {
        StoreWrapper::submit(self, job)
    }
    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        StoreWrapper::claim(self, now)
    }
    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        StoreWrapper::renew(self, claim, now)
    }
    fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<Completion, StoreError>> + Send {
        StoreWrapper::complete(self, claim, result, now)
    }
    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        StoreWrapper::complete_and_claim(self, claim, result, now)
    }
    fn claims_with_complete(&self) -> bool {
        StoreWrapper::claims_with_complete(self)
    }
    fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        StoreWrapper::retry_later(self, claim, busy_since, at, now)
    }
    fn release(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        StoreWrapper::release(self, claim, now)
    }
    fn next_wakeup(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        StoreWrapper::next_wakeup(self, now)
    }
    fn changed(&self) -> impl Future<Output = ()> + Send {
        StoreWrapper::changed(self)
    }
    fn status(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send {
        StoreWrapper::status(self, id, caller)
    }
    fn summary(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<JobSummary>, StoreError>> + Send {
        StoreWrapper::summary(self, id, caller)
    }
    fn jobs(
        &self,
        caller: &Caller,
    ) -> impl Future<Output = Result<Vec<JobSummary>, StoreError>> + Send {
        StoreWrapper::jobs(self, caller)
    }
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        StoreWrapper::events(self)
    }
    fn touch(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        StoreWrapper::touch(self, id, caller, now)
    }
    fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        StoreWrapper::cancel(self, id, caller, now)
    }
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        StoreWrapper::evict_oldest(self, max_bytes)
    }
}

/// A shared store is a store: several runners, one after another, can use one `Arc<MemoryStore>`.
impl<S: Store> StoreWrapper for Arc<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        self
    }

    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        S::complete_and_claim(self, claim, result, now)
    }

    fn claims_with_complete(&self) -> bool {
        S::claims_with_complete(self)
    }
}
