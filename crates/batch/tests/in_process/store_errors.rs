//! A failing store: the runner retries store calls after `retry_wait`, reports each failure
//! through `Hooks::store_error`, keeps its claim meanwhile, and never drops a result.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{
    CallerStore, Claim, ClaimEnd, Evicted, Finished, MemoryStore, Timestamp, WorkerStore,
};
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, Job, JobStatus, NewError, Runner, StoreError,
};

/// The memory store, failing a chosen call (`recover`, `claim`, `finish` or `evict_oldest`)
/// a chosen number of times.
#[derive(Default)]
struct Flaky {
    inner: MemoryStore,
    failures: Mutex<HashMap<&'static str, u32>>,
}

impl Flaky {
    fn failing(call: &'static str, times: u32) -> Self {
        let flaky = Self::default();
        flaky.failures.lock().unwrap().insert(call, times);
        flaky
    }

    fn fail(&self, call: &'static str) -> Result<(), StoreError> {
        let mut failures = self.failures.lock().unwrap();
        match failures.get_mut(call) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Err(StoreError::Unavailable(format!("{call} failed").into()))
            }
            _ => Ok(()),
        }
    }
}

/// The calls these tests make fail; every other call forwards to the memory store.
impl WorkerStore for Flaky {
    forward!(inner: lease_ttl renew next_wakeup changed);

    async fn recover(&self, now: Timestamp) -> Result<usize, StoreError> {
        self.fail("recover")?;
        self.inner.recover(now).await
    }
    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.fail("claim")?;
        self.inner.claim(now).await
    }
    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        self.fail("finish")?;
        self.inner.finish(claim, end, now, take_next).await
    }
    async fn evict_oldest(&self, max_bytes: u64) -> Result<Evicted, StoreError> {
        self.fail("evict_oldest")?;
        self.inner.evict_oldest(max_bytes).await
    }
}

impl CallerStore for Flaky {
    forward!(inner: submit status summary jobs touch cancel events);
    forward!(inner: jobs_page job targets_page);
}

#[derive(Default)]
struct CountErrors(AtomicU32);

impl Hooks for CountErrors {
    fn store_error(&self, _error: &StoreError) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

async fn run_one_job(store: Flaky) -> (Job, u32, u32) {
    let calls = Arc::new(AtomicU32::new(0));
    let fetch = {
        let calls = Arc::clone(&calls);
        move |_ctx: FetchContext, target: String| {
            calls.fetch_add(1, Ordering::Relaxed);
            let target = target.clone();
            async move { Ok::<_, FetchError>(target) }
        }
    };
    let errors = Arc::new(CountErrors::default());
    let config = Config::default()
        .workers(1)
        .retry(Duration::from_millis(100), Duration::from_secs(10))
        .hooks(errors.clone());
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let ann = Caller::new("ann");
    let id = runner
        .submit(&ann, &["x".to_string(), "y".to_string()])
        .await
        .unwrap();
    let mut job = runner.status(&ann, id).await.unwrap();
    for _ in 0..10_000 {
        if !job.status.is_live() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        job = runner.status(&ann, id).await.unwrap();
    }
    runner.close().await;
    (
        job,
        calls.load(Ordering::Relaxed),
        errors.0.load(Ordering::Relaxed),
    )
}

#[tokio::test(start_paused = true)]
async fn a_result_the_store_refused_is_stored_later_not_fetched_again() {
    let (job, fetches, errors) = run_one_job(Flaky::failing("finish", 3)).await;
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(fetches, 2, "each target fetched once");
    assert_eq!(errors, 3, "each failure reported");
}

#[tokio::test(start_paused = true)]
async fn failing_claims_are_retried() {
    let (job, fetches, errors) = run_one_job(Flaky::failing("claim", 2)).await;
    assert_eq!((job.status, fetches, errors), (JobStatus::Done, 2, 2));
}

#[tokio::test(start_paused = true)]
async fn failing_eviction_does_not_lose_the_job() {
    let (job, fetches, errors) = run_one_job(Flaky::failing("evict_oldest", 1)).await;
    assert_eq!((job.status, fetches, errors), (JobStatus::Done, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_store_that_cannot_recover_fails_new() {
    let fetch = |_ctx: FetchContext, target: String| {
        let target = target.clone();
        async move { Ok::<_, FetchError>(target) }
    };
    let error = Runner::new(Config::default(), Flaky::failing("recover", 1), fetch)
        .await
        .unwrap_err();
    assert!(matches!(error, NewError::Store(StoreError::Unavailable(_))));
}
