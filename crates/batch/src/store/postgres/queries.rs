//! Every store operation as SQL inside one transaction.
//!
//! These mirror the SQLite store's queries (and so the in-memory store's state machine), with
//! what a store shared by several processes adds:
//!
//! - **Claims run in parallel.** A claim is one `UPDATE` of the first claimable job from the
//!   store's cursor on, wrapping once (`store/sql.rs`, `cursor.rs`), picked `ORDER BY id
//!   LIMIT 1 FOR UPDATE SKIP LOCKED`: no row is locked or written by every claim (each
//!   `PostgresStore` keeps its own cursor), and concurrent claims each take a different job
//!   instead of queueing behind one another. The fairness bound this leaves is in `Store`'s
//!   docs.
//! - **Leases on the server's clock.** A claim sets `lease_until` from the server's `now()`,
//!   and a claim whose lease lapsed by the server's `now()` counts as no claim: its job is
//!   claimable, and the next claim of it is a *rescue* (a new token, so a late write from the
//!   old holder changes no row). Replicas' clocks need not agree. A lapsed claim on an ended
//!   job has nothing to rescue: [`next_wakeup`] (called only by idle workers) sweeps those,
//!   so that the job can be evicted.
//! - **Fencing.** `complete`, `retry_later`, `release` and `renew` match `in_flight = token`.
//! - **Wake-ups and events.** Every change to one job (a submit, a claim that starts it, a
//!   stored target, a retry, a release, a cancel) sends `NOTIFY` on the store's channel with
//!   a compact [`Note`] as payload: whether the change can make a job claimable (then idle
//!   workers of every replica wake), and the job's status and counts right after it. The
//!   listener (`listen.rs`) turns each into a [`StoreEvent`](crate::store::StoreEvent). A
//!   job's start, its stored targets and its end are announced *after* their commit, by the
//!   process's notifier (`notifier.rs`; [`Claimed::start_note`], [`Stored::note`]); a
//!   submit, a retry, a release and a cancel inside their transaction (delivered at commit).
//! - **Durability where it is owed.** PostgreSQL serializes the commits of transactions that
//!   sent `NOTIFY`, flush to disk included; and a claim, a renewal, a busy retry or a release
//!   lost in a server crash loses no result (the lease and the fencing token make it good).
//!   So those commit [`relaxed`] (`synchronous_commit` off for that transaction), while
//!   `submit`, `complete`, `cancel`, `touch` and eviction wait for the disk as the server is
//!   configured to; a claim made by [`complete_and_claim`] commits with its store.
//! - `submit` and `evict_oldest` take a transaction-level advisory lock each, so `max_live_jobs`
//!   and the byte budget hold across replicas.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PostgresError;
use crate::error::{InvalidJob, SubmitError};
use crate::hooks::TargetOutcome;
use crate::job::{Caller, Counts, Job, JobId, JobStatus, TargetState};
use crate::store::rows::{JobRow, SUMMARY_COLUMNS, SummaryRow, TARGET_COLUMNS, TargetRow};
use crate::store::sql::{self, EVICTABLE, HAS_WORK, IDLE, LIVE, ROTATION, SETTLED};
pub(super) use crate::store::sql::{from_micros as from_sql, to_micros as to_sql};
use crate::store::{CancelOutcome, Claim, Completion, Ended, Evicted, NewJob, Submitted};
use crate::summary::{JobSummary, Progress};
use crate::time::Timestamp;

type Result<T> = std::result::Result<T, PostgresError>;

/// The advisory lock key `submit` takes ("submit" in ASCII).
const SUBMIT_LOCK: i64 = 0x73_75_62_6d_69_74;
/// The advisory lock key `evict_oldest` takes ("evict" in ASCII).
const EVICT_LOCK: i64 = 0x65_76_69_63_74;

/// The server's clock in microseconds since the Unix epoch (its `now()`: the transaction's
/// start), which stamps and judges leases.
const SERVER_NOW: &str = "(EXTRACT(EPOCH FROM now()) * 1000000)::BIGINT";

/// The bytes the store holds (every kept job's target JSON and results), as an expression
/// read by the budget check ([`stored_bytes`]).
const STORED_BYTES: &str = "(SELECT COALESCE(SUM(bytes), 0) FROM jobs)::BIGINT";

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

