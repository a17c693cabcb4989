//! [`Runner`]: the public face: submit, status, touch, cancel, close.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::error::{InvalidJob, NewError, StatusError, StoreError, SubmitError};
use crate::fetch::Fetch;
use crate::hooks::GuardedHooks;
use crate::inflight::InFlight;
use crate::job::{Caller, Job, JobId, JobStatus};
use crate::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use crate::shared::{Shared, forward_events};
use crate::store::{CallerStore, CancelOutcome, NewJob, Store};
use crate::summary::{JobSummary, Progress};
use crate::time::Clock;
use crate::watch::JobWatch;
use crate::worker;

/// Runs jobs of targets: `workers` tasks drain every live job fairly, one target at a time
/// per job, round-robin across jobs.
///
/// `T` is the target type and `O` the output type; the [`Fetch`] and the [`Store`] are chosen
/// at [`new`](Self::new) and kept behind trait objects, so a runner's type names only what it
/// carries and can be a struct field. Targets and outputs are kept in the store as JSON.
///
/// # Guarantees
///
/// See the crate docs: each job is serial, jobs alternate, busy targets are retried, a
/// cancelled job starts no further target, hooks fire exactly once per event.
pub struct Runner<T, O> {
    shared: Arc<Shared<T, O>>,
    workers: TaskTracker,
}

