//! The board's style and script, compiled into the crate (`assets/board.css`,
//! `assets/board.js`) and served by the router itself: nothing comes from another host.
//!
//! Pages link them with `?v={crate version}`, so they are cached for a year
//! (`immutable`) and a new release is fetched anew.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("assets/board.css");
const JS: &str = include_str!("assets/board.js");

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    response
}

/// `GET {base}/assets/board.css`.
pub(crate) async fn css() -> Response {
    asset(CSS, "text/css; charset=utf-8")
}

/// `GET {base}/assets/board.js`.
pub(crate) async fn js() -> Response {
    asset(JS, "text/javascript; charset=utf-8")
}
