//! The PostgreSQL schema and its migrations, checked through a `schema_version` row.
//!
//! Every table lives in the store's own PostgreSQL schema (a namespace, `batch` by default),
//! so one database can hold several independent stores. Migrating takes a transaction-level
//! advisory lock first: replicas that start together migrate once, one after another. Each
//! migration runs in that one transaction with the version bump, so a crash mid-migration
//! leaves the older version intact. A version newer than the last migration here was written
//! by a newer release of this crate: it is refused and never altered.

use tokio_postgres::Client;

use super::PostgresError;

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // Version 1: the SQLite store's tables, plus what a shared store needs.
    //
    // `in_flight` is the fencing token of the claim out (from `claim_tokens`), `lease_until`
    // when that claim lapses unless renewed, `rescue` that the last claim lapsed. The rotation's
    // cursor is one row: every claim locks it, which is what keeps the round-robin exact across
    // replicas. Timestamps are microseconds since the Unix epoch, as the runners' clocks say.
    "
    CREATE TABLE jobs (
        id          BIGSERIAL PRIMARY KEY,
        caller      TEXT    NOT NULL,
        status      TEXT    NOT NULL,
        created     BIGINT  NOT NULL,
        updated     BIGINT  NOT NULL,
        touched     BIGINT  NOT NULL,
        touch_seq   BIGINT  NOT NULL,
        total       INTEGER NOT NULL,
        next        INTEGER NOT NULL DEFAULT 0,
        done        INTEGER NOT NULL DEFAULT 0,
        failed      INTEGER NOT NULL DEFAULT 0,
        in_flight   BIGINT,
        lease_until BIGINT,
        rescue      BOOLEAN NOT NULL DEFAULT FALSE,
        busy_since  BIGINT,
        retry_at    BIGINT,
        bytes       BIGINT  NOT NULL
    );
    CREATE UNIQUE INDEX jobs_live_caller ON jobs (caller)
        WHERE status IN ('queued', 'running');
    CREATE INDEX jobs_claimable ON jobs (id)
        WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total;
    CREATE INDEX jobs_leased ON jobs (lease_until) WHERE in_flight IS NOT NULL;
    CREATE INDEX jobs_evictable ON jobs (touch_seq)
        WHERE status NOT IN ('queued', 'running') AND in_flight IS NULL;
    CREATE TABLE targets (
        job     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        idx     INTEGER NOT NULL,
        target  TEXT    NOT NULL,
        state   TEXT    NOT NULL DEFAULT 'pending',
        output  TEXT,
        error   TEXT,
        hint    TEXT,
        PRIMARY KEY (job, idx)
    );
    CREATE TABLE rotation (
        only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
        cursor   BIGINT NOT NULL
    );
    INSERT INTO rotation (cursor) VALUES (0);
    CREATE SEQUENCE claim_tokens;
    CREATE SEQUENCE touches;
    ",
    // Version 2: idempotency keys, and a caller's jobs in submit order (`CallerStore::jobs`).
    //
    // A job's counts need no column of their own: `done` and `failed` are version 1's, bumped
    // by the very `UPDATE` that stores a target, and pending is `total - done - failed`; so
    // every schema written by version 1 has them right already.
    "
    ALTER TABLE jobs ADD COLUMN key TEXT;
    CREATE UNIQUE INDEX jobs_caller_key ON jobs (caller, key) WHERE key IS NOT NULL;
    CREATE INDEX jobs_caller ON jobs (caller, id);
    ",
    // Version 3: claims that run in parallel, and leases on the server's clock.
    //
    // The rotation is "served longest ago first" (`store/sql.rs`): `served` is the job's
    // service stamp from `serves`, taken at submit and at each claim, and a claim is one
    // `UPDATE` over `ORDER BY served, id LIMIT 1 FOR UPDATE SKIP LOCKED`, so no row is locked
    // by every claim. Jobs written before keep their submit order (their id); new stamps start
    // above every id. `lease_until` is now stamped and judged with the server's `now()`.
    // The `rotation` row is no longer read; it stays so that replicas of the previous release
    // keep working beside these during a rolling upgrade.
    "
    ALTER TABLE jobs ADD COLUMN served BIGINT NOT NULL DEFAULT 0;
    UPDATE jobs SET served = id;
    CREATE SEQUENCE serves;
    SELECT setval('serves', (SELECT COALESCE(MAX(id), 0) + 1 FROM jobs));
    DROP INDEX jobs_claimable;
    CREATE INDEX jobs_claimable ON jobs (served, id)
        WHERE status IN ('queued', 'running') AND next < total;
    ",
    // Version 4: a stored target updates its job in place (a HOT update).
    //
    // PostgreSQL updates a row without touching its indexes only when no column an index
    // names (key or `WHERE`) changes value. Version 3's indexes named `next` and `in_flight`
    // and `lease_until`, so both updates of every target (claim and store) wrote a new entry in
    // every index of `jobs` and left a dead one behind. Now only `served` (the claim's
    // rotation key) and `status`/`touch_seq` (a job's start and end) are indexed among the
    // columns that change: a live job always has a pending target (its last store ends it),
    // so `next < total` adds nothing to `jobs_claimable`; the earliest lease is read from
    // live jobs through that index, and lapsed claims of ended jobs from cancelled ones
    // through `jobs_cancelled` (only a cancel ends a job with a claim out); eviction checks
    // `in_flight` on the few ended jobs it visits. The fill factor leaves room on each page
    // for the new row versions.
    "
    DROP INDEX jobs_claimable;
    CREATE INDEX jobs_claimable ON jobs (served, id) WHERE status IN ('queued', 'running');
    DROP INDEX jobs_leased;
    DROP INDEX jobs_evictable;
    CREATE INDEX jobs_evictable ON jobs (touch_seq) WHERE status NOT IN ('queued', 'running');
    CREATE INDEX jobs_cancelled ON jobs (id) WHERE status = 'cancelled';
    ALTER TABLE jobs SET (fillfactor = 50);
    ",
    // Version 5: the rotation is the cursor of `Store`'s docs again: the live jobs in id
    // (= submit) order, walked from the cursor each `PostgresStore` keeps in memory
    // (`cursor.rs`), wrapping once. `jobs_claimable` names only `id` and the status, so a
    // claim, like a stored target, is a HOT update now. `served` and `serves` are no longer
    // read or written; they stay so that replicas of the previous release keep running beside
    // these during a rolling upgrade (they take the jobs submitted here first).
    "
    DROP INDEX jobs_claimable;
    CREATE INDEX jobs_claimable ON jobs (id) WHERE status IN ('queued', 'running');
    ",
    // Version 6: what tells a claim lost in a server crash from one that ended or that a
    // rescue took over (`queries::lost`). `settled` is the newest token of the job whose claim
    // ended without a result or was taken over; `stored_by` the token of the claim that stored
    // the target. Neither is indexed, so claims and stores stay HOT updates; replicas of the
    // previous release leave both unset, which only makes a lost claim of theirs uncounted.
    "
    ALTER TABLE jobs ADD COLUMN settled BIGINT;
    ALTER TABLE targets ADD COLUMN stored_by BIGINT;
    ",
    // Version 7: pages (`crate::page`, `pages.rs`) walk an index from their key, whatever the
    // store holds. A caller's jobs of every status walk version 2's `jobs_caller`, everyone's
    // the primary key, a job's targets `targets`' primary key (its pending ones from its
    // `next` on); these are the status filters and the failed targets. Among the columns
    // that change, the two on `jobs` name only `status`, which `jobs_claimable` names already
    // (it changes at a job's start and end), so claims and stored targets stay HOT updates
    // of `jobs`. `targets_failed` names `state`, which a stored target changes, so a store
    // is no HOT update of `targets` (it rarely was: targets are packed at submit, and a new
    // row version seldom finds room on its page); only a failed target's new version gets
    // an entry in it.
    // Replicas of the previous release read none of these and keep running beside this one;
    // their writes wait while the indexes build (the migration holds the tables' `SHARE`
    // lock until it commits), so over a large store migrate at a quiet moment
    // (`PostgresOptions::migrate`).
    "
    CREATE INDEX jobs_caller_status ON jobs (caller, status, id);
    CREATE INDEX jobs_status ON jobs (status, id);
    CREATE INDEX targets_failed ON targets (job, idx) WHERE state = 'failed';
    ",
];