impl<T, O> fmt::Debug for Runner<T, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("config", &self.shared.config)
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T, O> Runner<T, O>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    /// Checks `config`, lets `store` hand back the live jobs it holds (a restart), and starts
    /// `config.workers` worker tasks on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// [`NewError::Config`] for an invalid config; [`NewError::Store`] if the store fails.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (it spawns the workers).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes starts no worker; what the store's recovery did
    /// stays done (it is idempotent).
    pub async fn new(
        config: Config,
        store: impl Store,
        fetch: impl Fetch<T, O>,
    ) -> Result<Self, NewError> {
        config.validate()?;
        let clock = Clock::start();
        let live_jobs = store.recover(clock.now()).await?;
        let hooks = GuardedHooks::new(Arc::clone(&config.hooks));
        if live_jobs > 0 {
            hooks.depth(live_jobs);
        }
        let (store, fetch) = (Arc::new(store), Arc::new(fetch));
        let shared = Arc::new(Shared {
            store: Arc::clone(&store) as Arc<dyn CallerStore>,
            clock,
            wake: Notify::new(),
            shutdown: CancellationToken::new(),
            closed: AtomicBool::new(false),
            hooks,
            in_flight: InFlight::new(),
            idle: AtomicUsize::new(0),
            cancels: AtomicU64::new(0),
            watchers: Arc::default(),
            _types: PhantomData,
            config,
        });
        let workers = TaskTracker::new();
        for _ in 0..shared.config.workers {
            workers.spawn(worker::run(
                Arc::clone(&shared),
                Arc::clone(&store),
                Arc::clone(&fetch),
            ));
        }
        if let Some(events) = shared.store.events() {
            workers.spawn(forward_events(Arc::clone(&shared), events));
        }
        workers.close();
        Ok(Self { shared, workers })
    }

    /// Submits a job of `targets` for `caller`; its id.
    ///
    /// # Errors
    ///
    /// - [`SubmitError::Invalid`]: no targets, more than `max_targets`, or one that does not
    ///   serialize;
    /// - [`SubmitError::Full`]: `max_live_jobs` jobs are live;
    /// - [`SubmitError::CallerBusy`]: `caller` has a live job (its id is in the error);
    /// - [`SubmitError::Closed`]: after [`close`](Self::close);
    /// - [`SubmitError::Store`]: the store failed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may or may not have submitted the job (a database store may have
    /// committed it); the caller then has a live job it does not know the id of:
    /// [`jobs`](Self::jobs) lists it, and [`submit_keyed`](Self::submit_keyed) makes a retry
    /// safe.
    pub async fn submit(&self, caller: &Caller, targets: &[T]) -> Result<JobId, SubmitError> {
        self.submit_with(caller, None, targets).await
    }

    /// Submits a job of `targets` for `caller` under an idempotency `key`: if `caller` already
    /// has a job with this key that the store still holds (live or ended, not evicted), its id
    /// is returned and nothing is submitted (`targets` are then ignored, and neither `Full`
    /// nor `CallerBusy` applies). So a client that lost the answer to a submit can send it
    /// again.
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit); a key that is empty or longer than
    /// 255 bytes is [`InvalidJob::Key`].
    ///
    /// # Cancel safety
    ///
    /// As [`submit`](Self::submit): calling it again with the same key is the remedy.
    pub async fn submit_keyed(
        &self,
        caller: &Caller,
        key: &str,
        targets: &[T],
    ) -> Result<JobId, SubmitError> {
        if key.is_empty() || key.len() > Self::MAX_KEY_BYTES {
            return Err(InvalidJob::Key { len: key.len() }.into());
        }
        self.submit_with(caller, Some(key), targets).await
    }

    /// The longest idempotency key [`submit_keyed`](Self::submit_keyed) accepts, in bytes.
    const MAX_KEY_BYTES: usize = 255;

    async fn submit_with(
        &self,
        caller: &Caller,
        key: Option<&str>,
        targets: &[T],
    ) -> Result<JobId, SubmitError> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(SubmitError::Closed);
        }
        let max = self.shared.config.max_targets;
        if targets.is_empty() {
            return Err(InvalidJob::Empty.into());
        }
        if targets.len() > max {
            return Err(InvalidJob::TooManyTargets {
                count: targets.len(),
                max,
            }
            .into());
        }
        let mut encoded = Vec::with_capacity(targets.len());
        for (index, target) in targets.iter().enumerate() {
            // A big job's encoding is user code of unbounded cost: one budget unit per target
            // lets the runtime's other tasks in every 128 targets.
            tokio::task::coop::consume_budget().await;
            let json =
                serde_json::to_string(target).map_err(|error| InvalidJob::Unserializable {
                    index,
                    message: error.to_string(),
                })?;
            encoded.push(json);
        }
        let mut job = NewJob::new(
            caller.clone(),
            encoded,
            self.shared.clock.now(),
            self.shared.config.max_live_jobs,
        );
        if let Some(key) = key {
            job = job.with_key(key);
        }
        let submitted = self.shared.store.submit(job).await?;
        if !submitted.existing {
            self.shared.hooks.depth(submitted.live_jobs);
            self.shared.wake_idle();
        }
        Ok(submitted.id)
    }

    /// A snapshot of `caller`'s job `id`.
    ///
    /// # Errors
    ///
    /// [`StatusError::NotFound`] if `caller` has no job `id` (unknown, evicted, or another
    /// caller's: the same answer); [`StatusError::Store`] if the store failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn status(&self, caller: &Caller, id: JobId) -> Result<Job, StatusError> {
        self.shared
            .store
            .status(id, caller)
            .await?
            .ok_or(StatusError::NotFound)
    }

    /// `caller`'s job `id` without its targets: status, counts, times; O(1).
    ///
    /// # Errors
    ///
    /// As [`status`](Self::status).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn summary(&self, caller: &Caller, id: JobId) -> Result<JobSummary, StatusError> {
        self.shared
            .store
            .summary(id, caller)
            .await?
            .ok_or(StatusError::NotFound)
    }

    /// Every job the store holds for `caller` (live or ended, not yet evicted), in submit
    /// order, without their targets: how a caller that lost a job's id finds it again.
    ///
    /// # Errors
    ///
    /// The store failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn jobs(&self, caller: &Caller) -> Result<Vec<JobSummary>, StoreError> {
        self.shared.store.jobs(caller).await
    }

    /// A page of the jobs `scope` covers, newest first: a status filter and keyset paging
    /// (see [`crate::page`]).
    ///
    /// # Errors
    ///
    /// The store failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn jobs_page(
        &self,
        scope: &Scope,
        query: &JobsQuery,
    ) -> Result<JobsPage, StoreError> {
        self.shared.store.jobs_page(scope, query).await
    }

    /// Job `id` without its targets, with whose it is and its key, if `scope` covers it.
    ///
    /// # Errors
    ///
    /// [`StatusError::NotFound`] if `scope` covers no job `id` (unknown, evicted, or another
    /// caller's: the same answer); [`StatusError::Store`] if the store failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn job(&self, scope: &Scope, id: JobId) -> Result<JobListing, StatusError> {
        self.shared
            .store
            .job(scope, id)
            .await?
            .ok_or(StatusError::NotFound)
    }

    /// A page of job `id`'s targets in submit order, with the job itself, if `scope` covers
    /// it: a state filter and keyset paging (see [`crate::page`]).
    ///
    /// # Errors
    ///
    /// As [`job`](Self::job).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn targets_page(
        &self,
        scope: &Scope,
        id: JobId,
        query: &TargetsQuery,
    ) -> Result<TargetsPage, StatusError> {
        self.shared
            .store
            .targets_page(scope, id, query)
            .await?
            .ok_or(StatusError::NotFound)
    }

    /// Watches `caller`'s job `id`: a [`JobWatch`] whose [`progress`](JobWatch::progress) is
    /// the job's status and counts now, and whose [`changed`](JobWatch::changed) resolves at
    /// each change (a start, a stored target with its index and outcome, a cancel, the end).
    ///
    /// One summary read here; after that, driven by this runner's own events and, over a
    /// shared store, by the store's events (another replica's workers), never by polling the
    /// store. The watch ends when the job ends or the runner closes.
    ///
    /// # Errors
    ///
    /// As [`status`](Self::status); [`StatusError::Closed`] if the runner is closed and the
    /// job is still live (nothing would report its changes).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn watch(&self, caller: &Caller, id: JobId) -> Result<JobWatch, StatusError> {
        let watchers = &self.shared.watchers;
        // Register before reading: a change after the read is then published to us (see
        // `watch.rs`, "No lost event").
        let mut watch = watchers.register(id, caller);
        let summary = self.summary(caller, id).await?;
        watchers.publish_summary(id, caller, summary.progress());
        let progress = watch.settle(summary.progress());
        // Nothing publishes after close: `close` empties the watchers, and a watch registered
        // after that would wait forever on a live job. `closed` is set before the watchers
        // are emptied, and our registration took their lock after that or was emptied with
        // them, so a live job's watch is either ended by `close` or refused here.
        if progress.status.is_live() && self.shared.closed.load(Ordering::Acquire) {
            return Err(StatusError::Closed);
        }
        Ok(watch)
    }

    /// Waits until `caller`'s job `id` is terminal (done, partial, failed or cancelled) and
    /// returns its final snapshot.
    ///
    /// Driven as [`watch`](Self::watch) is: no polling of the store while it waits, and one
    /// full read at the end. Over a shared store it also sees a job that another replica runs.
    ///
    /// # Errors
    ///
    /// As [`status`](Self::status); [`StatusError::Closed`] if this runner closes before the
    /// job ends, or was closed already and the job is live. A job evicted between its end and the final read (a `max_bytes` smaller than
    /// the job) is [`StatusError::NotFound`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads; dropping it leaves the job running.
    pub async fn wait(&self, caller: &Caller, id: JobId) -> Result<Job, StatusError> {
        let mut watch = self.watch(caller, id).await?;
        while watch.progress().status.is_live() {
            if watch.changed().await.is_none() && watch.progress().status.is_live() {
                return Err(StatusError::Closed);
            }
        }
        self.status(caller, id).await
    }

    /// Marks `caller`'s job `id` recently used, so eviction takes it last; `false` if `caller`
    /// has no job `id`.
    ///
    /// # Errors
    ///
    /// The store failed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the touch happens entirely or not at all.
    pub async fn touch(&self, caller: &Caller, id: JobId) -> Result<bool, StoreError> {
        self.shared
            .store
            .touch(id, caller, self.shared.clock.now())
            .await
    }

    /// Cancels `caller`'s job `id`: `false` if it has no job `id` or the job has ended.
    ///
    /// The job reads `cancelled` at once. A target in flight finishes and is stored, but the
    /// job stays `cancelled` and no further target starts; later targets stay pending.
    ///
    /// # Errors
    ///
    /// The store failed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future may or may not have cancelled the job; calling again is harmless
    /// (it answers `false` once cancelled).
    pub async fn cancel(&self, caller: &Caller, id: JobId) -> Result<bool, StoreError> {
        let outcome = self
            .shared
            .store
            .cancel(id, caller, self.shared.clock.now())
            .await?;
        match outcome {
            CancelOutcome::Cancelled(ended) => {
                debug_assert_eq!(ended.status, JobStatus::Cancelled);
                // After the store's change: a claim held ahead from before it sees the move.
                self.shared.cancels.fetch_add(1, Ordering::SeqCst);
                let progress = Progress::new(JobStatus::Cancelled, ended.counts, None);
                self.shared.watchers.publish(id, progress);
                self.shared.report_end(id, ended);
                Ok(true)
            }
            CancelOutcome::NotFound | CancelOutcome::Terminal => Ok(false),
        }
    }

    /// Stops: cancels the fetch token, wakes every worker, and waits for all of them. Targets
    /// in flight finish first (a fetch that honours its token returns soon); a result that is
    /// an error is not stored and its target stays pending in the store.
    ///
    /// Every call made after it answers at once: `submit` and `submit_keyed` with
    /// [`SubmitError::Closed`]; `wait` and `watch` of a live job with [`StatusError::Closed`]
    /// (nothing would report its changes), of an ended one with its final state; `status`,
    /// `summary`, `jobs`, `touch` and `cancel` from the store, which still holds the jobs (a
    /// cancel still cancels, so the next runner over a durable store does not run the job).
    /// Safe to call twice, and from several tasks.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the close itself happens at the first poll; dropping the future only stops
    /// the waiting, and calling `close` again waits again.
    pub async fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.shutdown.cancel();
        self.shared.wake.notify_waiters();
        self.workers.wait().await;
        self.shared.watchers.clear();
    }
}

impl<T, O> Drop for Runner<T, O> {
    /// Asks the workers to stop (as `close` does) without waiting for them, and ends every
    /// watch.
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.shutdown.cancel();
        self.shared.wake.notify_waiters();
        self.shared.watchers.clear();
    }
}
