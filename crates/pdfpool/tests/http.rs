//! The axum example's server on a loopback port, driven by a real HTTP client: exact counts of
//! 200 and 503, and a `Retry-After` on every 503. No sleeps: the handlers wait until the test
//! releases them, and refusals are the only answers that can come back before that.

#[path = "../examples/admission.rs"]
#[allow(dead_code)] // the example's `main` is not used here
mod example;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use lockgate_pdfpool::AdmissionLayer;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinSet;

/// TSan reports a known false positive in tokio's I/O driver (tokio issue #7299; see
/// docs/gate.md), so the sanitizer run skips the tests that open sockets.
fn skip_under_tsan() -> bool {
    let tsan = std::env::var_os("TSAN_OPTIONS").is_some();
    if tsan {
        println!("SKIPPED: http: loopback I/O under ThreadSanitizer (tokio issue #7299)");
    }
    tsan
}

type Answer = (StatusCode, Option<String>, String);

/// A running example server whose handlers wait for `release`.
struct Server {
    uri: Uri,
    release: Arc<Semaphore>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(admission: AdmissionLayer) -> Server {
    let release = Arc::new(Semaphore::new(0));
    let work = {
        let release = Arc::clone(&release);
        move || {
            let release = Arc::clone(&release);
            async move {
                release.acquire().await.expect("never closed").forget();
                "extracted".to_owned()
            }
        }
    };
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let uri = format!("http://{}/extract", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(example::serve(
        listener,
        example::app(admission, work),
        stopped,
    ));
    Server {
        uri,
        release,
        stop,
        task,
    }
}

/// Sends `n` requests at once, each on its own connection.
fn send_all(server: &Server, n: usize) -> JoinSet<Answer> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut answers = JoinSet::new();
    for _ in 0..n {
        let (client, uri) = (client.clone(), server.uri.clone());
        answers.spawn(async move { example::get_once(&client, uri).await });
    }
    answers
}

async fn next(answers: &mut JoinSet<Answer>) -> Answer {
    answers
        .join_next()
        .await
        .expect("an answer left")
        .expect("request task")
}

async fn stop(server: Server) {
    server.stop.send(()).ok();
    server.task.await.expect("server task");
}

#[tokio::test]
async fn concurrent_requests_get_exactly_slots_plus_queue_200s_and_503s_with_retry_after() {
    if skip_under_tsan() {
        return;
    }
    const SLOTS: usize = 2;
    const QUEUE: usize = 3;
    const REQUESTS: usize = 12;
    let admission = AdmissionLayer::new(SLOTS, QUEUE, Duration::from_secs(60));
    let server = start(admission.clone()).await;
    let mut answers = send_all(&server, REQUESTS);
    // Nothing is released yet, so the first answers can only be refusals, and a refusal means
    // every slot and queue place was taken: once all of them are in, the rest are inside.
    let mut ok = 0;
    let mut unavailable = 0;
    for _ in 0..REQUESTS - SLOTS - QUEUE {
        let (status, retry_after, _) = next(&mut answers).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            retry_after.as_deref(),
            Some("60"),
            "Retry-After on every 503"
        );
        unavailable += 1;
    }
    assert_eq!((admission.inside(), admission.queued()), (SLOTS, QUEUE));
    server.release.add_permits(SLOTS + QUEUE);
    while !answers.is_empty() {
        let (status, retry_after, body) = next(&mut answers).await;
        assert_eq!(
            (status, retry_after, body.as_str()),
            (StatusCode::OK, None, "extracted")
        );
        ok += 1;
    }
    assert_eq!((ok, unavailable), (SLOTS + QUEUE, REQUESTS - SLOTS - QUEUE));
    assert_eq!((admission.inside(), admission.queued()), (0, 0));
    stop(server).await;
}

#[tokio::test]
async fn a_request_that_waits_past_the_limit_gets_503_with_retry_after() {
    if skip_under_tsan() {
        return;
    }
    // One slot, one queue place, 200 ms: of three requests one goes in, one waits and expires
    // (the server's timer; the test only awaits answers), one is refused at once.
    let admission = AdmissionLayer::new(1, 1, Duration::from_millis(200));
    let server = start(admission.clone()).await;
    let mut answers = send_all(&server, 3);
    let mut causes = Vec::new();
    for _ in 0..2 {
        let (status, retry_after, body) = next(&mut answers).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry_after.as_deref(), Some("1"), "200 ms rounds up to 1 s");
        causes.push(body);
    }
    assert_eq!(
        causes,
        vec![
            "refused by admission control (queue full); retry after 200ms",
            "refused by admission control (waited past the limit); retry after 200ms",
        ]
    );
    assert_eq!((admission.inside(), admission.queued()), (1, 0));
    server.release.add_permits(1);
    let (status, _, body) = next(&mut answers).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "extracted"));
    stop(server).await;
}