/// [`query_opt`] on any connection or transaction: for the calls that are one statement.
async fn query_opt_on<C: GenericClient>(
    client: &C,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<Row>> {
    let stmt = client.prepare_cached(sql).await?;
    Ok(client.query_opt(&stmt, params).await?)
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

/// What one `NOTIFY` says: a change to job `job`, and whether it may make a job claimable.
///
/// Its payload is one short line of words, `<w|p> <job> <status> <pending> <done> <failed>`
/// and, when the change stored a target, ` <index> <d|f>`: `w` wakes idle workers, `p` is
/// progress only. For example `w 17 running 3 1 0 0 d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Note {
    /// The change may make a job claimable: idle workers should claim.
    pub(super) wake: bool,
    /// The job.
    pub(super) job: JobId,
    /// The job right after the change.
    pub(super) progress: Progress,
}

impl Note {
    fn new(wake: bool, job: i64, progress: Progress) -> Self {
        Self {
            wake,
            job: JobId::new(job as u64),
            progress,
        }
    }

    /// The payload text.
    pub(super) fn payload(&self) -> String {
        let Progress {
            status,
            counts,
            last,
            ..
        } = self.progress;
        let mut text = format!(
            "{} {} {status} {} {} {}",
            if self.wake { 'w' } else { 'p' },
            self.job,
            counts.pending,
            counts.done,
            counts.failed
        );
        if let Some((index, outcome)) = last {
            let word = match outcome {
                TargetOutcome::Done => 'd',
                TargetOutcome::Failed => 'f',
            };
            text.push_str(&format!(" {index} {word}"));
        }
        text
    }

    /// Reads a payload back; `None` if it is not one [`payload`](Self::payload) writes.
    pub(super) fn parse(text: &str) -> Option<Self> {
        let words: Vec<&str> = text.split(' ').collect();
        let (head, last) = match words.len() {
            6 => (&words[..], None),
            8 => (&words[..6], Some((&words[6], &words[7]))),
            _ => return None,
        };
        let wake = match head[0] {
            "w" => true,
            "p" => false,
            _ => return None,
        };
        let number = |word: &str| word.parse::<usize>().ok();
        let job = head[1].parse::<u64>().ok()?;
        let status = JobStatus::parse(head[2])?;
        let counts = Counts {
            pending: number(head[3])?,
            done: number(head[4])?,
            failed: number(head[5])?,
        };
        let last = match last {
            None => None,
            Some((index, word)) => Some((
                number(index)?,
                match *word {
                    "d" => TargetOutcome::Done,
                    "f" => TargetOutcome::Failed,
                    _ => return None,
                },
            )),
        };
        Some(Self {
            wake,
            job: JobId::new(job),
            progress: Progress::new(status, counts, last),
        })
    }
}

async fn notify(tx: &Transaction<'_>, channel: &str, note: Note) -> Result<()> {
    execute(tx, "SELECT pg_notify($1, $2)", &[&channel, &note.payload()]).await?;
    Ok(())
}

/// Sends `payloads` on `channel` in one statement that commits [`relaxed`] (a lost note
/// only delays watchers; `notifier.rs`): a transaction that sent `NOTIFY` holds the server's
/// notify lock through its commit, and a relaxed commit does not wait for the disk. `client`
/// is a connection of the store's own pool (autocommit) or a transaction on an
/// application's.
pub(super) async fn send_notes<C: GenericClient>(
    client: &C,
    channel: &str,
    payloads: &[String],
) -> Result<()> {
    const SQL: &str = "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', TRUE))
         SELECT COUNT(pg_notify($1, note)) FROM relaxed, unnest($2::TEXT[]) AS note";
    query_opt_on(client, SQL, &[&channel, &payloads]).await?;
    Ok(())
}

/// A job's counts from its row's `total`, `done` and `failed` (`INTEGER` columns).
fn counts(total: i32, done: i32, failed: i32) -> Counts {
    sql::counts(total.into(), done.into(), failed.into())
}

pub(super) async fn live_jobs(tx: &Transaction<'_>) -> Result<usize> {
    let sql = format!("SELECT COUNT(*) FROM jobs WHERE {LIVE}");
    let row = query_opt(tx, &sql, &[]).await?;
    Ok(row.map_or(0, |row| row.get::<_, i64>(0)) as usize)
}

fn parse_status(word: &str) -> Result<JobStatus> {
    sql::status(word).map_err(PostgresError::InvalidRow)
}

pub(super) async fn submit(
    tx: &Transaction<'_>,
    channel: &str,
    job: NewJob,
) -> std::result::Result<Submitted, SubmitError> {
    if job.targets.is_empty() {
        return Err(InvalidJob::Empty.into());
    }
    execute(tx, "SELECT pg_advisory_xact_lock($1)", &[&SUBMIT_LOCK]).await?;
    let live = live_jobs(tx).await?;
    if let Some(key) = &job.key {
        let existing = query_opt(
            tx,
            "SELECT id FROM jobs WHERE caller = $1 AND key = $2",
            &[&job.caller.as_str(), key],
        )
        .await?;
        if let Some(row) = existing {
            return Ok(Submitted {
                id: JobId::new(row.get::<_, i64>(0) as u64),
                live_jobs: live,
                existing: true,
            });
        }
    }
    if live >= job.max_live_jobs {
        return Err(SubmitError::Full);
    }
    let busy_sql = format!("SELECT id FROM jobs WHERE caller = $1 AND {LIVE}");
    let busy = query_opt(tx, &busy_sql, &[&job.caller.as_str()]).await?;
    if let Some(row) = busy {
        return Err(SubmitError::CallerBusy {
            live: JobId::new(row.get::<_, i64>(0) as u64),
        });
    }
    let bytes: i64 = job.targets.iter().map(|t| t.len() as i64).sum();
    let now = to_sql(job.now);
    let total = job.targets.len() as i32;
    let row = query_opt(
        tx,
        "INSERT INTO jobs
             (caller, status, created, updated, touched, touch_seq, total, bytes, key)
         VALUES ($1, 'queued', $2, $2, $2, nextval('touches'), $3, $4, $5)
         RETURNING id",
        &[&job.caller.as_str(), &now, &total, &bytes, &job.key],
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
    let progress = Progress::new(JobStatus::Queued, counts(total, 0, 0), None);
    notify(tx, channel, Note::new(true, id, progress)).await?;
    Ok(Submitted {
        id: JobId::new(id as u64),
        live_jobs: live + 1,
        existing: false,
    })
}

/// The claim statement: picks the first claimable job from the store's cursor on, wrapping
/// once (`$1` is the caller's `now`, for retry times; `$2` the lease in microseconds; `$3`
/// the id the cursor stands at, `cursor.rs`), skipping rows other transactions hold, and
/// claims its next target: the whole claim in one statement, so one round trip. It answers
/// the job's counts too, for the note of a job it starts ([`Claimed::start_note`], sent
/// after the commit like every progress note: `notifier.rs`).
///
/// The target is read by the picked (newest) `next`, not by `cj.next`, which the `UPDATE`
/// reads from the snapshot: a lapsed claim's holder that stores its target meanwhile moves
/// `next`, and `cj.next` would then name a stored target. It is read in a sub-select of
/// `RETURNING`, one probe of `targets`' key whatever the planner estimates: joined in the
/// `UPDATE`, a table without statistics yet was planned as a scan of every target of the
/// job, probed by `job` alone. `minted` draws the token right after the lock, so token order
/// follows the order in which claims took their jobs as closely as one statement can (the
/// three-runner test reads it).
///
/// It also makes its transaction's commit [`relaxed`] (`set_config(…, TRUE)` is `SET LOCAL`
/// as a function, so it costs no round trip): a claim lost in a server crash is a job not
/// claimed, and its holder's store is then refused by the fencing token. The statement
/// always answers one row (`claimed` joined to it, all `NULL` when nothing was claimed).
///
/// The pick walks `jobs_claimable` (`id`, live jobs) in order and stops at the first job it
/// can lock; the store's connections plan with `enable_bitmapscan` off (`options.rs`),
/// because a bitmap scan reads every entry of the index and sorts. The walk's order is the
/// id, which no update changes, so PostgreSQL's re-check of a row locked after a concurrent
/// change (READ COMMITTED re-checks the `WHERE`, not the `ORDER BY`) never takes a job out
/// of turn. And no column of the index changes when a job is claimed or a target stored:
/// both are HOT updates that leave no index entry behind, so the walk from the cursor reads
/// only live jobs' entries (and those of jobs ended since the last vacuum).
pub(super) fn claim_sql() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let claim = claim_ctes(&ClaimParams {
            now: "$1",
            lease: "$2",
            cursor: "$3",
            relaxed: true,
            also: "",
        });
        format!(
            "WITH {claim}
             SELECT {CLAIM_COLUMNS}
             FROM (SELECT 1) AS one LEFT JOIN claimed AS c ON TRUE"
        )
    });
    &SQL
}

