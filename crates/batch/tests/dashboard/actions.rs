//! Cancel and resubmit, as forms and as API calls.

use axum::http::StatusCode;
use lockgate_batch::{Caller, JobId, JobStatus};
use serde_json::json;

use crate::harness::Board;

#[tokio::test]
async fn the_cancel_form_cancels_and_redirects_to_the_job() {
    let board = Board::new().await;
    let id = board.submit("ann", &["hold:a", "b"]).await;
    let reply = board.post("ann", &format!("/jobs/{id}/cancel")).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert_eq!(reply.header("location"), format!("../{id}"));
    assert_eq!(board.wait("ann", id).await, JobStatus::Cancelled);
    // Again: the job has ended; the form still lands on its page.
    let again = board.post("ann", &format!("/jobs/{id}/cancel")).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    board.runner.close().await;
}

#[tokio::test]
async fn the_cancel_call_answers_the_job_then_409() {
    let board = Board::new().await;
    let id = board.submit("ann", &["hold:a", "b"]).await;
    let reply = board
        .post("ann", &format!("/jobs/api/jobs/{id}/cancel"))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["status"], "cancelled");
    let again = board
        .post("ann", &format!("/jobs/api/jobs/{id}/cancel"))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json(), json!({"error": "the job has ended"}));
    board.runner.close().await;
}

#[tokio::test]
async fn resubmit_makes_one_job_of_the_failed_targets_however_often_it_is_sent() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a", "fail:b", "c", "fail:d"]).await;
    assert_eq!(board.wait("ann", id).await, JobStatus::Partial);

    let form = board.post("ann", &format!("/jobs/{id}/resubmit")).await;
    assert_eq!(form.status, StatusCode::SEE_OTHER);
    let location = form.header("location").to_owned();
    let new: u64 = location.strip_prefix("../").unwrap().parse().unwrap();
    assert_ne!(new, id.get());
    let again = board.post("ann", &format!("/jobs/{id}/resubmit")).await;
    assert_eq!(
        again.header("location"),
        location,
        "a second click, the same job"
    );
    for _ in 0..2 {
        let api = board
            .post("ann", &format!("/jobs/api/jobs/{id}/resubmit"))
            .await;
        assert_eq!(api.status, StatusCode::OK);
        assert_eq!(api.json(), json!({"id": new}));
    }
    let new = JobId::new(new);
    board.wait("ann", new).await;
    let job = board.runner.status(&Caller::new("ann"), new).await.unwrap();
    let targets: Vec<String> = job.targets.iter().map(|t| t.target().unwrap()).collect();
    assert_eq!(targets, ["fail:b", "fail:d"]);
    assert_eq!(
        board.runner.jobs(&Caller::new("ann")).await.unwrap().len(),
        2
    );
    board.runner.close().await;
}

#[tokio::test]
async fn resubmit_refuses_a_live_job_and_one_without_failures() {
    let board = Board::new().await;
    let fine = board.submit("ann", &["a"]).await;
    board.wait("ann", fine).await;
    let reply = board
        .post("ann", &format!("/jobs/api/jobs/{fine}/resubmit"))
        .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    assert_eq!(reply.json()["error"], "the job has no failed target");
    let live = board.submit("ann", &["hold:a", "fail:b"]).await;
    let reply = board.post("ann", &format!("/jobs/{live}/resubmit")).await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    assert!(reply.body.contains("still running"));
    board.release(1);
    board.wait("ann", live).await;
    board.runner.close().await;
}

#[tokio::test]
#[ignore = "needs the stores' native keyset paging for `Scope::Everyone` (the store-contract \
            fallback sees nothing for it); un-ignore when it lands on main"]
async fn an_admin_cancels_another_callers_job_as_that_caller() {
    let board = Board::new().await;
    let id = board.submit("ann", &["hold:a", "b"]).await;
    let reply = board
        .post("root", &format!("/jobs/api/jobs/{id}/cancel"))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(board.wait("ann", id).await, JobStatus::Cancelled);
    board.runner.close().await;
}
