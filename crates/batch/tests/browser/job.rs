//! A job's page: its targets a page at a time through the `next` links, then the failed ones
//! only, paged too.

use lockgate_batch::JobId;

use crate::board::{Board, targets};
use crate::driver::Browser;

/// The indices of the rows on the page, in order.
async fn rows(browser: &Browser) -> Vec<u64> {
    let value = browser
        .js(
            "return Array.from(document.querySelectorAll('#targets tr[data-index]'), \
             row => Number(row.getAttribute('data-index')));",
            vec![],
        )
        .await;
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|index| index.as_u64().expect("an index"))
        .collect()
}

/// Follows the page's `next` link and waits for a page whose first row is `first`.
async fn next(browser: &Browser, first: u64) {
    browser.click("a[rel=\"next\"]").await;
    browser
        .until(
            &format!("the page starting at target {first}"),
            "const row = document.querySelector('#targets tr[data-index]'); \
             return row !== null && row.getAttribute('data-index') === String(arguments[0]);",
            vec![serde_json::json!(first)],
        )
        .await;
}

/// `partial`: `bob`'s ended job of 8 targets, 2 and 6 failed.
pub async fn run(browser: &Browser, board: &Board, partial: JobId) {
    let submitted = targets("bravo", 8);
    let cell = |index: u64, class: &str| format!("#targets tr[data-index=\"{index}\"] .{class}");

    browser.open(&board.job_url(partial, "?limit=3")).await;
    browser.until_text("#summary .status", "partial").await;
    assert_eq!(browser.bar("#summary progress.bar").await, (8.0, 8.0));
    assert_eq!(
        browser.count("form.cancel").await,
        0,
        "no cancel once ended"
    );
    assert_eq!(
        browser.count("form.resubmit button").await,
        1,
        "resubmit: ended with failures"
    );
    let mut seen = Vec::new();
    for (page, first) in [(0, None), (1, Some(3)), (2, Some(6))] {
        if let Some(first) = first {
            next(browser, first).await;
        }
        let indices = rows(browser).await;
        for &index in &indices {
            let state = if index == 2 || index == 6 {
                "failed"
            } else {
                "done"
            };
            assert_eq!(
                browser.text(&cell(index, "target")).await.as_deref(),
                Some(submitted[index as usize].as_str())
            );
            assert_eq!(
                browser.text(&cell(index, "state")).await.as_deref(),
                Some(state)
            );
        }
        let last = page == 2;
        assert_eq!(
            browser.count("a[rel=\"next\"]").await,
            u64::from(!last),
            "a next link on every page but the last (page {page})"
        );
        seen.extend(indices);
        browser
            .assert_no_console_errors(&format!("page {page} of a job's targets"))
            .await;
    }
    assert_eq!(
        seen,
        (0..8).collect::<Vec<u64>>(),
        "each target once, in order"
    );

    // Failed only: the filter link, then the same filter paged one at a time.
    browser.click("#filter-failed").await;
    browser
        .until(
            "the failed targets only",
            "return new URLSearchParams(location.search).get('state') === 'failed';",
            vec![],
        )
        .await;
    assert_eq!(rows(browser).await, [2, 6]);
    assert_eq!(
        browser.text(&cell(2, "detail .error")).await.as_deref(),
        Some("404 Not Found")
    );
    assert_eq!(
        browser.text(&cell(6, "detail .hint")).await.as_deref(),
        Some("the site may be down")
    );
    browser.assert_no_console_errors("the failed targets").await;
    browser
        .open(&board.job_url(partial, "?state=failed&limit=1"))
        .await;
    assert_eq!(rows(browser).await, [2]);
    next(browser, 6).await;
    assert_eq!(rows(browser).await, [6]);
    assert_eq!(browser.count("a[rel=\"next\"]").await, 0);
    browser
        .assert_no_console_errors("the failed targets, paged")
        .await;
}
