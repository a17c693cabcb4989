//! Leased claims on the in-memory store: the runner's heartbeat keeps a slow fetch's claim,
//! and a runner whose lease was taken stores nothing (fencing).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lockgate_batch::store::{ClaimEnd, MemoryStore, Timestamp, WorkerStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, TargetState};

use crate::suite;

const TTL: Duration = Duration::from_millis(300);

#[tokio::test(start_paused = true)]
async fn heartbeat_keeps_a_slow_fetch_from_being_fetched_twice() {
    let store = Arc::new(MemoryStore::with_lease(TTL));
    let calls = Arc::new(AtomicU32::new(0));
    let fetch = {
        let calls = Arc::clone(&calls);
        move |_ctx: FetchContext, target: String| {
            let (calls, target) = (Arc::clone(&calls), target.clone());
            async move {
                calls.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(TTL * 20).await; // twenty leases long
                Ok::<_, FetchError>(target)
            }
        }
    };
    let rescues = Arc::new(Rescues::default());
    let config = Config::default().workers(4).hooks(rescues.clone());
    let runner = Runner::new(config, Arc::clone(&store), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &["slow".to_string()]).await.unwrap();
    suite::ended(&runner, id, &ann).await;
    assert_eq!(
        runner.status(&ann, id).await.unwrap().status,
        JobStatus::Done
    );
    assert_eq!(calls.load(Ordering::Relaxed), 1, "fetched once");
    assert_eq!(rescues.0.load(Ordering::Relaxed), 0, "no claim was rescued");
    runner.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_runner_that_lost_its_lease_stores_nothing() {
    let store = Arc::new(MemoryStore::with_lease(TTL));
    let seen_token: Arc<Mutex<Option<FetchContext>>> = Arc::default();
    let fetch = {
        let (store, seen_token) = (Arc::clone(&store), Arc::clone(&seen_token));
        move |ctx: FetchContext, target: String| {
            let (store, seen_token, target) = (store.clone(), seen_token.clone(), target.clone());
            async move {
                if target == "stolen" {
                    *seen_token.lock().unwrap() = Some(ctx.clone());
                    // This fetch stalls past its lease with no heartbeat in between…
                    tokio::time::advance(TTL * 2).await;
                    // …so another replica (played by this test) takes the target over, later
                    // by any clock, and stores its own result under its new token.
                    let later = Timestamp::from(SystemTime::now() + Duration::from_secs(3600));
                    let rogue = store.claim(later).await.unwrap().expect("the lapsed claim");
                    assert!(rogue.rescued, "the lapsed claim is taken over as a rescue");
                    let stored = store
                        .finish(
                            &rogue,
                            ClaimEnd::Stored(TargetState::Done {
                                output_json: "\"rescuer\"".into(),
                            }),
                            later,
                            false,
                        )
                        .await
                        .unwrap()
                        .completion;
                    assert!(matches!(
                        stored,
                        lockgate_batch::store::Completion::Stored { .. }
                    ));
                    // The next heartbeat finds the claim gone: the runner abandons this fetch.
                    tokio::time::sleep(TTL * 10).await;
                    unreachable!("the runner drops a fetch whose lease it lost");
                }
                Ok::<_, FetchError>(format!("got {target}"))
            }
        }
    };
    let runner = Runner::new(Config::default().workers(1), Arc::clone(&store), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner
        .submit(&ann, &["stolen".to_string(), "next".to_string()])
        .await
        .unwrap();
    suite::ended(&runner, id, &ann).await;
    let job = runner.status(&ann, id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(
        job.targets[0].state.output::<String>().unwrap().unwrap(),
        "rescuer"
    );
    assert_eq!(
        job.targets[1].state.output::<String>().unwrap().unwrap(),
        "got next"
    );
    let token = seen_token.lock().unwrap().clone().unwrap();
    assert!(
        token.is_cancelled(),
        "the abandoned fetch's token is cancelled"
    );
    runner.close().await;
}

/// Counts `Hooks::rescued`.
#[derive(Default)]
struct Rescues(AtomicU32);

impl lockgate_batch::hooks::Hooks for Rescues {
    fn rescued(&self, _: &lockgate_batch::hooks::RescueEvent) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(start_paused = true)]
async fn a_dead_holders_claim_is_rescued_when_its_lease_lapses() {
    let store = Arc::new(MemoryStore::with_lease(TTL));
    let calls = Arc::new(AtomicU32::new(0));
    let fetch = {
        let calls = Arc::clone(&calls);
        move |_ctx: FetchContext, target: String| {
            calls.fetch_add(1, Ordering::Relaxed);
            let target = target.clone();
            async move { Ok::<_, FetchError>(target) }
        }
    };
    let rescues = Arc::new(Rescues::default());
    let config = Config::default().workers(2).hooks(rescues.clone());
    let runner = Runner::new(config, Arc::clone(&store), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &["orphan".to_string()]).await.unwrap();
    // Another replica claims the target before this runner's workers run, then dies.
    let dead = store
        .claim(Timestamp::from(SystemTime::now()))
        .await
        .unwrap();
    assert!(dead.is_some());
    // Idle, the workers sleep until the dead claim's lease lapses, then take the target over.
    suite::ended(&runner, id, &ann).await;
    assert_eq!(
        runner.status(&ann, id).await.unwrap().status,
        JobStatus::Done
    );
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!(
        rescues.0.load(Ordering::Relaxed),
        1,
        "the rescue shows in hooks"
    );
    runner.close().await;
}
