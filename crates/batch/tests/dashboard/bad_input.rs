//! Bad input on every route: unknown and foreign ids (`404`, one body), malformed ids,
//! cursors and filters (`400` with a message), no caller (`401`, empty), and a huge `limit`
//! (clamped).

use axum::http::StatusCode;
use lockgate_batch::page::MAX_PAGE;

use crate::harness::Board;

/// Every route that names a job, as (method, path with `{id}`).
const JOB_ROUTES: &[(&str, &str)] = &[
    ("GET", "/jobs/{id}"),
    ("POST", "/jobs/{id}/cancel"),
    ("POST", "/jobs/{id}/resubmit"),
    ("GET", "/jobs/api/jobs/{id}"),
    ("GET", "/jobs/api/jobs/{id}/targets"),
    ("GET", "/jobs/api/jobs/{id}/events"),
    ("POST", "/jobs/api/jobs/{id}/cancel"),
    ("POST", "/jobs/api/jobs/{id}/resubmit"),
];

async fn call(board: &Board, method: &str, user: &str, path: &str) -> crate::harness::Reply {
    match method {
        "GET" => board.get(Some(user), path).await,
        _ => board.post(user, path).await,
    }
}

#[tokio::test]
async fn another_callers_job_and_an_unknown_one_answer_the_same_404() {
    let board = Board::new().await;
    let bobs = board.submit("bob", &["hold:b"]).await;
    for (method, route) in JOB_ROUTES {
        let foreign = call(
            &board,
            method,
            "ann",
            &route.replace("{id}", &bobs.to_string()),
        )
        .await;
        let unknown = call(&board, method, "ann", &route.replace("{id}", "999999")).await;
        assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{method} {route}");
        assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{method} {route}");
        assert_eq!(foreign.body, unknown.body, "{method} {route}");
        assert_eq!(
            foreign.header("content-type"),
            unknown.header("content-type")
        );
    }
    // Nothing happened to bob's job.
    let job = board
        .get(Some("bob"), &format!("/jobs/api/jobs/{bobs}"))
        .await
        .json();
    assert!(
        job["status"] == "running" || job["status"] == "queued",
        "{job}"
    );
    board.release(1);
    assert_eq!(
        board.wait("bob", bobs).await,
        lockgate_batch::JobStatus::Done
    );
    board.runner.close().await;
}

#[tokio::test]
async fn a_malformed_id_is_400_with_a_message_on_every_route() {
    let board = Board::new().await;
    for (method, route) in JOB_ROUTES {
        for bad in [
            "abc",
            "-1",
            "1.5",
            "%2B1",
            "99999999999999999999999",
            "%3Cscript%3E",
        ] {
            let reply = call(&board, method, "ann", &route.replace("{id}", bad)).await;
            assert_eq!(
                reply.status,
                StatusCode::BAD_REQUEST,
                "{method} {route} {bad}"
            );
            assert!(reply.body.contains("malformed job id"), "{}", reply.body);
            assert!(!reply.body.contains("<script>"), "{}", reply.body);
        }
    }
    board.runner.close().await;
}

#[tokio::test]
async fn a_malformed_cursor_or_filter_is_400_with_a_message() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a"]).await;
    board.wait("ann", id).await;
    let cases = [
        ("/jobs/?status=finished".to_owned(), "unknown status"),
        ("/jobs/?before=x".to_owned(), "malformed cursor"),
        ("/jobs/?before=-3".to_owned(), "malformed cursor"),
        ("/jobs/?limit=lots".to_owned(), "malformed limit"),
        ("/jobs/?status=%ZZ".to_owned(), "percent-encoding"),
        ("/jobs/api/jobs?status=RUNNING".to_owned(), "unknown status"),
        ("/jobs/api/jobs?before=1e3".to_owned(), "malformed cursor"),
        (format!("/jobs/{id}?state=lost"), "unknown state"),
        (format!("/jobs/{id}?after=x"), "malformed cursor"),
        (
            format!("/jobs/api/jobs/{id}/targets?state=DONE"),
            "unknown state",
        ),
        (
            format!("/jobs/api/jobs/{id}/targets?after=%FF"),
            "percent-encoding",
        ),
        (
            format!("/jobs/api/jobs/{id}/targets?limit=-1"),
            "malformed limit",
        ),
        ("/jobs/api/events".to_owned(), "names no job"),
        ("/jobs/api/events?ids=1,x".to_owned(), "malformed job id"),
    ];
    for (path, message) in cases {
        let reply = board.get(Some("ann"), &path).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(reply.body.contains(message), "{path}: {}", reply.body);
    }
    board.runner.close().await;
}

#[tokio::test]
async fn a_request_without_a_caller_is_401_and_nothing_else() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a"]).await;
    board.wait("ann", id).await;
    let mut paths: Vec<(String, String)> = JOB_ROUTES
        .iter()
        .map(|(m, r)| ((*m).to_owned(), r.replace("{id}", &id.to_string())))
        .collect();
    paths.push(("GET".into(), "/jobs/".into()));
    paths.push(("GET".into(), "/jobs/api/jobs".into()));
    paths.push(("GET".into(), format!("/jobs/api/events?ids={id}")));
    paths.push(("GET".into(), "/jobs/?status=bogus".into()));
    for (method, path) in paths {
        let request =
            crate::harness::request(&method, None, &path, &[("origin", "http://board.test")]);
        let reply = board.send(request).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{method} {path}");
        assert!(reply.body.is_empty(), "{method} {path}: {}", reply.body);
    }
    board.runner.close().await;
}

#[tokio::test]
async fn a_huge_limit_gets_one_bounded_page() {
    let board = Board::with(
        lockgate_batch::Config::default().max_targets(2_000),
        usize::MAX,
        lockgate_batch::dashboard::DEFAULT_MIN_INTERVAL,
    )
    .await;
    let targets: Vec<String> = (0..MAX_PAGE + 10).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
    let id = board.submit("ann", &refs).await;
    board.wait("ann", id).await;
    let page = board
        .get(
            Some("ann"),
            &format!("/jobs/api/jobs/{id}/targets?limit=1000000"),
        )
        .await
        .json();
    assert_eq!(page["targets"].as_array().unwrap().len(), MAX_PAGE);
    assert_eq!(page["next"], serde_json::json!(MAX_PAGE - 1));
    let html = board
        .get(Some("ann"), &format!("/jobs/{id}?limit=1000000"))
        .await;
    assert_eq!(html.body.matches("<tr data-index=").count(), MAX_PAGE);
    assert!(
        html.body
            .contains(&format!("?after={}&amp;limit={MAX_PAGE}", MAX_PAGE - 1))
    );
    let jobs = board
        .get(Some("ann"), "/jobs/api/jobs?limit=99999999999999999999999")
        .await;
    assert_eq!(jobs.status, StatusCode::OK);
    board.runner.close().await;
}
