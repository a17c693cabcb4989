//! Rule 2 of the worker pipeline (`worker/pipeline.rs`): over a store whose `finish` takes the next claim
//! when asked, a worker with short fetches claims its next target with the store of its
//! last one and fetches it after the fetch it runs. The store here is the memory store with
//! such a `finish`: it claims among the other jobs, then stores, as one step
//! (the PostgreSQL store's statement does the same; its suites run the runner over it).
//! Targets are still fetched in the rotation's order, each once; a claim held ahead past a
//! heartbeat's interval is renewed before its fetch; a claim held ahead when the runner
//! closes is released, not lost; one whose job was cancelled meanwhile is released, not
//! fetched; and a worker whose fetches are long claims nothing ahead.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::store::{
    CallerStore, Claim, ClaimEnd, Completion, Finished, MemoryStore, Timestamp, WorkerStore,
};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, StoreError};
use tokio::sync::Semaphore;

use crate::rotation::{run_round_robin, submit_one_per_caller};

/// The memory store, with a `complete_and_claim` that claims, counting each kind of claim.
#[derive(Default)]
struct ClaimsAhead {
    inner: MemoryStore,
    claims: AtomicU32,
    claims_ahead: AtomicU32,
    /// What happened to claims, in order.
    log: Mutex<Vec<Logged>>,
}

/// A claim's `(job, index)` and what happened to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Logged {
    ClaimedAhead(u64, usize),
    Renewed(u64, usize),
    Fetched(u64, usize),
}

impl ClaimsAhead {
    fn leased(ttl: Duration) -> Self {
        Self {
            inner: MemoryStore::with_lease(ttl),
            ..Self::default()
        }
    }

    fn log(&self, event: Logged) {
        self.log.lock().unwrap().push(event);
    }
}

impl WorkerStore for ClaimsAhead {
    forward!(inner: lease_ttl recover next_wakeup changed evict_oldest);

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.claims.fetch_add(1, Ordering::Relaxed);
        self.inner.claim(now).await
    }

    async fn renew(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        self.log(Logged::Renewed(claim.job.get(), claim.index));
        self.inner.renew(claim, now).await
    }

    /// Asked to take the next claim with a stored result: claims first, while the stored
    /// job is still in flight (so never that job), then stores; a stale store gives its
    /// claim back.
    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        if !take_next || !matches!(end, ClaimEnd::Stored(_)) {
            return self.inner.finish(claim, end, now, false).await;
        }
        let next = self.inner.claim(now).await?;
        let completion = self.inner.finish(claim, end, now, false).await?.completion;
        let next = match (completion, next) {
            (Completion::Stale, Some(next)) => {
                self.inner
                    .finish(&next, ClaimEnd::Released, now, false)
                    .await?;
                None
            }
            (_, next) => next,
        };
        if let Some(next) = &next {
            self.claims_ahead.fetch_add(1, Ordering::Relaxed);
            self.log(Logged::ClaimedAhead(next.job.get(), next.index));
        }
        Ok(Finished { completion, next })
    }
}

impl CallerStore for ClaimsAhead {
    forward!(inner: submit status summary jobs touch cancel events);
    forward!(inner: jobs_page job targets_page);
}

/// Every `(job, index)` fetched, in order.
type Fetched = Arc<Mutex<Vec<(u64, usize)>>>;

/// A runner of one worker over `store` whose fetches take 1 ms, each first taking a permit
/// from `gate` for good.
async fn start(
    store: &Arc<ClaimsAhead>,
    gate: &Arc<Semaphore>,
) -> (Runner<String, String>, Fetched) {
    start_taking(store, gate, Duration::from_millis(1)).await
}

/// As [`start`], with fetches that take `fetch_time`.
async fn start_taking(
    store: &Arc<ClaimsAhead>,
    gate: &Arc<Semaphore>,
    fetch_time: Duration,
) -> (Runner<String, String>, Fetched) {
    let fetched: Fetched = Arc::default();
    let fetch = {
        let fetched = Arc::clone(&fetched);
        let gate = Arc::clone(gate);
        let store = Arc::clone(store);
        move |ctx: FetchContext, target: String| {
            fetched.lock().unwrap().push((ctx.job().get(), ctx.index()));
            store.log(Logged::Fetched(ctx.job().get(), ctx.index()));
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await.expect("the gate stays open").forget();
                tokio::time::sleep(fetch_time).await;
                Ok::<_, FetchError>(target)
            }
        }
    };
    let config = Config::default().workers(1);
    let runner = Runner::new(config, Arc::clone(store), fetch).await.unwrap();
    (runner, fetched)
}

/// Whether a target claimed ahead has not been fetched yet.
fn holds_one_ahead(store: &ClaimsAhead) -> bool {
    let log = store.log.lock().unwrap();
    log.iter().any(|event| match *event {
        Logged::ClaimedAhead(job, index) => !log.contains(&Logged::Fetched(job, index)),
        _ => false,
    })
}

