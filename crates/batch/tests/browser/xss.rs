//! Text from the user is shown, never run: a job whose target texts, error and hint are
//! script, on the list and on the job's page, both as the server renders them and as the
//! board's script rewrites them live. Nothing runs (no alert, no console error, no element
//! made from the text) and the text reads exactly as submitted.

use std::sync::Arc;

use lockgate_batch::JobStatus;
use tokio::sync::Semaphore;

use crate::board::{Board, Plan};
use crate::driver::Browser;

/// Script in every form a page could run it: a script element, an event handler on an
/// element, and quotes and an ampersand to break out of an attribute or an entity.
pub const PAYLOAD: &str = r#"<script>alert(1)</script>"'&<img src=x onerror=alert(2)>"#;

pub async fn run(browser: &Browser, board: &Board) {
    // Target 0 is held, so that its row changes live; target 1 fails with the payload as
    // error and hint (shown live too: the board re-reads a row from the API).
    let held = PAYLOAD.to_owned();
    let failing = format!("{PAYLOAD} (fails)");
    let gate = Arc::new(Semaphore::new(0));
    board.plan(&held, Plan::Hold(Arc::clone(&gate)));
    board.plan(&failing, Plan::Fail(PAYLOAD.into(), PAYLOAD.into()));
    let id = board.submit(&[held.clone(), failing.clone()]).await;
    let row = format!("#jobs tr[data-job-id=\"{id}\"]");
    let cell = |index: u64, class: &str| format!("#targets tr[data-index=\"{index}\"] .{class}");

    // Live: the job's page opens with target 1 (maybe) stored and target 0 held, then gets
    // both by events.
    browser.open(&board.job_url(id, "")).await;
    browser.mark().await;
    assert_eq!(
        browser.text(&cell(0, "target")).await.as_deref(),
        Some(PAYLOAD)
    );
    assert_eq!(
        browser.text(&cell(1, "target")).await.as_deref(),
        Some(failing.as_str())
    );
    gate.add_permits(1);
    board.until_status(id, JobStatus::Partial).await;
    browser.until_text("#summary .status", "partial").await;
    browser
        .until(
            "the bar at 2 of 2, the cancel form gone and a resubmit form in its place",
            "const bar = document.querySelector('#summary progress.bar'); \
             return bar.value === 2 && bar.max === 2 \
                 && document.querySelector('form.cancel') === null \
                 && document.querySelector('form.resubmit button') !== null;",
            vec![],
        )
        .await;
    browser.until_text(&cell(0, "state"), "done").await;
    browser.until_text(&cell(1, "state"), "failed").await;
    browser.until_text(&cell(1, "detail .error"), PAYLOAD).await;
    browser.until_text(&cell(1, "detail .hint"), PAYLOAD).await;
    browser.assert_not_reloaded("the job's page").await;
    check(browser, "the job's page, updated live").await;

    // Rendered by the server.
    browser.open(&board.job_url(id, "")).await;
    assert_eq!(
        browser.text(&cell(0, "target")).await.as_deref(),
        Some(PAYLOAD)
    );
    assert_eq!(
        browser.text(&cell(1, "detail .error")).await.as_deref(),
        Some(PAYLOAD)
    );
    assert_eq!(
        browser.text(&cell(1, "detail .hint")).await.as_deref(),
        Some(PAYLOAD)
    );
    check(browser, "the job's page").await;

    browser.open(&board.list_url()).await;
    browser
        .until_text(&format!("{row} td.status"), "partial")
        .await;
    check(browser, "the list").await;
}

/// No alert, no console error, and no element the payload would have made.
async fn check(browser: &Browser, page: &str) {
    browser.assert_no_alert().await;
    browser.assert_no_console_errors(page).await;
    let made = "#jobs script, #jobs img, #summary script, #summary img, \
                #targets script, #targets img";
    assert_eq!(
        browser.count(made).await,
        0,
        "{page}: no element made from the text"
    );
}
