//! The worker loop: claim, fetch, store, repeat; sleep when nothing is ready.
//!
//! # Protocol
//!
//! 1. Claim from the store. A claim out means its job is ours until we store, retry or
//!    release it, so per-job serialism is the store's invariant, not ours.
//! 2. On no claim, register for the wake-up (`Notified::enable`) *before* claiming once more:
//!    a submit or a finished target that lands between the two claims has then either been
//!    seen by the second claim or wakes us. No wake-up is lost and nothing polls.
//! 3. Sleep until woken, until the store's next wake-up time (a retry, a lease to lapse),
//!    until the store reports a change made elsewhere, or until close.
//! 4. Serve the claim: fetch under the close token (panics caught), then store the result,
//!    report hooks (panics caught too), evict, and wake the others. The fetch's answer
//!    becomes: `Ok` → `Done` (or `Failed` if the output does not serialize, as when the
//!    target does not deserialize); a target error → `Failed` with its message and hint; any
//!    other error → `Failed` with its text, no hint; a panic → `Failed` with
//!    [`INTERNAL_ERROR`](fetch::INTERNAL_ERROR) (the message is logged, never stored); a lost lease → nothing is
//!    stored (the claim is someone else's now); busy → failed with the
//!    reason once the target has been busy longer than `retry_for` since
//!    [`Claim::busy_since`], else `retry_later` at now + the error's own wait or
//!    `retry_wait`. A failure or busy answer after close is not stored: the claim is
//!    released and the target stays pending for the next runner over the store.
//! 5. Every round spends one unit of tokio's cooperative budget: with an in-memory store and
//!    instant fetches nothing else would ever make the worker yield, and a current-thread
//!    runtime's other tasks (and its timers) would starve until the queue ran dry.
//! 6. A result's store finishes beside the next claim and the next fetch, and a store that
//!    takes claims with its stores keeps one claim ahead: the [`pipeline`] and its rules.

use std::error::Error;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use crate::fetch::Fetch;
use crate::hooks::{TargetEvent, TargetOutcome};
use crate::job::TargetState;
use crate::shared::Shared;
#[cfg(doc)]
use crate::store::WorkerStore;
use crate::store::{Claim, ClaimEnd, Completion, Finished, Store};

mod fetch;
mod pipeline;

/// Why a finish answered `Completion::Lost` counts as a rescue: the target is fetched a
/// second time by a claim that cannot know it, so the holder of the lost claim reports it.
const LOST: &str = "claim lost in a store crash; its target is fetched again";

use fetch::{Attempt, Fetched, fetch_one};
use pipeline::{Ahead, Lane, Next, Round};

