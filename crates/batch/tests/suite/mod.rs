//! The runner suite, generic over the store: every store passes the same tests.
//!
//! A test binary declares it (`#[path = "../suite/mod.rs"] mod suite;`), and a store's module
//! instantiates it with one line (`model_suite!` likewise adds the model's proptests):
//!
//! ```ignore
//! use crate::suite;
//! crate::runner_suite!(lockgate_batch::store::MemoryStore::new);
//! ```
//!
//! The argument is any expression callable as `Fn() -> S` for a `S: Store`. Every test runs on
//! tokio's paused clock: time moves only when every task waits, so retries and timers are
//! exact and nothing sleeps for real.

pub mod api;
pub mod harness;
pub mod model;
pub mod pages;
pub mod turns;
pub mod watching;

use std::sync::Arc;
use std::time::Duration;

pub use api::{
    a_fetch_is_told_its_job_index_and_caller, question_mark_in_a_fetch_stores_the_error_text,
    retry_later_waits_its_own_time_and_stores_its_reason, snapshots_round_trip_through_serde,
};
use harness::{Event, Plan, Recorder, RecordingHooks, Target, fetcher, oks, targets};
use lockgate_batch::store::Store;
use lockgate_batch::{
    Caller, Config, ConfigError, InvalidJob, Job, JobId, JobStatus, NewError, Runner, StatusError,
    SubmitError, TargetOutcome, TargetState,
};
pub use pages::{
    a_million_rows_asked_for_are_one_full_page, a_page_key_is_a_place_not_a_count,
    pages_keep_to_their_scope, paging_sees_every_job_and_target_once_in_order,
};
pub use turns::{
    a_release_after_another_claim_moved_the_cursor_moves_nothing,
    a_released_claim_hands_its_turn_back,
};
pub use watching::{
    a_key_submits_once, cancel_ends_wait_and_watch, close_ends_a_wait_on_a_live_job,
    counts_and_jobs_without_reading_targets, wait_and_watch_after_close_answer_at_once,
    wait_returns_the_final_job, watch_sees_each_step_in_order,
};

/// Instantiates every suite test for the store made by `$make`.
#[macro_export]
macro_rules! runner_suite {
    ($make:expr) => {
        $crate::runner_suite!(guarded || true, $make);
    };
    // `$guard` decides at run time whether the store is there at all (a database server); a
    // test whose guard says no returns at once (the guard prints why).
    (guarded $guard:expr, $make:expr) => {
        $crate::runner_suite!(@tests $guard, $make;
            alternation_with_one_worker,
            a_job_submitted_during_a_fetch_is_served_next,
            the_free_worker_serves_a_job_submitted_during_fetches_next,
            unreached_job_stays_queued,
            serial_per_job_under_four_workers,
            busy_retry_within_retry_for,
            busy_beyond_retry_for_fails,
            cancel_queued_job,
            cancel_running_job,
            cancel_terminal_or_unknown_job,
            panic_becomes_internal_error,
            failures_are_stored_with_their_text,
            hooks_are_called_exactly_as_specified,
            hooks_that_panic_change_nothing,
            close_with_targets_in_flight,
            caller_isolation,
            submit_rules,
            config_is_validated,
            eviction_takes_least_recently_touched,
            a_fetch_is_told_its_job_index_and_caller,
            retry_later_waits_its_own_time_and_stores_its_reason,
            question_mark_in_a_fetch_stores_the_error_text,
            snapshots_round_trip_through_serde,
            wait_returns_the_final_job,
            watch_sees_each_step_in_order,
            cancel_ends_wait_and_watch,
            close_ends_a_wait_on_a_live_job,
            wait_and_watch_after_close_answer_at_once,
            counts_and_jobs_without_reading_targets,
            a_key_submits_once,
            paging_sees_every_job_and_target_once_in_order,
            a_page_key_is_a_place_not_a_count,
            pages_keep_to_their_scope,
            a_million_rows_asked_for_are_one_full_page,
            a_released_claim_hands_its_turn_back,
            a_release_after_another_claim_moved_the_cursor_moves_nothing,
        );
    };
    (@tests $guard:expr, $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $name() {
                if !($guard)() {
                    return;
                }
                suite::$name($make).await;
            }
        )*
    };
}

