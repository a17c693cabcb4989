//! The [`Store`] traits: where jobs, targets, results and the rotation live.
//!
//! The runner never keeps job state of its own. A worker asks the store for a [`Claim`] (the
//! next target by the rotation rules), fetches it, and hands the result back under the claim's
//! fencing token. That keeps one runner code path over every store:
//!
//! - [`MemoryStore`]: everything behind one lock in this process;
//! - a SQLite store (one process owns the file; claims end with the process, and
//!   [`WorkerStore::recover`] hands them back on restart);
//! - a PostgreSQL store shared by several runner processes (claims carry a lease renewed by a
//!   heartbeat, and the fencing token rejects a late write from a replica that lost its lease).
//!
//! Targets and results cross this trait as JSON text, so a store is not generic over the
//! user's types; the typed [`Runner`](crate::Runner) serializes on its side. See
//! `docs/batch.md` for why the trait is shaped around claims.
//!
//! Beside the claims, a store answers what a service shows its callers without reading
//! targets: [`CallerStore::summary`] and [`CallerStore::jobs`] ([`JobSummary`]: status and counts, O(1) per
//! job), pages of jobs and of one job's targets ([`CallerStore::jobs_page`],
//! [`CallerStore::job`], [`CallerStore::targets_page`]: keyset pages whose cost is the
//! page's, see "Pages" on [`Store`]), idempotent submits ([`NewJob::key`]), and, for a shared
//! store, [`CallerStore::events`] ([`StoreEvent`]).
//!
//! The contract is split by who calls it: [`WorkerStore`] for the workers (generic, no box
//! per call) and [`CallerStore`] for the runner's callers (object safe: the runner keeps it
//! as a `dyn`). [`Store`] is both.
//!
//! **Writing your own store.** Implement [`WorkerStore`] and [`CallerStore`] by the rules on
//! [`Store`] (the answer types have constructors: [`Claim::new`], [`Submitted::new`],
//! [`Ended::new`], [`JobSummary::new`], [`Job::new`](crate::Job::new)…). Then hold it to
//! them: with the feature `store-spec`, `spec::conformance` runs in your tests the
//! executable spec our stores pass, random sequences of calls compared answer by answer
//! with a reference model, and shows the minimal sequence that breaks a rule. The example
//! `btree_store` (`examples/btree_store/`) is a complete store over a `Mutex<BTreeMap>`
//! that passes it.

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
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresError, PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteError, SqliteOptions, SqliteStore, Synchronous};

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Counts, Job, JobId, JobStatus, TargetState};
use crate::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use crate::summary::{JobSummary, Progress};
pub use crate::time::Timestamp;

/// A job to add, as [`CallerStore::submit`] receives it.
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
    /// [`CallerStore::submit`]).
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

impl Submitted {
    /// A new job `id`, with `live_jobs` live jobs right after its submit.
    pub fn new(id: JobId, live_jobs: usize) -> Self {
        Self {
            id,
            live_jobs,
            existing: false,
        }
    }

    /// The caller's stored job `id` with the submit's idempotency key: nothing was added,
    /// and `live_jobs` jobs are live.
    pub fn found_by_key(id: JobId, live_jobs: usize) -> Self {
        Self {
            id,
            live_jobs,
            existing: true,
        }
    }
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

impl Claim {
    /// A claim of target `index` (`target_json`) of `caller`'s job `job` under fencing
    /// `token`; not yet busy, not a rescue, not its job's start. Set
    /// [`busy_since`](Self::busy_since), [`rescued`](Self::rescued) and
    /// [`started`](Self::started) on it when they apply.
    pub fn new(
        job: JobId,
        caller: Caller,
        index: usize,
        target_json: impl Into<Arc<str>>,
        token: u64,
    ) -> Self {
        Self {
            job,
            caller,
            index,
            target_json: target_json.into(),
            token,
            busy_since: None,
            rescued: false,
            started: false,
        }
    }
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

impl Ended {
    /// Job `job` ended `after` its submit with `status` (terminal) and `counts`, leaving
    /// `live_jobs` live jobs.
    pub fn new(
        job: JobId,
        status: JobStatus,
        counts: Counts,
        after: Duration,
        live_jobs: usize,
    ) -> Self {
        Self {
            job,
            status,
            counts,
            after,
            live_jobs,
        }
    }
}

/// How a claim ends, as [`WorkerStore::finish`] receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimEnd {
    /// The target's result (never [`TargetState::Pending`]): stored, and the claim ends.
    /// When it was the job's last target and the job is live, the job ends: all done →
    /// `done`, all failed → `failed`, else `partial`. A cancelled job stays `cancelled`.
    Stored(TargetState),
    /// The target was only busy: it stays pending, first busy at `busy_since`, and its job is
    /// not ready again before `at`.
    RetryLater {
        /// When the target first came back busy.
        busy_since: Timestamp,
        /// When its job is ready again.
        at: Timestamp,
    },
    /// No result (the runner is closing, or the job was cancelled before the fetch): the
    /// target stays pending and its job is ready again at once.
    Released,
}

/// What [`WorkerStore::finish`] did with the claim.
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
    /// The claim ended without a result ([`ClaimEnd::RetryLater`] or
    /// [`ClaimEnd::Released`]): the target is pending.
    Pending,
    /// The claim is no longer current (its lease lapsed and another worker took the target,
    /// or the job was evicted): nothing changed.
    Stale,
    /// As [`Stale`](Self::Stale), and the claim was *lost*: a server crash undid it, so its
    /// target is fetched again (or was already) by a claim that could not know it was a
    /// second fetch. The runner reports it through
    /// [`Hooks::rescued`](crate::hooks::Hooks::rescued), so that rescues count every
    /// re-fetch. Only a store whose claims can be undone without their holder knowing
    /// answers it (PostgreSQL: claims commit without waiting for the disk).
    Lost,
}

