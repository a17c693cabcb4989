//! The store behind a trait object, so that a [`Runner`](crate::Runner) names only its target
//! and output types (`Runner<T, O>`: a struct field, an axum `State`).
//!
//! [`Store`] returns `impl Future` (no box per call), which makes it unusable as `dyn`.
//! [`DynStore`] is its object-safe twin, implemented for every store: each call boxes its
//! future once. Only the runner's facade (submit, status, wait, …) goes through it: the
//! workers are spawned by `Runner::new`, where the store's and the fetch's types are known,
//! and call both directly. Boxing the workers' calls too (four boxes per target) cost about
//! 30% of the in-memory runner bench on one thread (docs/batch.md).

use std::future::Future;
use std::pin::Pin;

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId};
use crate::store::{CancelOutcome, NewJob, Store, StoreEvent, Submitted};
use crate::summary::JobSummary;
use crate::time::Timestamp;

/// A boxed, sendable future.
pub(crate) type BoxFuture<'a, R> = Pin<Box<dyn Future<Output = R> + Send + 'a>>;

/// The [`Store`] calls the runner's facade makes, object safe: each boxes the store's future.
/// (`recover` runs once, on the concrete store, before it is boxed.)
pub(crate) trait DynStore: Send + Sync + 'static {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>>;
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
}

impl<S: Store> DynStore for S {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(Store::submit(self, job))
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
}