/// The placeholders and options of [`claim_ctes`].
struct ClaimParams {
    now: &'static str,
    lease: &'static str,
    /// The id the store's cursor stands at (`cursor.rs`).
    cursor: &'static str,
    /// Whether the claim's transaction commits [`relaxed`]: not when a store shares it.
    relaxed: bool,
    /// More conditions on the picked job (`AND …`).
    also: &'static str,
}

/// The claim's common table expressions (`from_cursor`, `wrapped`, `pick`, `minted`,
/// `claimed`), shared by [`claim_sql`] and [`complete_and_claim_sql`]; [`CLAIM_COLUMNS`]
/// reads them. `from_cursor` walks from the cursor; `wrapped` walks from the lowest id, and
/// only when `from_cursor` found nothing (an uncorrelated `NOT EXISTS`, which PostgreSQL
/// evaluates once, before the walk: a one-time filter).
fn claim_ctes(p: &ClaimParams) -> String {
    let ClaimParams {
        now,
        lease,
        cursor,
        relaxed,
        also,
    } = p;
    let (relaxed_cte, relaxed_from) = if *relaxed {
        (
            "relaxed AS (SELECT set_config('synchronous_commit', 'off', TRUE)),",
            ", relaxed",
        )
    } else {
        ("", "")
    };
    let claimable = format!(
        "SELECT id, next, in_flight IS NOT NULL AS rescued, status = 'queued' AS started
         FROM jobs
         WHERE {LIVE} AND {HAS_WORK}
           AND (in_flight IS NULL OR lease_until <= {SERVER_NOW})
           AND (retry_at IS NULL OR retry_at <= {now})
           {also}"
    );
    format!(
        "from_cursor AS (
             {claimable} AND id >= {cursor}
             {ROTATION} LIMIT 1
             FOR UPDATE SKIP LOCKED),
         wrapped AS (
             {claimable} AND id < {cursor} AND NOT EXISTS (SELECT 1 FROM from_cursor)
             {ROTATION} LIMIT 1
             FOR UPDATE SKIP LOCKED),
         pick AS (SELECT * FROM from_cursor UNION ALL SELECT * FROM wrapped),
         minted AS (
             SELECT id, next, rescued, started, nextval('claim_tokens') AS token
             FROM pick),
         {relaxed_cte}
         claimed AS (
             UPDATE jobs AS cj SET in_flight = pick.token,
                 lease_until = {SERVER_NOW} + {lease}, rescue = FALSE, retry_at = NULL,
                 settled = CASE WHEN pick.rescued THEN cj.in_flight ELSE cj.settled END,
                 status = 'running',
                 updated = CASE WHEN pick.started THEN {now} ELSE cj.updated END
             FROM minted AS pick{relaxed_from}
             WHERE cj.id = pick.id
             RETURNING cj.id, cj.caller, cj.next, cj.busy_since, cj.in_flight, cj.total, cj.done,
                 cj.failed, pick.rescued, pick.started,
                 (SELECT ct.target FROM targets AS ct
                  WHERE ct.job = pick.id AND ct.idx = pick.next) AS target)"
    )
}