/// The answer of [`WorkerStore::finish`]: what it did, and the next claim if the store
/// took one in the same step.
#[derive(Debug, Clone)]
pub struct Finished {
    /// What became of the claim.
    pub completion: Completion,
    /// The next target by the rotation, claimed in the same atomic step, if the worker
    /// asked for one and the store chose to take it (see [`WorkerStore::finish`]).
    pub next: Option<Claim>,
}

impl From<Completion> for Finished {
    /// A finish that claimed nothing.
    fn from(completion: Completion) -> Self {
        Self {
            completion,
            next: None,
        }
    }
}

/// A change to a shared store, as [`CallerStore::events`] announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreEvent {
    /// Job `job` changed (a submit, a start, a stored target, a busy retry, a release or a
    /// cancel); `progress` is the job right after. Events of one job may arrive out of order
    /// or twice; the runner keeps the newest (a terminal status, then more stored targets),
    /// so a store need not order them.
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

/// What [`CallerStore::cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// No such job for this caller.
    NotFound,
    /// The job had ended already; nothing changed.
    Terminal,
    /// The job is cancelled now.
    Cancelled(Ended),
}

/// What [`WorkerStore::evict_oldest`] removed.
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

/// A boxed, sendable future: what [`CallerStore`]'s calls return, so that it can be a `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where jobs live: the calls of a [`Runner`](crate::Runner)'s workers ([`WorkerStore`]) and
/// of its callers ([`CallerStore`]). Implement those two; every type that has both is a
/// `Store`. Every call is one atomic step: a store behind one lock takes it once, a
/// database runs one transaction.
///
/// # The rotation (what [`claim`](WorkerStore::claim) must pick)
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
/// **A released claim hands its turn back.** When a claim ends [`ClaimEnd::Released`] (never
/// fetched, or given up: the runner closing, a cancel of its job), and the cursor still
/// stands just after that claim's job, where the claim put it (no other claim moved it
/// since), the cursor goes back to where that claim's walk started: a target not served
/// takes no turn. Otherwise nothing moves: the cursor never moves back over another
/// claim's turn.
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
/// A claim holds its job until [`finish`](WorkerStore::finish) under its token. A store
/// whose claims can outlive their holder (several processes share it) returns a lease from
/// [`lease_ttl`](WorkerStore::lease_ttl): the runner then calls
/// [`renew`](WorkerStore::renew) every third of it while the fetch runs, and the store may
/// hand a claim whose lease lapsed to another worker with a new token. A store owned by one
/// process returns `None`: its claims never lapse, and [`recover`](WorkerStore::recover)
/// frees those a dead process left behind.
///
/// # Caller isolation
///
/// `status`, `summary`, `jobs`, `touch` and `cancel` answer for another caller's job exactly
/// as for a job that does not exist; so do `job` and `targets_page` in that caller's
/// [`Scope::Caller`], and `jobs_page` there lists none of them. Only [`Scope::Everyone`] (an
/// operator's view) reads every caller's jobs.
///
/// # Pages
///
/// [`jobs_page`](CallerStore::jobs_page), [`job`](CallerStore::job) and
/// [`targets_page`](CallerStore::targets_page) keep the rules of [`crate::page`]:
///
/// - **Keyset.** A jobs page holds the jobs the scope covers with an id below
///   [`JobsQuery::before`] (every id without one), in [`JobsQuery::status`] if it names one,
///   highest id first; a targets page the job's targets with an index above
///   [`TargetsQuery::after`], in [`TargetsQuery::state`] if it names one, lowest index first.
///   A key is any id or index, not only one a page handed out: a key no row has still
///   bounds the page.
/// - **Bounded.** A page holds the first [`JobsQuery::page_len`] (or
///   [`TargetsQuery::page_len`]) of those rows: the query's `limit` clamped to
///   `1..=`[`MAX_PAGE`](crate::page::MAX_PAGE). Its `next` is the key of its last row if at
///   least one more row follows it, and `None` otherwise (read one row past the page).
/// - **Whose.** Each [`JobListing`] carries the job's summary, its caller and the
///   idempotency key it was submitted with.
/// - **One snapshot.** A page, its `next` and (for a targets page) its job come from one
///   read of the store, never from halves of a change.
/// - **Cost.** A page costs what its rows cost, however many jobs the store holds or targets
///   the job has: walk an index from the key (jobs by caller and id, by caller, status and
///   id, by id, by status and id; targets by job and index, failed ones by job and index),
///   never skip rows by count. Targets are stored in index order, so a job's pending
///   targets are those from its first pending one on. The stores' page indexes are listed
///   in their files (`pages.rs`, `memory/listing.rs`).
///
/// # Idempotency keys
///
/// A [`NewJob`] may carry a `key`. If its caller has a job still stored with that key (in
/// any status, until eviction removes it), [`submit`](CallerStore::submit) adds nothing and
/// returns that job's id with [`Submitted::existing`] set; the new targets are ignored. This
/// check comes before the [`SubmitError::Full`] and [`SubmitError::CallerBusy`] checks, so a
/// client that retries a submit whose answer it lost gets its job back rather than a
/// refusal. Keys are per caller: two callers may use the same key.
///
/// # Bytes
///
/// A job's bytes, which the store's budget counts, are the lengths of its targets' JSON plus
/// [`TargetState::stored_bytes`] of each stored result: [`Completion::Stored`] reports what
/// a result added, and [`evict_oldest`](WorkerStore::evict_oldest) counts and frees whole
/// jobs by them.
///
/// # Counts and summaries
///
/// Each job's [`Counts`] are kept beside its status and updated in the same atomic step that
/// stores a target, so [`summary`](CallerStore::summary) costs O(1) whatever the job's size,
/// and [`jobs`](CallerStore::jobs) O(the caller's jobs). A claim reports whether it started
/// its job ([`Claim::started`]), a stored target the job's [`Progress`] right after
/// ([`Completion::Stored`]), and an ended job its final counts ([`Ended::counts`]): a runner
/// can tell a job's watchers everything without reading the job back.
///
/// # Events
///
/// A store shared by several processes returns a receiver from
/// [`events`](CallerStore::events): a [`StoreEvent::Progress`] for each change to a job made
/// through the store, at least those made by other processes (this process's own may arrive
/// too), and [`StoreEvent::Missed`] when some may have been lost. Two exceptions: a store may
/// announce a stored target of a job that goes on late, or leave it to be superseded by the
/// job's next change (the PostgreSQL store sends the newest per job at most every
/// `PostgresOptions::progress_interval`); and it may announce changes after their commits,
/// so that the announcement of a change whose process died right after it is lost (the
/// PostgreSQL store then sends `Missed` within its poll interval). A store owned by one
/// process keeps the default, `None`: every change goes through its own runner, which
/// reports it itself.
pub trait Store: WorkerStore + CallerStore {}

