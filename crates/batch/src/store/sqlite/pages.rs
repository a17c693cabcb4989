//! The page reads ([`crate::page`]) as SQL: pages of jobs and of one job's targets, and one
//! job with whose it is.
//!
//! # Rules
//!
//! 1. **One snapshot per page.** Every read here runs on the reader's connection inside its
//!    read transaction (`reader.rs`, rules 1 and 2; on the writer's in memory, inside its
//!    batch), so a targets page and its job, and a page and its `next` key, are one state.
//! 2. **One index walk from the key.** Each read walks one index from the page's key and
//!    reads one row past the page (`page::cut`), so its cost is the page's, not the store's:
//!
//!    | read | index (schema version) |
//!    |---|---|
//!    | a caller's jobs | `jobs_caller (caller, id)` (2) |
//!    | a caller's jobs in a status | `jobs_caller_status (caller, status, id)` (5) |
//!    | everyone's jobs | the primary key `id` |
//!    | everyone's jobs in a status | `jobs_status (status, id)` (5) |
//!    | a job's targets | `targets`' primary key `(job, idx)` |
//!    | a job's pending targets | the primary key, from the job's `next` on |
//!    | a job's done targets | the primary key, below its `next`, skipping failed ones |
//!    | a job's failed targets | `targets_failed (job, idx) WHERE state = 'failed'` (5) |
//!
//!    Targets are stored in index order, so a job's pending targets are exactly those from
//!    its `next` (`done + failed`) on and need no index; only failed ones get an entry of
//!    their own, so a done target's store writes no index entry more than before. A done
//!    page skips the failed targets among its rows: a job that mostly failed pages its done
//!    targets at the cost of its failures. A filtered read names its index (`INDEXED BY`):
//!    without statistics SQLite prefers the primary key's walk, filtered row by row.
//!    `pages_use_their_indexes` (`tests.rs`) reads each statement's plan.
//! 3. **Scoped in SQL.** A [`Scope::Caller`] is a `caller = ?` of the statement itself, so
//!    another caller's job is never read.

use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteError, queries};
use crate::job::JobId;
use crate::page::TargetKind;
use crate::page::{
    IndexedTarget, JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery, cut,
};
use crate::store::rows::{LISTING_COLUMNS, ListingRow, TARGET_COLUMNS, TargetRow};
use crate::store::sql::{after_index, highest_id, limit_past};

type Result<T> = std::result::Result<T, SqliteError>;

/// The statement of a jobs page: `?1` the caller, `?2` the status (each only when the page
/// has one), `?3` the highest id, `?4` the row count.
pub(super) fn jobs_sql(caller: bool, status: bool) -> String {
    let index = match (caller, status) {
        (true, true) => " INDEXED BY jobs_caller_status",
        (false, true) => " INDEXED BY jobs_status",
        (_, false) => "",
    };
    let caller = if caller { "caller = ?1 AND " } else { "" };
    let status = if status { "status = ?2 AND " } else { "" };
    format!(
        "SELECT {LISTING_COLUMNS} FROM jobs{index} WHERE {caller}{status}id <= ?3 \
         ORDER BY id DESC LIMIT ?4"
    )
}

/// The statement of a targets page in `state` (every state if `None`): `?1` the job, `?2`
/// the index the page follows, `?3` the index it stays below, `?4` the row count.
pub(super) fn targets_sql(state: Option<TargetKind>) -> String {
    let (index, state) = match state {
        None => ("", ""),
        Some(TargetKind::Pending) => ("", "state = 'pending' AND "),
        Some(TargetKind::Done) => ("", "state = 'done' AND "),
        Some(TargetKind::Failed) => (" INDEXED BY targets_failed", "state = 'failed' AND "),
    };
    format!(
        "SELECT idx, {TARGET_COLUMNS} FROM targets{index} \
         WHERE job = ?1 AND {state}idx > ?2 AND idx < ?3 ORDER BY idx LIMIT ?4"
    )
}

