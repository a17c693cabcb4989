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

/// Cuts `rows`, read up to one past a page of `len` (rule 5: the row past the page comes
/// from the same read), to `len`, and names the page's `next` key: the last kept row's if a
/// row was cut, `None` if none lies past the page.
pub(crate) fn cut<T, K>(
    mut rows: Vec<T>,
    len: usize,
    key: impl Fn(&T) -> K,
) -> (Vec<T>, Option<K>) {
    if rows.len() <= len {
        return (rows, None);
    }
    rows.truncate(len);
    let next = rows.last().map(key);
    (rows, next)
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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobListing {
    /// Its status, counts and times.
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
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexedTarget {
    /// Its index in the job (submit order, from 0).
    pub index: usize,
    /// The target and its state.
    pub entry: TargetEntry,
}

impl IndexedTarget {
    /// A row, as a store builds it.
    pub fn new(index: usize, entry: TargetEntry) -> Self {
        Self { index, entry }
    }
}

/// A page of one job's targets, in submit order, with the job it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
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

    #[test]
    fn a_page_has_a_next_key_only_if_a_row_lies_past_it() {
        assert_eq!(cut(vec![9, 8, 7], 2, |&n| n), (vec![9, 8], Some(8)));
        assert_eq!(cut(vec![9, 8], 2, |&n| n), (vec![9, 8], None));
        assert_eq!(cut(Vec::<u8>::new(), 1, |&n| n), (vec![], None));
    }

    #[test]
    fn a_caller_scope_covers_only_that_caller() {
        let (a, b) = (Caller::new("a"), Caller::new("b"));
        assert!(Scope::from(a.clone()).covers(&a));
        assert!(!Scope::from(a).covers(&b));
        assert!(Scope::Everyone.covers(&b));
    }
}
