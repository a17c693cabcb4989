//! The store and the fetch behind trait objects, so that a [`Runner`](crate::Runner) names only
//! its target and output types (`Runner<T, O>`: a struct field, an axum `State`).
//!
//! [`Store`] and [`Fetch`] return `impl Future` (no box per call for a user who calls them
//! directly), which makes them unusable as `dyn`. [`DynStore`] and [`DynFetch`] are their
//! object-safe twins, implemented for every store and fetch: each call boxes its future once.
//! Measured on the runner bench (docs/batch.md): about three boxes per target, inside the
//! bench's noise.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::{StoreError, SubmitError};
use crate::fetch::{Fetch, FetchContext, FetchError};
use crate::job::{Caller, Job, JobId, TargetState};
use crate::store::{
    CancelOutcome, Claim, Completion, Evicted, NewJob, Store, StoreEvent, Submitted,
};
use crate::summary::JobSummary;
use crate::time::Timestamp;

/// A boxed, sendable future.
pub(crate) type BoxFuture<'a, R> = Pin<Box<dyn Future<Output = R> + Send + 'a>>;

/// [`Store`], object safe: every method boxes the store's future. (`recover` runs once, on
/// the concrete store, before it is boxed.)
pub(crate) trait DynStore: Send + Sync + 'static {
    fn lease_ttl(&self) -> Option<Duration>;
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>>;
    fn claim(&self, now: Timestamp) -> BoxFuture<'_, Result<Option<Claim>, StoreError>>;
    fn renew<'a>(
        &'a self,
        claim: &'a Claim,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    fn complete<'a>(
        &'a self,
        claim: &'a Claim,
        result: TargetState,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Completion, StoreError>>;
    fn retry_later<'a>(
        &'a self,
        claim: &'a Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    fn release<'a>(
        &'a self,
        claim: &'a Claim,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    fn next_wakeup(&self) -> BoxFuture<'_, Result<Option<Timestamp>, StoreError>>;
    fn changed(&self) -> BoxFuture<'_, ()>;
    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>>;
    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>>;
    fn jobs<'a>(&'a self, caller: &'a Caller)
    -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>>;
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>>;
    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>>;
    fn evict_oldest(&self, max_bytes: u64) -> BoxFuture<'_, Result<Evicted, StoreError>>;
}

impl<S: Store> DynStore for S {
    fn lease_ttl(&self) -> Option<Duration> {
        Store::lease_ttl(self)
    }
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(Store::submit(self, job))
    }
    fn claim(&self, now: Timestamp) -> BoxFuture<'_, Result<Option<Claim>, StoreError>> {
        Box::pin(Store::claim(self, now))
    }
    fn renew<'a>(
        &'a self,
        claim: &'a Claim,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::renew(self, claim, now))
    }
    fn complete<'a>(
        &'a self,
        claim: &'a Claim,
        result: TargetState,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<Completion, StoreError>> {
        Box::pin(Store::complete(self, claim, result, now))
    }
    fn retry_later<'a>(
        &'a self,
        claim: &'a Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::retry_later(self, claim, busy_since, at, now))
    }
    fn release<'a>(
        &'a self,
        claim: &'a Claim,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::release(self, claim, now))
    }
    fn next_wakeup(&self) -> BoxFuture<'_, Result<Option<Timestamp>, StoreError>> {
        Box::pin(Store::next_wakeup(self))
    }
    fn changed(&self) -> BoxFuture<'_, ()> {
        Box::pin(Store::changed(self))
    }
    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        Box::pin(Store::status(self, id, caller))
    }
    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        Box::pin(Store::summary(self, id, caller))
    }
    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        Box::pin(Store::jobs(self, caller))
    }
    fn events(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        Store::events(self)
    }
    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(Store::touch(self, id, caller, now))
    }
    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        Box::pin(Store::cancel(self, id, caller, now))
    }
    fn evict_oldest(&self, max_bytes: u64) -> BoxFuture<'_, Result<Evicted, StoreError>> {
        Box::pin(Store::evict_oldest(self, max_bytes))
    }
}

/// [`Fetch`], object safe: the fetch's future, boxed.
pub(crate) trait DynFetch<T, O>: Send + Sync + 'static {
    fn fetch(&self, ctx: FetchContext, target: T) -> BoxFuture<'_, Result<O, FetchError>>;
}

impl<T: 'static, O: 'static, F: Fetch<T, O>> DynFetch<T, O> for F {
    fn fetch(&self, ctx: FetchContext, target: T) -> BoxFuture<'_, Result<O, FetchError>> {
        Box::pin(Fetch::fetch(self, ctx, target))
    }
}
