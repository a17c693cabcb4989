//! The list page: jobs done, partial, failed, cancelled and running (the screenshots), then
//! a job's progress bar moving from 0 to done and its status changing to `done`, on a page
//! never reloaded; then a status filter, and the list a page at a time.

use std::sync::Arc;

use lockgate_batch::{JobId, JobStatus};
use tokio::sync::Semaphore;

use crate::board::{Board, Plan, targets};
use crate::driver::Browser;

/// The jobs the later steps use.
pub struct Scene {
    /// Ended with 2 of 8 targets failed (`bob`).
    pub partial: JobId,
}

/// The row of job `id` (a CSS selector prefix).
fn row(id: JobId) -> String {
    format!("#jobs tr[data-job-id=\"{id}\"]")
}

pub async fn run(browser: &Browser, board: &Board) -> Scene {
    // Done: every target fetched.
    let done = board.submit(&targets("alpha", 12)).await;
    board.until_status(done, JobStatus::Done).await;

    // Partial: two targets failed.
    let bob = targets("bravo", 8);
    board.plan(
        &bob[2],
        Plan::Fail("404 Not Found".into(), "check the address".into()),
    );
    board.plan(
        &bob[6],
        Plan::Fail("timed out after 30 s".into(), "the site may be down".into()),
    );
    let partial = board.submit(&bob).await;
    board.until_status(partial, JobStatus::Partial).await;

    // Failed: every target failed.
    let charlie = targets("charlie", 3);
    for target in &charlie {
        board.plan(
            target,
            Plan::Fail("connection refused".into(), "is the host up?".into()),
        );
    }
    let failed = board.submit(&charlie).await;
    board.until_status(failed, JobStatus::Failed).await;

    // Cancelled: before any target was fetched. Then its targets are let go: a cancel
    // starts no further target but does not stop one in flight, which would hold its worker
    // (a target a worker claimed finishes and is stored; the job stays cancelled).
    let carol = targets("cobalt", 5);
    let cobalt_gate = Arc::new(Semaphore::new(0));
    for target in &carol {
        board.plan(target, Plan::Hold(Arc::clone(&cobalt_gate)));
    }
    let cancelled = board.submit(&carol).await;
    assert!(board.cancel(cancelled).await);
    cobalt_gate.add_permits(carol.len());

    // Running: 9 of 20 stored (2 failed among them), its next target held. One target of a
    // job is in flight at a time, in index order, so the 7 permits let exactly targets 0 to
    // 8 through (2 and 5 fail without one).
    let dave = targets("delta", 20);
    let delta_gate = Arc::new(Semaphore::new(0));
    for (i, target) in dave.iter().enumerate() {
        let plan = match i {
            2 => Plan::Fail("503 Service Unavailable".into(), "retry later".into()),
            5 => Plan::Fail("not a PDF (text/html)".into(), "check the link".into()),
            _ => Plan::Hold(Arc::clone(&delta_gate)),
        };
        board.plan(target, plan);
    }
    let running = board.submit(&dave).await;
    delta_gate.add_permits(7);
    assert_eq!(board.until_stored(running, 9).await, JobStatus::Running);

    browser.open(&board.list_url()).await;
    for (id, status) in [
        (done, "done"),
        (partial, "partial"),
        (failed, "failed"),
        (cancelled, "cancelled"),
        (running, "running"),
    ] {
        browser
            .until_text(&format!("{} td.status", row(id)), status)
            .await;
    }
    assert_eq!(browser.count("#jobs tr[data-job-id]").await, 5);
    assert_eq!(
        browser.bar(&format!("{} progress.bar", row(done))).await,
        (12.0, 12.0)
    );
    assert_eq!(
        browser.bar(&format!("{} progress.bar", row(running))).await,
        (9.0, 20.0)
    );
    // Every status has a filter link.
    for status in [
        "queued",
        "running",
        "done",
        "failed",
        "partial",
        "cancelled",
    ] {
        assert_eq!(
            browser
                .count(&format!("a.filter[data-status=\"{status}\"]"))
                .await,
            1,
            "a filter link for {status}"
        );
    }
    browser.assert_no_console_errors("the list").await;
    browser.screenshot("list", Some("dashboard-list")).await;

    // The running job's page, for the other screenshot.
    browser.open(&board.job_url(running, "")).await;
    browser.until_text("#summary .status", "running").await;
    assert_eq!(browser.count("form.cancel button").await, 1);
    browser
        .assert_no_console_errors("a running job's page")
        .await;
    browser.screenshot("job", Some("dashboard-job")).await;

    // It ends; then a job whose targets are all held goes live at 0 (a caller has one live
    // job at a time).
    delta_gate.add_permits(dave.len());
    board.until_status(running, JobStatus::Partial).await;
    let echo = targets("echo", 6);
    let echo_gate = Arc::new(Semaphore::new(0));
    for target in &echo {
        board.plan(target, Plan::Hold(Arc::clone(&echo_gate)));
    }
    let live = board.submit(&echo).await;

    // On the list its bar moves from 0 to the end, and its status to `done`, with no
    // reload: at 0 (nothing can be stored while its gate is shut), at 2 of 6 once two targets
    // are let through, then done.
    browser.open(&board.list_url()).await;
    browser.mark().await;
    let bar = format!("{} progress.bar", row(live));
    let status = format!("{} td.status", row(live));
    assert_eq!(browser.bar(&bar).await, (0.0, 6.0));
    let first = browser.text(&status).await.expect("a status cell");
    assert!(
        first == "queued" || first == "running",
        "a live job: {first}"
    );
    assert_eq!(
        browser
            .text(&format!("{} td.status", row(running)))
            .await
            .as_deref(),
        Some("partial")
    );
    echo_gate.add_permits(2);
    browser
        .until(
            "the live job's bar at 2 of 6",
            "const el = document.querySelector(arguments[0]); \
             return el !== null && el.value === 2 && el.max === 6;",
            vec![serde_json::json!(bar)],
        )
        .await;
    browser.until_text(&status, "running").await;
    echo_gate.add_permits(echo.len() - 2);
    browser.until_text(&status, "done").await;
    assert_eq!(browser.bar(&bar).await, (6.0, 6.0));
    browser.assert_not_reloaded("the list").await;
    browser.assert_no_console_errors("the list, live").await;

    // A status filter, then the list two jobs at a time, newest first.
    browser.click("a.filter[data-status=\"partial\"]").await;
    browser
        .until(
            "the partial jobs only",
            "return new URLSearchParams(location.search).get('status') === 'partial';",
            vec![],
        )
        .await;
    assert_eq!(ids(browser).await, [running, partial]);
    browser.assert_no_console_errors("the partial jobs").await;
    browser.open(&format!("{}?limit=2", board.list_url())).await;
    assert_eq!(ids(browser).await, [live, running]);
    for page in [[cancelled, failed], [partial, done]] {
        let first = page[0];
        browser.click("a[rel=\"next\"]").await;
        browser
            .until(
                &format!("the page starting at job {first}"),
                "const row = document.querySelector('#jobs tr[data-job-id]'); \
                 return row !== null && row.getAttribute('data-job-id') === String(arguments[0]);",
                vec![serde_json::json!(first.to_string())],
            )
            .await;
        assert_eq!(ids(browser).await, page);
    }
    assert_eq!(
        browser.count("a[rel=\"next\"]").await,
        0,
        "no page after the last"
    );
    browser.assert_no_console_errors("the list, paged").await;

    Scene { partial }
}

/// The ids of the list's rows, in order.
async fn ids(browser: &Browser) -> Vec<JobId> {
    let value = browser
        .js(
            "return Array.from(document.querySelectorAll('#jobs tr[data-job-id]'), \
             row => row.getAttribute('data-job-id'));",
            vec![],
        )
        .await;
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|id| {
            let raw = id
                .as_str()
                .and_then(|id| id.parse().ok())
                .expect("a job id");
            JobId::new(raw)
        })
        .collect()
}
