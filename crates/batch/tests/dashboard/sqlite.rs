//! The board over the SQLite store: its pages, a live stream, and a resubmit whose key the
//! database keeps.

use axum::http::StatusCode;
use lockgate_batch::dashboard::DEFAULT_MIN_INTERVAL;
use lockgate_batch::store::SqliteStore;
use lockgate_batch::{Config, JobStatus};
use serde_json::json;

use crate::harness::Board;

async fn board() -> Board {
    let store = SqliteStore::open_in_memory().expect("an in-memory database");
    Board::on(
        store,
        Config::default().workers(2),
        usize::MAX,
        DEFAULT_MIN_INTERVAL,
    )
    .await
}

#[tokio::test]
async fn pages_streams_and_resubmit_work_on_sqlite() {
    let board = board().await;
    let id = board.submit("ann", &["a", "fail:<b>", "c"]).await;
    let mut stream = board
        .stream("ann", &format!("/jobs/api/jobs/{id}/events"))
        .await;
    assert_eq!(stream.status, StatusCode::OK);
    let last = stream.rest().await.pop().expect("an end");
    assert_eq!(last.name, "end");
    assert_eq!(last.data["status"], "partial");
    assert_eq!(board.wait("ann", id).await, JobStatus::Partial);

    let list = board.get(Some("ann"), "/jobs/").await;
    assert!(list.body.contains(&format!("<tr data-job-id=\"{id}\"")));
    assert!(list.body.contains("<td class=\"status\">partial</td>"));
    let page = board
        .get(Some("ann"), &format!("/jobs/{id}?state=failed"))
        .await;
    assert_eq!(page.body.matches("<tr data-index=").count(), 1);
    assert!(page.body.contains("<span class=\"error\">&lt;b&gt;</span>"));

    let first = board
        .post("ann", &format!("/jobs/api/jobs/{id}/resubmit"))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let again = board
        .post("ann", &format!("/jobs/api/jobs/{id}/resubmit"))
        .await;
    assert_eq!(first.json(), again.json());
    let new = first.json()["id"].as_u64().unwrap();
    let job = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{new}"))
        .await
        .json();
    // The store-contract fallback of `Runner::job` has no key; a store that pages natively
    // shows it.
    assert!(
        job["key"].is_null() || job["key"] == json!(format!("resubmit:{id}")),
        "{job}"
    );
    assert_eq!(
        job["counts"]["pending"].as_u64().unwrap()
            + job["counts"]["failed"].as_u64().unwrap()
            + job["counts"]["done"].as_u64().unwrap(),
        1
    );
    board.runner.close().await;
}
