//! Cancel from the browser: the job's page, the list and a second view of the job are open
//! in three tabs; a click on the cancel button in one shows `cancelled` there, and the two
//! others turn to `cancelled` live, all three without a reload (the cancel form gone from the job's
//! page, no resubmit form: nothing failed).

use std::sync::Arc;

use lockgate_batch::JobStatus;
use tokio::sync::Semaphore;

use crate::board::{Board, Plan, targets};
use crate::driver::Browser;

pub async fn run(browser: &Browser, board: &Board) {
    let frank = targets("foxtrot", 4);
    let gate = Arc::new(Semaphore::new(0));
    for target in &frank {
        board.plan(target, Plan::Hold(Arc::clone(&gate)));
    }
    let id = board.submit(&frank).await;
    board.until_status(id, JobStatus::Running).await;
    let row = format!("#jobs tr[data-job-id=\"{id}\"]");
    let client = browser.client();

    // Tab 1: the list; tab 2: the job, watching; tab 3: the job, where the click happens.
    let list_tab = client.window().await.expect("the tab");
    browser.open(&board.list_url()).await;
    browser
        .until_text(&format!("{row} td.status"), "running")
        .await;
    browser.mark().await;
    let mut tabs = Vec::new();
    for _ in 0..2 {
        let tab = client.new_window(true).await.expect("a new tab").handle;
        client.switch_to_window(tab.clone()).await.expect("the tab");
        browser.open(&board.job_url(id, "")).await;
        browser.until_text("#summary .status", "running").await;
        browser.mark().await;
        tabs.push(tab);
    }
    let (watch_tab, click_tab) = (tabs[0].clone(), tabs[1].clone());

    browser.click("form.cancel button").await;
    browser.until_text("#summary .status", "cancelled").await;
    assert_eq!(browser.count("form.cancel").await, 0);
    assert_eq!(browser.count("form.resubmit").await, 0);
    browser
        .assert_not_reloaded("the page whose cancel was clicked")
        .await;
    browser
        .assert_no_console_errors("the cancelled job's page")
        .await;
    assert_eq!(board.status(id).await, JobStatus::Cancelled);

    client.switch_to_window(watch_tab).await.expect("the tab");
    browser.until_text("#summary .status", "cancelled").await;
    browser
        .until(
            "the cancel form to go",
            "return document.querySelector('form.cancel') === null;",
            vec![],
        )
        .await;
    assert_eq!(browser.count("form.resubmit").await, 0);
    browser.assert_not_reloaded("the job's page").await;
    browser
        .assert_no_console_errors("the job's page, cancelled live")
        .await;

    client
        .switch_to_window(list_tab.clone())
        .await
        .expect("the tab");
    browser
        .until_text(&format!("{row} td.status"), "cancelled")
        .await;
    browser.assert_not_reloaded("the list").await;
    browser
        .assert_no_console_errors("the list, cancelled live")
        .await;

    // The targets in flight when the job was cancelled are let go, so that their workers
    // are free for the next step (a cancel does not stop a target in flight); the job stays
    // cancelled.
    gate.add_permits(frank.len());

    for tab in [click_tab, tabs[0].clone()] {
        client.switch_to_window(tab).await.expect("the tab");
        client.close_window().await.expect("closed");
    }
    client.switch_to_window(list_tab).await.expect("the tab");
}
