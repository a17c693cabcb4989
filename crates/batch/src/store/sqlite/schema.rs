//! The SQLite schema and its migrations, checked through `PRAGMA user_version`.
//!
//! Each migration takes the database from version `i` to `i + 1` inside one transaction, so a
//! crash mid-migration leaves the older version intact. A database whose version is newer than
//! the last migration here was written by a newer release of this crate: it is refused and never
//! altered.

use rusqlite::{Connection, TransactionBehavior};

use super::SqliteError;

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // Version 1.
    //
    // `jobs.next` is the index of the first pending target (targets are stored in order);
    // `in_flight` the fencing token of the claim out, if any. `touch_seq` orders eviction
    // (least recently touched first); `touched` is the same moment as a timestamp, for people.
    // `bytes` is the job's target JSON plus stored results, so eviction never sums targets.
    // Timestamps are microseconds since the Unix epoch.
    "
    CREATE TABLE jobs (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        caller      TEXT    NOT NULL,
        status      TEXT    NOT NULL,
        created     INTEGER NOT NULL,
        updated     INTEGER NOT NULL,
        touched     INTEGER NOT NULL,
        touch_seq   INTEGER NOT NULL,
        total       INTEGER NOT NULL,
        next        INTEGER NOT NULL DEFAULT 0,
        done        INTEGER NOT NULL DEFAULT 0,
        failed      INTEGER NOT NULL DEFAULT 0,
        in_flight   INTEGER,
        busy_since  INTEGER,
        retry_at    INTEGER,
        bytes       INTEGER NOT NULL
    );
    -- One live job per caller, enforced by the database itself.
    CREATE UNIQUE INDEX jobs_live_caller ON jobs (caller)
        WHERE status IN ('queued', 'running');
    -- The rotation scanned live, idle jobs with a pending target in id (= submit) order
    -- (version 3 orders them by service instead).
    CREATE INDEX jobs_claimable ON jobs (id)
        WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total;
    -- Eviction takes ended, idle jobs least recently touched first.
    CREATE INDEX jobs_evictable ON jobs (touch_seq)
        WHERE status NOT IN ('queued', 'running') AND in_flight IS NULL;
    CREATE TABLE targets (
        job     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        idx     INTEGER NOT NULL,
        target  TEXT    NOT NULL,
        state   TEXT    NOT NULL DEFAULT 'pending',
        output  TEXT,
        error   TEXT,
        hint    TEXT,
        PRIMARY KEY (job, idx)
    ) WITHOUT ROWID;
    ",
    // Version 2: idempotency keys, and a caller's jobs in submit order (`CallerStore::jobs`).
    //
    // A job's counts need no column of their own: `done` and `failed` are version 1's, bumped
    // by the very `UPDATE` that stores a target, and pending is `total - done - failed`; so
    // every database written by version 1 has them right already.
    "
    ALTER TABLE jobs ADD COLUMN key TEXT;
    -- At most one stored job per caller and key; `submit` finds it through this index.
    CREATE UNIQUE INDEX jobs_caller_key ON jobs (caller, key) WHERE key IS NOT NULL;
    CREATE INDEX jobs_caller ON jobs (caller, id);
    ",
    // Version 3: the rotation is "served longest ago first" (`store/sql.rs`). `served` is the
    // job's service stamp, taken at submit and at each claim; jobs written before keep their
    // submit order (their id), and new stamps start above every id.
    "
    ALTER TABLE jobs ADD COLUMN served INTEGER NOT NULL DEFAULT 0;
    UPDATE jobs SET served = id;
    DROP INDEX jobs_claimable;
    CREATE INDEX jobs_claimable ON jobs (served, id)
        WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total;
    ",
    // Version 4: the rotation is the cursor of `Store`'s docs again (`store/sql.rs`): the
    // claimable jobs in id (= submit) order, scanned from the job after the one claimed last
    // (`rotation.cursor`, written by every claim), wrapping once. The cursor starts after the
    // job version 3 served last, so an upgraded store goes on where it was.
    "
    CREATE TABLE rotation (
        only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
        cursor   INTEGER NOT NULL
    );
    INSERT INTO rotation (only_row, cursor)
        VALUES (1, COALESCE((SELECT id + 1 FROM jobs ORDER BY served DESC, id DESC LIMIT 1), 0));
    DROP INDEX jobs_claimable;
    ALTER TABLE jobs DROP COLUMN served;
    CREATE INDEX jobs_claimable ON jobs (id)
        WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total;
    ",
    // Version 5: pages (`crate::page`, `pages.rs`) walk an index from their key, whatever the
    // store holds. A caller's jobs of every status walk version 2's `jobs_caller`, everyone's
    // the primary key, a job's targets `targets`' primary key (its pending ones from its
    // `next` on); these are the status filters and the failed targets. Only a failed
    // target's store writes an entry in `targets_failed`. `claim_from` is the cursor the
    // claim out started its walk from, which its release gives back (`Store`'s docs: a
    // released claim hands its turn back); written by the claim's own `UPDATE`.
    "
    ALTER TABLE jobs ADD COLUMN claim_from INTEGER;
    CREATE INDEX jobs_caller_status ON jobs (caller, status, id);
    CREATE INDEX jobs_status ON jobs (status, id);
    CREATE INDEX targets_failed ON targets (job, idx) WHERE state = 'failed';
    ",
];

/// The schema version this crate writes.
pub(super) const VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the schema up to [`VERSION`], refusing a newer one.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), SqliteError> {
    let found: u32 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > VERSION {
        return Err(SqliteError::NewerSchema {
            found,
            supported: VERSION,
        });
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let now: u32 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if now as usize > from {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", from as u32 + 1)?;
        tx.commit()?;
        tracing::info!(version = from + 1, "batch sqlite store: schema migrated");
    }
    Ok(())
}
