//! Step 7 of the worker loop (`worker.rs`): over a store whose `complete_and_claim` claims
//! (`Store::claims_with_complete`), a worker with short fetches claims its next target with
//! the store of its last one and fetches it after the fetch it runs. The store here is the
//! memory store with such a call: it claims among the other jobs, then stores, as one step
//! (the PostgreSQL store's statement does the same; its suites run the runner over it).
//! Targets are still fetched in the rotation's order, each once, and a claim held ahead
//! when the runner closes is released, not lost.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::store::{Claim, Completion, MemoryStore, Store, StoreWrapper, Timestamp};
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobStatus, Runner, StoreError, TargetState,
};
use tokio::sync::Semaphore;

/// The memory store, with a `complete_and_claim` that claims, counting each kind of claim.
#[derive(Default)]
struct ClaimsAhead {
    inner: MemoryStore,
    claims: AtomicU32,
    claims_ahead: AtomicU32,
}

impl StoreWrapper for ClaimsAhead {
    type Inner = MemoryStore;

    fn inner(&self) -> &MemoryStore {
        &self.inner
    }

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.claims.fetch_add(1, Ordering::Relaxed);
        self.inner.claim(now).await
    }

    /// Claims first, while the stored job is still in flight (so never that job), then
    /// stores; a stale store gives its claim back.
    async fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Result<(Completion, Option<Claim>), StoreError> {
        let next = self.inner.claim(now).await?;
        let completion = self.inner.complete(claim, result, now).await?;
        let next = match (completion, next) {
            (Completion::Stale, Some(next)) => {
                self.inner.release(&next, now).await?;
                None
            }
            (_, next) => next,
        };
        if next.is_some() {
            self.claims_ahead.fetch_add(1, Ordering::Relaxed);
        }
        Ok((completion, next))
    }

    fn claims_with_complete(&self) -> bool {
        true
    }
}

/// `Arc<ClaimsAhead>` as a store, so the test keeps its counters.
struct Shared(Arc<ClaimsAhead>);

impl StoreWrapper for Shared {
    type Inner = ClaimsAhead;

    fn inner(&self) -> &ClaimsAhead {
        &self.0
    }

    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        Store::complete_and_claim(&*self.0, claim, result, now)
    }

    fn claims_with_complete(&self) -> bool {
        true
    }
}

/// Every `(job, index)` fetched, in order.
type Fetched = Arc<Mutex<Vec<(u64, usize)>>>;

/// A runner of one worker over `store` whose fetches take 1 ms, each first taking a permit
/// from `gate` for good.
async fn start(
    store: &Arc<ClaimsAhead>,
    gate: &Arc<Semaphore>,
) -> (Runner<String, String>, Fetched) {
    let fetched: Fetched = Arc::default();
    let fetch = {
        let fetched = Arc::clone(&fetched);
        let gate = Arc::clone(gate);
        move |ctx: FetchContext, target: String| {
            fetched.lock().unwrap().push((ctx.job().get(), ctx.index()));
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await.expect("the gate stays open").forget();
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok::<_, FetchError>(target)
            }
        }
    };
    let config = Config::default().workers(1);
    let runner = Runner::new(config, Shared(Arc::clone(store)), fetch)
        .await
        .unwrap();
    (runner, fetched)
}

fn targets(n: usize) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_worker_claims_ahead_in_the_rotations_order() {
    let store = Arc::new(ClaimsAhead::default());
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let (runner, fetched) = start(&store, &gate).await;
    let callers: Vec<Caller> = (0..4).map(|n| Caller::new(format!("c{n}"))).collect();
    let mut ids = Vec::new();
    for caller in &callers {
        ids.push(runner.submit(caller, &targets(8)).await.unwrap());
    }
    for (caller, id) in callers.iter().zip(&ids) {
        let job = runner.wait(caller, *id).await.unwrap();
        assert_eq!(job.status, JobStatus::Done);
    }
    runner.close().await;
    let order: Vec<(u64, usize)> = (0..8)
        .flat_map(|index| ids.iter().map(move |id| (id.get(), index)))
        .collect();
    assert_eq!(*fetched.lock().unwrap(), order, "each once, round-robin");
    // 32 targets: after the first two claims each store brings the next one; the last
    // stores find nothing (their job ended, the others are in flight or done).
    let ahead = store.claims_ahead.load(Ordering::Relaxed);
    let plain = store.claims.load(Ordering::Relaxed);
    assert!(ahead >= 28, "claims ahead: {ahead}");
    assert!(plain <= 6, "plain claims: {plain}");
}

#[tokio::test(start_paused = true)]
async fn close_releases_the_claim_held_ahead() {
    let store = Arc::new(ClaimsAhead::default());
    // Three fetches pass; the fourth waits for a permit until after close began.
    let gate = Arc::new(Semaphore::new(3));
    let (runner, fetched) = start(&store, &gate).await;
    let callers: Vec<Caller> = (0..3).map(|n| Caller::new(format!("c{n}"))).collect();
    let mut ids = Vec::new();
    for caller in &callers {
        ids.push(runner.submit(caller, &targets(2)).await.unwrap());
    }
    while fetched.lock().unwrap().len() < 4 {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    // The worker fetches its fourth target and holds the fifth ahead (it is claimed beside
    // the fourth fetch, by the third target's store).
    while store.claims_ahead.load(Ordering::Relaxed) < 3 {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    let closing = tokio::spawn(async move {
        runner.close().await;
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    gate.add_permits(1);
    closing.await.unwrap();
    assert_eq!(
        fetched.lock().unwrap().len(),
        4,
        "the claim ahead was not fetched"
    );
    // Nothing is left claimed: both jobs with a target left are claimable at once.
    let now = Timestamp::from_micros(u64::MAX / 2);
    let left: Vec<Claim> = [store.inner.claim(now).await, store.inner.claim(now).await]
        .into_iter()
        .map(|claim| claim.unwrap().expect("a job left to claim"))
        .collect();
    for claim in &left {
        assert!(store.inner.release(claim, now).await.unwrap());
    }
    // A new runner over the store finishes every job, fetching each target left once.
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let (runner, fetched_after) = start(&store, &gate).await;
    for (caller, id) in callers.iter().zip(&ids) {
        let job = runner.wait(caller, *id).await.unwrap();
        assert_eq!(job.status, JobStatus::Done);
    }
    runner.close().await;
    let mut all: Vec<(u64, usize)> = fetched.lock().unwrap().clone();
    all.extend(fetched_after.lock().unwrap().iter().copied());
    all.sort_unstable();
    let expected: Vec<(u64, usize)> = {
        let mut every: Vec<(u64, usize)> = ids
            .iter()
            .flat_map(|id| (0..2).map(move |index| (id.get(), index)))
            .collect();
        every.sort_unstable();
        every
    };
    assert_eq!(
        all, expected,
        "every target fetched once across both runners"
    );
}
