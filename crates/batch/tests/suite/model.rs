//! The rotation against a plain reference model: random jobs, fetch outcomes and cancels.
//!
//! With one worker the runner is deterministic on tokio's paused clock, so the model predicts
//! the exact fetch order; with several workers it predicts every job's final status, every
//! target's final state, and the hook counts, and the run checks per-job order.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use lockgate_batch::store::Store;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, Job, JobId, JobStatus, Runner, TargetState,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::harness::{Event, Plan, RecordingHooks};

const RETRY_WAIT_MS: u64 = 10;
const RETRY_FOR_MS: u64 = 30; // a multiple of the wait: the `>` boundary is hit

/// What a model target does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelTarget {
    job: usize,
    index: usize,
    plan: Plan,
    /// Cancel this job (by index) whenever this target is fetched.
    cancels: Option<usize>,
}

/// One generated job.
#[derive(Debug, Clone)]
pub struct JobCase {
    targets: Vec<(Plan, Option<usize>)>,
    cancel_at_submit: bool,
}

/// One generated run.
#[derive(Debug, Clone)]
pub struct Case {
    jobs: Vec<JobCase>,
    workers: usize,
}

fn plan() -> impl Strategy<Value = Plan> {
    prop_oneof![
        4 => Just(Plan::Ok),
        1 => Just(Plan::Fail),
        1 => Just(Plan::Panic),
        2 => (1u32..4).prop_map(Plan::Busy),
        1 => Just(Plan::BusyForever),
    ]
}

/// Cases for `workers` workers; cancels from inside fetches only when `in_fetch_cancels`.
pub fn case(workers: usize, in_fetch_cancels: bool) -> impl Strategy<Value = Case> {
    (1usize..=5)
        .prop_flat_map(move |jobs| {
            let cancel_target = if in_fetch_cancels {
                prop_oneof![4 => Just(None), 1 => (0..jobs).prop_map(Some)].boxed()
            } else {
                Just(None).boxed()
            };
            let job = (
                proptest::collection::vec((plan(), cancel_target), 1..=5),
                proptest::bool::weighted(0.15),
            )
                .prop_map(|(targets, cancel_at_submit)| JobCase {
                    targets,
                    cancel_at_submit,
                });
            proptest::collection::vec(job, jobs)
        })
        .prop_map(move |jobs| Case { jobs, workers })
}

/// What the model predicts.
#[derive(Debug, Default)]
struct Prediction {
    log: Vec<(usize, usize)>,
    statuses: Vec<JobStatus>,
    states: Vec<Vec<&'static str>>,
    stored: usize,
    attempts: usize,
}

/// The reference model of one worker: the rules, written as plainly as possible.
fn predict(case: &Case) -> Prediction {
    struct J {
        next: usize,
        status: JobStatus,
        busy_since: Option<u64>,
        retry_at: Option<u64>,
        states: Vec<&'static str>,
        done: usize,
        failed: usize,
    }
    let mut jobs: Vec<J> = case
        .jobs
        .iter()
        .map(|j| J {
            next: 0,
            status: JobStatus::Queued,
            busy_since: None,
            retry_at: None,
            states: vec!["pending"; j.targets.len()],
            done: 0,
            failed: 0,
        })
        .collect();
    for (j, job) in case.jobs.iter().enumerate() {
        if job.cancel_at_submit {
            jobs[j].status = JobStatus::Cancelled;
        }
    }
    let mut attempts: HashMap<(usize, usize), u32> = HashMap::new();
    let mut p = Prediction::default();
    // The rotation's cursor: the index after the job taken last (jobs are in submit order).
    let (mut now, mut cursor) = (0u64, 0usize);
    loop {
        let ready = |j: &J| {
            j.status.is_live() && j.next < j.states.len() && j.retry_at.is_none_or(|at| at <= now)
        };
        let pick = (cursor..jobs.len())
            .chain(0..cursor)
            .find(|&i| ready(&jobs[i]));
        let Some(i) = pick else {
            let wake = jobs
                .iter()
                .filter(|j| j.status.is_live())
                .filter_map(|j| j.retry_at)
                .min();
            match wake {
                Some(at) => {
                    now = at;
                    continue;
                }
                None => break,
            }
        };
        cursor = i + 1;
        let job = &mut jobs[i];
        job.retry_at = None;
        if job.status == JobStatus::Queued {
            job.status = JobStatus::Running;
        }
        let index = job.next;
        p.log.push((i, index));
        p.attempts += 1;
        let attempt = {
            let a = attempts.entry((i, index)).or_default();
            *a += 1;
            *a
        };
        let (plan, cancels) = case.jobs[i].targets[index].clone();
        if let Some(c) = cancels
            && jobs[c].status.is_live()
        {
            jobs[c].status = JobStatus::Cancelled;
        }
        let job = &mut jobs[i];
        let result = match plan {
            Plan::Ok => Some(true),
            Plan::Busy(n) if attempt > n => Some(true),
            Plan::Fail | Plan::Panic => Some(false),
            _ => {
                let since = *job.busy_since.get_or_insert(now);
                if now - since > RETRY_FOR_MS {
                    Some(false)
                } else {
                    job.retry_at = Some(now + RETRY_WAIT_MS);
                    None
                }
            }
        };
        let Some(ok) = result else { continue };
        p.stored += 1;
        job.busy_since = None;
        job.states[index] = if ok { "done" } else { "failed" };
        if ok {
            job.done += 1;
        } else {
            job.failed += 1;
        }
        job.next += 1;
        if job.status.is_live() && job.next == job.states.len() {
            job.status = match (job.done, job.failed) {
                (_, 0) => JobStatus::Done,
                (0, _) => JobStatus::Failed,
                _ => JobStatus::Partial,
            };
        }
    }
    p.statuses = jobs.iter().map(|j| j.status).collect();
    p.states = jobs.into_iter().map(|j| j.states).collect();
    p
}

