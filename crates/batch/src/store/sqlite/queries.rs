//! Every store operation as SQL inside one transaction.
//!
//! These mirror the in-memory store's state machine (`store/memory/state.rs`) step for step;
//! the partial indexes of the schema play the part of its `ready` and `finished` sets, and
//! the predicates are the shared ones of `store/sql.rs` (claimable: ready when its `retry_at`
//! is unset or has come, waiting otherwise; evictable, by `touch_seq`).
//!
//! Every function runs inside the store's open transaction, in a savepoint of its own, with a
//! copy of the [`Counters`]; the caller keeps both or neither, so a failed step leaves the
//! database and the counters as they were.
//!
//! A job's counts are columns of its row: `done` and `failed` are bumped by the same `UPDATE`
//! that moves `next` when a target is stored, and pending is `total - done - failed`. So a
//! summary is one row, whatever the job's size.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteError;
use crate::error::{InvalidJob, SubmitError};
use crate::hooks::TargetOutcome;
use crate::job::{Caller, Job, JobId, JobStatus, TargetState};
use crate::store::{CancelOutcome, Claim, Completion, Ended, Evicted, NewJob, Submitted};
use crate::summary::{JobSummary, Progress};
use crate::time::Timestamp;

type Result<T> = std::result::Result<T, SqliteError>;

use crate::store::rows::{JobRow, SUMMARY_COLUMNS, SummaryRow, TARGET_COLUMNS, TargetRow};
use crate::store::sql::{self, EVICTABLE, HAS_WORK, IDLE, LIVE, ROTATION, counts};
use crate::store::sql::{from_micros as from_sql, to_micros as to_sql};

/// Counters kept in memory beside the connection, read back at open: the rotation's cursor,
/// the last fencing token and touch sequence, and the bytes stored.
///
/// Keeping them in memory saves a read per step on the hot path. The token, touch sequence
/// and bytes are rebuilt exactly from the jobs at open (no claim survives [`recover`], so
/// tokens need only grow within a process); the cursor is also written to its row by every
/// claim, so a reopened store goes on with the job after the one claimed last.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counters {
    /// The rotation's cursor: the id after the job claimed last (`rotation.cursor`), or where
    /// a released claim's walk started (`jobs.claim_from`) if it handed its turn back.
    cursor: i64,
    token: i64,
    touch: i64,
    bytes: i64,
}

