//! Injection, the Content-Security-Policy, and cross-site POSTs.

use axum::http::StatusCode;
use lockgate_batch::JobStatus;

use crate::harness::{Board, HOST, request};

const EVIL: &str = r#"<script>alert("x")</script> & 'quoted' <img src=x onerror=alert(1)>"#;

#[tokio::test]
async fn target_and_error_text_show_as_text_on_every_page() {
    let board = Board::new().await;
    let failing = format!("fail:{EVIL}");
    let id = board.submit("ann", &[EVIL, &failing]).await;
    board.wait("ann", id).await;
    for path in [
        "/jobs/".to_owned(),
        format!("/jobs/{id}"),
        format!("/jobs/{id}?state=failed"),
    ] {
        let page = board.get(Some("ann"), &path).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(
            !page.body.contains("<script>alert"),
            "{path}: {}",
            page.body
        );
        assert!(!page.body.contains("<img"), "{path}");
        assert!(!page.body.contains("onerror=alert(1)>"), "{path}");
    }
    let page = board.get(Some("ann"), &format!("/jobs/{id}")).await;
    let escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39; \
                   &lt;img src=x onerror=alert(1)&gt;";
    assert!(
        page.body
            .contains(&format!("<td class=\"target\">{escaped}</td>"))
    );
    assert!(
        page.body
            .contains(&format!("<span class=\"error\">{escaped}</span>"))
    );
    // The API carries the same text as JSON strings, with `<`, `>` and `&` escaped.
    let api = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{id}/targets"))
        .await;
    assert!(
        !api.body.contains('<') && !api.body.contains('&'),
        "{}",
        api.body
    );
    assert_eq!(api.json()["targets"][0]["target"], EVIL);
    assert_eq!(api.json()["targets"][1]["error"], EVIL);
    board.runner.close().await;
}

#[tokio::test]
async fn every_response_carries_a_strict_content_security_policy() {
    let board = Board::new().await;
    let id = board.submit("ann", &["a"]).await;
    board.wait("ann", id).await;
    for path in [
        "/jobs/".to_owned(),
        format!("/jobs/{id}"),
        "/jobs/nope".to_owned(),
        "/jobs/424242".to_owned(),
        "/jobs/api/jobs".to_owned(),
        "/jobs/assets/board.js".to_owned(),
    ] {
        let reply = board.get(Some("ann"), &path).await;
        let csp = reply.header("content-security-policy");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("script-src 'self'"), "{path}");
        assert!(!csp.contains("unsafe-inline"), "{path}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}");
        assert_eq!(reply.header("x-content-type-options"), "nosniff");
    }
    // No inline script or style on the pages: the CSP would block them.
    let page = board.get(Some("ann"), &format!("/jobs/{id}")).await;
    assert!(!page.body.contains("<script>"));
    assert!(!page.body.contains("style="));
    assert!(!page.body.contains("<style"));
    let handler = page.body.split(" on").skip(1).any(|rest| {
        let name: String = rest.chars().take_while(char::is_ascii_lowercase).collect();
        !name.is_empty() && rest[name.len()..].starts_with('=')
    });
    assert!(!handler, "no event-handler attributes");
    board.runner.close().await;
}

#[tokio::test]
async fn a_cross_site_post_is_refused_and_changes_nothing() {
    let board = Board::new().await;
    let live = board.submit("ann", &["hold:a", "b"]).await;
    let same = format!("http://{HOST}");
    let refused: &[&[(&str, &str)]] = &[
        &[],
        &[("origin", "http://evil.test")],
        &[("origin", "null")],
        &[("origin", "http://board.test.evil.test")],
        &[("origin", &same), ("sec-fetch-site", "cross-site")],
        &[("sec-fetch-site", "same-site")],
    ];
    for path in [
        format!("/jobs/{live}/cancel"),
        format!("/jobs/api/jobs/{live}/cancel"),
    ] {
        for headers in refused {
            let reply = board
                .send(request("POST", Some("ann"), &path, headers))
                .await;
            assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path} {headers:?}");
        }
    }
    let job = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{live}"))
        .await
        .json();
    assert!(
        job["status"] == "running" || job["status"] == "queued",
        "still live after refused cancels: {job}"
    );
    // The browser's own same-origin POST goes through.
    let ok = board
        .send(request(
            "POST",
            Some("ann"),
            &format!("/jobs/{live}/cancel"),
            &[("sec-fetch-site", "same-origin")],
        ))
        .await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER);
    assert_eq!(board.wait("ann", live).await, JobStatus::Cancelled);

    // A refused resubmit makes no job.
    let failed = board.submit("ann", &["fail:x"]).await;
    board.wait("ann", failed).await;
    let reply = board
        .send(request(
            "POST",
            Some("ann"),
            &format!("/jobs/api/jobs/{failed}/resubmit"),
            &[("origin", "https://evil.test")],
        ))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let jobs = board.get(Some("ann"), "/jobs/api/jobs").await.json();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 2);
    board.release(1);
    board.runner.close().await;
}

#[tokio::test]
async fn a_get_never_changes_anything() {
    let board = Board::new().await;
    let live = board.submit("ann", &["hold:a"]).await;
    for path in [
        format!("/jobs/{live}/cancel"),
        format!("/jobs/api/jobs/{live}/cancel"),
        format!("/jobs/api/jobs/{live}/resubmit"),
    ] {
        let reply = board.get(Some("ann"), &path).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
    }
    let job = board
        .get(Some("ann"), &format!("/jobs/api/jobs/{live}"))
        .await
        .json();
    assert!(
        job["status"] == "running" || job["status"] == "queued",
        "{job}"
    );
    board.release(1);
    board.runner.close().await;
}

#[tokio::test]
async fn nothing_in_the_url_decides_the_caller() {
    let board = Board::new().await;
    let bobs = board.submit("bob", &["b"]).await;
    board.wait("bob", bobs).await;
    for path in [
        "/jobs/?caller=bob&x-user=bob&user=bob".to_owned(),
        "/jobs/api/jobs?caller=bob".to_owned(),
        format!("/jobs/{bobs}?caller=bob&as=bob"),
        format!("/jobs/api/jobs/{bobs}?x-user=bob"),
    ] {
        let reply = board.get(Some("ann"), &path).await;
        assert!(
            !reply.body.contains(&format!("data-job-id=\"{bobs}\""))
                && !reply.body.contains("\"caller\":\"bob\""),
            "{path}: {}",
            reply.body
        );
    }
    let none = board.get(None, "/jobs/?x-user=bob").await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    board.runner.close().await;
}
