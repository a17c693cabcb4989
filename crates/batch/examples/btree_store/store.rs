//! [`BTreeStore`]: a complete store of its own, written from the `WorkerStore` and
//! `CallerStore` docs alone: every job in a `BTreeMap` behind one `std::sync::Mutex`.
//!
//! It is owned by one process, so it needs no lease (`lease_ttl` keeps its default, `None`)
//! and `recover` frees every claim. It favours plainness over speed: the rules are in
//! `state.rs`, one method each, scanning the map; this file only takes the lock. The crate's
//! conformance kit (`lockgate_batch::spec`, feature `store-spec`) holds it to the contract
//! in `tests/spec/custom_store.rs`.

// A path of its own, so that the test that includes this file by path finds it too.
#[path = "state.rs"]
mod state;

use std::future::{Future, Ready, ready};
use std::sync::Mutex;

use lockgate_batch::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use lockgate_batch::store::{
    BoxFuture, CallerStore, CancelOutcome, Claim, ClaimEnd, Evicted, Finished, NewJob, Submitted,
    Timestamp, WorkerStore,
};
use lockgate_batch::{Caller, Job, JobId, JobSummary, StoreError, SubmitError};

use state::State;

/// Every job in one ordered map, behind one lock: each call takes it once and never waits
/// under it, so every answer is ready at once.
#[derive(Debug, Default)]
pub struct BTreeStore {
    state: Mutex<State>,
}

impl BTreeStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `call` under the lock. A call that panicked under it may have left the state
    /// half changed: from then on every call fails rather than answer from it.
    fn with<R>(&self, call: impl FnOnce(&mut State) -> R) -> Ready<Result<R, StoreError>> {
        let state = self.state.lock();
        let poisoned = |_| StoreError::Failed("a call panicked under the lock".into());
        ready(state.map(|mut state| call(&mut state)).map_err(poisoned))
    }
}

impl WorkerStore for BTreeStore {
    fn recover(&self, _now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        self.with(State::recover)
    }

    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        self.with(|state| state.claim(now))
    }

    fn renew(
        &self,
        claim: &Claim,
        _now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.with(|state| state.renew(claim))
    }

    /// A claim costs one lock here, so the store never takes the next one with a finish.
    fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        _take_next: bool,
    ) -> impl Future<Output = Result<Finished, StoreError>> + Send {
        self.with(|state| state.finish(claim, end, now).into())
    }

    fn next_wakeup(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        self.with(|state| state.next_wakeup(now))
    }

    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        self.with(|state| state.evict_oldest(max_bytes))
    }
}

impl CallerStore for BTreeStore {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        let submitted = self.with(|state| state.submit(job)).into_inner();
        Box::pin(ready(submitted.unwrap_or_else(|err| Err(err.into()))))
    }

    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        Box::pin(self.with(|state| state.status(id, caller)))
    }

    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        Box::pin(self.with(|state| state.summary(id, caller)))
    }

    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        Box::pin(self.with(|state| state.jobs_of(caller)))
    }

    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        _now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.with(|state| state.touch_own(id, caller)))
    }

    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        Box::pin(self.with(|state| state.cancel(id, caller, now)))
    }

    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>> {
        Box::pin(self.with(|state| state.jobs_page(scope, query)))
    }

    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>> {
        Box::pin(self.with(|state| state.job(scope, id)))
    }

    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>> {
        Box::pin(self.with(|state| state.targets_page(scope, id, query)))
    }
}