impl Counters {
    pub(super) fn load(tx: &Connection) -> Result<Self> {
        let (cursor, token, touch, bytes) = tx.query_row(
            "SELECT (SELECT cursor FROM rotation), COALESCE(MAX(in_flight), 0),
                    COALESCE(MAX(touch_seq), 0), COALESCE(SUM(bytes), 0)
             FROM jobs",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )?;
        Ok(Self {
            cursor,
            token,
            touch,
            bytes,
        })
    }

    fn next_touch(&mut self) -> i64 {
        self.touch += 1;
        self.touch
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes as u64
    }
}

pub(super) fn live_jobs(tx: &Connection) -> Result<usize> {
    let sql = format!("SELECT COUNT(*) FROM jobs WHERE {LIVE}");
    let n: i64 = tx.prepare_cached(&sql)?.query_row([], |row| row.get(0))?;
    Ok(n as usize)
}

fn parse_status(word: &str) -> Result<JobStatus> {
    sql::status(word).map_err(SqliteError::InvalidRow)
}

pub(super) fn submit(
    tx: &Connection,
    c: &mut Counters,
    job: NewJob,
) -> std::result::Result<Submitted, SubmitError> {
    if job.targets.is_empty() {
        return Err(InvalidJob::Empty.into());
    }
    let live = live_jobs(tx)?;
    if let Some(key) = &job.key {
        let existing: Option<i64> = tx
            .prepare_cached("SELECT id FROM jobs WHERE caller = ?1 AND key = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![job.caller.as_str(), key], |row| row.get(0))
                    .optional()
            })
            .map_err(SqliteError::from)?;
        if let Some(id) = existing {
            return Ok(Submitted {
                id: JobId::new(id as u64),
                live_jobs: live,
                existing: true,
            });
        }
    }
    if live >= job.max_live_jobs {
        return Err(SubmitError::Full);
    }
    let busy_sql = format!("SELECT id FROM jobs WHERE caller = ?1 AND {LIVE}");
    let busy: Option<i64> = tx
        .prepare_cached(&busy_sql)
        .and_then(|mut stmt| {
            stmt.query_row([job.caller.as_str()], |row| row.get(0))
                .optional()
        })
        .map_err(SqliteError::from)?;
    if let Some(live) = busy {
        return Err(SubmitError::CallerBusy {
            live: JobId::new(live as u64),
        });
    }
    let bytes: i64 = job.targets.iter().map(|t| t.len() as i64).sum();
    let touch = c.next_touch();
    let now = to_sql(job.now);
    let id: i64 = tx
        .prepare_cached(
            "INSERT INTO jobs
                 (caller, status, created, updated, touched, touch_seq, total, bytes, key)
             VALUES (?1, 'queued', ?2, ?2, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        )
        .and_then(|mut stmt| {
            stmt.query_row(
                params![
                    job.caller.as_str(),
                    now,
                    touch,
                    job.targets.len() as i64,
                    bytes,
                    job.key,
                ],
                |row| row.get(0),
            )
        })
        .map_err(SqliteError::from)?;
    {
        let mut insert = tx
            .prepare_cached("INSERT INTO targets (job, idx, target) VALUES (?1, ?2, ?3)")
            .map_err(SqliteError::from)?;
        for (index, target) in job.targets.iter().enumerate() {
            insert
                .execute(params![id, index as i64, target])
                .map_err(SqliteError::from)?;
        }
    }
    c.bytes += bytes;
    Ok(Submitted {
        id: JobId::new(id as u64),
        live_jobs: live + 1,
        existing: false,
    })
}

/// The SQL of [`ready`]'s walk: `?1` now, `?2` the id it starts at.
///
/// It names its index: given `jobs_status (status, id)` (schema version 5, for the pages),
/// SQLite would rather look the live jobs up by status and sort them by id, every claim.
pub(super) fn ready_sql() -> String {
    format!(
        "SELECT id, status = 'queued' FROM jobs INDEXED BY jobs_claimable
         WHERE {LIVE} AND {IDLE} AND {HAS_WORK} AND (retry_at IS NULL OR retry_at <= ?1)
           AND id >= ?2
         {ROTATION} LIMIT 1"
    )
}

/// The first ready job from the rotation's `cursor` on, wrapping once (`store/sql.rs`), and
/// whether it is still queued: a walk of `jobs_claimable` from the cursor, and only when that
/// finds nothing, a second one from the start.
fn ready(tx: &Connection, now: i64, cursor: i64) -> Result<Option<(i64, bool)>> {
    let sql = ready_sql();
    let mut pick = tx.prepare_cached(&sql)?;
    let mut first_from = |from: i64| {
        pick.query_row(params![now, from], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()
    };
    match first_from(cursor)? {
        Some(found) => Ok(Some(found)),
        None if cursor > 0 => Ok(first_from(0)?),
        None => Ok(None),
    }
}

pub(super) fn claim(tx: &Connection, c: &mut Counters, now: Timestamp) -> Result<Option<Claim>> {
    let now = to_sql(now);
    let Some((id, started)) = ready(tx, now, c.cursor)? else {
        return Ok(None);
    };
    c.token += 1;
    let token = c.token;
    let from = std::mem::replace(&mut c.cursor, id + 1);
    // Only a job's first claim names `status`: SQLite rewrites the entries of every index on
    // a column an `UPDATE` assigns, same value or not, and the pages' `jobs_status` and
    // `jobs_caller_status` (schema version 5) hold it.
    let returned = |row: &rusqlite::Row<'_>| Ok((row.get(0)?, row.get(1)?, row.get(2)?));
    let (caller, index, busy_since): (String, i64, Option<i64>) = if started {
        tx.prepare_cached(
            "UPDATE jobs SET in_flight = ?2, claim_from = ?4, retry_at = NULL,
                 status = 'running', updated = ?3
             WHERE id = ?1 RETURNING caller, next, busy_since",
        )?
        .query_row(params![id, token, now, from], returned)?
    } else {
        tx.prepare_cached(
            "UPDATE jobs SET in_flight = ?2, claim_from = ?3, retry_at = NULL
             WHERE id = ?1 RETURNING caller, next, busy_since",
        )?
        .query_row(params![id, token, from], returned)?
    };
    tx.prepare_cached("UPDATE rotation SET cursor = ?1")?
        .execute(params![c.cursor])?;
    let target: String = tx
        .prepare_cached("SELECT target FROM targets WHERE job = ?1 AND idx = ?2")?
        .query_row(params![id, index], |row| row.get(0))?;
    Ok(Some(Claim {
        job: JobId::new(id as u64),
        caller: Caller::new(caller),
        index: index as usize,
        target_json: Arc::from(target),
        token: token as u64,
        busy_since: busy_since.map(from_sql),
        rescued: false,
        started,
    }))
}

/// Whether `claim` is still the claim out on its job.
fn is_current(tx: &Connection, claim: &Claim) -> Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM jobs WHERE id = ?1 AND in_flight = ?2")?
        .exists(params![claim.job.get() as i64, claim.token as i64])?)
}

