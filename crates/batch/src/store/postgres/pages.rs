//! The page reads ([`crate::page`]) as SQL: pages of jobs and of one job's targets, and one
//! job with whose it is.
//!
//! # Rules
//!
//! 1. **One statement per read, so one snapshot.** Each read is a single statement (run by
//!    `one_statement!`, within the call deadline): under READ COMMITTED a statement sees one
//!    snapshot, so a page and its `next` key, and a targets page and its job (joined in the
//!    same statement), are one state.
//! 2. **One index walk from the key.** Each read walks one index from the page's key and
//!    reads one row past the page (`page::cut`), so its cost is the page's, not the store's:
//!
//!    | read | index (schema version) |
//!    |---|---|
//!    | a caller's jobs | `jobs_caller (caller, id)` (2) |
//!    | a caller's jobs in a status | `jobs_caller_status (caller, status, id)` (7) |
//!    | everyone's jobs | the primary key `id` |
//!    | everyone's jobs in a status | `jobs_status (status, id)` (7) |
//!    | a job's targets | `targets`' primary key `(job, idx)` |
//!    | a job's pending targets | the primary key, from the job's `next` on |
//!    | a job's done targets | the primary key, below its `next`, skipping failed ones |
//!    | a job's failed targets | `targets_failed (job, idx) WHERE state = 'failed'` (7) |
//!
//!    Targets are stored in index order, so a job's pending targets are exactly those from
//!    its `next` on and need no index; only failed ones get an entry of their own. A done
//!    page skips the failed targets among its rows: a job that mostly failed pages its done
//!    targets at the cost of its failures.
//!
//!    `benches/pages.rs` measures a page over a small and a large store.
//! 3. **Scoped in SQL.** A [`Scope::Caller`] is a `caller = $n` of the statement itself, so
//!    another caller's job is never read.
//! 4. **One statement text per shape.** Each filter is in the text only when the query has
//!    it (never `$n IS NULL OR …`), and a state is a literal (`state = 'failed'`, which
//!    `targets_failed`'s predicate needs), so the store's generic plans
//!    (`options::PLANNER_SETTINGS`) are each planned for the index of their shape.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{PostgresError, queries};
use crate::job::JobId;
use crate::page::{
    IndexedTarget, JobListing, JobsPage, JobsQuery, Scope, TargetKind, TargetsPage, TargetsQuery,
    cut,
};
use crate::store::rows::{LISTING_COLUMNS, ListingRow, TargetRow};
use crate::store::sql::{after_index, highest_id, limit_past};

type Result<T> = std::result::Result<T, PostgresError>;

/// A statement's parameters, numbered as they are added.
#[derive(Default)]
struct Params<'a>(Vec<&'a (dyn ToSql + Sync)>);

impl<'a> Params<'a> {
    /// Adds `value`; its placeholder (`$n`).
    fn add(&mut self, value: &'a (dyn ToSql + Sync)) -> String {
        self.0.push(value);
        format!("${}", self.0.len())
    }
}

async fn query<C: GenericClient>(client: &C, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
    let stmt = client.prepare_cached(sql).await?;
    Ok(client.query(&stmt, &params.0).await?)
}

/// The caller a scope names, if it names one.
fn caller_of(scope: &Scope) -> Option<&str> {
    match scope {
        Scope::Caller(caller) => Some(caller.as_str()),
        Scope::Everyone => None,
    }
}

/// A page's job from [`LISTING_COLUMNS`], the row's first nine columns.
fn listing(row: &Row) -> Result<JobListing> {
    let row = ListingRow {
        summary: queries::summary_row(row),
        caller: row.get(7),
        key: row.get(8),
    };
    row.listing().map_err(PostgresError::InvalidRow)
}

