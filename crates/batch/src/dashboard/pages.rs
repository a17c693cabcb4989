//! The two HTML pages: the caller's jobs (`GET {base}/`) and one job (`GET {base}/{id}`).
//!
//! Both are complete without JavaScript; the board's script (`assets/board.js`) then opens
//! an event stream and rewrites the elements the DOM contract names in place (the `status`
//! cell, the `progress.bar`, a target row's `state` and `detail` cells).
//!
//! Each page costs one keyset page read from the store ([`Runner::jobs_page`] or
//! [`Runner::targets_page`]), whatever the number of jobs or targets.
//!
//! [`Runner::jobs_page`]: crate::Runner::jobs_page
//! [`Runner::targets_page`]: crate::Runner::targets_page

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{OriginalUri, Path, Request, State};
use axum::http::Uri;
use axum::http::request::Parts;
use axum::response::Response;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Board;
use super::error::Html;
use super::html::{Links, escape, page};
use super::json::rfc3339;
use super::query;
use crate::job::{Counts, JobStatus, TargetState};
use crate::page::{JobListing, TargetKind};

/// Every status, in the order the list's filter links show them.
const STATUSES: [JobStatus; 6] = JobStatus::ALL;

/// The URI the client asked for, before nesting stripped its prefix.
pub(crate) fn original_uri(parts: &Parts) -> Uri {
    parts
        .extensions
        .get::<OriginalUri>()
        .map_or_else(|| parts.uri.clone(), |original| original.0.clone())
}

/// `GET {base}/`: the caller's jobs, newest first.
pub(crate) async fn list<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    request: Request,
) -> Result<Response, Html>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let query = query::jobs(parts.uri.query())?;
    let jobs = board.runner.jobs_page(&viewer.scope, &query).await?;
    let links = Links::from_list(&original_uri(&parts));
    let dir = escape(&links.dir);

    let mut body = String::from("<header><h1>Jobs</h1></header>\n<nav class=\"filters\">");
    let current = |status: Option<JobStatus>| {
        if query.status == status {
            " aria-current=\"page\""
        } else {
            ""
        }
    };
    let _ = write!(
        body,
        "<a class=\"filter-all\" href=\"?\"{}>all</a>",
        current(None)
    );
    for status in STATUSES {
        let _ = write!(
            body,
            " <a class=\"filter\" data-status=\"{status}\" href=\"?status={status}\"{}>{status}</a>",
            current(Some(status))
        );
    }
    body.push_str("</nav>\n<table id=\"jobs\"><thead><tr><th>id</th>");
    if viewer.admin {
        body.push_str("<th>caller</th>");
    }
    body.push_str(
        "<th>key</th><th>status</th><th>done / failed / pending</th><th>progress</th>\
         <th>created</th><th>finished</th></tr></thead><tbody>\n",
    );
    for listing in &jobs.jobs {
        let summary = &listing.summary;
        let id = summary.id;
        let _ = write!(
            body,
            "<tr data-job-id=\"{id}\" data-live=\"{live}\"><td class=\"id\"><a href=\"{dir}{id}\">{id}</a></td>",
            live = summary.status.is_live(),
        );
        if viewer.admin {
            let _ = write!(
                body,
                "<td class=\"caller\">{}</td>",
                escape(listing.caller.as_str())
            );
        }
        let _ = writeln!(
            body,
            "<td class=\"key\">{key}</td><td class=\"status\">{status}</td>\
             <td class=\"counts\">{counts}</td><td>{bar}</td>\
             <td class=\"created\">{created}</td><td class=\"finished\">{finished}</td></tr>",
            key = escape(listing.key.as_deref().unwrap_or("")),
            status = summary.status,
            counts = counts(summary.counts),
            bar = bar(summary.counts),
            created = time(summary.created),
            finished = finished(listing),
        );
    }
    body.push_str("</tbody></table>\n");
    if jobs.jobs.is_empty() {
        body.push_str("<p class=\"empty\">No jobs.</p>\n");
    }
    if let Some(next) = jobs.next {
        let mut href = format!("?before={next}");
        if let Some(status) = query.status {
            let _ = write!(href, "&amp;status={status}");
        }
        if let Some(limit) = query.limit {
            let _ = write!(href, "&amp;limit={}", limit.min(crate::page::MAX_PAGE));
        }
        let _ = writeln!(
            body,
            "<nav class=\"pages\"><a rel=\"next\" href=\"{href}\">older jobs</a></nav>"
        );
    }
    Ok(page(&links, "Jobs", &body))
}