pub(super) fn renew(tx: &Connection, claim: &Claim) -> Result<bool> {
    is_current(tx, claim)
}

/// Ends the claim on job `id`: it waits for `retry_at` or is ready again; an ended job enters
/// the eviction order as its most recently touched.
fn end_claim(
    tx: &Connection,
    c: &mut Counters,
    id: i64,
    retry_at: Option<i64>,
    now: i64,
) -> Result<()> {
    let touch = c.next_touch();
    let sql = format!(
        "UPDATE jobs SET in_flight = NULL, retry_at = ?2,
             touch_seq = CASE WHEN {LIVE} THEN touch_seq ELSE ?3 END,
             touched = CASE WHEN {LIVE} THEN touched ELSE ?4 END
         WHERE id = ?1"
    );
    tx.prepare_cached(&sql)?
        .execute(params![id, retry_at, touch, now])?;
    Ok(())
}

pub(super) fn complete(
    tx: &Connection,
    c: &mut Counters,
    claim: &Claim,
    result: TargetState,
    now: Timestamp,
) -> Result<Completion> {
    let bytes = result.stored_bytes();
    let (state, output, error, hint) = result
        .to_columns()
        .ok_or_else(|| SqliteError::InvalidRow("a pending result cannot be stored".into()))?;
    let id = claim.job.get() as i64;
    let sql_now = to_sql(now);
    // Matching the token here is the fencing: a stale claim changes no row.
    let row: Option<(String, i64, i64, i64, i64, i64)> = tx
        .prepare_cached(
            "UPDATE jobs SET next = next + 1, done = done + ?3, failed = failed + ?4,
                 busy_since = NULL, bytes = bytes + ?5, updated = ?6,
                 in_flight = NULL, retry_at = NULL
             WHERE id = ?1 AND in_flight = ?2
             RETURNING status, next, total, done, failed, created",
        )?
        .query_row(
            params![
                id,
                claim.token as i64,
                i64::from(state == "done"),
                i64::from(state == "failed"),
                bytes as i64,
                sql_now
            ],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                ))
            },
        )
        .optional()?;
    let Some((status, next, total, done, failed, created)) = row else {
        return Ok(Completion::Stale);
    };
    tx.prepare_cached(
        "UPDATE targets SET state = ?3, output = ?4, error = ?5, hint = ?6
         WHERE job = ?1 AND idx = ?2",
    )?
    .execute(params![id, next - 1, state, output, error, hint])?;
    c.bytes += bytes as i64;
    let found = parse_status(&status)?;
    let was_live = found.is_live();
    let mut ended = None;
    let status = if was_live && next == total {
        let settled = JobStatus::settled(done as usize, failed as usize);
        ended = Some((settled, now.saturating_since(from_sql(created))));
        Some(settled.as_str())
    } else {
        None
    };
    let counts = counts(total, done, failed);
    let outcome = if state == "done" {
        TargetOutcome::Done
    } else {
        TargetOutcome::Failed
    };
    let after_status = ended.map_or(found, |(settled, _)| settled);
    let progress = Progress::new(after_status, counts, Some(((next - 1) as usize, outcome)));
    if !was_live || ended.is_some() {
        // The job is over and idle now: it enters the eviction order as the latest touched.
        tx.prepare_cached(
            "UPDATE jobs SET status = COALESCE(?2, status), touch_seq = ?3, touched = ?4
             WHERE id = ?1",
        )?
        .execute(params![id, status, c.next_touch(), sql_now])?;
    }
    let ended = match ended {
        Some((status, after)) => Some(Ended {
            job: claim.job,
            status,
            counts,
            after,
            live_jobs: live_jobs(tx)?,
        }),
        None => None,
    };
    Ok(Completion::Stored {
        bytes,
        ended,
        progress,
    })
}