/// A runner over `store` with `config`, a recorder and recording hooks.
pub async fn start<S: Store>(
    store: S,
    config: Config,
) -> (Runner<Target, String>, Arc<Recorder>, Arc<RecordingHooks>) {
    let recorder = Arc::new(Recorder::default());
    let hooks = Arc::new(RecordingHooks::default());
    let config = config.hooks(hooks.clone());
    let runner = Runner::new(config, store, fetcher(recorder.clone()))
        .await
        .expect("valid config");
    (runner, recorder, hooks)
}

/// A small config: `workers` workers, busy retries every 10 ms for 1 s.
pub fn config(workers: usize) -> Config {
    Config::default()
        .workers(workers)
        .retry(Duration::from_millis(10), Duration::from_secs(1))
}

pub fn caller(name: &str) -> Caller {
    Caller::new(name)
}

/// Waits (in virtual time) until `check` holds; panics after a virtual hour.
pub async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..360_000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out (virtual hour) waiting for {what}");
}

/// Waits until job `id` has ended; its snapshot.
pub async fn ended<T, O>(runner: &Runner<T, O>, id: JobId, caller: &Caller) -> Job
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    O: serde::Serialize + Send + 'static,
{
    let mut last = None;
    wait_for("the job to end", async || {
        let job = runner.status(caller, id).await.unwrap();
        let done = !job.status.is_live();
        last = Some(job);
        done
    })
    .await;
    last.unwrap()
}

/// Waits until the recorder has seen a fetch of `name` start.
pub async fn started(recorder: &Recorder, name: &str) {
    wait_for(name, async || recorder.log().iter().any(|n| n == name)).await;
}

/// `"pending"`, `"done"` or `"failed"`.
pub fn word(state: &TargetState) -> &'static str {
    match state {
        TargetState::Pending => "pending",
        TargetState::Done { .. } => "done",
        TargetState::Failed { .. } => "failed",
        _ => "other",
    }
}

fn words(job: &Job) -> Vec<&'static str> {
    job.targets.iter().map(|t| word(&t.state)).collect()
}

fn outputs(job: &Job) -> Vec<String> {
    job.targets
        .iter()
        .map(|t| match t.state.output::<String>() {
            Some(output) => output.unwrap(),
            None => format!("<{}>", word(&t.state)),
        })
        .collect()
}

pub async fn alternation_with_one_worker<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner.submit(&ann, &oks("a", 3)).await.unwrap();
    let b = runner.submit(&bob, &oks("b", 3)).await.unwrap();
    let job_a = ended(&runner, a, &ann).await;
    let job_b = ended(&runner, b, &bob).await;
    assert_eq!(recorder.log(), ["a1", "b1", "a2", "b2", "a3", "b3"]);
    assert_eq!(job_a.status, JobStatus::Done);
    assert_eq!(job_b.status, JobStatus::Done);
    assert_eq!(outputs(&job_a), ["got a1", "got a2", "got a3"]);
    assert_eq!(job_a.counts().done, 3);
    runner.close().await;
}

/// The rotation's rule as the original design states it: `b`, submitted while `a1` is in
/// flight, joins the list after `a`, and the cursor stands after `a` (the job taken last), so
/// `b1` comes right after `a1`, and then the jobs alternate. (A rotation by "served longest
/// ago", where the claim of `a1` counted as a service before `b`'s submit did, ran `a2`
/// first: `a1 a2 b1 a3 b2 b3`.)
pub async fn a_job_submitted_during_a_fetch_is_served_next<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok, Plan::Ok]))
        .await
        .unwrap();
    started(&recorder, "a1").await;
    let b = runner.submit(&bob, &oks("b", 3)).await.unwrap();
    recorder.release.add_permits(1);
    assert_eq!(ended(&runner, a, &ann).await.status, JobStatus::Done);
    assert_eq!(ended(&runner, b, &bob).await.status, JobStatus::Done);
    assert_eq!(recorder.log(), ["a1", "b1", "a2", "b2", "a3", "b3"]);
    runner.close().await;
}