/// A page of the jobs `scope` covers, newest first (rule 2).
pub(super) async fn jobs_page<C: GenericClient>(
    client: &C,
    scope: &Scope,
    query: &JobsQuery,
) -> Result<JobsPage> {
    let caller = caller_of(scope);
    let status = query.status.map(|status| status.as_str());
    let (highest, len) = (highest_id(query.before), query.page_len());
    let limit = limit_past(len);
    let mut params = Params::default();
    let mut filter = String::new();
    if let Some(caller) = &caller {
        filter += &format!("caller = {} AND ", params.add(caller));
    }
    if let Some(status) = &status {
        filter += &format!("status = {} AND ", params.add(status));
    }
    let sql = format!(
        "SELECT {LISTING_COLUMNS} FROM jobs WHERE {filter}id <= {} ORDER BY id DESC LIMIT {}",
        params.add(&highest),
        params.add(&limit),
    );
    let rows = self::query(client, &sql, &params).await?;
    let jobs = rows.iter().map(listing).collect::<Result<Vec<_>>>()?;
    let (jobs, next) = cut(jobs, len, |job| job.summary.id);
    Ok(JobsPage::new(jobs, next))
}

/// Job `id` if `scope` covers it.
pub(super) async fn job<C: GenericClient>(
    client: &C,
    scope: &Scope,
    id: JobId,
) -> Result<Option<JobListing>> {
    let raw = id.get() as i64;
    let caller = caller_of(scope);
    let mut params = Params::default();
    let mut sql = format!(
        "SELECT {LISTING_COLUMNS} FROM jobs WHERE id = {}",
        params.add(&raw)
    );
    if let Some(caller) = &caller {
        sql += &format!(" AND caller = {}", params.add(caller));
    }
    let rows = self::query(client, &sql, &params).await?;
    rows.first().map(listing).transpose()
}

/// A page of job `id`'s targets if `scope` covers it, with the job, in one statement (rule
/// 1): the job's row joined with the page's targets, one row per target, or one row of the
/// job alone when no target is on the page.
pub(super) async fn targets_page<C: GenericClient>(
    client: &C,
    scope: &Scope,
    id: JobId,
    query: &TargetsQuery,
) -> Result<Option<TargetsPage>> {
    let raw = id.get() as i64;
    let caller = caller_of(scope);
    let (after, len) = (after_index(query.after), query.page_len());
    let limit = limit_past(len);
    let mut params = Params::default();
    let job = params.add(&raw);
    let after = format!("{}::BIGINT", params.add(&after));
    let limit = params.add(&limit);
    // Pending targets are those from the job's `next` on; stored ones lie below it.
    let range = match query.state {
        None => format!("idx > {after}"),
        Some(TargetKind::Pending) => {
            format!("state = 'pending' AND idx > GREATEST({after}, j.next - 1)")
        }
        Some(TargetKind::Done) => format!("state = 'done' AND idx > {after} AND idx < j.next"),
        Some(TargetKind::Failed) => format!("state = 'failed' AND idx > {after} AND idx < j.next"),
    };
    let mut sql = format!(
        "SELECT j.id, j.status, j.created, j.updated, j.total, j.done, j.failed, j.caller, j.key,
                t.idx, t.target, t.state, t.output, t.error, t.hint
         FROM jobs j LEFT JOIN LATERAL (
             SELECT idx, target, state, output, error, hint FROM targets
             WHERE job = j.id AND {range} ORDER BY idx LIMIT {limit}
         ) t ON TRUE
         WHERE j.id = {job}"
    );
    if let Some(caller) = &caller {
        sql += &format!(" AND j.caller = {}", params.add(caller));
    }
    sql += " ORDER BY t.idx";
    let rows = self::query(client, &sql, &params).await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let job = listing(first)?;
    let mut targets = Vec::with_capacity(rows.len());
    for row in &rows {
        let Some(index) = row.get::<_, Option<i32>>(9) else {
            continue;
        };
        let index = usize::try_from(index)
            .map_err(|_| PostgresError::InvalidRow(format!("target index {index}")))?;
        let target = TargetRow {
            target: row.get(10),
            state: row.get(11),
            output: row.get(12),
            error: row.get(13),
            hint: row.get(14),
        };
        let entry = target.entry().map_err(PostgresError::InvalidRow)?;
        targets.push(IndexedTarget::new(index, entry));
    }
    let (targets, next) = cut(targets, len, |target| target.index);
    Ok(Some(TargetsPage::new(job, targets, next)))
}