pub(super) fn retry_later(
    tx: &Connection,
    c: &mut Counters,
    claim: &Claim,
    busy_since: Timestamp,
    at: Timestamp,
    now: Timestamp,
) -> Result<bool> {
    if !is_current(tx, claim)? {
        return Ok(false);
    }
    let id = claim.job.get() as i64;
    tx.prepare_cached("UPDATE jobs SET busy_since = ?2 WHERE id = ?1")?
        .execute(params![id, to_sql(busy_since)])?;
    end_claim(tx, c, id, Some(to_sql(at)), to_sql(now))?;
    Ok(true)
}

pub(super) fn release(
    tx: &Connection,
    c: &mut Counters,
    claim: &Claim,
    now: Timestamp,
) -> Result<bool> {
    let id = claim.job.get() as i64;
    let from: Option<i64> = tx
        .prepare_cached("SELECT claim_from FROM jobs WHERE id = ?1 AND in_flight = ?2")?
        .query_row(params![id, claim.token as i64], |row| row.get(0))
        .optional()?;
    let Some(from) = from else {
        return Ok(false);
    };
    // The claim hands its turn back if no other claim moved the cursor since (`Store`'s docs).
    if c.cursor == id + 1 {
        c.cursor = from;
        tx.prepare_cached("UPDATE rotation SET cursor = ?1")?
            .execute(params![c.cursor])?;
    }
    end_claim(tx, c, id, None, to_sql(now))?;
    Ok(true)
}

/// Frees every claim out (their holder is gone), in submit order; returns the live jobs.
pub(super) fn recover(tx: &Connection, c: &mut Counters, now: Timestamp) -> Result<usize> {
    let held: Vec<(i64, Option<i64>)> = tx
        .prepare_cached("SELECT id, retry_at FROM jobs WHERE in_flight IS NOT NULL ORDER BY id")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, retry_at) in held {
        end_claim(tx, c, id, retry_at, to_sql(now))?;
    }
    live_jobs(tx)
}

pub(super) fn next_wakeup(tx: &Connection) -> Result<Option<Timestamp>> {
    // Over the claimable jobs' index, as `ready_sql`, rather than every live job's status.
    let sql = format!(
        "SELECT MIN(retry_at) FROM jobs INDEXED BY jobs_claimable
         WHERE {LIVE} AND {IDLE} AND {HAS_WORK} AND retry_at IS NOT NULL"
    );
    let at: Option<i64> = tx.prepare_cached(&sql)?.query_row([], |row| row.get(0))?;
    Ok(at.map(from_sql))
}

/// The job's row if it belongs to `caller`.
fn own_job(tx: &Connection, id: JobId, caller: &Caller) -> Result<Option<JobRow>> {
    Ok(tx
        .prepare_cached("SELECT status, created, updated FROM jobs WHERE id = ?1 AND caller = ?2")?
        .query_row(params![id.get() as i64, caller.as_str()], |row| {
            Ok(JobRow {
                status: row.get(0)?,
                created: row.get(1)?,
                updated: row.get(2)?,
            })
        })
        .optional()?)
}

pub(super) fn status(tx: &Connection, id: JobId, caller: &Caller) -> Result<Option<Job>> {
    let Some(job) = own_job(tx, id, caller)? else {
        return Ok(None);
    };
    let sql = format!("SELECT {TARGET_COLUMNS} FROM targets WHERE job = ?1 ORDER BY idx");
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map([id.get() as i64], |row| {
        Ok(TargetRow {
            target: row.get(0)?,
            state: row.get(1)?,
            output: row.get(2)?,
            error: row.get(3)?,
            hint: row.get(4)?,
        })
    })?;
    let mut targets = Vec::new();
    for row in rows {
        targets.push(row?.entry().map_err(SqliteError::InvalidRow)?);
    }
    Ok(Some(job.job(id, targets).map_err(SqliteError::InvalidRow)?))
}