/// What [`claim_ctes`] answers, as columns of a select over `claimed AS c` (all `NULL` when
/// nothing was claimed); [`claimed_from_row`] reads them.
const CLAIM_COLUMNS: &str = "c.id, c.caller, c.next, c.busy_since, c.in_flight, c.rescued, \
     c.started, c.target, c.total, c.done, c.failed";

/// A claim a statement made, with the note that announces the job's start if it started one.
pub(super) struct Claimed {
    pub(super) claim: Claim,
    /// The payload of the start's progress note (`p <job> running <pending> <done>
    /// <failed>`, [`Note::payload`]), for [`Notifier::push`](super::notifier::Notifier::push).
    pub(super) start_note: Option<String>,
}

/// The claim in [`CLAIM_COLUMNS`] starting at column `at`, if one was made.
fn claimed_from_row(row: &Row, at: usize) -> Result<Option<Claimed>> {
    let Some(id) = row.get::<_, Option<i64>>(at) else {
        return Ok(None);
    };
    let caller: String = row.get(at + 1);
    let index: i32 = row.get(at + 2);
    let busy_since: Option<i64> = row.get(at + 3);
    let token: i64 = row.get(at + 4);
    let rescued: bool = row.get(at + 5);
    let started: bool = row.get(at + 6);
    let Some(target) = row.get::<_, Option<String>>(at + 7) else {
        return Err(PostgresError::InvalidRow(format!(
            "job {id} has no target {index}"
        )));
    };
    if rescued {
        tracing::warn!(job = id, "claim lease lapsed; the target is claimed again");
    }
    let start_note = started.then(|| {
        let counts = counts(row.get(at + 8), row.get(at + 9), row.get(at + 10));
        let progress = Progress::new(JobStatus::Running, counts, None);
        Note::new(false, id, progress).payload()
    });
    let claim = Claim {
        job: JobId::new(id as u64),
        caller: Caller::new(caller),
        index: index as usize,
        target_json: Arc::from(target),
        token: token as u64,
        busy_since: busy_since.map(from_sql),
        rescued,
        started,
    };
    Ok(Some(Claimed { claim, start_note }))
}

/// Claims the next target by the rotation from `cursor` (the id the store's cursor stands
/// at), in one statement ([`claim_sql`]).
pub(super) async fn claim<C: GenericClient>(
    client: &C,
    now: Timestamp,
    lease: Duration,
    cursor: i64,
) -> Result<Option<Claimed>> {
    let now = to_sql(now);
    let lease = micros(lease);
    // The statement answers one row, all `NULL` when it claimed nothing (no row at all would
    // mean the same).
    let row = query_opt_on(client, claim_sql(), &[&now, &lease, &cursor]).await?;
    match row {
        Some(row) => claimed_from_row(&row, 0),
        None => Ok(None),
    }
}

pub(super) async fn renew(tx: &Transaction<'_>, claim: &Claim, lease: Duration) -> Result<bool> {
    let sql = format!(
        "UPDATE jobs SET lease_until = GREATEST(lease_until, {SERVER_NOW} + $3)
         WHERE id = $1 AND in_flight = $2"
    );
    relaxed(tx).await?;
    let n = execute(
        tx,
        &sql,
        &[
            &(claim.job.get() as i64),
            &(claim.token as i64),
            &micros(lease),
        ],
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
    let row = query_opt(
        tx,
        "UPDATE jobs SET in_flight = NULL, lease_until = NULL, retry_at = $3,
             busy_since = COALESCE($4, busy_since), settled = $2,
             touch_seq = CASE WHEN status IN ('queued', 'running') THEN touch_seq
                              ELSE nextval('touches') END,
             touched = CASE WHEN status IN ('queued', 'running') THEN touched ELSE $5 END
         WHERE id = $1 AND in_flight = $2
         RETURNING status, total, done, failed",
        &[
            &(claim.job.get() as i64),
            &(claim.token as i64),
            &retry_at,
            &busy_since,
            &now,
        ],
    )
    .await?;
    let Some(row) = row else {
        return Ok(false);
    };
    let status = parse_status(row.get(0))?;
    let progress = Progress::new(status, counts(row.get(1), row.get(2), row.get(3)), None);
    notify(
        tx,
        channel,
        Note::new(true, claim.job.get() as i64, progress),
    )
    .await?;
    Ok(true)
}

/// The store statement: stores a claimed target's result (`$7`–`$10`) under the claim's
/// token (`$2`; the fencing: a stale claim matches no row), moves the job's `next` and counts,
/// and, when that was the job's last target, settles its status ([`sql::SETTLED`]), puts it
/// into the eviction order and counts the live jobs left. One statement, so one round trip
/// and one commit. It sends no `NOTIFY`: the job's progress or end note goes out after the
/// commit ([`Stored::note`], `notifier.rs`), because PostgreSQL holds its notify lock through
/// the commit's flush to disk, which would serialize the stores that end jobs. (The bytes
/// the store holds are not read here either: the budget check reads them at most every
/// 100 ms, `carry.rs`.)
fn complete_sql() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "WITH {}
             SELECT {} FROM j",
            store_ctes(),
            store_columns()
        )
    });
    &SQL
}