/// Where a targets page in `state` lies, from its key `after` and the job's `stored`
/// targets (those before its `next`): the index it follows and the index it stays below.
pub(super) fn targets_range(after: i64, state: Option<TargetKind>, stored: i64) -> (i64, i64) {
    match state {
        Some(TargetKind::Pending) => (after.max(stored - 1), i64::MAX),
        Some(TargetKind::Done | TargetKind::Failed) => (after, stored),
        None => (after, i64::MAX),
    }
}

/// The caller a scope names, if it names one.
fn caller_of(scope: &Scope) -> Option<&str> {
    match scope {
        Scope::Caller(caller) => Some(caller.as_str()),
        Scope::Everyone => None,
    }
}

fn listing_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ListingRow> {
    Ok(ListingRow {
        summary: queries::summary_row(row)?,
        caller: row.get(7)?,
        key: row.get(8)?,
    })
}

fn to_listing(row: ListingRow) -> Result<JobListing> {
    row.listing().map_err(SqliteError::InvalidRow)
}

/// A page of the jobs `scope` covers, newest first (rule 2).
pub(super) fn jobs_page(tx: &Connection, scope: &Scope, query: &JobsQuery) -> Result<JobsPage> {
    let caller = caller_of(scope);
    let sql = jobs_sql(caller.is_some(), query.status.is_some());
    let len = query.page_len();
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            caller,
            query.status.map(|s| s.as_str()),
            highest_id(query.before),
            limit_past(len)
        ],
        listing_row,
    )?;
    let mut jobs = Vec::with_capacity(len + 1);
    for row in rows {
        jobs.push(to_listing(row?)?);
    }
    let (jobs, next) = cut(jobs, len, |job| job.summary.id);
    Ok(JobsPage::new(jobs, next))
}

/// Job `id` if `scope` covers it: `?1` the id, `?2` the caller (only in a caller's scope).
pub(super) fn job(tx: &Connection, scope: &Scope, id: JobId) -> Result<Option<JobListing>> {
    let caller = caller_of(scope);
    let only = if caller.is_some() {
        " AND caller = ?2"
    } else {
        ""
    };
    let sql = format!("SELECT {LISTING_COLUMNS} FROM jobs WHERE id = ?1{only}");
    let mut stmt = tx.prepare_cached(&sql)?;
    let id = id.get() as i64;
    let row = match caller {
        Some(caller) => stmt.query_row(params![id, caller], listing_row),
        None => stmt.query_row(params![id], listing_row),
    };
    row.optional()?.map(to_listing).transpose()
}

/// A page of job `id`'s targets if `scope` covers it, with the job, from one snapshot
/// (rule 1).
pub(super) fn targets_page(
    tx: &Connection,
    scope: &Scope,
    id: JobId,
    query: &TargetsQuery,
) -> Result<Option<TargetsPage>> {
    let Some(job) = self::job(tx, scope, id)? else {
        return Ok(None);
    };
    let len = query.page_len();
    let counts = job.summary.counts;
    let stored = i64::try_from(counts.stored()).unwrap_or(i64::MAX);
    let (after, below) = targets_range(after_index(query.after), query.state, stored);
    let mut stmt = tx.prepare_cached(&targets_sql(query.state))?;
    let rows = stmt.query_map(
        params![id.get() as i64, after, below, limit_past(len)],
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                TargetRow {
                    target: row.get(1)?,
                    state: row.get(2)?,
                    output: row.get(3)?,
                    error: row.get(4)?,
                    hint: row.get(5)?,
                },
            ))
        },
    )?;
    let mut targets = Vec::with_capacity(len + 1);
    for row in rows {
        let (index, target) = row?;
        let index = usize::try_from(index)
            .map_err(|_| SqliteError::InvalidRow(format!("target index {index}")))?;
        let entry = target.entry().map_err(SqliteError::InvalidRow)?;
        targets.push(IndexedTarget::new(index, entry));
    }
    let (targets, next) = cut(targets, len, |target| target.index);
    Ok(Some(TargetsPage::new(job, targets, next)))
}
