//! [`Error`]: every way a dashboard request fails, each with its one status code, rendered as
//! an HTML page on the board's routes ([`Html`]) and as `{"error": "…"}` on the API's
//! ([`Api`]).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{InvalidJob, StatusError, StoreError, SubmitError};

/// Why a dashboard request failed; [`status`](Self::status) is its HTTP status code.
///
/// # Examples
///
/// ```
/// use axum::http::StatusCode;
/// use lockgate_batch::dashboard::Error;
///
/// assert_eq!(Error::NotFound.status(), StatusCode::NOT_FOUND);
/// assert_eq!(Error::NotFound.to_string(), "no such job");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `401`: the `who` function named no caller. The body is empty.
    #[error("unauthorized")]
    Unauthorized,
    /// `404`: no job of that id that the caller may see (unknown, evicted or another
    /// caller's: the same answer).
    #[error("no such job")]
    NotFound,
    /// `400`: a malformed id, cursor, filter or limit.
    #[error("{0}")]
    BadRequest(String),
    /// `403`: a `POST` without a same-origin `Origin` or `Sec-Fetch-Site`.
    #[error("cross-site request refused: a POST needs a same-origin Origin or Sec-Fetch-Site")]
    CrossSite,
    /// `409`: the action does not apply to the job as it is.
    #[error("{0}")]
    Conflict(String),
    /// `503`: the runner is closed or full, or too many event streams are open.
    #[error("{0}")]
    Unavailable(String),
    /// `500`: the store failed, or holds a target that no longer deserializes.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::CrossSite => StatusCode::FORBIDDEN,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        Self::Internal(format!("store failed: {error}"))
    }
}

impl From<StatusError> for Error {
    fn from(error: StatusError) -> Self {
        match error {
            StatusError::NotFound => Self::NotFound,
            StatusError::Closed => Self::Unavailable("the runner is closed".into()),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<SubmitError> for Error {
    fn from(error: SubmitError) -> Self {
        match error {
            SubmitError::CallerBusy { .. } => Self::Conflict(error.to_string()),
            SubmitError::Full | SubmitError::Closed => Self::Unavailable(error.to_string()),
            SubmitError::Invalid(InvalidJob::Empty) => {
                Self::Conflict("the job has no failed target".into())
            }
            other => Self::Internal(other.to_string()),
        }
    }
}

/// An [`Error`] answered as an HTML page (the board's routes).
#[derive(Debug)]
pub(crate) struct Html(pub(crate) Error);

/// An [`Error`] answered as JSON `{"error": "…"}` (the API's routes).
#[derive(Debug)]
pub(crate) struct Api(pub(crate) Error);

/// `?` on any error that converts into [`Error`], in either flavour.
macro_rules! flavours {
    ($($from:ty),*) => {$(
        impl From<$from> for Html {
            fn from(error: $from) -> Self {
                Self(error.into())
            }
        }
        impl From<$from> for Api {
            fn from(error: $from) -> Self {
                Self(error.into())
            }
        }
    )*};
}

flavours!(Error, StoreError, StatusError, SubmitError);

impl IntoResponse for Html {
    fn into_response(self) -> Response {
        let status = self.0.status();
        if let Error::Unauthorized = self.0 {
            return status.into_response();
        }
        let body = super::html::error_page(status, &self.0.to_string());
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        response
    }
}

impl IntoResponse for Api {
    fn into_response(self) -> Response {
        let status = self.0.status();
        if let Error::Unauthorized = self.0 {
            return status.into_response();
        }
        let body =
            super::api::inert(&serde_json::json!({ "error": self.0.to_string() }).to_string());
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
