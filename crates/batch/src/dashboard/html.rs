//! Writing HTML by hand, safely: [`escape`] (the one escaping function every text and
//! attribute value goes through), the page frame, relative links, and the security headers
//! every response carries.
//!
//! # Rules
//!
//! 1. Every piece of text that did not come from this module's string literals (targets,
//!    outputs, errors, keys, callers, ids) goes through [`escape`], and attribute values are
//!    always double-quoted.
//! 2. No inline script, no `style` attribute, no event-handler attribute: the
//!    Content-Security-Policy ([`CSP`]) forbids them, and the pages need none.
//! 3. Links are relative (see [`Links`]), so the board works under any mount path.

use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// The policy on every response: nothing from anywhere but the board itself, no inline
/// script or style, no framing.
pub(crate) const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

/// `text` with `&`, `<`, `>`, `"` and `'` escaped: fit for element text and for a
/// double- or single-quoted attribute value.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Relative links from the page being served: to the board's directory (`{base}/`), to the
/// list, and back from an action to a job page.
#[derive(Debug, Clone)]
pub(crate) struct Links {
    /// Prefix from this page to `{base}/`: `""` from `{base}/` and `{base}/{id}`, `"jobs/"`
    /// from `/x/jobs`.
    pub(crate) dir: String,
    /// From a job page to the list: `"../jobs"` from `/x/jobs/7`, `"./"` at the root.
    pub(crate) list: String,
}

impl Links {
    /// Links from the list page at `uri` (the original URI, before any nesting stripped it).
    pub(crate) fn from_list(uri: &Uri) -> Self {
        let path = uri.path();
        let dir = match path.rsplit_once('/') {
            Some((_, "")) | None => String::new(),
            Some((_, last)) => format!("{last}/"),
        };
        Self {
            dir,
            list: "./".into(),
        }
    }

    /// Links from a job page at `uri`, `{base}/{id}`.
    pub(crate) fn from_job(uri: &Uri) -> Self {
        let base = uri.path().rsplit_once('/').map_or("", |(base, _)| base);
        let list = match base.rsplit_once('/') {
            Some((_, last)) if !last.is_empty() => format!("../{last}"),
            _ => "./".into(),
        };
        Self {
            dir: String::new(),
            list,
        }
    }
}

/// A whole page: `title` (escaped here) and `body` (HTML already escaped by its writer).
pub(crate) fn page(links: &Links, title: &str, body: &str) -> Response {
    let version = env!("CARGO_PKG_VERSION");
    let dir = escape(&links.dir);
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title>\
         <link rel=\"stylesheet\" href=\"{dir}assets/board.css?v={version}\">\
         <script src=\"{dir}assets/board.js?v={version}\" defer></script></head>\
         <body data-base=\"{dir}\">\n{body}\n</body></html>\n",
        title = escape(title),
    );
    with_type(html.into_response(), "text/html; charset=utf-8")
}

/// The body of an error page: its status and `message`, escaped.
pub(crate) fn error_page(status: StatusCode, message: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{code}</title>\
         </head><body><h1>{code}</h1><p class=\"error\">{message}</p></body></html>\n",
        code = escape(&status.to_string()),
        message = escape(message),
    )
}

/// `response` with its `Content-Type` set.
pub(crate) fn with_type(mut response: Response, content_type: &'static str) -> Response {
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Adds the security headers to every response, and `Cache-Control: no-store` to any that
/// set no cache policy of its own (the assets do).
pub(crate) async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("plain é"), "plain é");
    }

    #[test]
    fn links_are_relative_to_the_mount_path() {
        let list = |p: &str| Links::from_list(&p.parse().unwrap()).dir;
        assert_eq!(list("/jobs/"), "");
        assert_eq!(list("/x/jobs"), "jobs/");
        assert_eq!(list("/"), "");
        let job = |p: &str| Links::from_job(&p.parse().unwrap()).list;
        assert_eq!(job("/x/jobs/7"), "../jobs");
        assert_eq!(job("/7"), "./");
    }
}
