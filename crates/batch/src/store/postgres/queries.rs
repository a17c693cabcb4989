//! Every store operation as SQL inside one transaction.
//!
//! These mirror the SQLite store's queries (and so the in-memory store's state machine), with
//! what a store shared by several processes adds:
//!
//! - **The rotation's cursor is a row** (`rotation`), locked by every claim: claims from all
//!   replicas are serialized on it, so the round-robin over jobs is exactly the one-process
//!   rule. The job row itself is taken `FOR UPDATE SKIP LOCKED`, so a claim never waits on a
//!   job another transaction is storing into or cancelling.
//! - **Leases.** A claim sets `lease_until`; a claim first takes back every claim whose lease
//!   lapsed (a *rescue*: its token goes stale, so a late write from its old holder changes no
//!   row).
//! - **Fencing.** `complete`, `retry_later`, `release` and `renew` match `in_flight = token`.
//! - **Wake-ups.** A change that can make a job claimable sends `NOTIFY` on the store's channel
//!   (delivered at commit).
//! - `submit` and `evict_oldest` take a transaction-level advisory lock each, so `max_live_jobs`
//!   and the byte budget hold across replicas.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Transaction;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PostgresError;
use crate::error::SubmitError;
use crate::job::{Caller, Job, JobId, JobStatus, TargetEntry, TargetState};
use crate::store::{CancelOutcome, Claim, Completion, Ended, Evicted, NewJob, Submitted};
use crate::time::Timestamp;

type Result<T> = std::result::Result<T, PostgresError>;

/// The advisory lock key `submit` takes ("submit" in ASCII).
const SUBMIT_LOCK: i64 = 0x73_75_62_6d_69_74;
/// The advisory lock key `evict_oldest` takes ("evict" in ASCII).
const EVICT_LOCK: i64 = 0x65_76_69_63_74;

pub(super) fn to_sql(t: Timestamp) -> i64 {
    i64::try_from(t.as_micros()).unwrap_or(i64::MAX)
}