/// A job's summary columns (id, status, created, updated, total, done, failed), the row's
/// first seven.
pub(super) fn summary_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SummaryRow> {
    Ok(SummaryRow {
        id: row.get(0)?,
        status: row.get(1)?,
        created: row.get(2)?,
        updated: row.get(3)?,
        total: row.get(4)?,
        done: row.get(5)?,
        failed: row.get(6)?,
    })
}

fn to_summary(row: SummaryRow) -> Result<JobSummary> {
    row.summary().map_err(SqliteError::InvalidRow)
}

pub(super) fn summary(tx: &Connection, id: JobId, caller: &Caller) -> Result<Option<JobSummary>> {
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM jobs WHERE id = ?1 AND caller = ?2");
    let row = tx
        .prepare_cached(&sql)?
        .query_row(params![id.get() as i64, caller.as_str()], summary_row)
        .optional()?;
    row.map(to_summary).transpose()
}

/// `caller`'s stored jobs in submit order, through the `jobs_caller` index.
pub(super) fn jobs(tx: &Connection, caller: &Caller) -> Result<Vec<JobSummary>> {
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM jobs WHERE caller = ?1 ORDER BY id");
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map([caller.as_str()], summary_row)?;
    let mut jobs = Vec::new();
    for row in rows {
        jobs.push(to_summary(row?)?);
    }
    Ok(jobs)
}

pub(super) fn touch(
    tx: &Connection,
    c: &mut Counters,
    id: JobId,
    caller: &Caller,
    now: Timestamp,
) -> Result<bool> {
    if own_job(tx, id, caller)?.is_none() {
        return Ok(false);
    }
    let touch = c.next_touch();
    tx.prepare_cached("UPDATE jobs SET touch_seq = ?2, touched = ?3 WHERE id = ?1")?
        .execute(params![id.get() as i64, touch, to_sql(now)])?;
    Ok(true)
}

pub(super) fn cancel(
    tx: &Connection,
    c: &mut Counters,
    id: JobId,
    caller: &Caller,
    now: Timestamp,
) -> Result<CancelOutcome> {
    let Some(JobRow {
        status, created, ..
    }) = own_job(tx, id, caller)?
    else {
        return Ok(CancelOutcome::NotFound);
    };
    if !parse_status(&status)?.is_live() {
        return Ok(CancelOutcome::Terminal);
    }
    let touch = c.next_touch();
    let sql_now = to_sql(now);
    // An idle job enters the eviction order now; one with a claim out does when the claim ends.
    let (total, done, failed): (i64, i64, i64) = tx
        .prepare_cached(
            "UPDATE jobs SET status = 'cancelled', updated = ?2, retry_at = NULL,
                 touch_seq = CASE WHEN in_flight IS NULL THEN ?3 ELSE touch_seq END,
                 touched = CASE WHEN in_flight IS NULL THEN ?2 ELSE touched END
             WHERE id = ?1 RETURNING total, done, failed",
        )?
        .query_row(params![id.get() as i64, sql_now, touch], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    Ok(CancelOutcome::Cancelled(Ended {
        job: id,
        status: JobStatus::Cancelled,
        counts: counts(total, done, failed),
        after: now.saturating_since(from_sql(created)),
        live_jobs: live_jobs(tx)?,
    }))
}

pub(super) fn evict_oldest(tx: &Connection, c: &mut Counters, max_bytes: u64) -> Result<Evicted> {
    let mut evicted = Evicted::default();
    let mut bytes = c.bytes();
    let oldest_sql =
        format!("SELECT id, bytes FROM jobs WHERE {EVICTABLE} ORDER BY touch_seq LIMIT 1");
    while bytes > max_bytes {
        let Some((id, job_bytes)): Option<(i64, i64)> = tx
            .prepare_cached(&oldest_sql)?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?
        else {
            break;
        };
        tx.prepare_cached("DELETE FROM targets WHERE job = ?1")?
            .execute([id])?;
        tx.prepare_cached("DELETE FROM jobs WHERE id = ?1")?
            .execute([id])?;
        bytes -= job_bytes as u64;
        evicted.jobs += 1;
        evicted.bytes += job_bytes as u64;
        evicted.largest = evicted.largest.max(job_bytes as u64);
    }
    c.bytes = bytes as i64;
    Ok(evicted)
}
