//! [`Frozen`]: any store, each call one atomic step in the test's virtual time.
//!
//! A store that answers from elsewhere (SQLite from its connection's thread, PostgreSQL from
//! the server) leaves the test's runtime with nothing to run while a call is out. On tokio's
//! paused clock that moves time to the next timer: a retry or a heartbeat would fire in the
//! middle of a store call, and the suite's exact orders and timings would not hold. `Frozen`
//! runs each call on a runtime of its own and blocks the test's thread until it answers, so
//! the clock stands still and no other task runs meanwhile, as with the in-memory store.
//! Its `changed` never resolves: one runner sees its own changes.

use std::sync::Arc;
use std::time::Duration;

use batch::store::{CancelOutcome, Claim, Completion, Evicted, NewJob, Submitted};
use batch::store::{Store, Timestamp};
use batch::{Caller, Job, JobId, StoreError, SubmitError, TargetState};

/// A store whose every call blocks its caller's thread until done.
pub struct Frozen<S> {
    store: Arc<S>,
    runtime: OwnRuntime,
}

/// A runtime that may be dropped anywhere (it shuts down in the background).
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl<S: Store> Frozen<S> {
    pub fn new(store: S) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        Self {
            store: Arc::new(store),
            runtime: OwnRuntime(Some(runtime)),
        }
    }

    pub fn inner(&self) -> &S {
        &self.store
    }

    /// Runs `call` over the store on the own runtime; blocks until it is done.
    fn run<R, F>(&self, call: impl FnOnce(Arc<S>) -> F) -> std::future::Ready<R>
    where
        F: Future<Output = R> + Send + 'static,
        R: Send + 'static,
    {
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let future = call(Arc::clone(&self.store));
        let runtime = self.runtime.0.as_ref().expect("runtime");
        runtime.spawn(async move {
            let _ = done.send(future.await);
        });
        std::future::ready(result.recv().expect("store call panicked"))
    }
}

impl<S: Store> Store for Frozen<S> {
    fn lease_ttl(&self) -> Option<Duration> {
        self.store.lease_ttl()
    }
    async fn recover(&self, now: Timestamp) -> Result<usize, StoreError> {
        self.run(move |s| async move { s.recover(now).await }).await
    }
    async fn submit(&self, job: NewJob) -> Result<Submitted, SubmitError> {
        self.run(move |s| async move { s.submit(job).await }).await
    }
    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.run(move |s| async move { s.claim(now).await }).await
    }
    async fn renew(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        let claim = claim.clone();
        self.run(move |s| async move { s.renew(&claim, now).await })
            .await
    }
    async fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Result<Completion, StoreError> {
        let claim = claim.clone();
        self.run(move |s| async move { s.complete(&claim, result, now).await })
            .await
    }
    async fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let claim = claim.clone();
        self.run(move |s| async move { s.retry_later(&claim, busy_since, at, now).await })
            .await
    }
    async fn release(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        let claim = claim.clone();
        self.run(move |s| async move { s.release(&claim, now).await })
            .await
    }
    async fn next_wakeup(&self) -> Result<Option<Timestamp>, StoreError> {
        self.run(move |s| async move { s.next_wakeup().await })
            .await
    }
    async fn status(&self, id: JobId, caller: &Caller) -> Result<Option<Job>, StoreError> {
        let caller = caller.clone();
        self.run(move |s| async move { s.status(id, &caller).await })
            .await
    }
    async fn touch(&self, id: JobId, caller: &Caller, now: Timestamp) -> Result<bool, StoreError> {
        let caller = caller.clone();
        self.run(move |s| async move { s.touch(id, &caller, now).await })
            .await
    }
    async fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        let caller = caller.clone();
        self.run(move |s| async move { s.cancel(id, &caller, now).await })
            .await
    }
    async fn evict_oldest(&self, max_bytes: u64) -> Result<Evicted, StoreError> {
        self.run(move |s| async move { s.evict_oldest(max_bytes).await })
            .await
    }
}
