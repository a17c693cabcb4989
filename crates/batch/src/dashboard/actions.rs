//! The two actions, each as an HTML form's target (answering `303`) and as an API call
//! (answering JSON): cancel a job, resubmit an ended job's failed targets as a new job.
//!
//! # Rules
//!
//! 1. **Same origin.** Every `POST` whose caller `who` admitted passes [`same_origin`]
//!    before anything is read or changed: `Sec-Fetch-Site: same-origin`, or (without `Sec-Fetch-Site`) an `Origin` whose
//!    `host[:port]` is the request's `Host`. Anything else — another site, `null`, neither
//!    header — is [`Error::CrossSite`] (`403`). No token: browsers send these headers on
//!    every `POST`, and a cross-site page cannot forge them.
//! 2. **Scope.** An action reaches only a job the viewer's scope covers, and acts as the
//!    job's own caller (an admin cancels another caller's job as that caller).
//! 3. **Resubmit once.** The new job is submitted with the key `resubmit:{id}` under the
//!    job's caller, so a repeat (a second click, a retried request) answers the job the first
//!    made instead of making another.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Board;
use super::api::json;
use super::error::{Api, Error, Html};
use super::json::JobJson;
use super::query;
use crate::job::JobId;
use crate::page::{MAX_PAGE, TargetKind, TargetsQuery};

/// Refuses a request that is not provably from the board's own origin (rule 1).
pub(crate) fn same_origin(parts: &Parts) -> Result<(), Error> {
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site") {
        return if site.eq_ignore_ascii_case("same-origin") {
            Ok(())
        } else {
            Err(Error::CrossSite)
        };
    }
    let (Some(origin), Some(host)) = (header("origin"), header("host")) else {
        return Err(Error::CrossSite);
    };
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or(Error::CrossSite)?;
    if authority.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(Error::CrossSite)
    }
}

/// A `303 See Other` to `location` (relative to the action's URL).
fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

impl<T, O> Board<T, O>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    /// Cancels job `raw`; whether it was live, and the job after it.
    async fn cancel(&self, parts: &Parts, raw: &str) -> Result<(bool, JobJson), Error> {
        let viewer = self.viewer(parts)?;
        same_origin(parts)?;
        let id = query::job_id(raw)?;
        let listing = self.listing(&viewer, id).await?;
        let cancelled = self.runner.cancel(&listing.caller, id).await?;
        let after = self.listing(&viewer, id).await?;
        Ok((cancelled, JobJson::from(&after)))
    }

    /// Resubmits job `raw`'s failed targets as a new job, once; the new job's id.
    async fn resubmit(&self, parts: &Parts, raw: &str) -> Result<JobId, Error> {
        let viewer = self.viewer(parts)?;
        same_origin(parts)?;
        let id = query::job_id(raw)?;
        let listing = self.listing(&viewer, id).await?;
        let summary = &listing.summary;
        if summary.status.is_live() {
            return Err(Error::Conflict("the job is still running".into()));
        }
        if summary.counts.failed == 0 {
            return Err(Error::Conflict("the job has no failed target".into()));
        }
        let mut targets: Vec<T> = Vec::with_capacity(summary.counts.failed);
        let mut query = TargetsQuery::new()
            .state(TargetKind::Failed)
            .limit(MAX_PAGE);
        loop {
            let page = self.runner.targets_page(&viewer.scope, id, &query).await?;
            for row in &page.targets {
                let target = row.entry.target::<T>().map_err(|error| {
                    Error::Internal(format!(
                        "target {} does not deserialize: {error}",
                        row.index
                    ))
                })?;
                targets.push(target);
            }
            match page.next {
                Some(next) => query = query.after(next),
                None => break,
            }
        }
        let key = format!("resubmit:{id}");
        Ok(self
            .runner
            .submit_keyed(&listing.caller, &key, &targets)
            .await?)
    }
}

/// `POST {base}/{id}/cancel`: cancels, then `303` to the job's page.
pub(crate) async fn cancel_form<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Html>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let (_, job) = board.cancel(&parts, &raw).await?;
    Ok(see_other(&format!("../{}", job.id)))
}

/// `POST {base}/api/jobs/{id}/cancel`: cancels; the job after it, or `409` if it had ended.
pub(crate) async fn cancel_api<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    match board.cancel(&parts, &raw).await? {
        (true, job) => json(&job),
        (false, _) => Err(Error::Conflict("the job has ended".into()).into()),
    }
}

/// `POST {base}/{id}/resubmit`: resubmits once, then `303` to the new job's page.
pub(crate) async fn resubmit_form<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Html>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let new = board.resubmit(&parts, &raw).await?;
    Ok(see_other(&format!("../{new}")))
}

/// `POST {base}/api/jobs/{id}/resubmit`: resubmits once; `{"id": new}`, the same each time.
pub(crate) async fn resubmit_api<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let new = board.resubmit(&parts, &raw).await?;
    json(&serde_json::json!({ "id": new.get() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::post("/1/cancel");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn an_origin_must_name_the_host_and_port() {
        let host = ("host", "board.test:8080");
        assert!(same_origin(&parts(&[host, ("origin", "http://board.test:8080")])).is_ok());
        assert!(same_origin(&parts(&[host, ("origin", "https://BOARD.test:8080")])).is_ok());
        for origin in [
            "http://board.test",
            "http://board.test:8081",
            "http://evil.test",
            "null",
            "board.test:8080",
            "ftp://board.test:8080",
        ] {
            assert!(
                same_origin(&parts(&[host, ("origin", origin)])).is_err(),
                "{origin}"
            );
        }
        assert!(same_origin(&parts(&[("origin", "http://board.test:8080")])).is_err());
    }

    #[test]
    fn sec_fetch_site_decides_when_present() {
        assert!(same_origin(&parts(&[("sec-fetch-site", "same-origin")])).is_ok());
        for site in ["same-site", "cross-site", "none"] {
            let with_origin = parts(&[
                ("sec-fetch-site", site),
                ("host", "board.test"),
                ("origin", "http://board.test"),
            ]);
            assert!(same_origin(&with_origin).is_err(), "{site}");
        }
        assert!(same_origin(&parts(&[])).is_err());
    }
}