/// The same rule with two workers, one of them held by `x1` for the whole test: the cursor
/// stands after `x` (claimed after `a`), so when `a1` is stored its worker takes `b1`, the
/// job submitted meanwhile, before `a2`; and `x`, in flight, is passed over on every lap.
pub async fn the_free_worker_serves_a_job_submitted_during_fetches_next<S: Store>(
    make: impl Fn() -> S,
) {
    let (runner, recorder, _) = start(make(), config(2)).await;
    let (ann, xan, bob) = (caller("ann"), caller("xan"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok, Plan::Ok]))
        .await
        .unwrap();
    // Ten virtual minutes: far longer than the rest of the test.
    let x = runner
        .submit(&xan, &targets("x", &[Plan::Sleep(600_000)]))
        .await
        .unwrap();
    started(&recorder, "a1").await;
    started(&recorder, "x1").await;
    let b = runner.submit(&bob, &oks("b", 3)).await.unwrap();
    recorder.release.add_permits(1);
    assert_eq!(ended(&runner, a, &ann).await.status, JobStatus::Done);
    assert_eq!(ended(&runner, b, &bob).await.status, JobStatus::Done);
    let log = recorder.log();
    let mut first_two = log[..2].to_vec();
    first_two.sort();
    assert_eq!(first_two, ["a1", "x1"]);
    assert_eq!(log[2..], ["b1", "a2", "b2", "a3", "b3"]);
    assert!(runner.status(&xan, x).await.unwrap().status.is_live());
    runner.close().await; // the clock jumps to `x1`'s end: close waits for it
}

pub async fn unreached_job_stays_queued<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok]))
        .await
        .unwrap();
    let b = runner.submit(&bob, &oks("b", 1)).await.unwrap();
    started(&recorder, "a1").await;
    assert_eq!(
        runner.status(&ann, a).await.unwrap().status,
        JobStatus::Running
    );
    let queued = runner.status(&bob, b).await.unwrap();
    assert_eq!(queued.status, JobStatus::Queued);
    assert_eq!(words(&queued), ["pending"]);
    recorder.release.add_permits(1);
    assert_eq!(ended(&runner, b, &bob).await.status, JobStatus::Done);
    assert_eq!(ended(&runner, a, &ann).await.status, JobStatus::Done);
    assert_eq!(recorder.log(), ["a1", "b1", "a2"]);
    runner.close().await;
}

pub async fn serial_per_job_under_four_workers<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(4)).await;
    let jobs = if harness::small() { 3 } else { 8 };
    let mut submitted = Vec::new();
    for j in 0..jobs {
        let name = format!("j{j}-");
        let plans: Vec<Plan> = (0..6)
            .map(|i| Plan::Sleep(1 + (i * 7 + j * 3) % 5))
            .collect();
        let who = caller(&name);
        let id = runner.submit(&who, &targets(&name, &plans)).await.unwrap();
        submitted.push((name, who, id));
    }
    for (_, who, id) in &submitted {
        assert_eq!(ended(&runner, *id, who).await.status, JobStatus::Done);
    }
    assert_eq!(
        recorder.overlap(),
        None,
        "two fetches of one job overlapped"
    );
    let log = recorder.log();
    for (name, _, _) in &submitted {
        let order: Vec<&String> = log
            .iter()
            .filter(|n| n.starts_with(name.as_str()))
            .collect();
        let expected: Vec<String> = (1..=6).map(|i| format!("{name}{i}")).collect();
        assert_eq!(
            order,
            expected.iter().collect::<Vec<_>>(),
            "job {name} out of order"
        );
    }
    runner.close().await;
}

