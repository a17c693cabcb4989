//! [`MemoryStore`]: every job in this process's memory, behind one lock.
//!
//! The state machine (jobs, rotation, eviction order, per-job counts, the caller and key
//! indexes) and its invariants are in `state.rs`, the page indexes in `listing.rs`; this
//! file is the facade.

mod listing;
mod state;

use std::future::{Future, ready};
use std::time::Duration;

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId};
use crate::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use crate::store::{
    BoxFuture, CallerStore, CancelOutcome, Claim, ClaimEnd, Evicted, Finished, NewJob, Submitted,
    WorkerStore,
};
use crate::summary::JobSummary;
use crate::sync::Mutex;
use crate::time::Timestamp;

pub(crate) use state::State;

/// A [`Store`](super::Store) in memory: fast, and gone with the process.
///
/// One mutex guards all state, including the rotation; each call takes it once, never runs
/// user code under it, and finishes without awaiting (its futures are ready at once). After a
/// runner closed, another runner over the same `Arc<MemoryStore>` picks up where it stopped.
///
/// Claims never lapse by default ([`WorkerStore::lease_ttl`] is `None`): one process owns the
/// memory. [`MemoryStore::with_lease`] makes claims lapse unless renewed, as a store shared by
/// several processes must; it exercises the runner's heartbeat and fencing in tests.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockgate_batch::store::MemoryStore;
/// use lockgate_batch::{Caller, Config, FetchError, Runner};
///
/// let fetch = lockgate_batch::fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n * 2) });
/// let runner = Runner::new(Config::default(), MemoryStore::new(), fetch).await.unwrap();
/// let id = runner.submit(&Caller::new("ann"), &[1, 2]).await.unwrap();
/// # runner.close().await;
/// # let _ = id;
/// # }
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    state: Mutex<State>,
    lease: Option<Duration>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State::default()),
            lease: None,
        }
    }

    /// An empty store whose claims lapse unless renewed within `ttl`; a lapsed claim's target
    /// is claimed again under a new fencing token, and the old holder can store nothing.
    pub fn with_lease(ttl: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            lease: Some(ttl),
        }
    }

    /// Live (queued or running) jobs now.
    pub fn live_jobs(&self) -> usize {
        self.state.lock().live_jobs()
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock())
    }
}

/// Claims cost one lock, so `finish` takes no next claim: the worker claims when it needs one.
impl WorkerStore for MemoryStore {
    fn lease_ttl(&self) -> Option<Duration> {
        self.lease
    }

    fn recover(&self, _now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        ready(Ok(self.with(State::recover)))
    }

    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        ready(Ok(self.with(|s| s.claim(now, self.lease))))
    }

    fn renew(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        ready(Ok(self.with(|s| s.renew(claim, now, self.lease))))
    }

    fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        _take_next: bool,
    ) -> impl Future<Output = Result<Finished, StoreError>> + Send {
        ready(Ok(self.with(|s| s.finish(claim, end, now)).into()))
    }

    fn next_wakeup(
        &self,
        _now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        ready(Ok(self.with(|s| s.next_wakeup())))
    }

    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        ready(Ok(self.with(|s| s.evict_oldest(max_bytes))))
    }
}

impl CallerStore for MemoryStore {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(ready(self.with(|s| s.submit(job))))
    }

    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.status(id, caller)))))
    }

    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.summary(id, caller)))))
    }

    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.jobs_of(caller)))))
    }

    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        _now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.touch(id, caller)))))
    }

    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.cancel(id, caller, now)))))
    }

    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.jobs_page(scope, query)))))
    }

    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.job(scope, id)))))
    }

    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>> {
        Box::pin(ready(Ok(self.with(|s| s.targets_page(scope, id, query)))))
    }
}
