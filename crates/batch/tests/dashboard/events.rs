//! Event streams: live updates, the list's stream, ends, slow and gone clients, and 1,000
//! streams on one job.

use axum::http::StatusCode;
use std::time::Duration;

use lockgate_batch::dashboard::{DEFAULT_MIN_INTERVAL, MAX_LAG, STREAM_BUFFER};
use lockgate_batch::{Config, JobStatus};
use serde_json::json;

use crate::harness::{Board, until};

#[tokio::test(start_paused = true)]
async fn a_job_stream_reports_each_stored_target_then_the_end() {
    // No quiet interval: each change the stream sees goes out.
    let board = Board::with(Config::default(), usize::MAX, Duration::ZERO).await;
    let id = board
        .submit("ann", &["sleep:10:a", "sleep:10:b", "sleep:10:c"])
        .await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(
        stream.headers.get("content-type").unwrap(),
        "text/event-stream"
    );
    assert_eq!(stream.headers.get("x-accel-buffering").unwrap(), "no");
    let first = stream.next().await.expect("a first event");
    assert_eq!(first.name, "progress");
    assert_eq!(first.data["id"], json!(id.get()));
    assert_eq!(first.data["counts"]["pending"], 3);
    let events = stream.rest().await;
    let (last, changes) = events.split_last().expect("an end");
    assert_eq!(last.name, "end");
    assert_eq!(last.data["status"], "done");
    assert_eq!(
        last.data["counts"],
        json!({"pending": 0, "done": 3, "failed": 0})
    );
    assert_eq!(last.data["target"], json!({"index": 2, "state": "done"}));
    let targets: Vec<_> = changes
        .iter()
        .filter_map(|e| e.data.get("target").cloned())
        .collect();
    assert_eq!(
        targets,
        vec![
            json!({"index": 0, "state": "done"}),
            json!({"index": 1, "state": "done"})
        ],
        "one event per stored target: {events:?}"
    );
    assert!(changes.iter().all(|e| e.name == "progress"));
    assert_eq!(board.dashboard.open_streams(), 0);
    board.runner.close().await;
}

#[tokio::test]
async fn a_stream_of_an_ended_job_sends_its_end_and_closes() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a"]).await;
    board.wait("ann", id).await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    let events = stream.rest().await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name, "end");
    assert_eq!(events[0].data["status"], "done");
    board.runner.close().await;
}

#[tokio::test]
async fn the_list_stream_follows_the_callers_jobs_among_the_ids() {
    let board = Board::new().await;
    let ended = board.submit("ann", &["a"]).await;
    board.wait("ann", ended).await;
    let live = board.submit("ann", &["hold:b"]).await;
    let bobs = board.submit("bob", &["hold:c"]).await;
    let mut stream = board
        .stream(
            "ann",
            &format!("/jobs/api/events?ids={ended},{live},{bobs},777"),
        )
        .await;
    assert_eq!(stream.status, StatusCode::OK);
    let mut first = [stream.next().await.unwrap(), stream.next().await.unwrap()];
    first.sort_by_key(|e| e.data["id"].as_u64());
    assert_eq!(first[0].name, "end");
    assert_eq!(first[0].data["id"], json!(ended.get()));
    assert_eq!(first[1].name, "progress");
    assert_eq!(first[1].data["id"], json!(live.get()));
    board.release(1);
    let rest = stream.rest().await;
    let last = rest.last().expect("the live job's end");
    assert_eq!(last.name, "end");
    assert_eq!(last.data["id"], json!(live.get()));
    assert_eq!(last.data["status"], "done");
    assert!(
        rest.iter().all(|e| e.data["id"] == json!(live.get())),
        "nothing of bob's job: {rest:?}"
    );
    board.release(1);
    board.wait("bob", bobs).await;
    board.runner.close().await;
}

#[tokio::test]
async fn a_client_that_disconnects_frees_its_stream_at_once() {
    let board = Board::new().await;
    let id = board.submit("ann", &["hold:a"]).await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    stream.next().await.expect("the first progress");
    assert_eq!(board.dashboard.open_streams(), 1);
    drop(stream);
    until(|| board.dashboard.open_streams() == 0).await;
    board.release(1);
    board.runner.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_is_dropped_and_holds_a_bounded_buffer() {
    let board = Board::with(
        Config::default().max_targets(1_000),
        usize::MAX,
        Duration::ZERO,
    )
    .await;
    let targets = vec!["sleep:1:x"; STREAM_BUFFER + MAX_LAG + 50];
    let id = board.submit("ann", &targets).await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    // The client reads nothing while the job runs to its end.
    assert_eq!(board.wait("ann", id).await, JobStatus::Done);
    until(|| board.dashboard.open_streams() == 0).await;
    let events = stream.rest().await;
    assert!(events.len() <= STREAM_BUFFER, "{} buffered", events.len());
    assert!(
        events.iter().all(|e| e.name == "progress"),
        "dropped before its end"
    );
    board.runner.close().await;
}

#[tokio::test]
async fn closing_the_runner_ends_a_thousand_streams_on_one_job() {
    // 1,000 streams; 100 under `TEST_SCALE=small` (the sanitizer).
    let small = std::env::var("TEST_SCALE").is_ok_and(|v| v == "small");
    let streams = if small { 100 } else { 1_000 };
    let board = Board::with(Config::default(), streams, DEFAULT_MIN_INTERVAL).await;
    let id = board.submit("ann", &["hold:a", "b"]).await;
    let path = format!("/jobs/api/jobs/{id}/events");
    let mut readers = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut stream = board.stream("ann", &path).await;
        assert_eq!(stream.status, StatusCode::OK);
        let first = stream.next().await.expect("the first progress");
        assert_eq!(first.name, "progress");
        readers.push(tokio::spawn(async move { stream.rest().await }));
    }
    assert_eq!(
        board.dashboard.open_streams(),
        streams,
        "one task per stream"
    );
    // Bounded: one more is refused.
    let refused = board.stream("ann", &path).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    drop(refused);

    board.runner.close().await;
    for reader in readers {
        let rest = reader.await.expect("a reader");
        let last = rest.last().expect("an end");
        assert_eq!(last.name, "end");
        assert_eq!(
            last.data["status"], "running",
            "ended by the close, not the job"
        );
    }
    assert_eq!(board.dashboard.open_streams(), 0);
    // A live job after the close: nothing would report it.
    let after = board.stream("ann", &path).await;
    assert_eq!(after.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test(start_paused = true)]
async fn a_stream_sends_at_most_one_batch_per_interval_merged_to_the_latest() {
    let interval = Duration::from_millis(100);
    let board = Board::with(Config::default(), usize::MAX, interval).await;
    // 40 targets of 10 ms: 400 ms of work, so about 4 intervals.
    let targets = vec!["sleep:10:x"; 40];
    let id = board.submit("ann", &targets).await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    let events = stream.rest().await;
    assert!(
        events.len() <= 7,
        "merged: {} events: {events:?}",
        events.len()
    );
    let last = events.last().unwrap();
    assert_eq!(last.name, "end");
    assert_eq!(last.data["counts"]["done"], 40);
    let stored: Vec<u64> = events
        .iter()
        .map(|e| e.data["counts"]["done"].as_u64().unwrap())
        .collect();
    assert!(
        stored.windows(2).all(|w| w[0] < w[1]),
        "each batch is newer: {stored:?}"
    );
    board.runner.close().await;
}
