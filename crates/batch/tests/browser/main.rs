//! The dashboard in a real browser: headless Chromium driven over WebDriver (chromedriver,
//! through `fantoccini`).
//!
//! One test, in steps, on one chromedriver and one browser session (a browser takes a second
//! or two to start; one per step would be most of the runtime):
//! 1. [`canary`]: the harness against a static page of its own, proving that the console-error
//!    and alert checks the other steps expect to find nothing do find something.
//! 2. [`list`]: the dashboard's list with jobs done, partial, failed, cancelled and running
//!    (the two screenshots: the list, and the running job's page); then a new job's progress
//!    bar goes from 0 to 2 of 6 to 6 of 6 and its status to `done`, on a page never
//!    reloaded; a status filter; the list a page at a time.
//! 3. [`job`]: a job's targets paged through the `next` links, then filtered to the failed
//!    ones (and those paged).
//! 4. [`cancel`]: a click on a running job's cancel button shows `cancelled`; the list and
//!    another view of the job, open in other tabs, turn `cancelled` live without a reload.
//! 5. [`xss`]: target texts, an error and a hint that are script show literally, live and as
//!    rendered, and nothing runs: no alert, no console error, no element made of them.
//!
//! The application ([`board`]) is the real dashboard router over a real runner (SQLite store,
//! two workers), served on a loopback port; the fetch holds chosen targets on semaphores the
//! test opens, so every intermediate state a step checks is one the runner cannot leave
//! before the test lets it.
//!
//! Every page is checked for console errors (`SEVERE` entries of the browser log: uncaught
//! exceptions, `console.error`, failed loads, Content Security Policy violations). Waits
//! poll a condition in the page with an overall limit ([`driver::Browser::until`]), never a
//! fixed sleep.
//!
//! Skips: without chromedriver and Chromium the test prints `SKIPPED: browser: <why>` and
//! passes, except in CI (`CI` set), where `.ci/run` installs them and a skip would hide a
//! broken setup: there it fails. `cargo xtask gate` finds the two programs itself, says
//! `SKIPPED: browser: …` in its own output (nextest hides a passing test's), and names them
//! to the test in `BATCH_TEST_CHROMEDRIVER` and `BATCH_TEST_CHROMIUM`. Under ThreadSanitizer
//! (`TSAN_OPTIONS` set) the test skips, as every test opening sockets does (tokio issue
//! #7299).
//!
//! Screenshots go to `target/tmp/browser/` (with chromedriver's log); with
//! `BATCH_SCREENSHOTS=update` the dashboard ones are written to `docs/` too.

mod board;
mod canary;
mod cancel;
mod driver;
mod job;
mod list;
mod server;
mod xss;

use driver::{Browser, Programs};

/// How long all the steps may take (they take 5 to 8 s).
const TEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(180);

/// The programs, or `None` after saying why the test is skipped.
fn programs_or_skip() -> Option<Programs> {
    if std::env::var_os("TSAN_OPTIONS").is_some() {
        println!("SKIPPED: browser: loopback I/O under ThreadSanitizer (tokio issue #7299)");
        return None;
    }
    match driver::find() {
        Ok(programs) => Some(programs),
        Err(why) if in_ci() => panic!(
            "{why}; CI must run the browser test (.ci/run installs chromium and chromium-driver)"
        ),
        Err(why) => {
            println!("SKIPPED: browser: {why}");
            None
        }
    }
}

/// Whether this is a CI run (CI services set `CI=true`).
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false" && value != "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_chromium() {
    let Some(programs) = programs_or_skip() else {
        return;
    };
    let browser = Browser::start(&programs).await;
    let board = board::Board::start().await;
    let steps = async {
        canary::run(&browser).await;
        let scene = list::run(&browser, &board).await;
        job::run(&browser, &board, scene.partial).await;
        cancel::run(&browser, &board).await;
        xss::run(&browser, &board).await;
    };
    // Every wait has its own limit; this one catches a step stuck in a call that has none.
    tokio::time::timeout(TEST_LIMIT, steps)
        .await
        .unwrap_or_else(|_| panic!("the steps took more than {TEST_LIMIT:?}"));
    browser.close().await;
    board.runner.close().await;
}