/// Runs one worker until close: claim, fetch, store, repeat (the [`Lane`] overlaps them);
/// sleep when nothing is ready.
///
/// The worker is generic over the store and the fetch (the runner's facade is not): the hot
/// path calls them directly, with no boxed future per call.
pub(crate) async fn run<T, O, F, S>(shared: Arc<Shared<T, O>>, store: Arc<S>, fetch: Arc<F>)
where
    T: DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
    F: Fetch<T, O>,
    S: Store,
{
    let worker = Worker {
        shared: &shared,
        store: &*store,
        fetch: &*fetch,
    };
    // The token this worker's fetches get: a child of the close token, so a fetch that
    // cancels its own token stops no other worker and never the runner. Replaced if a fetch
    // cancelled it; one per worker, not per fetch, to keep the close token's lock cold.
    let mut token = shared.shutdown.child_token();
    // Serving a target ends with a clock reading; the next claim reuses it (one clock read
    // less per target: measurable on the hot path).
    let mut now = shared.clock.now();
    let finishing = pin!(None);
    let mut lane = Lane::new(finishing, |round| finish_round(&worker, round));
    // `closed` is a plain flag: a token's `is_cancelled` takes its tree's lock.
    while !shared.closed.load(Ordering::Acquire) {
        // Step 5: one unit of the task's coop budget per round, so a worker whose store and
        // fetch are always ready still yields to its neighbours on the same thread.
        tokio::task::coop::consume_budget().await;
        match lane.next_claim(&shared, &*store, now).await {
            Next::Fetch(claim) => {
                let fetched = {
                    let fetching = pin!(fetch_one(&worker, &mut token, &claim));
                    lane.fetch(fetching).await
                };
                let fetched = lane.settle(&shared, &*store, &claim, &token, fetched).await;
                now = fetched.now;
                lane.store(claim, fetched);
                continue;
            }
            Next::Again => continue,
            Next::Closed => break,
            Next::Idle => {}
        }
        debug_assert!(lane.is_empty(), "the worker sleeps with nothing out");
        // Step 2: count in as idle and register for the wake-up before claiming again.
        let idle = Idle::enter(&shared.idle);
        let mut woken = pin!(shared.wake.notified());
        woken.as_mut().enable();
        now = shared.clock.now();
        let Some(claim) = store_call(&shared, || store.claim(now)).await else {
            break;
        };
        if let Some(claim) = claim {
            drop(idle);
            let fetched = fetch_one(&worker, &mut token, &claim).await;
            now = fetched.now;
            lane.store_after_idle(claim, fetched);
            continue;
        }
        let Some(wake_at) = store_call(&shared, || store.next_wakeup(now)).await else {
            break;
        };
        let retry_time = async {
            match wake_at {
                Some(at) => tokio::time::sleep_until(shared.clock.instant_of(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = woken => {}
            () = retry_time => {}
            () = store.changed() => {}
            () = shared.shutdown.cancelled() => break,
        }
        now = shared.clock.now();
    }
    lane.close(&shared, &*store).await;
}

/// Runs one finish: `Some` if it tried to claim ahead, with the claim if it found one.
async fn finish_round<T, O, F, S>(
    worker: &Worker<'_, T, O, F, S>,
    round: Round,
) -> Option<Option<Ahead>>
where
    T: DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
    F: Fetch<T, O>,
    S: Store,
{
    let shared = worker.shared;
    // Read before the claim is asked for: a cancel stored after this moves it (`Ahead`).
    let cancels = shared.cancels.load(Ordering::SeqCst);
    let next = match round {
        Round::Store {
            claim,
            fetched,
            take_next,
            expects_next,
        } => {
            // `None` when it did not try (no ahead asked, a busy retry, a release, close).
            store_result(worker, claim, fetched, take_next, expects_next).await?
        }
        Round::ClaimAhead => {
            let now = shared.clock.now();
            store_call(shared, || worker.store.claim(now))
                .await
                .flatten()
        }
    };
    Some(next.map(|claim| Ahead {
        claim,
        at: shared.clock.now(),
        cancels,
    }))
}

/// What one worker serves with: the runner's shared state, and the store and fetch in their
/// own types.
struct Worker<'a, T, O, F, S> {
    shared: &'a Shared<T, O>,
    store: &'a S,
    fetch: &'a F,
}

/// Counts a worker as idle (between its failed claim and its wake-up) while alive.
///
/// `wake_idle` skips `notify_waiters` (a lock) when no worker is idle. That loses no wake-up:
/// a worker increments the count (SeqCst) *before* registering and claiming again, and a
/// waker changes the store *before* reading the count (SeqCst). If the waker reads zero, the
/// increment comes later in the SeqCst order, so the worker's second claim comes after the
/// waker's store change and sees it.
struct Idle<'a>(&'a AtomicUsize);

impl<'a> Idle<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Idle<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Calls the store until it answers, waiting `retry_wait` after each failure; `None` once the
/// runner closes. A failing store is logged, never skipped: a claim stays out until stored.
async fn store_call<T, O, R, Fut>(shared: &Shared<T, O>, mut call: impl FnMut() -> Fut) -> Option<R>
where
    Fut: Future<Output = Result<R, StoreError>>,
{
    loop {
        match call().await {
            Ok(value) => return Some(value),
            Err(error) => {
                shared.hooks.store_error(&error);
                match &error {
                    // As an error value, so that subscribers print its source chain: the
                    // store's own error is the source, not part of the text.
                    StoreError::Unavailable(_) => {
                        tracing::warn!(error = &error as &dyn Error, "store call failed; retrying")
                    }
                    _ => {
                        tracing::error!(error = &error as &dyn Error, "store call failed; retrying")
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(shared.config.retry_wait) => {}
                    () = shared.shutdown.cancelled() => return None,
                }
            }
        }
    }
}

/// A fetched target's finish (step 4's second half, which pipeline rule 1 runs beside the worker's
/// next claim and fetch): stores the result (or the busy retry, or releases the claim),
/// reports hooks, evicts, and wakes the others. With `take_next` (pipeline rule 2) the store may
/// also claim: `Some` when it was asked and is known to (or just did), with the claim if it
/// took one.
async fn store_result<T, O, F, S>(
    worker: &Worker<'_, T, O, F, S>,
    claim: Claim,
    fetched: Fetched,
    take_next: bool,
    expects_next: bool,
) -> Option<Option<Claim>>
where
    T: DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
    F: Fetch<T, O>,
    S: Store,
{
    let Worker { shared, store, .. } = *worker;
    let hooks = &shared.hooks;
    let Fetched {
        attempt,
        now,
        elapsed,
    } = fetched;
    let result = match attempt {
        Attempt::Abandon => None,
        Attempt::Busy { reason, after } => {
            let busy_since = claim.busy_since.unwrap_or(now);
            if now.saturating_since(busy_since) > shared.config.retry_for {
                Some(TargetState::Failed {
                    error: reason,
                    hint: None,
                })
            } else {
                let at = now.saturating_add(after.unwrap_or(shared.config.retry_wait));
                let end = || ClaimEnd::RetryLater { busy_since, at };
                let retried = store_call(shared, || store.finish(&claim, end(), now, false)).await;
                if retried.is_some_and(|finished| finished.completion == Completion::Lost) {
                    fetch::report_rescue(hooks, &claim, LOST);
                }
                shared.in_flight.remove(|count| hooks.inflight(count));
                shared.wake_idle();
                return None;
            }
        }
        Attempt::Result(result) => Some(result),
    };
    let Some(result) = result else {
        let _ = store_call(shared, || {
            store.finish(&claim, ClaimEnd::Released, now, false)
        })
        .await;
        shared.in_flight.remove(|count| hooks.inflight(count));
        return None;
    };
    let outcome = match result {
        TargetState::Done { .. } => TargetOutcome::Done,
        _ => TargetOutcome::Failed,
    };
    let take_next = take_next && !shared.closed.load(Ordering::Acquire);
    let stored = store_call(shared, || {
        let end = ClaimEnd::Stored(result.clone());
        store.finish(&claim, end, now, take_next)
    })
    .await;
    shared.in_flight.remove(|count| hooks.inflight(count));
    let (stored, next) = match stored {
        Some(Finished { completion, next }) => (Some(completion), next),
        None => (None, None),
    };
    match stored {
        Some(Completion::Stored {
            bytes,
            ended,
            progress,
        }) => {
            shared.watchers.publish(claim.job, progress);
            hooks.target(&TargetEvent {
                job: claim.job,
                index: claim.index,
                outcome,
                elapsed,
                result_bytes: bytes,
            });
            if let Some(ended) = ended {
                shared.report_end(claim.job, ended);
            }
            let max_bytes = shared.config.max_bytes;
            if let Some(evicted) = store_call(shared, || store.evict_oldest(max_bytes)).await
                && evicted.jobs > 0
            {
                tracing::debug!(
                    jobs = evicted.jobs,
                    bytes = evicted.bytes,
                    "evicted finished jobs"
                );
                if evicted.largest > max_bytes {
                    tracing::warn!(
                        job_bytes = evicted.largest,
                        max_bytes,
                        "evicted a finished job larger than max_bytes on its own: its results \
                         were gone as soon as it ended; raise max_bytes"
                    );
                }
            }
        }
        Some(Completion::Stale) => tracing::warn!(
            job = %claim.job,
            target = claim.index,
            "claim lost before its result was stored; result dropped"
        ),
        Some(Completion::Lost) => fetch::report_rescue(hooks, &claim, LOST),
        // `Pending` answers a retry or a release, never a stored result.
        Some(Completion::Pending) | None => {}
    }
    shared.wake_idle();
    let asked = take_next && (expects_next || next.is_some());
    asked.then_some(next)
}
