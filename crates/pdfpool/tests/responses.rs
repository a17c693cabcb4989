//! Feature `axum`: what `Error`, `Rejected` and `AdmissionError` answer as axum responses:
//! status, `Retry-After`, and a short text body, read back without a server.

use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use lockgate_pdfpool::{BusyCause, Error};

/// Status, `Retry-After` if any, content type, body.
async fn read(response: Response) -> (StatusCode, Option<String>, String, String) {
    let status = response.status();
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|value: &axum::http::HeaderValue| value.to_str().unwrap().to_owned())
    };
    let retry_after = header(header::RETRY_AFTER);
    let content_type = header(header::CONTENT_TYPE).unwrap_or_default();
    let body: Body = response.into_body();
    let body = body.collect().await.unwrap().to_bytes();
    (
        status,
        retry_after,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

const TEXT: &str = "text/plain; charset=utf-8";

#[tokio::test]
async fn each_error_answers_with_its_status_retry_after_and_a_short_body() {
    let busy = |cause, millis| Error::Busy {
        cause,
        retry_after: Duration::from_millis(millis),
    };
    assert_eq!(
        read(busy(BusyCause::QueueFull, 2_500).into_response()).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("3".into()),
            TEXT.into(),
            "the pool is busy (queue full); retry later".into()
        ),
        "2.5 s rounds up to 3"
    );
    assert_eq!(
        read(busy(BusyCause::WaitExpired, 10_000).into_response()).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("10".into()),
            TEXT.into(),
            "the pool is busy (waited past the limit); retry later".into()
        )
    );
    assert_eq!(
        read(busy(BusyCause::QueueFull, 0).into_response()).await.1,
        Some("1".into()),
        "never 0, which would mean at once"
    );
    assert_eq!(
        read(Error::CallerBusy.into_response()).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            None,
            TEXT.into(),
            "this caller already has a job in flight for another key".into()
        )
    );
    assert_eq!(
        read(Error::Closed.into_response()).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            TEXT.into(),
            "the pool is closed".into()
        )
    );
}

#[tokio::test]
async fn a_panicked_job_answers_500_without_its_message() {
    let pool: lockgate_pdfpool::Pool<u8, u8, u8> =
        lockgate_pdfpool::Pool::new(1, 0, Duration::from_secs(5));
    let panicked = pool
        .run(1, 1, || async { panic!("secret internals") })
        .await
        .unwrap_err();
    assert!(matches!(panicked, Error::Panicked(_)));
    assert_eq!(
        read(panicked.into_response()).await,
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
            TEXT.into(),
            "the job failed".into()
        )
    );
}

#[cfg(feature = "tower")]
mod layer {
    use std::convert::Infallible;

    use lockgate_pdfpool::{AdmissionError, AdmissionLayer, Rejected};
    use tower::{Layer, ServiceExt, service_fn};

    use super::*;

    /// The rejection of a layer of `wait` with its only slot taken and no queue.
    async fn rejected(wait: Duration) -> Rejected {
        let layer = AdmissionLayer::new(1, 0, wait);
        let service = layer.layer(service_fn(|()| {
            std::future::pending::<Result<(), Infallible>>()
        }));
        let _inside = tokio::spawn(service.clone().oneshot(()));
        tokio::task::yield_now().await;
        match service.oneshot(()).await {
            Err(AdmissionError::Rejected(rejected)) => rejected,
            _ => panic!("expected a rejection"),
        }
    }

    #[tokio::test]
    async fn a_rejection_answers_503_with_retry_after_and_its_text() {
        let rejected = rejected(Duration::from_millis(2_500)).await;
        assert_eq!(rejected.cause(), BusyCause::QueueFull);
        assert_eq!(
            read(rejected.into_response()).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Some("3".into()),
                TEXT.into(),
                rejected.to_string()
            )
        );
        assert_eq!(
            read(AdmissionError::<Infallible>::Rejected(rejected).into_response()).await,
            read(rejected.into_response()).await,
            "an AdmissionError answers as its rejection"
        );
    }

    #[tokio::test]
    async fn an_error_of_the_inner_service_answers_as_itself() {
        let error = AdmissionError::Service((StatusCode::BAD_GATEWAY, "upstream down"));
        assert_eq!(
            read(error.into_response()).await,
            (
                StatusCode::BAD_GATEWAY,
                None,
                TEXT.into(),
                "upstream down".into()
            )
        );
    }
}