impl<S: WorkerStore + CallerStore> Store for S {}

/// The calls a runner's workers make: claim a target, keep its lease, finish it, and learn
/// when to claim again. Generic (no box per call): the workers know the store's type. See
/// [`Store`] for the rules every call keeps.
pub trait WorkerStore: Send + Sync + 'static {
    /// The lease a claim holds without renewal, or `None` when claims never lapse.
    fn lease_ttl(&self) -> Option<Duration> {
        None
    }

    /// Called once by [`Runner::new`](crate::Runner::new): makes the live jobs claimable again.
    /// A store owned by one process frees every claim (their holder is gone); a shared store
    /// leaves them to their leases. Returns the live-job count.
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send;

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

    /// Ends a claim as `end` says, and answers [`Completion::Stale`] (changing nothing) if
    /// the claim is no longer current.
    ///
    /// A store whose answers can be lost after their commit (a database over a connection
    /// that drops) may answer a repeated store of a result this very claim already stored as
    /// that store again, the job as it is now, so that the runner, which tries a failed call
    /// again, reports the target once (the spec's `Rules::replays_stores`; the PostgreSQL
    /// store does).
    ///
    /// With `take_next` (never with [`ClaimEnd::Released`]) the worker would fetch one more
    /// claim after the fetch it runs now, and the store **may** claim the next target by the
    /// rotation in the same atomic step, as [`claim`](Self::claim) would, among the other
    /// jobs (never the one just finished), returning it in [`Finished::next`]. Whether to is
    /// the store's choice: one that pays a round trip and a commit per call (PostgreSQL) then
    /// claims with neither of its own; one whose claim costs little (memory, SQLite) takes
    /// none and lets the worker claim when it needs one. A stale claim takes none.
    fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> impl Future<Output = Result<Finished, StoreError>> + Send;

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

    /// Removes whole ended jobs with no target in flight, least recently touched first
    /// (a job's touch time is its submit, its end, or its last `touch`; a job cancelled with a
    /// claim out ends, for this order, when that claim ends), until the stored bytes
    /// are at or below `max_bytes` or none is left. Never removes a live job.
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send;
}