/// The store's common table expressions (`j`, `t`), shared by [`complete_sql`] and
/// [`complete_and_claim_sql`], with the placeholders `$1`–`$10` of [`complete_sql`];
/// [`store_columns`] reads them.
fn store_ctes() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "j AS (
         UPDATE jobs SET next = next + 1, done = done + $3, failed = failed + $4,
             busy_since = NULL, bytes = bytes + $5, updated = $6,
             in_flight = NULL, lease_until = NULL, retry_at = NULL,
             status = CASE WHEN {LIVE} AND next + 1 = total THEN {SETTLED}
                           ELSE status END,
             touch_seq = CASE WHEN {LIVE} AND next + 1 < total THEN touch_seq
                              ELSE nextval('touches') END,
             touched = CASE WHEN {LIVE} AND next + 1 < total THEN touched ELSE $6 END
         WHERE id = $1 AND in_flight = $2
         RETURNING id, status, next, total, done, failed, created),
     t AS (
         UPDATE targets SET state = $7, output = $8, error = $9, hint = $10, stored_by = $2
         FROM j WHERE targets.job = j.id AND targets.idx = j.next - 1
         RETURNING 1)"
        )
    });
    &SQL
}

/// What [`store_ctes`] answers, as columns of a select over `j` (all `NULL` for a stale
/// claim when `j` is outer-joined); [`stored_from_row`] reads them.
fn store_columns() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "j.status, j.next, j.total, j.done, j.failed, j.created,
     (SELECT COUNT(*) FROM t),
     CASE WHEN j.status IN ('done', 'failed', 'partial')
          THEN (SELECT COUNT(*) FROM jobs WHERE {LIVE}) - 1 END"
        )
    });
    &SQL
}

/// How many columns [`store_columns`] has.
const STORE_WIDTH: usize = 8;

/// The store statement and a claim in one ([`complete_and_claim`]): [`store_ctes`], then
/// [`claim_ctes`] with the store's `now` (`$6`), the lease `$11` and the cursor `$12`,
/// picking only when the store matched its claim (`EXISTS (SELECT 1 FROM j)`: a stale
/// claim's call claims nothing) and never the stored job itself (`id <> $1`: two updates of
/// one row in one statement are not allowed, and the pick's snapshot still sees that job's
/// claim out anyway). The claim commits with the store, as durably.
fn complete_and_claim_sql() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let claim = claim_ctes(&ClaimParams {
            now: "$6",
            lease: "$11",
            cursor: "$12",
            relaxed: false,
            also: "AND id <> $1 AND EXISTS (SELECT 1 FROM j)",
        });
        format!(
            "WITH {}, {claim}
             SELECT {}, {CLAIM_COLUMNS}
             FROM (SELECT 1) AS one LEFT JOIN j ON TRUE LEFT JOIN claimed AS c ON TRUE",
            store_ctes(),
            store_columns(),
        )
    });
    &SQL
}

/// A stored target, as [`complete`] reports it.
pub(super) struct Stored {
    /// What the store answers.
    pub(super) completion: Completion,
    /// The payload of the job's progress note (its end's, if this store ended it), which
    /// `notifier.rs` sends after the commit: a `NOTIFY` in this statement would hold
    /// PostgreSQL's database-wide notify lock through the commit's flush to disk. No wake-up
    /// is needed: the worker that stored it is claiming already, and an ended job frees no
    /// target. `None` for a stale claim.
    pub(super) note: Option<String>,
}

/// A result's columns for the store statement, and what reading its answer needs.
struct StoreArgs<'a> {
    id: i64,
    token: i64,
    done: i32,
    failed: i32,
    bytes: i64,
    now: i64,
    state: &'static str,
    output: Option<&'a str>,
    error: Option<&'a str>,
    hint: Option<&'a str>,
    outcome: TargetOutcome,
}

