//! The JSON API's reads and their shapes.

use axum::http::StatusCode;
use serde_json::json;

use crate::harness::Board;

fn is_rfc3339(value: &serde_json::Value) -> bool {
    let text = value.as_str().unwrap_or_default();
    text.len() >= 20 && text.ends_with('Z') && text.as_bytes()[10] == b'T'
}

#[tokio::test]
async fn a_job_is_json_with_counts_and_rfc3339_times() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a", "fail:b"]).await;
    board.wait("ann", id).await;
    let reply = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{id}"))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), "application/json");
    let job = reply.json();
    assert_eq!(job["id"], json!(id.get()));
    assert_eq!(job["caller"], "ann");
    assert_eq!(job["status"], "partial");
    assert_eq!(job["counts"], json!({"pending": 0, "done": 1, "failed": 1}));
    assert!(is_rfc3339(&job["created"]), "{job}");
    assert!(is_rfc3339(&job["finished"]), "{job}");
    board.runner.close().await;
}

#[tokio::test]
async fn the_jobs_page_is_newest_first_with_a_cursor() {
    let board = Board::new().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = board.submit("ann", &["a"]).await;
        board.wait("ann", id).await;
        ids.push(id.get());
    }
    let page = board
        .get(Some("ann"), "/jobs/api/jobs?limit=2")
        .await
        .json();
    let got: Vec<u64> = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["id"].as_u64().unwrap())
        .collect();
    assert_eq!(got, vec![ids[2], ids[1]]);
    assert_eq!(page["next"], json!(ids[1]));
    assert!(page["jobs"][0]["counts"].is_object(), "counts on every job");
    let rest = board
        .get(
            Some("ann"),
            &format!("/jobs/api/jobs?limit=2&before={}", ids[1]),
        )
        .await
        .json();
    assert_eq!(rest["jobs"][0]["id"], json!(ids[0]));
    assert_eq!(rest["next"], json!(null));
    board.runner.close().await;
}

#[tokio::test]
async fn targets_are_json_values_with_output_or_error() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a", "fail:no"]).await;
    board.wait("ann", id).await;
    let page = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{id}/targets"))
        .await
        .json();
    assert_eq!(page["job"]["id"], json!(id.get()));
    assert_eq!(
        page["targets"][0],
        json!({"index": 0, "state": "done", "target": "a", "output": "out a", "output_bytes": 7})
    );
    assert_eq!(
        page["targets"][1],
        json!({"index": 1, "state": "failed", "target": "fail:no", "error": "no", "hint": "hint no"})
    );
    assert_eq!(page["next"], json!(null));
    let failed = board
        .get(
            Some("ann"),
            &format!("/jobs/api/jobs/{id}/targets?state=failed"),
        )
        .await
        .json();
    assert_eq!(failed["targets"].as_array().unwrap().len(), 1);
    board.runner.close().await;
}
