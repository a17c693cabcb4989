//! The API's JSON shapes (see the module docs, "JSON"): ids as numbers, times as RFC 3339
//! strings in UTC, targets and outputs as JSON values, counts on every job. Private types,
//! so the crate's own serde output can change without changing the API.

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

/// `time` as RFC 3339 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`); a time before
/// 1970 as the epoch.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_688_000 + 3_723); // 2026-12-08
        assert_eq!(rfc3339(t), "2026-12-08T01:02:03.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000Z"
        );
    }
}
