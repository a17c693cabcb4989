//! Step 4's first half: one claimed target fetched, under panicguard, with its lease renewed
//! while it runs, and what it came to ([`Attempt`]) before it is stored.

use std::error::Error;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lockgate_panicguard::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::fetch::{Fetch, FetchContext, FetchError};
use crate::hooks::{GuardedHooks, RescueEvent};
use crate::job::TargetState;
use crate::shared::Shared;
use crate::store::{Claim, Store};
use crate::time::Timestamp;

use super::Worker;

/// The error text a panicking fetch leaves in its target.
pub(crate) const INTERNAL_ERROR: &str = "internal error";

/// What one fetch came to, before it is stored.
pub(super) enum Attempt {
    Result(TargetState),
    /// Busy: why, and how long to wait if not `retry_wait`.
    Busy {
        reason: String,
        after: Option<Duration>,
    },
    /// An error while closing, or a lost lease: the result is not stored.
    Abandon,
}

/// A fetched target, before its finish.
pub(super) struct Fetched {
    pub(super) attempt: Attempt,
    /// The clock reading taken when the fetch ended.
    pub(super) now: Timestamp,
    /// How long the fetch took.
    pub(super) elapsed: Duration,
}

/// Fetches one claimed target (step 4's first half): hooks for a rescue, the job's start
/// for its watchers, the fetch itself.
pub(super) async fn fetch_one<T, O, F, S>(
    worker: &Worker<'_, T, O, F, S>,
    token: &mut CancellationToken,
    claim: &Claim,
) -> Fetched
where
    T: DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
    F: Fetch<T, O>,
    S: Store,
{
    let shared = worker.shared;
    let hooks = &shared.hooks;
    if claim.rescued {
        report_rescue(
            hooks,
            claim,
            "rescued a target whose claim lapsed; it may be fetched twice",
        );
    }
    if claim.started {
        shared.watchers.publish_start(claim.job);
    }
    shared.in_flight.add(|count| hooks.inflight(count));
    let started = shared.clock.now();
    let attempt = attempt(worker, token, claim).await;
    if token.is_cancelled() {
        // The fetch cancelled its own token: later fetches get a fresh one.
        *token = shared.shutdown.child_token();
    }
    let now = shared.clock.now();
    let attempt = match attempt {
        // Closing most likely made the fetch fail: not the target's fault. It stays pending
        // for the next runner over this store.
        Attempt::Result(TargetState::Failed { .. }) | Attempt::Busy { .. }
            if shared.closed.load(Ordering::Acquire) =>
        {
            Attempt::Abandon
        }
        attempt => attempt,
    };
    Fetched {
        attempt,
        now,
        elapsed: now.saturating_since(started),
    }
}

/// Runs the fetch for `claim`, catching panics and renewing a lease while it runs.
pub(super) async fn attempt<T, O, F, S>(
    worker: &Worker<'_, T, O, F, S>,
    token: &CancellationToken,
    claim: &Claim,
) -> Attempt
where
    T: DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
    F: Fetch<T, O>,
    S: Store,
{
    let Worker {
        shared,
        store,
        fetch,
    } = *worker;
    let target: T = match serde_json::from_str(&claim.target_json) {
        Ok(target) => target,
        Err(error) => {
            return Attempt::Result(TargetState::Failed {
                error: format!("target does not deserialize: {error}"),
                hint: None,
            });
        }
    };
    let lease = store.lease_ttl();
    // With a lease, a lost lease cancels this one fetch: it gets its own child token.
    let token = match lease {
        Some(_) => token.child_token(),
        None => token.clone(),
    };
    let ctx = FetchContext::new(claim.job, claim.index, claim.caller.clone(), token.clone());
    // The fetch's own logs carry its job and target: the user's code runs inside this span,
    // its synchronous part and every poll of its future. Without a subscriber that listens,
    // the span is disabled at its callsite and costs a cached check.
    let span = tracing::info_span!(
        "batch.fetch",
        job = %claim.job,
        index = claim.index,
        caller = %claim.caller,
    );
    let fetched = async {
        match span.in_scope(|| lockgate_panicguard::catch(|| fetch.fetch(ctx, target))) {
            Ok(future) => future.catch_panic().instrument(span).await,
            Err(panic) => Err(panic),
        }
    };
    let fetched = match lease {
        None => fetched.await,
        Some(ttl) => match with_heartbeat(shared, store, claim, ttl, &token, fetched).await {
            Some(fetched) => fetched,
            None => return Attempt::Abandon,
        },
    };
    match fetched {
        Ok(Ok(output)) => match serde_json::to_string(&output) {
            Ok(output_json) => Attempt::Result(TargetState::Done { output_json }),
            Err(error) => Attempt::Result(TargetState::Failed {
                error: format!("output does not serialize: {error}"),
                hint: None,
            }),
        },
        Ok(Err(FetchError::RetryLater { reason, after })) => Attempt::Busy { reason, after },
        Ok(Err(FetchError::Target { msg, hint })) => {
            Attempt::Result(TargetState::Failed { error: msg, hint })
        }
        Ok(Err(error)) => Attempt::Result(TargetState::Failed {
            error: error.to_string(),
            hint: None,
        }),
        Err(panic) => {
            tracing::error!(job = %claim.job, target = claim.index, panic = panic.message(), "fetch panicked");
            Attempt::Result(TargetState::Failed {
                error: INTERNAL_ERROR.to_owned(),
                hint: None,
            })
        }
    }
}

/// How often a claim's lease of `ttl` is renewed: every third of it.
pub(super) fn heartbeat_every(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(1))
}

/// Awaits `fetched` while renewing the claim every third of `ttl`; `None` (and the fetch
/// cancelled) if the lease was lost.
pub(super) async fn with_heartbeat<T, O, S: Store, R>(
    shared: &Shared<T, O>,
    store: &S,
    claim: &Claim,
    ttl: Duration,
    token: &CancellationToken,
    fetched: impl Future<Output = R>,
) -> Option<R> {
    let mut fetched = pin!(fetched);
    let every = heartbeat_every(ttl);
    loop {
        tokio::select! {
            result = &mut fetched => return Some(result),
            () = tokio::time::sleep(every) => {
                let renewed = store.renew(claim, shared.clock.now()).await;
                match renewed {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(job = %claim.job, target = claim.index, "lease lost; fetch abandoned");
                        token.cancel();
                        return None;
                    }
                    Err(error) => tracing::warn!(
                        error = &error as &dyn Error,
                        job = %claim.job,
                        "lease renewal failed"
                    ),
                }
            }
        }
    }
}

/// Reports a rescue of `claim`'s target: a second fetch of it, by this claim (its lease was
/// taken over) or by a claim that cannot know it (the store lost this one: `Completion::Lost`).
pub(super) fn report_rescue(hooks: &GuardedHooks, claim: &Claim, why: &'static str) {
    tracing::warn!(job = %claim.job, target = claim.index, "{why}");
    hooks.rescued(&RescueEvent {
        job: claim.job,
        index: claim.index,
    });
}
