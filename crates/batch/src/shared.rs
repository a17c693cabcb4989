//! What a runner's facade and its workers share: the store's facade door, the config and
//! hooks, the clock, the wake-up and close signals, and the watched jobs. The runner
//! (`runner.rs`) builds it and the workers (`worker/`) read it; neither imports the other.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::hooks::{GuardedHooks, JobEvent};
use crate::inflight::InFlight;
use crate::job::{JobId, JobStatus};
use crate::store::{CallerStore, Ended, StoreEvent};
use crate::time::Clock;
use crate::watch::Watchers;

/// What the workers and the facade share.
pub(crate) struct Shared<T, O> {
    /// The facade's door to the store (each call boxes its future; the workers have their
    /// own, the store in its own type: `worker/mod.rs`).
    pub(crate) store: Arc<dyn CallerStore>,
    pub(crate) config: Config,
    /// `config.hooks`, each call under panicguard.
    pub(crate) hooks: GuardedHooks,
    pub(crate) clock: Clock,
    /// Wakes sleeping workers: on submit, on a finished target, on close.
    pub(crate) wake: Notify,
    /// Cancelled by close (and by dropping the runner): the fetch token and the workers' exit.
    pub(crate) shutdown: CancellationToken,
    /// Set (before `shutdown` is cancelled) by close and drop: the workers' cheap loop check.
    pub(crate) closed: AtomicBool,
    /// Targets this runner has in flight, reported to `Hooks::inflight` in change order.
    pub(crate) in_flight: InFlight,
    /// Workers between a failed claim and their wake-up (see `worker::Idle`).
    pub(crate) idle: AtomicUsize,
    /// Moves on every cancel this runner learns of (its own, once stored; another runner's,
    /// from the store's events; or a gap in those events), so that a worker holding a claim
    /// ahead checks that its job is still live before it fetches (`worker/pipeline.rs`, rule 2).
    pub(crate) cancels: AtomicU64,
    /// Watched jobs, fed by the workers, cancels and the store's events (`watch.rs`).
    pub(crate) watchers: Arc<Watchers>,
    pub(crate) _types: PhantomData<fn(T) -> O>,
}

impl<T, O> Shared<T, O> {
    /// Wakes every sleeping worker: something may have become ready. Call it after the store
    /// changed; it costs one atomic load when no worker is idle.
    pub(crate) fn wake_idle(&self) {
        if self.idle.load(Ordering::SeqCst) > 0 {
            self.wake.notify_waiters();
        }
    }

    /// Reports job `job` that just ended: `job`, then `depth`.
    pub(crate) fn report_end(&self, job: JobId, ended: Ended) {
        let hooks = &self.hooks;
        hooks.job(&JobEvent {
            job,
            status: ended.status,
            after: ended.after,
        });
        hooks.depth(ended.live_jobs);
    }
}

/// Forwards a shared store's events to the watched jobs until close; after lost events
/// (`Missed`, or this receiver lagging) re-reads the summary of every watched job once.
pub(crate) async fn forward_events<T, O>(
    shared: Arc<Shared<T, O>>,
    mut events: tokio::sync::broadcast::Receiver<StoreEvent>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = shared.shutdown.cancelled() => return,
        };
        match event {
            Ok(StoreEvent::Progress { job, progress }) => {
                if progress.status == JobStatus::Cancelled {
                    shared.cancels.fetch_add(1, Ordering::SeqCst);
                }
                shared.watchers.publish(job, progress);
            }
            Ok(_) | Err(RecvError::Lagged(_)) => {
                shared.cancels.fetch_add(1, Ordering::SeqCst); // a cancel may be among the lost
                for (job, caller) in shared.watchers.snapshot() {
                    match shared.store.summary(job, &caller).await {
                        Ok(Some(summary)) => shared.watchers.publish(job, summary.progress()),
                        Ok(None) => {}
                        Err(error) => {
                            let error = &error as &dyn std::error::Error;
                            tracing::warn!(error, %job, "re-reading a watched job failed");
                        }
                    }
                }
            }
            Err(RecvError::Closed) => return,
        }
    }
}
