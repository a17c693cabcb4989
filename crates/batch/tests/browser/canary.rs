//! The harness checked against a static page of its own, before any dashboard page: the
//! checks the other steps rely on to find nothing (no console error, no alert) are shown to
//! find something when there is something. Without this step a broken log capture would make
//! every "no console errors" pass.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::json;

use crate::driver::Browser;
use crate::server::Server;

/// The dashboard's policy: scripts from the page's own origin only.
const CSP: &str = "default-src 'self'; script-src 'self'; img-src 'self' data:";

const GOOD: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>canary</title><link rel="icon" href="data:,">
<script src="/app.js" defer></script></head>
<body><p id="out">waiting</p></body></html>"#;

const APP_JS: &str = "document.getElementById('out').textContent = 'ran';";

const BAD: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>bad</title><link rel="icon" href="data:,"></head>
<body><script>document.title = 'inline ran';</script><script src="/throws.js"></script></body></html>"#;

const THROWS_JS: &str = "throw new Error('canary: thrown while loading');";

fn html(body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_SECURITY_POLICY, CSP)], Html(body))
}

fn js(body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript")], body)
}

pub async fn run(browser: &Browser) {
    let app = Router::new()
        .route("/", get(|| async { html(GOOD) }))
        .route("/app.js", get(|| async { js(APP_JS) }))
        .route("/bad", get(|| async { html(BAD) }))
        .route("/throws.js", get(|| async { js(THROWS_JS) }));
    let server = Server::start(app).await;

    // A clean page: its own script runs (the policy allows 'self'), nothing is logged.
    browser.open(&format!("{}/", server.origin)).await;
    browser
        .until(
            "the page's script to run",
            "return document.getElementById('out').textContent === 'ran';",
            vec![],
        )
        .await;
    browser.assert_no_console_errors("the canary page").await;
    browser.screenshot("canary", None).await;

    // A CSP violation and an error thrown while loading are both caught.
    browser.open(&format!("{}/bad", server.origin)).await;
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().any(|e| e.contains("Content Security Policy")),
        "the blocked inline script is a console error: {errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("canary: thrown while loading")),
        "an error thrown during load is a console error: {errors:#?}"
    );
    assert_eq!(browser.js("return document.title;", vec![]).await, "bad");

    // So is one thrown after load, from a task the page queued before the check.
    browser
        .js(
            "setTimeout(() => { throw new Error('canary: thrown later'); }, 0);",
            vec![],
        )
        .await;
    let errors = browser.console_errors().await;
    assert!(
        errors.iter().any(|e| e.contains("canary: thrown later")),
        "an error thrown after load is a console error: {errors:#?}"
    );
    browser
        .assert_no_console_errors("the canary page, drained")
        .await;

    // An alert is seen, and gone once dismissed.
    browser.assert_no_alert().await;
    browser
        .js(
            "setTimeout(() => alert(arguments[0]), 0);",
            vec![json!("canary")],
        )
        .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let text = loop {
        match browser.client().get_alert_text().await {
            Ok(text) => break text,
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            Err(err) => panic!("the alert never opened: {err}"),
        }
    };
    assert_eq!(text, "canary");
    browser.client().dismiss_alert().await.expect("dismissed");
    browser.assert_no_alert().await;
    drop(server);
}