impl<'a> StoreArgs<'a> {
    fn new(claim: &Claim, result: &'a TargetState, now: Timestamp) -> Result<Self> {
        let (state, output, error, hint) = result
            .to_columns()
            .ok_or_else(|| PostgresError::InvalidRow("a pending result cannot be stored".into()))?;
        let outcome = if state == "done" {
            TargetOutcome::Done
        } else {
            TargetOutcome::Failed
        };
        Ok(Self {
            id: claim.job.get() as i64,
            token: claim.token as i64,
            done: i32::from(state == "done"),
            failed: i32::from(state == "failed"),
            bytes: result.stored_bytes() as i64,
            now: to_sql(now),
            state,
            output,
            error,
            hint,
            outcome,
        })
    }

    /// The store statement's parameters `$1`–`$10`.
    fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.id,
            &self.token,
            &self.done,
            &self.failed,
            &self.bytes,
            &self.now,
            &self.state,
            &self.output,
            &self.error,
            &self.hint,
        ]
    }
}

/// The answer of [`store_columns`] starting at column `at`: a stale claim when `j` matched
/// no row.
fn stored_from_row(row: &Row, at: usize, claim: &Claim, args: &StoreArgs<'_>) -> Result<Stored> {
    let Some(status) = row.get::<_, Option<&str>>(at) else {
        return Ok(Stored {
            completion: Completion::Stale,
            note: None,
        });
    };
    let status = parse_status(status)?;
    let id = args.id;
    let next: i32 = row.get(at + 1);
    let counts = counts(row.get(at + 2), row.get(at + 3), row.get(at + 4));
    let created: i64 = row.get(at + 5);
    if row.get::<_, i64>(at + 6) != 1 {
        return Err(PostgresError::InvalidRow(format!(
            "job {id} has no target {}",
            next - 1
        )));
    }
    let live_after: Option<i64> = row.get(at + 7);
    let now = from_sql(args.now);
    let progress = Progress::new(status, counts, Some(((next - 1) as usize, args.outcome)));
    let ended = live_after.map(|live| Ended {
        job: claim.job,
        status,
        counts,
        after: now.saturating_since(from_sql(created)),
        live_jobs: usize::try_from(live).unwrap_or(0),
    });
    let note = Some(Note::new(false, id, progress).payload());
    Ok(Stored {
        completion: Completion::Stored {
            bytes: args.bytes as u64,
            ended,
            progress,
        },
        note,
    })
}

/// Stores a claimed target's result in one statement ([`complete_sql`]).
pub(super) async fn complete<C: GenericClient>(
    client: &C,
    claim: &Claim,
    result: TargetState,
    now: Timestamp,
) -> Result<Stored> {
    let args = StoreArgs::new(claim, &result, now)?;
    match query_opt_on(client, complete_sql(), &args.params()).await? {
        Some(row) => stored_from_row(&row, 0, claim, &args),
        None => Ok(Stored {
            completion: Completion::Stale,
            note: None,
        }),
    }
}

/// Stores a claimed target's result and claims the next target by the rotation from
/// `cursor`, in one statement ([`complete_and_claim_sql`]). The claim is `None` when the store was stale or
/// no other job was claimable in the statement's snapshot.
pub(super) async fn complete_and_claim<C: GenericClient>(
    client: &C,
    claim: &Claim,
    result: TargetState,
    now: Timestamp,
    lease: Duration,
    cursor: i64,
) -> Result<(Stored, Option<Claimed>)> {
    let args = StoreArgs::new(claim, &result, now)?;
    let lease = micros(lease);
    let mut params = args.params().to_vec();
    params.push(&lease);
    params.push(&cursor);
    // One row always: `j` and `claimed` are outer-joined to it.
    let row = query_opt_on(client, complete_and_claim_sql(), &params)
        .await?
        .ok_or_else(|| PostgresError::InvalidRow("the store-and-claim answered no row".into()))?;
    let stored = stored_from_row(&row, 0, claim, &args)?;
    Ok((stored, claimed_from_row(&row, STORE_WIDTH)?))
}

/// The store this very claim committed already, when a finish storing its result was refused
/// by the token: an earlier try of the same finish committed and its answer was lost with
/// its connection (a call past its deadline, a dropped connection), so the runner tried
/// again. Answered as that store would have been (its note included), so the target is
/// reported once; `None` if the claim stored nothing.
///
/// The progress names this claim's target; the job's status and counts are as they are now.
/// The end is reported if this target was the job's last and the job settled (done, failed
/// or partial: a store ended it; a cancelled job's end was the cancel's).
pub(super) async fn replayed<C: GenericClient>(
    client: &C,
    claim: &Claim,
    bytes: u64,
) -> Result<Option<Stored>> {
    let sql = format!(
        "SELECT j.status, j.total, j.done, j.failed, j.created, j.updated, t.state,
                CASE WHEN j.status IN ('done', 'failed', 'partial') AND t.idx = j.total - 1
                     THEN (SELECT COUNT(*) FROM jobs WHERE {LIVE}) END
         FROM jobs AS j JOIN targets AS t ON t.job = j.id AND t.idx = $3
         WHERE j.id = $1 AND t.stored_by = $2"
    );
    let params: [&(dyn ToSql + Sync); 3] = [
        &(claim.job.get() as i64),
        &(claim.token as i64),
        &(claim.index as i32),
    ];
    let Some(row) = query_opt_on(client, &sql, &params).await? else {
        return Ok(None);
    };
    let status = parse_status(row.get(0))?;
    let counts = counts(row.get(1), row.get(2), row.get(3));
    let created: i64 = row.get(4);
    let updated: i64 = row.get(5);
    let outcome = if row.get::<_, &str>(6) == "done" {
        TargetOutcome::Done
    } else {
        TargetOutcome::Failed
    };
    let live_after: Option<i64> = row.get(7);
    let progress = Progress::new(status, counts, Some((claim.index, outcome)));
    let ended = live_after.map(|live| Ended {
        job: claim.job,
        status,
        counts,
        after: from_sql(updated).saturating_since(from_sql(created)),
        live_jobs: usize::try_from(live).unwrap_or(0),
    });
    let note = Some(Note::new(false, claim.job.get() as i64, progress).payload());
    Ok(Some(Stored {
        completion: Completion::Stored {
            bytes,
            ended,
            progress,
        },
        note,
    }))
}