pub async fn busy_retry_within_retry_for<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, hooks) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Busy(2), Plan::Ok]))
        .await
        .unwrap();
    let b = runner.submit(&bob, &oks("b", 3)).await.unwrap();
    let job_a = ended(&runner, a, &ann).await;
    assert_eq!(job_a.status, JobStatus::Done);
    assert_eq!(ended(&runner, b, &bob).await.status, JobStatus::Done);
    // While a1 waits out its retries, the rotation goes on with b.
    assert_eq!(recorder.log(), ["a1", "b1", "b2", "b3", "a1", "a1", "a2"]);
    assert_eq!(outputs(&job_a), ["got a1", "got a2"]);
    // A busy attempt stores nothing, so it calls no target hook.
    let stored = hooks.count(|e| matches!(e, Event::Target(..)));
    assert_eq!(stored, 5);
    runner.close().await;
}

pub async fn busy_beyond_retry_for_fails<S: Store>(make: impl Fn() -> S) {
    let config = config(1).retry(Duration::from_millis(10), Duration::from_millis(25));
    let (runner, recorder, _) = start(make(), config).await;
    let ann = caller("ann");
    let a = runner
        .submit(&ann, &targets("a", &[Plan::BusyForever, Plan::Ok]))
        .await
        .unwrap();
    let job = ended(&runner, a, &ann).await;
    // Busy at 0, 10 and 20 ms (within 25 ms), and at 30 ms: busy for longer, so failed.
    assert_eq!(recorder.attempts("a1"), 4);
    assert_eq!(job.status, JobStatus::Partial);
    assert_eq!(
        job.targets[0].state,
        TargetState::Failed {
            error: lockgate_batch::FetchError::retry_later("busy").to_string(),
            hint: None
        }
    );
    runner.close().await;
}

pub async fn cancel_queued_job<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, hooks) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold]))
        .await
        .unwrap();
    let b = runner.submit(&bob, &oks("b", 2)).await.unwrap();
    started(&recorder, "a1").await;
    assert!(runner.cancel(&bob, b).await.unwrap());
    let job = runner.status(&bob, b).await.unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);
    recorder.release.add_permits(1);
    assert_eq!(ended(&runner, a, &ann).await.status, JobStatus::Done);
    assert_eq!(recorder.log(), ["a1"]);
    assert_eq!(
        words(&runner.status(&bob, b).await.unwrap()),
        ["pending", "pending"]
    );
    assert_eq!(hooks.jobs(), [JobStatus::Cancelled, JobStatus::Done]);
    // The caller is free again.
    runner.submit(&bob, &oks("c", 1)).await.unwrap();
    runner.close().await;
}

pub async fn cancel_running_job<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, hooks) = start(make(), config(2)).await;
    let ann = caller("ann");
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok, Plan::Ok]))
        .await
        .unwrap();
    started(&recorder, "a1").await;
    assert!(runner.cancel(&ann, a).await.unwrap());
    assert_eq!(
        runner.status(&ann, a).await.unwrap().status,
        JobStatus::Cancelled
    );
    assert!(
        !runner.cancel(&ann, a).await.unwrap(),
        "a second cancel is refused"
    );
    recorder.release.add_permits(1);
    wait_for("a1 to be stored", async || {
        runner.status(&ann, a).await.unwrap().targets[0].state != TargetState::Pending
    })
    .await;
    let job = runner.status(&ann, a).await.unwrap();
    assert_eq!(
        job.status,
        JobStatus::Cancelled,
        "storing a1 keeps cancelled"
    );
    assert_eq!(words(&job), ["done", "pending", "pending"]);
    // Let any worker that would wrongly start a2 run, then check none did.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(recorder.log(), ["a1"]);
    assert_eq!(hooks.jobs(), [JobStatus::Cancelled]);
    assert_eq!(hooks.count(|e| matches!(e, Event::Job(..))), 1);
    assert_eq!(
        hooks.count(|e| matches!(e, Event::Target(_, _, TargetOutcome::Done, _))),
        1
    );
    runner.close().await;
}

