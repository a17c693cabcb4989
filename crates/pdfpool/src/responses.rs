//! Feature `axum`: what a web service answers for a request the pool or the layer did not
//! serve, as axum's `IntoResponse` (from `axum-core`, which axum re-exports).
//!
//! The mapping, one place for the pool and the layer: a busy pool and a refused request are
//! `503 Service Unavailable` with `Retry-After` in whole seconds (`retry_after_secs`, rounded
//! up, at least 1); a closed pool is `503` without one (it will not reopen); a busy caller is
//! `429 Too Many Requests`; a panicked job is `500`, its message left out of the body (the
//! pool has logged it). Every body is a short line of text.

use axum_core::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::RETRY_AFTER;

use crate::error::Error;

/// The status, the `Retry-After` seconds if any, and the body of `error`.
fn parts(error: &Error) -> (StatusCode, Option<u64>, String) {
    match error {
        Error::Busy { .. } => (
            StatusCode::SERVICE_UNAVAILABLE,
            error.retry_after_secs(),
            error.to_string(),
        ),
        Error::CallerBusy => (StatusCode::TOO_MANY_REQUESTS, None, error.to_string()),
        Error::Panicked(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            "the job failed".to_owned(),
        ),
        Error::Closed => (StatusCode::SERVICE_UNAVAILABLE, None, error.to_string()),
    }
}

fn response(status: StatusCode, retry_after_secs: Option<u64>, body: String) -> Response {
    match retry_after_secs {
        Some(secs) => (status, [(RETRY_AFTER, secs.to_string())], body).into_response(),
        None => (status, body).into_response(),
    }
}

/// Feature `axum`: the answer to a request the pool did not serve.
///
/// | Error | Status | `Retry-After` | Body |
/// | --- | --- | --- | --- |
/// | [`Error::Busy`] (either cause) | 503 | [`retry_after_secs`](Error::retry_after_secs) | the error's text |
/// | [`Error::CallerBusy`] | 429 | none | the error's text |
/// | [`Error::Panicked`] | 500 | none | `the job failed` (the panic's message stays in the log) |
/// | [`Error::Closed`] | 503 | none | the error's text |
///
/// The body is `text/plain`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use axum::http::{StatusCode, header};
/// use axum::response::IntoResponse;
/// use lockgate_pdfpool::{BusyCause, Error};
///
/// let busy = Error::Busy { cause: BusyCause::QueueFull, retry_after: Duration::from_millis(2_500) };
/// let response = busy.into_response();
/// assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(response.headers()[header::RETRY_AFTER], "3");
/// assert_eq!(Error::CallerBusy.into_response().status(), StatusCode::TOO_MANY_REQUESTS);
/// ```
///
/// A handler returns the pool's error as it is:
///
/// ```
/// use std::time::Duration;
///
/// use axum::extract::State;
///
/// type Extractor = lockgate_pdfpool::Pool<String, String, String>;
///
/// async fn extract(State(pool): State<Extractor>) -> Result<String, lockgate_pdfpool::Error> {
///     pool.run("a.pdf".into(), "alice".into(), || async { "text of a.pdf".to_owned() }).await
/// }
///
/// let app: axum::Router = axum::Router::new()
///     .route("/", axum::routing::get(extract))
///     .with_state(Extractor::new(2, 4, Duration::from_secs(10)));
/// # drop(app);
/// ```
impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, retry_after_secs, body) = parts(&self);
        response(status, retry_after_secs, body)
    }
}

/// Features `axum` and `tower`: `503 Service Unavailable`, `Retry-After:`
/// [`retry_after_secs`](crate::Rejected::retry_after_secs), and the rejection's text as a
/// `text/plain` body, for either cause.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
///
/// use axum::http::{StatusCode, header};
/// use axum::response::IntoResponse;
/// use lockgate_pdfpool::{AdmissionError, AdmissionLayer};
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let layer = AdmissionLayer::new(1, 0, Duration::from_secs(5));
/// let service = layer.layer(service_fn(|()| async {
///     std::future::pending::<Result<(), std::convert::Infallible>>().await
/// }));
/// let _inside = tokio::spawn(service.clone().oneshot(()));
/// tokio::task::yield_now().await;
/// let Err(AdmissionError::Rejected(rejected)) = service.oneshot(()).await else {
///     panic!("a rejection");
/// };
/// let response = rejected.into_response();
/// assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(response.headers()[header::RETRY_AFTER], "5");
/// # }
/// ```
#[cfg(feature = "tower")]
impl IntoResponse for crate::Rejected {
    fn into_response(self) -> Response {
        response(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(self.retry_after_secs()),
            self.to_string(),
        )
    }
}

/// Features `axum` and `tower`: a rejection as [`Rejected`](crate::Rejected) answers, an
/// error of the inner service as it answers itself. With axum's `HandleErrorLayer`, a
/// handler `|error: AdmissionError<Infallible>| async move { error }` is the whole mapping.
#[cfg(feature = "tower")]
impl<E: IntoResponse> IntoResponse for crate::AdmissionError<E> {
    fn into_response(self) -> Response {
        match self {
            Self::Rejected(rejected) => rejected.into_response(),
            Self::Service(error) => error.into_response(),
        }
    }
}
