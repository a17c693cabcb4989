//! Every call of the runner's API racing `close` on a multi-threaded runtime: each answers
//! (none waits forever), and what it answers is one of the answers the docs allow for a
//! call made before or after the close (`Runner::close`). Shrinks under `TEST_SCALE=small`
//! (TSan).

use std::sync::Arc;
use std::time::Duration;

use lockgate_batch::store::MemoryStore;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobId, Runner, StatusError, SubmitError,
};

use crate::suite::harness::small;

/// Far above any answer's time on a loaded machine; reaching it means a call never answered.
const PATIENCE: Duration = Duration::from_secs(60);

/// A small xorshift: the rounds differ without a dependency, and a failure names its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One call of the API, made a random number of yields after the race starts.
#[derive(Debug, Clone, Copy)]
enum Call {
    Wait,
    Watch,
    Status,
    Summary,
    Jobs,
    Touch,
    Submit,
    SubmitKeyed,
    Cancel,
}

/// Every call, for the race to pick from.
const CALLS: [Call; 9] = [
    Call::Wait,
    Call::Watch,
    Call::Status,
    Call::Summary,
    Call::Jobs,
    Call::Touch,
    Call::Submit,
    Call::SubmitKeyed,
    Call::Cancel,
];

async fn call(runner: &Runner<u64, u64>, call: Call, caller: &Caller, id: JobId, task: u64) {
    match call {
        Call::Wait => match runner.wait(caller, id).await {
            Ok(job) => assert!(!job.status.is_live(), "wait answered a live job"),
            Err(StatusError::Closed) => {}
            Err(other) => panic!("wait: {other:?}"),
        },
        Call::Watch => match runner.watch(caller, id).await {
            // A watch that was made drains to its end: the job ends, or close ends the watch.
            Ok(mut watch) => while watch.changed().await.is_some() {},
            Err(StatusError::Closed) => {}
            Err(other) => panic!("watch: {other:?}"),
        },
        // The reads, a touch and a cancel are the store's to answer, before and after close
        // (`Runner::close`): the job's state as the store holds it.
        Call::Status => {
            runner.status(caller, id).await.expect("status");
        }
        Call::Summary => {
            runner.summary(caller, id).await.expect("summary");
        }
        Call::Jobs => {
            let jobs = runner.jobs(caller).await.expect("jobs");
            assert!(jobs.iter().any(|job| job.id == id));
        }
        Call::Touch => {
            assert!(runner.touch(caller, id).await.expect("touch"));
        }
        Call::Submit => {
            let other = Caller::new(format!("late {task}"));
            match runner.submit(&other, &[1]).await {
                Ok(_) | Err(SubmitError::Closed) => {}
                Err(other) => panic!("submit: {other:?}"),
            }
        }
        Call::SubmitKeyed => {
            let other = Caller::new(format!("late keyed {task}"));
            match runner.submit_keyed(&other, "key", &[1]).await {
                Ok(_) | Err(SubmitError::Closed) => {}
                Err(other) => panic!("submit_keyed: {other:?}"),
            }
        }
        Call::Cancel => {
            runner.cancel(caller, id).await.expect("cancel");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_racing_close_answers() {
    let rounds = if small() { 10 } else { 200 };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    for round in 0..rounds {
        // Fetches that take a little while, so a job is live when the race starts.
        let fetch = |_ctx: FetchContext, n: u64| async move {
            tokio::task::yield_now().await;
            Ok::<u64, FetchError>(n)
        };
        let runner = Arc::new(
            Runner::new(Config::default().workers(2), MemoryStore::new(), fetch)
                .await
                .unwrap(),
        );
        let ann = Caller::new("ann");
        let id = runner
            .submit(&ann, &(0..50).collect::<Vec<_>>())
            .await
            .unwrap();
        let mut tasks = Vec::new();
        for task in 0..6 {
            let which = CALLS[rng.below(CALLS.len() as u64) as usize];
            let delay = rng.below(20);
            let (runner, ann) = (Arc::clone(&runner), ann.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..delay {
                    tokio::task::yield_now().await;
                }
                call(&runner, which, &ann, id, task).await;
            }));
        }
        let delay = rng.below(20);
        let closer = {
            let runner = Arc::clone(&runner);
            tokio::spawn(async move {
                for _ in 0..delay {
                    tokio::task::yield_now().await;
                }
                runner.close().await;
            })
        };
        for task in tasks.into_iter().chain([closer]) {
            tokio::time::timeout(PATIENCE, task)
                .await
                .unwrap_or_else(|_| panic!("a call never answered (seed {seed}, round {round})"))
                .unwrap_or_else(|panic| panic!("{panic} (seed {seed}, round {round})"));
        }
        // After close, a live job's wait and watch answer at once, and so does every submit.
        if runner.status(&ann, id).await.unwrap().status.is_live() {
            let waited = tokio::time::timeout(PATIENCE, runner.wait(&ann, id)).await;
            assert!(
                matches!(waited, Ok(Err(StatusError::Closed))),
                "seed {seed}"
            );
            let watched = tokio::time::timeout(PATIENCE, runner.watch(&ann, id)).await;
            assert!(
                matches!(watched, Ok(Err(StatusError::Closed))),
                "seed {seed}"
            );
        }
        let late = runner.submit(&Caller::new("after close"), &[1]).await;
        assert!(matches!(late, Err(SubmitError::Closed)), "seed {seed}");
        let late = runner.submit_keyed(&ann, "late", &[1]).await;
        assert!(matches!(late, Err(SubmitError::Closed)), "seed {seed}");
    }
}