pub async fn cancel_terminal_or_unknown_job<S: Store>(make: impl Fn() -> S) {
    let (runner, _, hooks) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner.submit(&ann, &oks("a", 1)).await.unwrap();
    ended(&runner, a, &ann).await;
    assert!(!runner.cancel(&ann, a).await.unwrap());
    assert!(!runner.cancel(&bob, a).await.unwrap());
    assert!(!runner.cancel(&ann, JobId::new(9_999)).await.unwrap());
    assert_eq!(
        runner.status(&ann, a).await.unwrap().status,
        JobStatus::Done
    );
    assert_eq!(hooks.jobs(), [JobStatus::Done]);
    runner.close().await;
}

pub async fn panic_becomes_internal_error<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Panic, Plan::Ok]))
        .await
        .unwrap();
    let job = ended(&runner, a, &ann).await;
    assert_eq!(job.status, JobStatus::Partial);
    assert_eq!(
        job.targets[0].state,
        TargetState::Failed {
            error: "internal error".into(),
            hint: None
        }
    );
    assert!(
        !format!("{job:?}").contains("secret"),
        "the panic message never reaches the caller"
    );
    let b = runner
        .submit(&ann, &targets("b", &[Plan::Panic]))
        .await
        .unwrap();
    assert_eq!(ended(&runner, b, &ann).await.status, JobStatus::Failed);
    runner.close().await;
}

pub async fn failures_are_stored_with_their_text<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Fail, Plan::Other]))
        .await
        .unwrap();
    let job = ended(&runner, a, &ann).await;
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(
        job.targets[0].state,
        TargetState::Failed {
            error: "no a1".into(),
            hint: Some("check a1".into())
        }
    );
    assert_eq!(
        job.targets[1].state,
        TargetState::Failed {
            error: "other a2".into(),
            hint: None
        }
    );
    assert_eq!(
        job.targets[0].target_json,
        serde_json::to_string(&targets("a", &[Plan::Fail])[0]).unwrap()
    );
    runner.close().await;
}

pub async fn hooks_are_called_exactly_as_specified<S: Store>(make: impl Fn() -> S) {
    let (runner, _, hooks) = start(make(), config(1)).await;
    let ann = caller("ann");
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Ok, Plan::Fail]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let job = ended(&runner, a, &ann).await;
    assert_eq!(job.status, JobStatus::Partial);
    let events = hooks.events();
    let (job_events, rest): (Vec<Event>, Vec<Event>) = events
        .into_iter()
        .partition(|e| matches!(e, Event::Job(..)));
    let ok_bytes = "\"got a1\"".len() as u64;
    let fail_bytes = ("no a2".len() + "check a2".len()) as u64;
    assert_eq!(
        rest,
        [
            Event::Depth(1),
            Event::Inflight(1),
            Event::Inflight(0),
            Event::Target(a, 0, TargetOutcome::Done, ok_bytes),
            Event::Inflight(1),
            Event::Inflight(0),
            Event::Target(a, 1, TargetOutcome::Failed, fail_bytes),
            Event::Depth(0),
        ]
    );
    // The job event comes right before the depth its end makes.
    assert_eq!(job_events, [Event::Job(a, JobStatus::Partial)]);
    let events = hooks.events();
    assert_eq!(events[events.len() - 2], Event::Job(a, JobStatus::Partial));
    runner.close().await;
}

/// Hooks that panic on every call, each call counted before it panics.
#[derive(Default)]
struct PanickingHooks(std::sync::atomic::AtomicUsize);

impl PanickingHooks {
    fn hit(&self, hook: &str) -> ! {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        panic!("hook {hook} panics");
    }
}