/// The schema version this crate writes.
pub(super) const VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock key migrations take (any constant; "batch" in ASCII).
const MIGRATION_LOCK: i64 = 0x62_61_74_63_68;

/// Creates `schema` (a name `PostgresOptions` validated: no quote can occur in it) if needed
/// and brings it up to [`VERSION`], refusing a newer one.
pub(super) async fn migrate(client: &mut Client, schema: &str) -> Result<(), PostgresError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    // Quoted: a valid name may still be a reserved word (`select`).
    // A migration may take longer than a store call: the connection's statement_timeout
    // (the call deadline) does not apply to it.
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout TO 0;
         CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
    ))
    .await?;
    let found: Option<i32> = tx
        .query_opt("SELECT version FROM schema_version", &[])
        .await?
        .map(|row| row.get(0));
    let found = found.unwrap_or(0);
    if found > VERSION {
        return Err(PostgresError::NewerSchema {
            found,
            supported: VERSION,
        });
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(sql).await?;
        tracing::info!(
            schema,
            version = from + 1,
            "batch postgres store: schema migrated"
        );
    }
    if found < VERSION {
        tx.execute("DELETE FROM schema_version", &[]).await?;
        tx.execute("INSERT INTO schema_version VALUES ($1)", &[&VERSION])
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