#[tokio::test(start_paused = true)]
async fn a_worker_claims_ahead_in_the_rotations_order() {
    let store = Arc::new(ClaimsAhead::default());
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let (runner, fetched) = start(&store, &gate).await;
    let order = run_round_robin(runner, 4, 8).await;
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
    let (callers, ids) = submit_one_per_caller(&runner, 3, 2).await;
    while fetched.lock().unwrap().len() < 4 {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    // The worker fetches its fourth target and holds the fifth ahead (it is claimed beside
    // the fourth fetch, by the third target's store).
    while !holds_one_ahead(&store) {
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
        let released = store
            .inner
            .finish(claim, ClaimEnd::Released, now, false)
            .await;
        assert_eq!(released.unwrap().completion, Completion::Pending);
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

#[tokio::test(start_paused = true)]
async fn a_claim_held_ahead_past_a_heartbeat_is_renewed_before_its_fetch() {
    // A 60 ms lease is renewed every 20 ms; each fetch takes 50 ms (short enough to claim
    // ahead), so every claim ahead waits 50 ms for the fetch before it.
    let store = Arc::new(ClaimsAhead::leased(Duration::from_millis(60)));
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let (runner, _) = start_taking(&store, &gate, Duration::from_millis(50)).await;
    run_round_robin(runner, 3, 3).await;
    let log = store.log.lock().unwrap().clone();
    let ahead: Vec<(u64, usize)> = log
        .iter()
        .filter_map(|event| match *event {
            Logged::ClaimedAhead(job, index) => Some((job, index)),
            _ => None,
        })
        .collect();
    let mut checked = 0;
    for (job, index) in ahead {
        let claimed = log
            .iter()
            .position(|e| *e == Logged::ClaimedAhead(job, index))
            .unwrap();
        let fetched = log
            .iter()
            .position(|e| *e == Logged::Fetched(job, index))
            .expect("every claim ahead is fetched");
        let waited = log[claimed..fetched]
            .iter()
            .any(|e| matches!(e, Logged::Fetched(..)));
        if !waited {
            continue; // fetched at once (the first claim ahead): nothing to renew
        }
        checked += 1;
        assert!(
            log[claimed..fetched].contains(&Logged::Renewed(job, index)),
            "target {index} of job {job} fetched without a renewal after waiting: {log:?}"
        );
    }
    assert!(
        checked >= 5,
        "claims ahead that waited for a fetch: {log:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_worker_with_long_fetches_claims_nothing_ahead() {
    // Fetches of 150 ms: a claim ahead would wait that long with nobody else able to take it.
    let store = Arc::new(ClaimsAhead::default());
    let gate = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
    let (runner, fetched) = start_taking(&store, &gate, Duration::from_millis(150)).await;
    run_round_robin(runner, 3, 2).await;
    assert_eq!(fetched.lock().unwrap().len(), 6);
    assert_eq!(store.claims_ahead.load(Ordering::Relaxed), 0);
}

#[tokio::test(start_paused = true)]
async fn a_claim_held_ahead_of_a_job_cancelled_meanwhile_is_released_unfetched() {
    // Job a has two targets, job b one whose fetch cancels a. One worker: a's first target,
    // then b's (claimed ahead by a's store), beside which a's second target is claimed
    // ahead; b's fetch then cancels a, so that claim must not be fetched.
    let store = Arc::new(ClaimsAhead::default());
    let fetched: Fetched = Arc::default();
    type Cancel = Arc<std::sync::OnceLock<(std::sync::Weak<Runner<String, String>>, u64)>>;
    let cancel: Cancel = Arc::default();
    let fetch = {
        let (fetched, cancel) = (Arc::clone(&fetched), Arc::clone(&cancel));
        move |ctx: FetchContext, target: String| {
            fetched.lock().unwrap().push((ctx.job().get(), ctx.index()));
            let cancel = Arc::clone(&cancel);
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                if target == "cancel a" {
                    let (runner, job) = cancel.get().expect("set before the runner starts");
                    let runner = runner.upgrade().expect("the runner outlives its fetches");
                    let a = lockgate_batch::JobId::new(*job);
                    assert!(runner.cancel(&Caller::new("a"), a).await.unwrap());
                }
                Ok::<_, FetchError>(target)
            }
        }
    };
    let config = Config::default().workers(1);
    let runner = Arc::new(
        Runner::new(config, Arc::clone(&store), fetch)
            .await
            .unwrap(),
    );
    let (a, b) = (Caller::new("a"), Caller::new("b"));
    let a_id = runner
        .submit(&a, &["0".to_owned(), "1".to_owned()])
        .await
        .unwrap();
    cancel
        .set((Arc::downgrade(&runner), a_id.get()))
        .expect("set once");
    let b_id = runner.submit(&b, &["cancel a".to_owned()]).await.unwrap();
    assert_eq!(runner.wait(&b, b_id).await.unwrap().status, JobStatus::Done);
    let a_job = runner.wait(&a, a_id).await.unwrap();
    runner.close().await;
    assert_eq!(a_job.status, JobStatus::Cancelled);
    assert_eq!(
        *fetched.lock().unwrap(),
        [(a_id.get(), 0), (b_id.get(), 0)],
        "no target of a starts after its cancel"
    );
    assert!(store.claims_ahead.load(Ordering::Relaxed) >= 1);
}