impl lockgate_batch::hooks::Hooks for PanickingHooks {
    fn depth(&self, _: usize) {
        self.hit("depth")
    }
    fn inflight(&self, _: usize) {
        self.hit("inflight")
    }
    fn target(&self, _: &lockgate_batch::hooks::TargetEvent) {
        self.hit("target")
    }
    fn job(&self, _: &lockgate_batch::hooks::JobEvent) {
        self.hit("job")
    }
    fn rescued(&self, _: &lockgate_batch::hooks::RescueEvent) {
        self.hit("rescued")
    }
    fn store_error(&self, _: &lockgate_batch::StoreError) {
        self.hit("store_error")
    }
}

pub async fn hooks_that_panic_change_nothing<S: Store>(make: impl Fn() -> S) {
    let hooks = Arc::new(PanickingHooks::default());
    let recorder = Arc::new(Recorder::default());
    let runner = Runner::new(
        config(2).hooks(hooks.clone()),
        make(),
        fetcher(recorder.clone()),
    )
    .await
    .unwrap();
    let (ann, bob, cy) = (caller("ann"), caller("bob"), caller("cy"));
    let a = runner.submit(&ann, &oks("a", 3)).await.unwrap();
    let b = runner
        .submit(&bob, &targets("b", &[Plan::Fail, Plan::Busy(1)]))
        .await
        .unwrap();
    let c = runner
        .submit(&cy, &targets("c", &[Plan::Fail, Plan::Panic]))
        .await
        .unwrap();
    let (a, b, c) = (
        ended(&runner, a, &ann).await,
        ended(&runner, b, &bob).await,
        ended(&runner, c, &cy).await,
    );
    assert_eq!(
        (a.status, b.status, c.status),
        (JobStatus::Done, JobStatus::Partial, JobStatus::Failed)
    );
    assert_eq!(
        (a.counts().done, b.counts().done, c.counts().done),
        (3, 1, 0)
    );
    assert_eq!(recorder.attempts("b2"), 2, "the busy target was retried");
    // Later jobs run too: no worker died with the first panics.
    let d = runner.submit(&ann, &oks("d", 2)).await.unwrap();
    assert_eq!(ended(&runner, d, &ann).await.status, JobStatus::Done);
    // Every event reached its hook: 4 submits, 4 ends (job and depth each), 10 fetches
    // (inflight up and down), 9 stored targets.
    let calls = hooks.0.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(calls, 4 + 4 * 2 + 10 * 2 + 9);
    runner.close().await;
}

pub async fn close_with_targets_in_flight<S: Store>(make: impl Fn() -> S) {
    let store = Arc::new(make());
    let (runner, recorder, _) = start(Arc::clone(&store), config(2)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok]))
        .await
        .unwrap();
    let b = runner
        .submit(&bob, &targets("b", &[Plan::Hold]))
        .await
        .unwrap();
    started(&recorder, "a1").await;
    started(&recorder, "b1").await;
    runner.close().await;
    assert_eq!(
        recorder.finished().len(),
        2,
        "close waited for both fetches"
    );
    let job_a = runner.status(&ann, a).await.unwrap();
    assert_eq!(job_a.status, JobStatus::Running);
    assert_eq!(
        words(&job_a),
        ["pending", "pending"],
        "a cancelled fetch is not stored"
    );
    assert!(matches!(
        runner.submit(&caller("cid"), &oks("c", 1)).await,
        Err(SubmitError::Closed)
    ));
    runner.close().await; // safe twice
    drop(runner);

    // A new runner over the same store picks both jobs up again.
    let (again, recorder, _) = start(store, config(2)).await;
    recorder.release.add_permits(2); // the new recorder would hold a1 and b1 again
    assert_eq!(outputs(&ended(&again, a, &ann).await), ["got a1", "got a2"]);
    assert_eq!(ended(&again, b, &bob).await.status, JobStatus::Done);
    let mut log = recorder.log();
    log.sort();
    assert_eq!(log, ["a1", "a2", "b1"]);
    again.close().await;
}

