//! The runner's user-facing API over every store: what a fetch is told, how its errors are
//! stored, and the snapshot types' serde.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::store::Store;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, Job, JobId, JobStatus, Runner, TargetState, fetch_fn,
};
use tokio::time::Instant;

use super::ended;

/// What each fetch saw: its job, its index, its caller, its target, and when it ran.
type Seen = Arc<Mutex<Vec<(JobId, usize, String, String, Instant)>>>;

/// A fetch that records what it is told and answers by the target's name: `busy …` stays
/// busy, `slow-busy` is busy once with a 3 s `after`, `busy-once` is busy once, `nan` fails
/// through `?`, anything else is done.
async fn runner<S: Store>(store: S, seen: Seen) -> Runner<String, String> {
    let fetch = fetch_fn(move |ctx: FetchContext, target: String| {
        let seen = Arc::clone(&seen);
        async move {
            let attempts = {
                let mut seen = seen.lock().unwrap();
                seen.push((
                    ctx.job(),
                    ctx.index(),
                    ctx.caller().to_string(),
                    target.clone(),
                    Instant::now(),
                ));
                seen.iter().filter(|s| s.3 == target).count()
            };
            match target.as_str() {
                "busy forever" => Err(FetchError::retry_later("rate limited by upstream")),
                "slow-busy" if attempts == 1 => Err(FetchError::retry_after(
                    "upstream said retry after 3 s",
                    Duration::from_secs(3),
                )),
                "busy-once" if attempts == 1 => Err(FetchError::retry_later("busy")),
                "nan" => {
                    let n: u32 = target.parse()?;
                    Ok(n.to_string())
                }
                _ => Ok(format!("got {target}")),
            }
        }
    });
    let config = Config::default()
        .workers(1)
        .retry(Duration::from_secs(1), Duration::from_secs(10));
    Runner::new(config, store, fetch).await.unwrap()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

pub async fn a_fetch_is_told_its_job_index_and_caller<S: Store>(make: impl Fn() -> S) {
    let seen = Seen::default();
    let runner = runner(make(), Arc::clone(&seen)).await;
    let (ann, bob) = (Caller::new("ann"), Caller::new("bob"));
    let a = runner.submit(&ann, &strings(&["a0", "a1"])).await.unwrap();
    let b = runner.submit(&bob, &strings(&["b0"])).await.unwrap();
    ended(&runner, a, &ann).await;
    ended(&runner, b, &bob).await;
    let mut told: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(job, index, caller, target, _)| (*job, *index, caller.clone(), target.clone()))
        .collect();
    told.sort_by(|x, y| x.3.cmp(&y.3));
    assert_eq!(
        told,
        [
            (a, 0, "ann".to_owned(), "a0".to_owned()),
            (a, 1, "ann".to_owned(), "a1".to_owned()),
            (b, 0, "bob".to_owned(), "b0".to_owned()),
        ]
    );
    runner.close().await;
}

pub async fn retry_later_waits_its_own_time_and_stores_its_reason<S: Store>(make: impl Fn() -> S) {
    let seen = Seen::default();
    let runner = runner(make(), Arc::clone(&seen)).await;
    let ann = Caller::new("ann");
    let id = runner
        .submit(&ann, &strings(&["slow-busy", "busy-once", "busy forever"]))
        .await
        .unwrap();
    let job = ended(&runner, id, &ann).await;
    assert_eq!(job.status, JobStatus::Partial);
    assert_eq!(
        job.targets[0].output::<String>().unwrap().unwrap(),
        "got slow-busy"
    );
    assert_eq!(
        job.targets[1].output::<String>().unwrap().unwrap(),
        "got busy-once"
    );
    // Busy past `retry_for`: stored with the fetch's own reason.
    assert_eq!(
        job.targets[2].state,
        TargetState::Failed {
            error: "rate limited by upstream".into(),
            hint: None,
        }
    );
    let gap = |name: &str| {
        let seen = seen.lock().unwrap();
        let times: Vec<Instant> = seen.iter().filter(|s| s.3 == name).map(|s| s.4).collect();
        times[1] - times[0]
    };
    // `after` replaced `retry_wait` (1 s) for that one try; the plain retry waited 1 s.
    let slow = gap("slow-busy");
    assert!(
        slow >= Duration::from_secs(3) && slow < Duration::from_millis(3_500),
        "{slow:?}"
    );
    let plain = gap("busy-once");
    assert!(
        plain >= Duration::from_secs(1) && plain < Duration::from_millis(1_500),
        "{plain:?}"
    );
    runner.close().await;
}

pub async fn question_mark_in_a_fetch_stores_the_error_text<S: Store>(make: impl Fn() -> S) {
    let runner = runner(make(), Seen::default()).await;
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &strings(&["nan"])).await.unwrap();
    let job = ended(&runner, id, &ann).await;
    assert_eq!(job.status, JobStatus::Failed);
    let expected = "nan".parse::<u32>().unwrap_err().to_string();
    assert_eq!(
        job.targets[0].state,
        TargetState::Failed {
            error: expected,
            hint: None,
        }
    );
    runner.close().await;
}

pub async fn snapshots_round_trip_through_serde<S: Store>(make: impl Fn() -> S) {
    let runner = runner(make(), Seen::default()).await;
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &strings(&["x", "nan"])).await.unwrap();
    let job = ended(&runner, id, &ann).await;
    let json = serde_json::to_value(&job).unwrap();
    assert_eq!(json["id"], serde_json::json!(id.get()));
    assert_eq!(json["status"], "partial");
    // What a browser client wants: counts beside the status, RFC 3339 times, the target and
    // output as the JSON values they are, the state's fields beside the target.
    assert_eq!(
        json["counts"],
        serde_json::json!({"pending": 0, "done": 1, "failed": 1})
    );
    assert!(json["created"].as_str().unwrap().ends_with('Z'), "{json}");
    assert_eq!(json["targets"][0]["target"], "x");
    assert_eq!(json["targets"][0]["state"], "done");
    assert!(json["targets"][0]["output"].is_string(), "{json}");
    assert_eq!(json["targets"][1]["state"], "failed");
    assert!(json["targets"][1]["error"].is_string(), "{json}");
    let back: Job = serde_json::from_value(json).unwrap();
    assert_eq!(back, job);
    let targets: Vec<String> = job
        .targets
        .iter()
        .map(|entry| entry.target().unwrap())
        .collect();
    assert_eq!(targets, ["x", "nan"]);
    assert!(job.targets[0].target::<u32>().is_err());
    runner.close().await;
}