type Canceller = Box<dyn Fn(usize) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Runs `case` against a runner over `store` and checks it against the model.
pub fn check<S: Store>(store: S, case: &Case) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(run(store, case))
}

async fn run<S: Store>(store: S, case: &Case) -> Result<(), TestCaseError> {
    let log: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    let canceller: Arc<OnceLock<Canceller>> = Arc::default();
    let fetch = {
        let (log, canceller) = (Arc::clone(&log), Arc::clone(&canceller));
        move |_ctx: FetchContext, target: ModelTarget| {
            let (log, canceller, target) = (log.clone(), canceller.clone(), target.clone());
            async move {
                let attempt = {
                    let mut log = log.lock().unwrap();
                    log.push((target.job, target.index));
                    log.iter()
                        .filter(|&&t| t == (target.job, target.index))
                        .count() as u32
                };
                if let Some(job) = target.cancels {
                    (canceller.get().unwrap())(job).await;
                }
                match target.plan {
                    Plan::Ok => Ok(()),
                    Plan::Busy(n) if attempt > n => Ok(()),
                    Plan::Fail => Err(FetchError::target("no")),
                    Plan::Panic => panic!("model panic"),
                    _ => Err(FetchError::retry_later("busy")),
                }
            }
        }
    };
    let hooks = Arc::new(RecordingHooks::default());
    let config = Config::default()
        .workers(case.workers)
        .retry(
            Duration::from_millis(RETRY_WAIT_MS),
            Duration::from_millis(RETRY_FOR_MS),
        )
        .hooks(hooks.clone());
    let runner = Arc::new(Runner::new(config, store, fetch).await.unwrap());
    let ids: Arc<Mutex<Vec<(JobId, Caller)>>> = Arc::default();
    {
        let (weak, ids) = (Arc::downgrade(&runner), Arc::clone(&ids));
        let cancel: Canceller = Box::new(move |job| {
            let (weak, ids): (Weak<_>, _) = (weak.clone(), Arc::clone(&ids));
            Box::pin(async move {
                let (id, caller) = ids.lock().unwrap()[job].clone();
                if let Some(runner) = weak.upgrade() {
                    let runner: Arc<Runner<_, _>> = runner;
                    let _ = runner.cancel(&caller, id).await.unwrap();
                }
            })
        });
        let _ = canceller.set(cancel);
    }
    // Submit everything (and the at-submit cancels) before any worker runs: the memory store
    // answers at once, so this task does not yield.
    for (j, job) in case.jobs.iter().enumerate() {
        let targets: Vec<ModelTarget> = job
            .targets
            .iter()
            .enumerate()
            .map(|(index, (plan, cancels))| ModelTarget {
                job: j,
                index,
                plan: plan.clone(),
                cancels: *cancels,
            })
            .collect();
        let caller = Caller::new(format!("caller{j}"));
        let id = runner.submit(&caller, &targets).await.unwrap();
        ids.lock().unwrap().push((id, caller));
    }
    for (j, job) in case.jobs.iter().enumerate() {
        if job.cancel_at_submit {
            let (id, caller) = ids.lock().unwrap()[j].clone();
            prop_assert!(runner.cancel(&caller, id).await.unwrap());
        }
    }
    let jobs = case.jobs.len();
    for _ in 0..100_000 {
        let ended = hooks.count(|e| matches!(e, Event::Job(..)));
        let in_flight = hooks
            .events()
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Inflight(n) => Some(*n),
                _ => None,
            })
            .unwrap_or(0);
        if ended == jobs && in_flight == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Give a wrongly started target the chance to show up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    runner.close().await;

    let predicted = predict(case);
    let log = log.lock().unwrap().clone();
    let ids = ids.lock().unwrap().clone();
    let mut snapshots: Vec<Job> = Vec::new();
    for (id, caller) in &ids {
        snapshots.push(runner.status(caller, *id).await.unwrap());
    }
    let statuses: Vec<JobStatus> = snapshots.iter().map(|j| j.status).collect();
    let states: Vec<Vec<&'static str>> = snapshots
        .iter()
        .map(|j| j.targets.iter().map(|t| super::word(&t.state)).collect())
        .collect();
    if case.workers == 1 {
        prop_assert_eq!(&log, &predicted.log, "fetch order");
    }
    prop_assert_eq!(&statuses, &predicted.statuses, "job statuses");
    prop_assert_eq!(&states, &predicted.states, "target states");
    // Per job: targets in order, each target's attempts together.
    for j in 0..jobs {
        let order: Vec<usize> = log.iter().filter(|t| t.0 == j).map(|t| t.1).collect();
        prop_assert!(
            order.windows(2).all(|w| w[0] <= w[1]),
            "job {j} out of order: {order:?}"
        );
    }
    // Hooks: one job event per job with its status, one target event per stored target.
    let mut ended = hooks.jobs();
    let mut expected = predicted.statuses.clone();
    let key = |s: &JobStatus| s.to_string();
    ended.sort_by_key(key);
    expected.sort_by_key(key);
    prop_assert_eq!(ended, expected);
    prop_assert_eq!(hooks.count(|e| matches!(e, Event::Job(..))), jobs);
    prop_assert_eq!(
        hooks.count(|e| matches!(e, Event::Target(..))),
        predicted.stored
    );
    prop_assert_eq!(hooks.count(|e| matches!(e, Event::Depth(_))), 2 * jobs);
    prop_assert_eq!(
        hooks.count(|e| matches!(e, Event::Inflight(_))),
        2 * log.len()
    );
    prop_assert_eq!(log.len(), predicted.attempts);
    let stored_failed = snapshots
        .iter()
        .flat_map(|j| &j.targets)
        .filter(|t| matches!(t.state, TargetState::Failed { .. }))
        .count();
    prop_assert!(stored_failed <= predicted.stored);
    Ok(())
}