pub async fn caller_isolation<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let (ann, eve) = (caller("ann"), caller("eve"));
    let a = runner.submit(&ann, &oks("a", 1)).await.unwrap();
    let unknown = JobId::new(a.get() + 1_000);
    for id in [a, unknown] {
        assert!(matches!(
            runner.status(&eve, id).await,
            Err(StatusError::NotFound)
        ));
        assert!(!runner.touch(&eve, id).await.unwrap());
        assert!(!runner.cancel(&eve, id).await.unwrap());
    }
    assert!(runner.touch(&ann, a).await.unwrap());
    assert_eq!(ended(&runner, a, &ann).await.status, JobStatus::Done);
    runner.close().await;
}

pub async fn submit_rules<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1).max_targets(3).max_live_jobs(2)).await;
    let (ann, bob, cid) = (caller("ann"), caller("bob"), caller("cid"));
    assert!(matches!(
        runner.submit(&ann, &[]).await,
        Err(SubmitError::Invalid(InvalidJob::Empty))
    ));
    assert!(matches!(
        runner.submit(&ann, &oks("a", 4)).await,
        Err(SubmitError::Invalid(InvalidJob::TooManyTargets {
            count: 4,
            max: 3
        }))
    ));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Hold]))
        .await
        .unwrap();
    assert!(matches!(
        runner.submit(&ann, &oks("x", 1)).await,
        Err(SubmitError::CallerBusy { live }) if live == a
    ));
    let b = runner.submit(&bob, &oks("b", 3)).await.unwrap();
    assert!(matches!(
        runner.submit(&cid, &oks("c", 1)).await,
        Err(SubmitError::Full)
    ));
    started(&recorder, "a1").await;
    recorder.release.add_permits(1);
    ended(&runner, a, &ann).await;
    ended(&runner, b, &bob).await;
    // Ended jobs free both the caller and the slot.
    runner.submit(&ann, &oks("a", 1)).await.unwrap();
    runner.submit(&cid, &oks("c", 1)).await.unwrap();
    runner.close().await;
}

pub async fn config_is_validated<S: Store>(make: impl Fn() -> S) {
    let recorder = Arc::new(Recorder::default());
    let error = Runner::new(config(0), make(), fetcher(recorder))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        NewError::Config(ConfigError::Workers { workers: 0, .. })
    ));
}

pub async fn eviction_takes_least_recently_touched<S: Store>(make: impl Fn() -> S) {
    // Each job: one target of ~100 bytes of JSON and an output of about as many.
    let name = "x".repeat(80);
    let job_of = |job: &str| {
        vec![Target {
            job: job.to_owned(),
            name: format!("{job}{name}"),
            plan: Plan::Ok,
        }]
    };
    let one_job = {
        let t = serde_json::to_string(&job_of("a")[0]).unwrap().len();
        let o = format!("\"got a{name}\"").len();
        (t + o) as u64
    };
    let (runner, _, _) = start(make(), config(1).max_bytes(one_job * 5 / 2)).await;
    let (ann, bob, cid) = (caller("ann"), caller("bob"), caller("cid"));
    let a = runner.submit(&ann, &job_of("a")).await.unwrap();
    ended(&runner, a, &ann).await;
    let b = runner.submit(&bob, &job_of("b")).await.unwrap();
    ended(&runner, b, &bob).await;
    assert!(runner.touch(&ann, a).await.unwrap());
    let c = runner.submit(&cid, &job_of("c")).await.unwrap();
    ended(&runner, c, &cid).await;
    assert!(
        matches!(runner.status(&bob, b).await, Err(StatusError::NotFound)),
        "b went first"
    );
    assert!(runner.status(&ann, a).await.is_ok(), "touched a stays");
    assert!(runner.status(&cid, c).await.is_ok(), "the newest stays");
    runner.close().await;
}