pub(super) fn from_sql(micros: i64) -> Timestamp {
    Timestamp::from_micros(u64::try_from(micros).unwrap_or(0))
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// One statement, prepared once per connection.
async fn query_opt(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>> {
    let stmt = tx.prepare_cached(sql).await?;
    Ok(tx.query_opt(&stmt, params).await?)
}

async fn query(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>> {
    let stmt = tx.prepare_cached(sql).await?;
    Ok(tx.query(&stmt, params).await?)
}

async fn execute(tx: &Transaction<'_>, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
    let stmt = tx.prepare_cached(sql).await?;
    Ok(tx.execute(&stmt, params).await?)
}

async fn notify(tx: &Transaction<'_>, channel: &str) -> Result<()> {
    execute(tx, "SELECT pg_notify($1, '')", &[&channel]).await?;
    Ok(())
}

pub(super) async fn live_jobs(tx: &Transaction<'_>) -> Result<usize> {
    let row = query_opt(
        tx,
        "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')",
        &[],
    )
    .await?;
    Ok(row.map_or(0, |row| row.get::<_, i64>(0)) as usize)
}

fn parse_status(word: &str) -> Result<JobStatus> {
    JobStatus::parse(word).ok_or_else(|| PostgresError::InvalidRow(format!("job status {word:?}")))
}

pub(super) async fn submit(
    tx: &Transaction<'_>,
    channel: &str,
    job: NewJob,
) -> std::result::Result<Submitted, SubmitError> {
    execute(tx, "SELECT pg_advisory_xact_lock($1)", &[&SUBMIT_LOCK]).await?;
    let live = live_jobs(tx).await?;
    if live >= job.max_live_jobs {
        return Err(SubmitError::Full);
    }
    let busy = query_opt(
        tx,
        "SELECT 1 FROM jobs WHERE caller = $1 AND status IN ('queued', 'running')",
        &[&job.caller.as_str()],
    )
    .await?;
    if busy.is_some() {
        return Err(SubmitError::CallerBusy);
    }
    let bytes: i64 = job.targets.iter().map(|t| t.len() as i64).sum();
    let now = to_sql(job.now);
    let total = job.targets.len() as i32;
    let row = query_opt(
        tx,
        "INSERT INTO jobs (caller, status, created, updated, touched, touch_seq, total, bytes)
         VALUES ($1, 'queued', $2, $2, $2, nextval('touches'), $3, $4) RETURNING id",
        &[&job.caller.as_str(), &now, &total, &bytes],
    )
    .await?
    .ok_or_else(|| PostgresError::InvalidRow("INSERT returned no id".into()))?;
    let id: i64 = row.get(0);
    // One statement for all targets: arrays unnested server-side.
    let indexes: Vec<i32> = (0..total).collect();
    execute(
        tx,
        "INSERT INTO targets (job, idx, target)
         SELECT $1, i, t FROM unnest($2::INTEGER[], $3::TEXT[]) AS u (i, t)",
        &[&id, &indexes, &job.targets],
    )
    .await?;
    notify(tx, channel).await?;
    Ok(Submitted {
        id: JobId::new(id as u64),
        live_jobs: live + 1,
    })
}

/// Takes back every claim whose lease lapsed by `now`; the next claim of each is a rescue.
async fn rescue_lapsed(tx: &Transaction<'_>, now: i64) -> Result<()> {
    let rows = query(
        tx,
        "UPDATE jobs SET in_flight = NULL, lease_until = NULL, rescue = TRUE,
             touch_seq = CASE WHEN status IN ('queued', 'running') THEN touch_seq
                              ELSE nextval('touches') END,
             touched = CASE WHEN status IN ('queued', 'running') THEN touched ELSE $1 END
         WHERE in_flight IS NOT NULL AND lease_until <= $1
         RETURNING id",
        &[&now],
    )
    .await?;
    for row in rows {
        let job: i64 = row.get(0);
        tracing::warn!(job, "claim lease lapsed; the target is claimed again");
    }
    Ok(())
}

/// The first ready job at or after `from` in submit order, locked.
async fn ready_from(tx: &Transaction<'_>, from: i64, now: i64) -> Result<Option<(i64, bool)>> {
    let row = query_opt(
        tx,
        "SELECT id, rescue FROM jobs
         WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total
           AND id >= $1 AND (retry_at IS NULL OR retry_at <= $2)
         ORDER BY id LIMIT 1
         FOR UPDATE SKIP LOCKED",
        &[&from, &now],
    )
    .await?;
    Ok(row.map(|row| (row.get(0), row.get(1))))
}

pub(super) async fn claim(
    tx: &Transaction<'_>,
    now: Timestamp,
    lease: Duration,
) -> Result<Option<Claim>> {
    let now = to_sql(now);
    let cursor: i64 = query_opt(tx, "SELECT cursor FROM rotation FOR UPDATE", &[])
        .await?
        .ok_or_else(|| PostgresError::InvalidRow("the rotation row is missing".into()))?
        .get(0);
    rescue_lapsed(tx, now).await?;
    let (id, rescued) = match ready_from(tx, cursor, now).await? {
        Some(found) => found,
        None => match ready_from(tx, 0, now).await? {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    let until = now.saturating_add(micros(lease));
    let row = query_opt(
        tx,
        "UPDATE jobs SET in_flight = nextval('claim_tokens'), lease_until = $3, rescue = FALSE,
             retry_at = NULL, status = 'running',
             updated = CASE status WHEN 'queued' THEN $2 ELSE updated END
         WHERE id = $1 RETURNING caller, next, busy_since, in_flight",
        &[&id, &now, &until],
    )
    .await?
    .ok_or_else(|| PostgresError::InvalidRow("a locked job vanished".into()))?;
    let caller: String = row.get(0);
    let index: i32 = row.get(1);
    let busy_since: Option<i64> = row.get(2);
    let token: i64 = row.get(3);
    execute(tx, "UPDATE rotation SET cursor = $1", &[&(id + 1)]).await?;
    let target: String = query_opt(
        tx,
        "SELECT target FROM targets WHERE job = $1 AND idx = $2",
        &[&id, &index],
    )
    .await?
    .ok_or_else(|| PostgresError::InvalidRow(format!("job {id} has no target {index}")))?
    .get(0);
    Ok(Some(Claim {
        job: JobId::new(id as u64),
        caller: Caller::new(caller),
        index: index as usize,
        target_json: Arc::from(target),
        token: token as u64,
        busy_since: busy_since.map(from_sql),
        rescued,
    }))
}

pub(super) async fn renew(
    tx: &Transaction<'_>,
    claim: &Claim,
    now: Timestamp,
    lease: Duration,
) -> Result<bool> {
    let until = to_sql(now).saturating_add(micros(lease));
    let n = execute(
        tx,
        "UPDATE jobs SET lease_until = GREATEST(lease_until, $3)
         WHERE id = $1 AND in_flight = $2",
        &[&(claim.job.get() as i64), &(claim.token as i64), &until],
    )
    .await?;
    Ok(n == 1)
}

/// Ends the current claim on `claim.job` (matching its token): the job waits for `retry_at`
/// or is ready again; an ended job enters the eviction order as its most recently touched.
/// `false` if the claim is not current.
async fn end_claim(
    tx: &Transaction<'_>,
    channel: &str,
    claim: &Claim,
    retry_at: Option<i64>,
    busy_since: Option<i64>,
    now: i64,
) -> Result<bool> {
    let n = execute(
        tx,
        "UPDATE jobs SET in_flight = NULL, lease_until = NULL, retry_at = $3,
             busy_since = COALESCE($4, busy_since),
             touch_seq = CASE WHEN status IN ('queued', 'running') THEN touch_seq
                              ELSE nextval('touches') END,
             touched = CASE WHEN status IN ('queued', 'running') THEN touched ELSE $5 END
         WHERE id = $1 AND in_flight = $2",
        &[
            &(claim.job.get() as i64),
            &(claim.token as i64),
            &retry_at,
            &busy_since,
            &now,
        ],
    )
    .await?;
    if n == 1 {
        notify(tx, channel).await?;
    }
    Ok(n == 1)
}

pub(super) async fn complete(
    tx: &Transaction<'_>,
    channel: &str,
    claim: &Claim,
    result: TargetState,
    now: Timestamp,
) -> Result<Completion> {
    let bytes = result.stored_bytes();
    let (state, output, error, hint) = result
        .to_columns()
        .ok_or_else(|| PostgresError::InvalidRow("a pending result cannot be stored".into()))?;
    let id = claim.job.get() as i64;
    let sql_now = to_sql(now);
    // Matching the token here is the fencing: a stale claim changes no row.
    let row = query_opt(
        tx,
        "UPDATE jobs SET next = next + 1, done = done + $3, failed = failed + $4,
             busy_since = NULL, bytes = bytes + $5, updated = $6,
             in_flight = NULL, lease_until = NULL, retry_at = NULL
         WHERE id = $1 AND in_flight = $2
         RETURNING status, next, total, done, failed, created",
        &[
            &id,
            &(claim.token as i64),
            &i32::from(state == "done"),
            &i32::from(state == "failed"),
            &(bytes as i64),
            &sql_now,
        ],
    )
    .await?;
    let Some(row) = row else {
        return Ok(Completion::Stale);
    };
    let status: String = row.get(0);
    let next: i32 = row.get(1);
    let total: i32 = row.get(2);
    let done: i32 = row.get(3);
    let failed: i32 = row.get(4);
    let created: i64 = row.get(5);
    execute(
        tx,
        "UPDATE targets SET state = $3, output = $4, error = $5, hint = $6
         WHERE job = $1 AND idx = $2",
        &[&id, &(next - 1), &state, &output, &error, &hint],
    )
    .await?;
    let was_live = parse_status(&status)?.is_live();
    let mut ended = None;
    let status = if was_live && next == total {
        let settled = JobStatus::settled(done as usize, failed as usize);
        ended = Some((settled, now.saturating_since(from_sql(created))));
        Some(settled.as_str())
    } else {
        None
    };
    if !was_live || ended.is_some() {
        // The job is over and idle now: it enters the eviction order as the latest touched.
        execute(
            tx,
            "UPDATE jobs SET status = COALESCE($2, status), touch_seq = nextval('touches'),
                 touched = $3
             WHERE id = $1",
            &[&id, &status, &sql_now],
        )
        .await?;
    } else {
        // The job is claimable again, possibly by another replica.
        notify(tx, channel).await?;
    }
    let ended = match ended {
        Some((status, after)) => Some(Ended {
            status,
            after,
            live_jobs: live_jobs(tx).await?,
        }),
        None => None,
    };
    Ok(Completion::Stored { bytes, ended })
}

pub(super) async fn retry_later(
    tx: &Transaction<'_>,
    channel: &str,
    claim: &Claim,
    busy_since: Timestamp,
    at: Timestamp,
    now: Timestamp,
) -> Result<bool> {
    end_claim(
        tx,
        channel,
        claim,
        Some(to_sql(at)),
        Some(to_sql(busy_since)),
        to_sql(now),
    )
    .await
}

pub(super) async fn release(
    tx: &Transaction<'_>,
    channel: &str,
    claim: &Claim,
    now: Timestamp,
) -> Result<bool> {
    end_claim(tx, channel, claim, None, None, to_sql(now)).await
}

/// The earliest retry time of a job that waits only for it, or lease to lapse.
pub(super) async fn next_wakeup(tx: &Transaction<'_>) -> Result<Option<Timestamp>> {
    let row = query_opt(
        tx,
        "SELECT LEAST(
             (SELECT MIN(retry_at) FROM jobs
              WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total
                AND retry_at IS NOT NULL),
             (SELECT MIN(lease_until) FROM jobs WHERE in_flight IS NOT NULL))",
        &[],
    )
    .await?;
    Ok(row
        .and_then(|row| row.get::<_, Option<i64>>(0))
        .map(from_sql))
}

/// The job's row if it belongs to `caller`: (status, created, updated).
async fn own_job(
    tx: &Transaction<'_>,
    id: JobId,
    caller: &Caller,
    lock: bool,
) -> Result<Option<(String, i64, i64)>> {
    let sql = if lock {
        "SELECT status, created, updated FROM jobs WHERE id = $1 AND caller = $2 FOR UPDATE"
    } else {
        "SELECT status, created, updated FROM jobs WHERE id = $1 AND caller = $2"
    };
    let row = query_opt(tx, sql, &[&(id.get() as i64), &caller.as_str()]).await?;
    Ok(row.map(|row| (row.get(0), row.get(1), row.get(2))))
}

pub(super) async fn status(
    tx: &Transaction<'_>,
    id: JobId,
    caller: &Caller,
) -> Result<Option<Job>> {
    let Some((status, created, updated)) = own_job(tx, id, caller, false).await? else {
        return Ok(None);
    };
    let rows = query(
        tx,
        "SELECT target, state, output, error, hint FROM targets WHERE job = $1 ORDER BY idx",
        &[&(id.get() as i64)],
    )
    .await?;
    let mut targets = Vec::with_capacity(rows.len());
    for row in rows {
        let target: String = row.get(0);
        let state: String = row.get(1);
        let output: Option<String> = row.get(2);
        let error: Option<String> = row.get(3);
        let hint: Option<String> = row.get(4);
        let state = TargetState::from_columns(&state, output, error, hint)
            .ok_or_else(|| PostgresError::InvalidRow(format!("target state {state:?}")))?;
        targets.push(TargetEntry {
            target_json: target,
            state,
        });
    }
    Ok(Some(Job {
        id,
        status: parse_status(&status)?,
        created: from_sql(created).to_system_time(),
        updated: from_sql(updated).to_system_time(),
        targets,
    }))
}

pub(super) async fn touch(
    tx: &Transaction<'_>,
    id: JobId,
    caller: &Caller,
    now: Timestamp,
) -> Result<bool> {
    let n = execute(
        tx,
        "UPDATE jobs SET touch_seq = nextval('touches'), touched = $3
         WHERE id = $1 AND caller = $2",
        &[&(id.get() as i64), &caller.as_str(), &to_sql(now)],
    )
    .await?;
    Ok(n == 1)
}

pub(super) async fn cancel(
    tx: &Transaction<'_>,
    channel: &str,
    id: JobId,
    caller: &Caller,
    now: Timestamp,
) -> Result<CancelOutcome> {
    let Some((status, created, _)) = own_job(tx, id, caller, true).await? else {
        return Ok(CancelOutcome::NotFound);
    };
    if !parse_status(&status)?.is_live() {
        return Ok(CancelOutcome::Terminal);
    }
    let sql_now = to_sql(now);
    // An idle job enters the eviction order now; one with a claim out does when the claim ends.
    execute(
        tx,
        "UPDATE jobs SET status = 'cancelled', updated = $2, retry_at = NULL,
             touch_seq = CASE WHEN in_flight IS NULL THEN nextval('touches') ELSE touch_seq END,
             touched = CASE WHEN in_flight IS NULL THEN $2 ELSE touched END
         WHERE id = $1",
        &[&(id.get() as i64), &sql_now],
    )
    .await?;
    notify(tx, channel).await?;
    Ok(CancelOutcome::Cancelled(Ended {
        status: JobStatus::Cancelled,
        after: now.saturating_since(from_sql(created)),
        live_jobs: live_jobs(tx).await?,
    }))
}

/// Bytes stored now: every kept job's target JSON and results.
pub(super) async fn stored_bytes(tx: &Transaction<'_>) -> Result<u64> {
    let row = query_opt(tx, "SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM jobs", &[]).await?;
    Ok(row.map_or(0, |row| row.get::<_, i64>(0)) as u64)
}

pub(super) async fn evict_oldest(tx: &Transaction<'_>, max_bytes: u64) -> Result<Evicted> {
    let mut evicted = Evicted::default();
    let mut bytes = stored_bytes(tx).await?;
    if bytes <= max_bytes {
        return Ok(evicted);
    }
    execute(tx, "SELECT pg_advisory_xact_lock($1)", &[&EVICT_LOCK]).await?;
    // Read again under the lock: another replica may have evicted meanwhile.
    bytes = stored_bytes(tx).await?;
    while bytes > max_bytes {
        let row = query_opt(
            tx,
            "SELECT id, bytes FROM jobs
             WHERE status NOT IN ('queued', 'running') AND in_flight IS NULL
             ORDER BY touch_seq LIMIT 1
             FOR UPDATE SKIP LOCKED",
            &[],
        )
        .await?;
        let Some(row) = row else { break };
        let id: i64 = row.get(0);
        let job_bytes = row.get::<_, i64>(1) as u64;
        execute(tx, "DELETE FROM jobs WHERE id = $1", &[&id]).await?;
        bytes -= job_bytes;
        evicted.jobs += 1;
        evicted.bytes += job_bytes;
        evicted.largest = evicted.largest.max(job_bytes);
    }
    Ok(evicted)
}
