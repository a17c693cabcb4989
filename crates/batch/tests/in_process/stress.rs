//! Stress: many jobs on a multi-threaded runtime, four workers, busy targets and random
//! cancels racing the workers; the invariants are checked at the end. Shrinks under
//! `TEST_SCALE=small` (TSan).

use std::collections::HashMap;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::MemoryStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Target {
    job: usize,
    index: usize,
    busy: bool,
}

#[derive(Default)]
struct Counting {
    ended: AtomicUsize,
    depth_calls: AtomicUsize,
    all_ended: Notify,
    jobs: usize,
}

impl Hooks for Counting {
    fn depth(&self, _live_jobs: usize) {
        self.depth_calls.fetch_add(1, Ordering::Relaxed);
    }
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let _status = event.status;
        if self.ended.fetch_add(1, Ordering::AcqRel) + 1 == self.jobs {
            self.all_ended.notify_waiters();
        }
    }
}

/// Per job: fetches in flight (must stay at most 1) and the indices fetched, in order.
#[derive(Default)]
struct Seen {
    in_flight: Mutex<HashMap<usize, usize>>,
    order: Mutex<HashMap<usize, Vec<usize>>>,
    overlaps: AtomicUsize,
    attempts: Mutex<HashMap<(usize, usize), u32>>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_jobs_random_cancels_invariants_hold() {
    let small = std::env::var("TEST_SCALE").is_ok_and(|v| v == "small");
    let (jobs, per_job) = if small { (30, 20) } else { (80, 40) };
    let seen = Arc::new(Seen::default());
    let fetch = {
        let seen = Arc::clone(&seen);
        move |_ctx: FetchContext, t: Target| {
            let (seen, t) = (Arc::clone(&seen), t.clone());
            async move {
                {
                    let mut in_flight = seen.in_flight.lock().unwrap();
                    let n = in_flight.entry(t.job).or_default();
                    *n += 1;
                    if *n > 1 {
                        seen.overlaps.fetch_add(1, Ordering::Relaxed);
                    }
                    seen.order
                        .lock()
                        .unwrap()
                        .entry(t.job)
                        .or_default()
                        .push(t.index);
                }
                let attempt = {
                    let mut attempts = seen.attempts.lock().unwrap();
                    let a = attempts.entry((t.job, t.index)).or_default();
                    *a += 1;
                    *a
                };
                if t.index % 3 == 0 {
                    tokio::task::yield_now().await;
                }
                *seen.in_flight.lock().unwrap().get_mut(&t.job).unwrap() -= 1;
                if t.busy && attempt == 1 {
                    return Err(FetchError::retry_later("busy"));
                }
                Ok::<_, FetchError>(t.job * 1000 + t.index)
            }
        }
    };
    let hooks = Arc::new(Counting {
        jobs,
        ..Counting::default()
    });
    let config = Config::default()
        .workers(4)
        .max_live_jobs(jobs)
        .retry(Duration::from_millis(1), Duration::from_secs(60))
        .hooks(hooks.clone());
    let runner = Arc::new(
        Runner::new(config, MemoryStore::new(), fetch)
            .await
            .unwrap(),
    );
    let mut all_ended = pin!(hooks.all_ended.notified());
    all_ended.as_mut().enable();

    let mut ids = Vec::new();
    for job in 0..jobs {
        let who = Caller::new(format!("caller{job}"));
        let targets: Vec<Target> = (0..per_job)
            .map(|index| Target {
                job,
                index,
                busy: (job + index) % 7 == 0,
            })
            .collect();
        ids.push((runner.submit(&who, &targets).await.unwrap(), who));
    }
    // Cancel about a third of the jobs, in a scrambled order, racing the workers.
    let canceller = {
        let (runner, ids) = (Arc::clone(&runner), ids.clone());
        tokio::spawn(async move {
            let mut cancelled = Vec::new();
            let mut x: usize = 7;
            for _ in 0..jobs / 3 {
                x = (x * 31 + 17) % jobs;
                let (id, who) = &ids[x];
                if runner.cancel(who, *id).await.unwrap() {
                    cancelled.push(x);
                }
                tokio::task::yield_now().await;
            }
            cancelled
        })
    };
    let cancelled = canceller.await.unwrap();
    if hooks.ended.load(Ordering::Acquire) < jobs {
        all_ended.await;
    }
    runner.close().await;

    assert_eq!(
        seen.overlaps.load(Ordering::Relaxed),
        0,
        "a job ran two targets at once"
    );
    let order = seen.order.lock().unwrap().clone();
    for (job, (id, who)) in ids.iter().enumerate() {
        let snapshot = runner.status(who, *id).await.unwrap();
        let fetched = order.get(&job).cloned().unwrap_or_default();
        assert!(
            fetched.windows(2).all(|w| w[0] <= w[1]),
            "job {job} out of order"
        );
        if cancelled.contains(&job) {
            assert_eq!(snapshot.status, JobStatus::Cancelled);
            // Stored targets form a prefix; nothing after it was fetched.
            let stored = snapshot
                .targets
                .iter()
                .filter(|t| !matches!(t.state, lockgate_batch::TargetState::Pending))
                .count();
            assert!(
                snapshot.targets[stored..]
                    .iter()
                    .all(|t| matches!(t.state, lockgate_batch::TargetState::Pending))
            );
            assert!(
                fetched.iter().all(|&i| i <= stored),
                "job {job} fetched past a cancel"
            );
        } else {
            assert_eq!(snapshot.status, JobStatus::Done, "job {job}");
            for (index, target) in snapshot.targets.iter().enumerate() {
                assert_eq!(
                    target.state.output::<usize>().unwrap().unwrap(),
                    job * 1000 + index
                );
            }
        }
    }
    assert_eq!(
        hooks.ended.load(Ordering::Relaxed),
        jobs,
        "one job event per job"
    );
    assert_eq!(hooks.depth_calls.load(Ordering::Relaxed), 2 * jobs);
}

/// Waiters and watchers race the workers and random cancels: every `wait` returns the job's
/// final snapshot, every watch moves only forward (stored targets never decrease, a terminal
/// status never changes) and ends on the job's final status, and watches dropped halfway
/// disturb nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_and_watchers_race_workers_and_cancels() {
    let small = std::env::var("TEST_SCALE").is_ok_and(|v| v == "small");
    let (jobs, per_job) = if small { (20, 10) } else { (60, 25) };
    let fetch = |_ctx: FetchContext, n: usize| async move {
        if n.is_multiple_of(4) {
            tokio::task::yield_now().await;
        }
        Ok::<_, FetchError>(n)
    };
    let config = Config::default().workers(4).max_live_jobs(jobs);
    let runner = Arc::new(
        Runner::new(config, MemoryStore::new(), fetch)
            .await
            .unwrap(),
    );
    let mut tasks = Vec::new();
    let mut ids = Vec::new();
    let mut x: usize = 11;
    for job in 0..jobs {
        let who = Caller::new(format!("caller{job}"));
        let id = runner
            .submit(&who, &(0..per_job).collect::<Vec<_>>())
            .await
            .unwrap();
        ids.push((id, who.clone()));
        x = (x * 31 + 17) % 1009;
        let (runner, stop_after) = (Arc::clone(&runner), x % 5);
        tasks.push(tokio::spawn(async move {
            // Start at a scrambled moment: before, during or after the job's run.
            for _ in 0..stop_after {
                tokio::task::yield_now().await;
            }
            let mut watch = runner.watch(&who, id).await.unwrap();
            let mut seen = vec![watch.progress()];
            while let Some(progress) = watch.changed().await {
                seen.push(progress);
                // Some watchers give up halfway: dropping a watch is allowed at any time.
                if stop_after == 1 && seen.len() == 3 {
                    return (seen, None);
                }
            }
            let waited = runner.wait(&who, id).await.unwrap();
            (seen, Some(waited))
        }));
    }
    // Cancel some jobs, racing the workers and the watchers.
    for _ in 0..jobs / 3 {
        x = (x * 31 + 17) % jobs;
        let (id, who) = &ids[x];
        runner.cancel(who, *id).await.unwrap();
        tokio::task::yield_now().await;
    }
    for (task, (id, who)) in tasks.into_iter().zip(&ids) {
        let (seen, waited) = tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("every watch and wait ends with its job")
            .unwrap();
        for pair in seen.windows(2) {
            assert!(
                pair[1].counts.stored() >= pair[0].counts.stored(),
                "a watch went back: {seen:?}"
            );
            assert!(pair[0].status.is_live(), "a change after the end: {seen:?}");
        }
        let Some(waited) = waited else {
            continue;
        };
        let last = seen.last().unwrap();
        let final_status = runner.status(who, *id).await.unwrap().status;
        assert_eq!(last.status, final_status, "{seen:?}");
        assert_eq!(waited.status, final_status);
        assert!(last.counts.stored() <= waited.counts().done + waited.counts().failed);
        if final_status == JobStatus::Done {
            assert_eq!(last.counts.stored(), per_job);
        }
    }
    runner.close().await;
}