/// The calls a runner makes for its callers: submit, read, touch, cancel, and follow a
/// shared store's changes. Object safe, so that a [`Runner`](crate::Runner) keeps it as a
/// `dyn` and names only its target and output types; each call returns a [`BoxFuture`]
/// (`Box::pin(async move { … })`). See [`Store`] for the rules every call keeps.
pub trait CallerStore: Send + Sync + 'static {
    /// Adds a job, atomically. Refuses a job without targets with
    /// [`SubmitError::Invalid`]`(`[`InvalidJob::Empty`](crate::InvalidJob::Empty)`)` before
    /// anything else; returns the caller's stored job with the same key if there is
    /// one (see "Idempotency keys" on [`Store`]), else refuses it with
    /// [`SubmitError::Full`] when `max_live_jobs` jobs are live, then with
    /// [`SubmitError::CallerBusy`] (naming the live job) when its caller has a live job.
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>>;

    /// A snapshot of `caller`'s job `id`, or `None`.
    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>>;

    /// `caller`'s job `id` without its targets (status, counts, times), or `None`; O(1).
    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>>;

    /// Every job of `caller` the store holds (live or ended, not yet evicted), in submit order.
    fn jobs<'a>(&'a self, caller: &'a Caller)
    -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>>;

    /// Marks `caller`'s job `id` recently used, so eviction takes it last; `false` if not found.
    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Cancels `caller`'s job `id` if it is live. Its in-flight target, if any, keeps its
    /// claim and is stored when it finishes; no other target is claimed again.
    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>>;

    /// A receiver of the changes other processes make to a shared store (see "Events" on
    /// [`Store`]), or `None` (the default) for a store owned by one process. Each call is a
    /// new receiver that sees changes from then on.
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        None
    }

    /// A page of the jobs `scope` covers, newest first: those below `query`'s key, in its
    /// status if it names one (see "Pages" on [`Store`] and [`crate::page`]'s rules).
    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>>;

    /// Job `id` without its targets, with whose it is and its key, if `scope` covers it;
    /// `None` for an unknown or evicted job and for another caller's in a
    /// [`Scope::Caller`]. O(1).
    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>>;

    /// A page of job `id`'s targets in submit order, with the job read in the same snapshot,
    /// if `scope` covers it (`None` as for [`job`](Self::job)): those after `query`'s key, in
    /// its state if it names one (see "Pages" on [`Store`] and [`crate::page`]'s rules).
    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>>;
}

/// One store, several runners one after another: `Arc<S>` is the store `S`.
impl<S: WorkerStore> WorkerStore for Arc<S> {
    fn lease_ttl(&self) -> Option<Duration> {
        S::lease_ttl(self)
    }
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        S::recover(self, now)
    }
    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        S::claim(self, now)
    }
    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        S::renew(self, claim, now)
    }
    fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> impl Future<Output = Result<Finished, StoreError>> + Send {
        S::finish(self, claim, end, now, take_next)
    }
    fn next_wakeup(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        S::next_wakeup(self, now)
    }
    fn changed(&self) -> impl Future<Output = ()> + Send {
        S::changed(self)
    }
    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        S::evict_oldest(self, max_bytes)
    }
}

/// One store, several runners one after another: `Arc<S>` is the store `S`.
impl<S: CallerStore + ?Sized> CallerStore for Arc<S> {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        S::submit(self, job)
    }
    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        S::status(self, id, caller)
    }
    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        S::summary(self, id, caller)
    }
    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        S::jobs(self, caller)
    }
    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        S::touch(self, id, caller, now)
    }
    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        S::cancel(self, id, caller, now)
    }
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        S::events(self)
    }
    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>> {
        S::jobs_page(self, scope, query)
    }
    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>> {
        S::job(self, scope, id)
    }
    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>> {
        S::targets_page(self, scope, id, query)
    }
}
