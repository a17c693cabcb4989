//! The JSON API's reads: `GET {base}/api/jobs`, `GET {base}/api/jobs/{id}` and
//! `GET {base}/api/jobs/{id}/targets`, in the shapes of [`super::json`]; the same queries and
//! the same answers (status codes, scope) as the pages they stand beside.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Board;
use super::error::{Api, Error};
use super::html::with_type;
use super::json::{JobJson, JobsPageJson, TargetsPageJson};
use super::query;

/// `value` as a `200` JSON response.
pub(crate) fn json(value: &impl Serialize) -> Result<Response, Api> {
    let body = serde_json::to_string(value).map_err(|error| Error::Internal(error.to_string()))?;
    Ok(with_type(inert(&body).into_response(), "application/json"))
}

/// JSON text with `<`, `>` and `&` written as `\u` escapes (they occur only inside
/// strings): the same value, and inert even where a client sniffs it as HTML.
pub(crate) fn inert(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// `GET {base}/api/jobs`: a page of jobs.
pub(crate) async fn jobs<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let query = query::jobs(parts.uri.query())?;
    let page = board.runner.jobs_page(&viewer.scope, &query).await?;
    json(&JobsPageJson::from(&page))
}

/// `GET {base}/api/jobs/{id}`: one job.
pub(crate) async fn job<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let id = query::job_id(&raw)?;
    let listing = board.listing(&viewer, id).await?;
    json(&JobJson::from(&listing))
}

/// `GET {base}/api/jobs/{id}/targets`: a page of one job's targets.
pub(crate) async fn targets<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let id = query::job_id(&raw)?;
    let query = query::targets(parts.uri.query())?;
    let page = board.runner.targets_page(&viewer.scope, id, &query).await?;
    json(&TargetsPageJson::from(&page))
}