/// Instantiates the model proptests for the store made by `$make`.
#[macro_export]
macro_rules! model_suite {
    ($make:expr) => {
        $crate::model_suite!(guarded || true, $make);
    };
    // As `runner_suite!`: `$guard` may skip every case (it prints why).
    (guarded $guard:expr, $make:expr) => {
        $crate::model_suite!(guarded $guard, cases 128, $make);
    };
    // `$cases` cases (16 under `TEST_SCALE=small`): fewer for a store whose calls go over the
    // network. Failing cases are kept beside the file that instantiates the suite, in
    // `<file>.proptest-regressions` (proptest's default would look for the folder holding the
    // binary's `main.rs` and write `proptest-regressions/<file>.txt` beside that folder).
    (guarded $guard:expr, cases $cases:expr, $make:expr) => {
        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig {
                failure_persistence: Some(Box::new(
                    proptest::test_runner::FileFailurePersistence::WithSource(
                        "proptest-regressions",
                    ),
                )),
                ..proptest::prelude::ProptestConfig::with_cases(
                    if suite::harness::small() { 16.min($cases) } else { $cases },
                )
            })]
            #[test]
            fn model_one_worker_exact_order(case in suite::model::case(1, true)) {
                if !($guard)() {
                    return Ok(());
                }
                suite::model::check(($make)(), &case)?;
            }

            #[test]
            fn model_many_workers(case in (2usize..=4).prop_flat_map(|w| suite::model::case(w, false))) {
                if !($guard)() {
                    return Ok(());
                }
                suite::model::check(($make)(), &case)?;
            }
        }
    };
}
