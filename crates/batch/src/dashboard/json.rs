//! The API's JSON shapes (see the module docs, "JSON"): ids as numbers, times as RFC 3339
//! strings in UTC (written as the crate's serde output writes them), targets and outputs as
//! JSON values, counts on every job. Private types, beside the crate's own `Serialize`
//! impls: the API adds what a board shows (`caller`, `key`, `finished`, `output_bytes`), and
//! its shape stays put if the crate's serde output changes.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::job::{Counts, JobStatus, TargetState};
use crate::page::{IndexedTarget, JobListing, JobsPage, TargetKind, TargetsPage};
use crate::summary::Progress;

/// A job as the API shows it.
#[derive(Debug, Serialize)]
pub(crate) struct JobJson {
    pub(crate) id: u64,
    pub(crate) caller: String,
    pub(crate) key: Option<String>,
    pub(crate) status: JobStatus,
    pub(crate) counts: Counts,
    pub(crate) created: String,
    pub(crate) updated: String,
    pub(crate) finished: Option<String>,
}

impl From<&JobListing> for JobJson {
    fn from(listing: &JobListing) -> Self {
        let summary = &listing.summary;
        Self {
            id: summary.id.get(),
            caller: listing.caller.as_str().to_owned(),
            key: listing.key.clone(),
            status: summary.status,
            counts: summary.counts,
            created: rfc3339(summary.created),
            updated: rfc3339(summary.updated),
            finished: (!summary.status.is_live()).then(|| rfc3339(summary.updated)),
        }
    }
}

/// A page of jobs.
#[derive(Debug, Serialize)]
pub(crate) struct JobsPageJson {
    jobs: Vec<JobJson>,
    next: Option<u64>,
}

impl From<&JobsPage> for JobsPageJson {
    fn from(page: &JobsPage) -> Self {
        Self {
            jobs: page.jobs.iter().map(JobJson::from).collect(),
            next: page.next.map(|id| id.get()),
        }
    }
}

/// One target.
#[derive(Debug, Serialize)]
pub(crate) struct TargetJson {
    index: usize,
    state: TargetKind,
    target: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

impl From<&IndexedTarget> for TargetJson {
    fn from(row: &IndexedTarget) -> Self {
        let mut out = Self {
            index: row.index,
            state: row.entry.state.kind(),
            target: value(&row.entry.target_json),
            output: None,
            output_bytes: None,
            error: None,
            hint: None,
        };
        match &row.entry.state {
            TargetState::Done { output_json } => {
                out.output = Some(value(output_json));
                out.output_bytes = Some(output_json.len());
            }
            TargetState::Failed { error, hint } => {
                out.error = Some(error.clone());
                out.hint = hint.clone();
            }
            _ => {}
        }
        out
    }
}

/// A page of one job's targets.
#[derive(Debug, Serialize)]
pub(crate) struct TargetsPageJson {
    job: JobJson,
    targets: Vec<TargetJson>,
    next: Option<usize>,
}

impl From<&TargetsPage> for TargetsPageJson {
    fn from(page: &TargetsPage) -> Self {
        Self {
            job: JobJson::from(&page.job),
            targets: page.targets.iter().map(TargetJson::from).collect(),
            next: page.next,
        }
    }
}

/// The data of one event of a stream.
#[derive(Debug, Serialize)]
pub(crate) struct EventJson {
    id: u64,
    status: JobStatus,
    counts: Counts,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<EventTarget>,
}

#[derive(Debug, Serialize)]
struct EventTarget {
    index: usize,
    state: TargetKind,
}

impl EventJson {
    pub(crate) fn new(id: u64, progress: &Progress) -> Self {
        Self {
            id,
            status: progress.status,
            counts: progress.counts,
            target: progress.last.map(|(index, outcome)| EventTarget {
                index,
                state: match outcome {
                    crate::hooks::TargetOutcome::Done => TargetKind::Done,
                    _ => TargetKind::Failed,
                },
            }),
        }
    }
}

/// Stored JSON as a value; text that is not JSON (a store's damage) as a string.
fn value(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
}

/// `time` as the crate's serde output writes it (RFC 3339 in UTC, see `crate::rfc3339`); a
/// time out of its range (before 1970, after 9999) as the epoch.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    crate::rfc3339::format(time)
        .or_else(|_| crate::rfc3339::format(UNIX_EPOCH))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.123000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000000Z",
            "out of range: the epoch, not a panic"
        );
    }
}
