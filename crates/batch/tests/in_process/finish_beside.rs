//! A target's finish (its store call, hooks and eviction check) runs beside the worker's next
//! claim and fetch (`worker/pipeline.rs`, rule 1), over a store whose stores take time, as a shared
//! store's does: the worker claims and fetches another job's target meanwhile, a single serial
//! job does not cost an empty claim per target, and close waits for the store that is out.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::store::{
    CallerStore, Claim, ClaimEnd, Finished, MemoryStore, Timestamp, WorkerStore,
};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, StoreError};

use crate::rotation::{run_round_robin, targets};

/// The memory store, with a `finish` of a result that waits `STORE_TIME` (on tokio's paused clock)
/// before it stores, counting what the worker does meanwhile.
#[derive(Default)]
struct SlowStore {
    inner: MemoryStore,
    storing: AtomicBool,
    claims: AtomicU32,
    empty_claims: AtomicU32,
    claims_while_storing: AtomicU32,
    fetches_while_storing: Arc<AtomicU32>,
}

const STORE_TIME: Duration = Duration::from_millis(5);

impl WorkerStore for SlowStore {
    forward!(inner: lease_ttl recover renew next_wakeup changed evict_oldest);

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.claims.fetch_add(1, Ordering::Relaxed);
        if self.storing.load(Ordering::Relaxed) {
            self.claims_while_storing.fetch_add(1, Ordering::Relaxed);
        }
        let claim = self.inner.claim(now).await?;
        if claim.is_none() {
            self.empty_claims.fetch_add(1, Ordering::Relaxed);
        }
        Ok(claim)
    }

    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        if !matches!(end, ClaimEnd::Stored(_)) {
            return self.inner.finish(claim, end, now, take_next).await;
        }
        self.storing.store(true, Ordering::Relaxed);
        tokio::time::sleep(STORE_TIME).await;
        let stored = self.inner.finish(claim, end, now, take_next).await;
        self.storing.store(false, Ordering::Relaxed);
        stored
    }
}

impl CallerStore for SlowStore {
    forward!(inner: submit status summary jobs touch cancel events);
    forward!(inner: jobs_page job targets_page);
}

/// A runner of one worker over `store`, fetching in 1 ms and logging `(job, index)` fetched.
async fn runner(store: Arc<SlowStore>) -> (Runner<String, String>, Arc<Mutex<Vec<(u64, usize)>>>) {
    let fetched = Arc::new(Mutex::new(Vec::new()));
    let fetch = {
        let fetched = Arc::clone(&fetched);
        let store = Arc::clone(&store);
        move |ctx: FetchContext, target: String| {
            fetched.lock().unwrap().push((ctx.job().get(), ctx.index()));
            if store.storing.load(Ordering::Relaxed) {
                store.fetches_while_storing.fetch_add(1, Ordering::Relaxed);
            }
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok::<_, FetchError>(target)
            }
        }
    };
    let config = Config::default().workers(1);
    let runner = Runner::new(config, store, fetch).await.unwrap();
    (runner, fetched)
}

#[tokio::test(start_paused = true)]
async fn the_worker_claims_and_fetches_another_job_while_a_store_is_out() {
    let store = Arc::new(SlowStore::default());
    let (runner, fetched) = runner(Arc::clone(&store)).await;
    // Round-robin across the four jobs, as in sequence: the stored job is still in flight
    // when the next claim runs, and was served last anyway.
    let order = run_round_robin(runner, 4, 4).await;
    assert_eq!(*fetched.lock().unwrap(), order);
    assert!(
        store.claims_while_storing.load(Ordering::Relaxed) >= 14,
        "claims beside the store: {}",
        store.claims_while_storing.load(Ordering::Relaxed)
    );
    assert!(
        store.fetches_while_storing.load(Ordering::Relaxed) >= 14,
        "fetches beside the store: {}",
        store.fetches_while_storing.load(Ordering::Relaxed)
    );
}

#[tokio::test(start_paused = true)]
async fn a_single_serial_job_costs_no_empty_claim_per_target() {
    let store = Arc::new(SlowStore::default());
    let (runner, fetched) = runner(Arc::clone(&store)).await;
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &targets(64)).await.unwrap();
    let job = runner.wait(&ann, id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done);
    runner.close().await;
    let indexes: Vec<usize> = fetched.lock().unwrap().iter().map(|&(_, i)| i).collect();
    assert_eq!(indexes, (0..64).collect::<Vec<_>>());
    // Each claim beside a store finds the job in flight; after one, 16 claims wait for the
    // store. Without that pause every target would cost an empty claim (64 and more).
    let empty = store.empty_claims.load(Ordering::Relaxed);
    assert!(empty <= 64 / 16 + 3, "empty claims: {empty}");
}

/// Closes `runner` and checks that no store was out when close returned and that job `id`
/// of `caller` was stored done.
async fn closes_with_the_job_stored(
    runner: Runner<String, String>,
    store: &SlowStore,
    id: lockgate_batch::JobId,
    caller: &Caller,
) {
    runner.close().await;
    assert!(
        !store.storing.load(Ordering::Relaxed),
        "close returned with a store out"
    );
    let job = store.inner.status(id, caller).await.unwrap();
    assert_eq!(job.expect("the job is stored").status, JobStatus::Done);
}

#[tokio::test(start_paused = true)]
async fn close_waits_for_the_store_that_is_out() {
    let store = Arc::new(SlowStore::default());
    let (runner, _fetched) = runner(Arc::clone(&store)).await;
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &targets(1)).await.unwrap();
    // Let the fetch end and its store begin.
    while !store.storing.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    closes_with_the_job_stored(runner, &store, id, &ann).await;
}

#[tokio::test(start_paused = true)]
async fn close_during_a_fetch_stores_its_result_before_returning() {
    let store = Arc::new(SlowStore::default());
    let (runner, fetched) = runner(Arc::clone(&store)).await;
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &targets(1)).await.unwrap();
    while fetched.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    // The fetch runs (it ignores the close token and succeeds): its finish starts as the
    // worker sees the runner closed, and close waits for it.
    closes_with_the_job_stored(runner, &store, id, &ann).await;
}