/// `GET {base}/{id}`: one job's summary, then a page of its targets.
pub(crate) async fn job<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Html>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let id = query::job_id(&raw)?;
    let query = query::targets(parts.uri.query())?;
    let targets = board.runner.targets_page(&viewer.scope, id, &query).await?;
    let links = Links::from_job(&original_uri(&parts));
    let listing = &targets.job;
    let summary = &listing.summary;
    let status = summary.status;

    let mut body = format!(
        "<p><a class=\"back\" href=\"{list}\">&larr; jobs</a></p>\n\
         <section id=\"summary\" data-job-id=\"{id}\" data-live=\"{live}\"><h1>Job {id}</h1><dl>\
         <dt>status</dt><dd><span class=\"status\">{status}</span></dd>\
         <dt>caller</dt><dd class=\"caller\">{caller}</dd>\
         <dt>key</dt><dd class=\"key\">{key}</dd>\
         <dt>targets</dt><dd class=\"counts\">{counts}</dd>\
         <dt>progress</dt><dd>{bar}</dd>\
         <dt>created</dt><dd class=\"created\">{created}</dd>\
         <dt>finished</dt><dd class=\"finished\">{finished}</dd></dl>\n<div class=\"actions\">",
        list = escape(&links.list),
        live = status.is_live(),
        caller = escape(listing.caller.as_str()),
        key = escape(listing.key.as_deref().unwrap_or("")),
        counts = counts(summary.counts),
        bar = bar(summary.counts),
        created = time(summary.created),
        finished = finished(listing),
    );
    if status.is_live() {
        let _ = write!(
            body,
            "<form class=\"cancel\" method=\"post\" action=\"{id}/cancel\">\
             <button type=\"submit\">Cancel</button></form>"
        );
    } else if summary.counts.failed > 0 {
        let _ = write!(
            body,
            "<form class=\"resubmit\" method=\"post\" action=\"{id}/resubmit\">\
             <button type=\"submit\">Resubmit the failed targets</button></form>"
        );
    }
    body.push_str("</div></section>\n<nav class=\"filters\">");
    let failed_only = query.state == Some(TargetKind::Failed);
    let _ = writeln!(
        body,
        "<a class=\"filter-all\" href=\"{id}\"{}>all targets</a> \
         <a id=\"filter-failed\" href=\"?state=failed\"{}>failed only</a></nav>",
        if query.state.is_none() {
            " aria-current=\"page\""
        } else {
            ""
        },
        if failed_only {
            " aria-current=\"page\""
        } else {
            ""
        },
    );
    body.push_str(
        "<table id=\"targets\"><thead><tr><th>#</th><th>target</th><th>state</th>\
         <th>output or error</th></tr></thead><tbody>\n",
    );
    for row in &targets.targets {
        let _ = writeln!(
            body,
            "<tr data-index=\"{index}\"><td class=\"index\">{index}</td>\
             <td class=\"target\">{target}</td><td class=\"state\">{state}</td>\
             <td class=\"detail\">{detail}</td></tr>",
            index = row.index,
            target = escape(&target_text(&row.entry.target_json)),
            state = kind_word(row.entry.state.kind()),
            detail = detail(&row.entry.state),
        );
    }
    body.push_str("</tbody></table>\n");
    if targets.targets.is_empty() {
        body.push_str("<p class=\"empty\">No targets here.</p>\n");
    }
    if let Some(next) = targets.next {
        let mut href = format!("?after={next}");
        if let Some(state) = query.state {
            let _ = write!(href, "&amp;state={}", kind_word(state));
        }
        if let Some(limit) = query.limit {
            let _ = write!(href, "&amp;limit={}", limit.min(crate::page::MAX_PAGE));
        }
        let _ = writeln!(
            body,
            "<nav class=\"pages\"><a rel=\"next\" href=\"{href}\">next targets</a></nav>"
        );
    }
    Ok(page(&links, &format!("Job {id}"), &body))
}

/// A target state as the pages and the query spell it.
fn kind_word(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Pending => "pending",
        TargetKind::Done => "done",
        _ => "failed",
    }
}

/// The counts cell: done / failed / pending, each in a span the script rewrites.
fn counts(counts: Counts) -> String {
    format!(
        "<span class=\"done\">{}</span> / <span class=\"failed\">{}</span> / \
         <span class=\"pending\">{}</span>",
        counts.done, counts.failed, counts.pending
    )
}

/// The progress bar: stored targets of all.
fn bar(counts: Counts) -> String {
    format!(
        "<progress class=\"bar\" value=\"{stored}\" max=\"{total}\">{stored}/{total}</progress>",
        stored = counts.stored(),
        total = counts.total()
    )
}

fn time(at: std::time::SystemTime) -> String {
    let text = rfc3339(at);
    format!("<time datetime=\"{text}\">{text}</time>")
}

fn finished(listing: &JobListing) -> String {
    if listing.summary.status.is_live() {
        String::new()
    } else {
        time(listing.summary.updated)
    }
}

/// A target as shown: a JSON string's text, any other JSON as it is stored.
fn target_text(json: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::String(text)) => text,
        _ => json.to_owned(),
    }
}

/// The detail cell: a done target's output size, a failed one's error (and hint).
fn detail(state: &TargetState) -> String {
    match state {
        TargetState::Done { output_json } => format!("{} bytes", output_json.len()),
        TargetState::Failed { error, hint } => {
            let mut text = format!("<span class=\"error\">{}</span>", escape(error));
            if let Some(hint) = hint {
                let _ = write!(text, " <span class=\"hint\">{}</span>", escape(hint));
            }
            text
        }
        _ => String::new(),
    }
}
