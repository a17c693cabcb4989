//! An axum service behind an [`AdmissionLayer`]: 2 requests inside at once, 3 more waiting
//! (first come, first served, 10 s at most), every other one refused at once with
//! `503 Service Unavailable` and a `Retry-After` header.
//!
//! `cargo run -p lockgate-pdfpool --features tower --example admission` starts the service on a
//! loopback port, sends it 8 requests at once with a real HTTP client, prints what each got,
//! and shuts the server down gracefully. `tests/http.rs` starts this same [`app`] the same way
//! and counts the answers exactly.

use std::convert::Infallible;
use std::future::Future;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::error_handling::HandleErrorLayer;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use lockgate_pdfpool::{AdmissionError, AdmissionLayer};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tower::ServiceBuilder;

/// The service: `GET /extract` answers with what `work` returns, behind `admission`.
pub fn app<W, Fut>(admission: AdmissionLayer, work: W) -> Router
where
    W: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    Router::new()
        .route("/extract", get(work))
        // HandleErrorLayer turns the layer's typed refusal into a response: axum's routes
        // only take services that cannot fail.
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(refusal))
                .layer(admission),
        )
}

/// What a refused request gets: 503 and when to come back.
async fn refusal(error: AdmissionError<Infallible>) -> Response {
    match error {
        AdmissionError::Rejected(rejected) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, rejected.retry_after_secs().to_string())],
            rejected.to_string(),
        )
            .into_response(),
        AdmissionError::Service(never) => match never {},
        // A later version may add causes; they are still the server's fault.
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Serves `app` on `listener` until `stop` fires, then finishes the requests in flight.
pub async fn serve(listener: TcpListener, app: Router, stop: oneshot::Receiver<()>) {
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            stop.await.ok();
        })
        .await
        .expect("the server runs until told to stop");
}

/// One request's answer: status, `Retry-After` if any, body.
pub async fn get_once(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
    uri: axum::http::Uri,
) -> (StatusCode, Option<String>, String) {
    let response = client.get(uri).await.expect("the server answers");
    let status = response.status();
    let retry_after = response
        .headers()
        .get(header::RETRY_AFTER)
        .map(|value| value.to_str().expect("ASCII").to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the body arrives")
        .to_bytes();
    (
        status,
        retry_after,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let admission = AdmissionLayer::new(2, 3, Duration::from_secs(10));
    // Stands in for an extraction: 300 ms of work.
    let work = || async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        "extracted".to_owned()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let uri: axum::http::Uri = format!("http://{}/extract", listener.local_addr()?)
        .parse()
        .expect("a valid URI");
    let (stop, stopped) = oneshot::channel();
    let server = tokio::spawn(serve(listener, app(admission.clone(), work), stopped));

    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let start = Instant::now();
    let mut requests = JoinSet::new();
    for n in 1..=8 {
        let (client, uri) = (client.clone(), uri.clone());
        requests.spawn(async move { (n, get_once(&client, uri).await) });
    }
    // Refusals come back at once, the 2 inside after 300 ms, the 3 queued behind them later.
    while let Some(answer) = requests.join_next().await {
        let (n, (status, retry_after, body)) = answer.expect("request task");
        let retry = retry_after.map_or(String::new(), |secs| format!(" Retry-After: {secs}"));
        println!(
            "{:>4} ms  request {n}: {status}{retry}  {body}",
            start.elapsed().as_millis()
        );
    }
    println!(
        "inside {} queued {}; stopping the server",
        admission.inside(),
        admission.queued()
    );
    stop.send(()).ok();
    server.await.expect("server task");
    Ok(())
}