/// Whether a claim whose finish was refused by its token was *lost*: undone by a server
/// crash (its claim committed without waiting for the disk), so its target is fetched again,
/// or was already, by a claim that could not know it was a second fetch.
///
/// Refused claims that were not lost, and why each is told apart:
/// - its lease lapsed and a rescue took it over (the rescue reported it), or it ended already
///   without a result (a busy retry or a release, in an earlier try whose answer a dropped
///   connection lost): the job's `settled` holds its token, or a newer one if a later claim
///   of the job settled since (tokens grow, so `settled` only grows);
/// - it stored its target in an earlier try whose answer a dropped connection lost: the
///   target's `stored_by` is its token;
/// - its job ended without the target (a cancel) or was evicted: nothing fetches the target
///   again.
///
/// What it cannot see: a lost claim whose job's next claim (a fresh one) settled before the
/// lost claim's holder finished, and a token a crash made the server hand out twice (a
/// sequence's values since its last write to disk may come again).
pub(super) async fn lost<C: GenericClient>(client: &C, claim: &Claim) -> Result<bool> {
    let row = query_opt_on(
        client,
        "SELECT (j.settled IS NULL OR j.settled < $2)
                AND t.stored_by IS DISTINCT FROM $2
                AND (j.status IN ('queued', 'running') OR t.state <> 'pending')
         FROM jobs AS j JOIN targets AS t ON t.job = j.id AND t.idx = $3
         WHERE j.id = $1",
        &[
            &(claim.job.get() as i64),
            &(claim.token as i64),
            &(claim.index as i32),
        ],
    )
    .await?;
    Ok(row.is_some_and(|row| row.get(0)))
}

/// Lets the running transaction commit without waiting for its commit record to reach the
/// disk: for calls whose loss in a server crash changes no stored result (a claim, a lease
/// renewal, a busy retry, a release), which a lapsed lease or the fencing token make good.
pub(super) async fn relaxed(tx: &Transaction<'_>) -> Result<()> {
    tx.batch_execute("SET LOCAL synchronous_commit TO OFF")
        .await?;
    Ok(())
}

pub(super) async fn retry_later(
    tx: &Transaction<'_>,
    channel: &str,
    claim: &Claim,
    busy_since: Timestamp,
    at: Timestamp,
    now: Timestamp,
) -> Result<bool> {
    relaxed(tx).await?;
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
    relaxed(tx).await?;
    end_claim(tx, channel, claim, None, None, to_sql(now)).await
}

/// Ends every lapsed claim on an ended job (nothing is left to rescue there), so that the
/// job can be evicted; rows another transaction holds are left to a later sweep.
///
/// Only a cancel ends a job with a claim out (a job's last store clears its claim in the same
/// update), so the sweep reads the cancelled jobs alone, through `jobs_cancelled`.
async fn sweep_lapsed(tx: &Transaction<'_>, now: i64) -> Result<()> {
    let sql = format!(
        "UPDATE jobs SET in_flight = NULL, lease_until = NULL,
             touch_seq = nextval('touches'), touched = $1
         WHERE id IN (
             SELECT id FROM jobs
             WHERE status = 'cancelled' AND in_flight IS NOT NULL
               AND lease_until <= {SERVER_NOW}
             FOR UPDATE SKIP LOCKED)
         RETURNING id"
    );
    for row in query(tx, &sql, &[&now]).await? {
        let job: i64 = row.get(0);
        tracing::warn!(
            job,
            "claim lease lapsed on an ended job; the claim is dropped"
        );
    }
    Ok(())
}

