//! Pages of jobs and of one job's targets: what a board or an API shows a page at a time.
//!
//! # Rules
//!
//! 1. **Keyset, not offset.** A page starts after a key the previous page handed out
//!    ([`JobsPage::next`], [`TargetsPage::next`]), never at a row count, so reading page 1,000
//!    costs what reading page 1 does and a job submitted meanwhile never shifts a row onto two
//!    pages.
//! 2. **Jobs newest first** (by id, descending); **targets in submit order** (by index,
//!    ascending).
//! 3. **Bounded.** A query's `limit` is clamped to `1..=`[`MAX_PAGE`]: a caller asking for a
//!    million rows gets [`MAX_PAGE`].
//! 4. **Scoped.** A [`Scope::Caller`] sees only that caller's jobs; another caller's job id
//!    reads as unknown. Only [`Scope::Everyone`] (an operator's view) sees every caller's.
//! 5. **One snapshot per page.** A page and its `next` key come from one read.

use serde::{Deserialize, Serialize};

use crate::job::{Caller, JobId, JobStatus, TargetEntry};
use crate::summary::JobSummary;

/// The most rows one page holds, whatever its query's `limit` asks for.
pub const MAX_PAGE: usize = 500;

/// The rows a page holds when its query names no `limit`.
pub const DEFAULT_PAGE: usize = 50;

/// Whose jobs a read covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// One caller's jobs only.
    Caller(Caller),
    /// Every caller's jobs: an operator's view. Hand it only to a request your own
    /// authorization admitted as one.
    Everyone,
}

impl Scope {
    /// Whether this scope covers `caller`'s jobs.
    pub fn covers(&self, caller: &Caller) -> bool {
        match self {
            Self::Caller(own) => own == caller,
            Self::Everyone => true,
        }
    }
}

impl From<Caller> for Scope {
    fn from(caller: Caller) -> Self {
        Self::Caller(caller)
    }
}

/// Which jobs a page of jobs holds: a status filter and where the page starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct JobsQuery {
    /// Only jobs in this status; `None` for every status.
    pub status: Option<JobStatus>,
    /// Only jobs older than this one (a lower id): the previous page's [`JobsPage::next`].
    pub before: Option<JobId>,
    /// How many jobs at most; clamped to `1..=`[`MAX_PAGE`], [`DEFAULT_PAGE`] if `None`.
    pub limit: Option<usize>,
}

impl JobsQuery {
    /// The first page of every status, [`DEFAULT_PAGE`] jobs long.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only jobs in `status`.
    #[must_use]
    pub fn status(mut self, status: JobStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// The page after the one that handed out `next`.
    #[must_use]
    pub fn before(mut self, next: JobId) -> Self {
        self.before = Some(next);
        self
    }

    /// At most `limit` jobs (clamped to `1..=`[`MAX_PAGE`]).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The page length this query gets: its `limit`, clamped.
    pub fn page_len(&self) -> usize {
        clamp(self.limit)
    }
}

/// Which targets a page of one job's targets holds: a state filter and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TargetsQuery {
    /// Only targets in this state; `None` for every state.
    pub state: Option<TargetKind>,
    /// Only targets after this index: the previous page's [`TargetsPage::next`].
    pub after: Option<usize>,
    /// How many targets at most; clamped to `1..=`[`MAX_PAGE`], [`DEFAULT_PAGE`] if `None`.
    pub limit: Option<usize>,
}

impl TargetsQuery {
    /// The first page of every state, [`DEFAULT_PAGE`] targets long.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only targets in `state`.
    #[must_use]
    pub fn state(mut self, state: TargetKind) -> Self {
        self.state = Some(state);
        self
    }

    /// The page after the one that handed out `next`.
    #[must_use]
    pub fn after(mut self, next: usize) -> Self {
        self.after = Some(next);
        self
    }

    /// At most `limit` targets (clamped to `1..=`[`MAX_PAGE`]).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The page length this query gets: its `limit`, clamped.
    pub fn page_len(&self) -> usize {
        clamp(self.limit)
    }
}

fn clamp(limit: Option<usize>) -> usize {
    limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
}

/// A target's state without its output: what a targets page filters on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TargetKind {
    /// Not stored yet.
    Pending,
    /// Stored done.
    Done,
    /// Stored failed.
    Failed,
}

/// One row of a jobs page: the job's summary, whose it is, and its idempotency key.
///
/// Serialized (serde) as the summary's fields with `caller` and `key` beside them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct JobListing {
    /// Its status, counts and times.
    #[serde(flatten)]
    pub summary: JobSummary,
    /// Whose job it is.
    pub caller: Caller,
    /// The idempotency key it was submitted with, if any.
    pub key: Option<String>,
}