/// After sweeping lapsed claims of ended jobs: the earliest retry time of a job that waits
/// only for it, or, on `now`'s clock, the earliest lease of a live job to lapse.
pub(super) async fn next_wakeup(tx: &Transaction<'_>, now: Timestamp) -> Result<Option<Timestamp>> {
    let now = to_sql(now);
    sweep_lapsed(tx, now).await?;
    let sql = format!(
        "SELECT
             (SELECT MIN(retry_at) FROM jobs
              WHERE {LIVE} AND {IDLE} AND {HAS_WORK} AND retry_at IS NOT NULL),
             (SELECT MIN(lease_until) FROM jobs WHERE in_flight IS NOT NULL AND {LIVE})
                 - {SERVER_NOW}"
    );
    let Some(row) = query_opt(tx, &sql, &[]).await? else {
        return Ok(None);
    };
    let retry: Option<i64> = row.get(0);
    // The lease's time left, on the server's clock, is the same time left on the caller's.
    let lapse: Option<i64> = row
        .get::<_, Option<i64>>(1)
        .map(|left| now.saturating_add(left.max(0)));
    Ok(retry.into_iter().chain(lapse).min().map(from_sql))
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
    let sql = format!("SELECT {TARGET_COLUMNS} FROM targets WHERE job = $1 ORDER BY idx");
    let rows = query(tx, &sql, &[&(id.get() as i64)]).await?;
    let mut targets = Vec::with_capacity(rows.len());
    for row in rows {
        let row = TargetRow {
            target: row.get(0),
            state: row.get(1),
            output: row.get(2),
            error: row.get(3),
            hint: row.get(4),
        };
        targets.push(row.entry().map_err(PostgresError::InvalidRow)?);
    }
    let job = JobRow {
        status,
        created,
        updated,
    };
    Ok(Some(
        job.job(id, targets).map_err(PostgresError::InvalidRow)?,
    ))
}

/// A job's summary columns (id, status, created, updated, total, done, failed), the row's
/// first seven.
pub(super) fn summary_row(row: &Row) -> SummaryRow {
    SummaryRow {
        id: row.get(0),
        status: row.get(1),
        created: row.get(2),
        updated: row.get(3),
        // INTEGER columns here (SQLite's are all 64-bit).
        total: row.get::<_, i32>(4).into(),
        done: row.get::<_, i32>(5).into(),
        failed: row.get::<_, i32>(6).into(),
    }
}

fn to_summary(row: &Row) -> Result<JobSummary> {
    summary_row(row)
        .summary()
        .map_err(PostgresError::InvalidRow)
}

pub(super) async fn summary(
    tx: &Transaction<'_>,
    id: JobId,
    caller: &Caller,
) -> Result<Option<JobSummary>> {
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM jobs WHERE id = $1 AND caller = $2");
    let row = query_opt(tx, &sql, &[&(id.get() as i64), &caller.as_str()]).await?;
    row.as_ref().map(to_summary).transpose()
}

/// `caller`'s stored jobs in submit order, through the `jobs_caller` index.
pub(super) async fn jobs(tx: &Transaction<'_>, caller: &Caller) -> Result<Vec<JobSummary>> {
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM jobs WHERE caller = $1 ORDER BY id");
    let rows = query(tx, &sql, &[&caller.as_str()]).await?;
    rows.iter().map(to_summary).collect()
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
    let row = query_opt(
        tx,
        "UPDATE jobs SET status = 'cancelled', updated = $2, retry_at = NULL,
             touch_seq = CASE WHEN in_flight IS NULL THEN nextval('touches') ELSE touch_seq END,
             touched = CASE WHEN in_flight IS NULL THEN $2 ELSE touched END
         WHERE id = $1 RETURNING total, done, failed",
        &[&(id.get() as i64), &sql_now],
    )
    .await?
    .ok_or_else(|| PostgresError::InvalidRow("a locked job vanished".into()))?;
    let counts = counts(row.get(0), row.get(1), row.get(2));
    let progress = Progress::new(JobStatus::Cancelled, counts, None);
    notify(tx, channel, Note::new(true, id.get() as i64, progress)).await?;
    Ok(CancelOutcome::Cancelled(Ended {
        job: id,
        status: JobStatus::Cancelled,
        counts,
        after: now.saturating_since(from_sql(created)),
        live_jobs: live_jobs(tx).await?,
    }))
}

/// Bytes stored now: every kept job's target JSON and results.
pub(super) async fn stored_bytes<C: GenericClient>(client: &C) -> Result<u64> {
    let sql = format!("SELECT {STORED_BYTES}");
    let row = query_opt_on(client, &sql, &[]).await?;
    Ok(row.map_or(0, |row| row.get::<_, i64>(0)) as u64)
}

/// Evicts ended jobs, oldest touched first, until the store holds at most `max_bytes`; the
/// caller has seen it over budget outside the lock.
pub(super) async fn evict_oldest(tx: &Transaction<'_>, max_bytes: u64) -> Result<Evicted> {
    let mut evicted = Evicted::default();
    execute(tx, "SELECT pg_advisory_xact_lock($1)", &[&EVICT_LOCK]).await?;
    // Read under the lock: another replica may have evicted since the caller looked.
    let mut bytes = stored_bytes(tx).await?;
    let oldest_sql = format!(
        "SELECT id, bytes FROM jobs WHERE {EVICTABLE} ORDER BY touch_seq LIMIT 1
         FOR UPDATE SKIP LOCKED"
    );
    while bytes > max_bytes {
        let row = query_opt(tx, &oldest_sql, &[]).await?;
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