impl JobListing {
    /// A row, as a store builds it.
    pub fn new(summary: JobSummary, caller: Caller, key: Option<String>) -> Self {
        Self {
            summary,
            caller,
            key,
        }
    }
}

/// A page of jobs, newest first.
///
/// Serialized (serde) as `{"jobs": […], "next": 41}` (`next` is `null` on the last page).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct JobsPage {
    /// The jobs, newest (highest id) first.
    pub jobs: Vec<JobListing>,
    /// The key of the next (older) page, `None` if this is the last.
    pub next: Option<JobId>,
}

impl JobsPage {
    /// A page, as a store builds it.
    pub fn new(jobs: Vec<JobListing>, next: Option<JobId>) -> Self {
        Self { jobs, next }
    }
}

/// One target of a targets page: its index in the job and its entry.
///
/// Serialized (serde) as the entry's fields with `index` beside them:
/// `{"index": 3, "target": "x", "state": "done", "output": 1}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IndexedTarget {
    /// Its index in the job (submit order, from 0).
    pub index: usize,
    /// The target and its state.
    #[serde(flatten)]
    pub entry: TargetEntry,
}

impl IndexedTarget {
    /// A row, as a store builds it.
    pub fn new(index: usize, entry: TargetEntry) -> Self {
        Self { index, entry }
    }
}

/// A page of one job's targets, in submit order, with the job it belongs to.
///
/// Serialized (serde) as `{"job": {…}, "targets": […], "next": 49}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TargetsPage {
    /// The job, read in the same snapshot as the targets.
    pub job: JobListing,
    /// The targets, by index ascending.
    pub targets: Vec<IndexedTarget>,
    /// The key of the next page, `None` if this is the last.
    pub next: Option<usize>,
}

impl TargetsPage {
    /// A page, as a store builds it.
    pub fn new(job: JobListing, targets: Vec<IndexedTarget>, next: Option<usize>) -> Self {
        Self { job, targets, next }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_clamped_to_one_page() {
        assert_eq!(JobsQuery::new().page_len(), DEFAULT_PAGE);
        assert_eq!(JobsQuery::new().limit(1_000_000).page_len(), MAX_PAGE);
        assert_eq!(TargetsQuery::new().limit(0).page_len(), 1);
        assert_eq!(TargetsQuery::new().limit(7).page_len(), 7);
    }

    /// The JSON a browser client reads: ids and counts as numbers, times as RFC 3339 text,
    /// targets and outputs as the JSON values they are, the state's fields beside the target.
    #[test]
    fn pages_serialize_as_a_browser_client_wants() {
        use std::time::{Duration, UNIX_EPOCH};

        use serde_json::json;

        use crate::job::{Counts, TargetState};

        let at = |seconds| UNIX_EPOCH + Duration::from_secs(seconds);
        let summary = JobSummary::new(
            JobId::new(7),
            JobStatus::Partial,
            Counts::new(0, 1, 1),
            at(1_796_688_641),
            at(1_796_688_642),
        );
        let listing = JobListing::new(summary, Caller::new("ann"), Some("nightly".into()));
        let job_json = json!({
            "id": 7, "status": "partial", "counts": {"pending": 0, "done": 1, "failed": 1},
            "created": "2026-12-08T00:10:41.000000Z", "updated": "2026-12-08T00:10:42.000000Z",
            "caller": "ann", "key": "nightly",
        });
        let page = JobsPage::new(vec![listing.clone()], Some(JobId::new(7)));
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            json!({"jobs": [job_json], "next": 7})
        );
        let done = TargetEntry::new(
            r#"{"url":"https://a.example/<x>"}"#.into(),
            TargetState::Done {
                output_json: "[1,2]".into(),
            },
        );
        let failed = TargetEntry::new(
            "\"b\"".into(),
            TargetState::Failed {
                error: "<script>".into(),
                hint: None,
            },
        );
        let targets = vec![IndexedTarget::new(0, done), IndexedTarget::new(1, failed)];
        let page = TargetsPage::new(listing, targets, None);
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            json!({
                "job": job_json,
                "targets": [
                    {"index": 0, "target": {"url": "https://a.example/<x>"}, "state": "done",
                     "output": [1, 2]},
                    {"index": 1, "target": "b", "state": "failed", "error": "<script>",
                     "hint": null},
                ],
                "next": null,
            })
        );
    }

    #[test]
    fn a_caller_scope_covers_only_that_caller() {
        let (a, b) = (Caller::new("a"), Caller::new("b"));
        assert!(Scope::from(a.clone()).covers(&a));
        assert!(!Scope::from(a).covers(&b));
        assert!(Scope::Everyone.covers(&b));
    }
}
