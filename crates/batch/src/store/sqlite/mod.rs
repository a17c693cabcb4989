//! [`SqliteStore`]: every job in one SQLite file, durable across restarts.

mod error;
mod queries;
mod schema;

use std::future::{Future, Ready, ready};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

pub use error::SqliteError;

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId, TargetState};
use crate::store::{CancelOutcome, Claim, Completion, Evicted, NewJob, Store, Submitted};
use crate::sync::Mutex;
use crate::time::Timestamp;

/// How a [`SqliteStore`] syncs to disk: SQLite's `PRAGMA synchronous` in WAL mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `NORMAL`: a commit is durable once the next WAL checkpoint syncs. A power loss may undo
    /// the last few commits; a process crash never does. The default, and the fast choice.
    #[default]
    Normal,
    /// `FULL`: every commit syncs the WAL before it returns; durable against power loss, at the
    /// cost of one fsync per stored target.
    Full,
}

/// Settings for opening a [`SqliteStore`]; [`SqliteStore::options`] makes one.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    busy_timeout: Duration,
    synchronous: Synchronous,
    verify: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            synchronous: Synchronous::Normal,
            verify: true,
        }
    }
}

impl SqliteOptions {
    /// How long a call waits for another connection's lock before it fails with
    /// [`SqliteError::Locked`] (default 5 s). The wait blocks the calling thread.
    #[must_use]
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The sync mode (default [`Synchronous::Normal`]).
    #[must_use]
    pub fn synchronous(mut self, mode: Synchronous) -> Self {
        self.synchronous = mode;
        self
    }

    /// Whether opening runs SQLite's `quick_check` over the whole file, so that a damaged file
    /// is refused at once instead of failing on the first job that reaches a bad page (default
    /// `true`; it reads the whole file once).
    #[must_use]
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Opens (or creates) the database at `path`.
    ///
    /// # Errors
    ///
    /// [`SqliteError::Corrupt`] for a file that is not a sound SQLite database,
    /// [`SqliteError::Unreadable`] when it cannot be opened, [`SqliteError::ReadOnly`],
    /// [`SqliteError::Locked`] when another connection holds it past the busy timeout,
    /// [`SqliteError::NewerSchema`] for a database from a newer release (left untouched).
    pub fn open(&self, path: impl AsRef<Path>) -> Result<SqliteStore, SqliteError> {
        let path = path.as_ref();
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        self.prepare(conn, Some(path.to_path_buf()))
    }

    /// Opens a private in-memory database (SQLite's `:memory:`): the SQLite code path without a
    /// file, for tests. It is gone when the store is dropped.
    pub fn open_in_memory(&self) -> Result<SqliteStore, SqliteError> {
        self.prepare(Connection::open_in_memory()?, None)
    }

    fn prepare(
        &self,
        mut conn: Connection,
        path: Option<PathBuf>,
    ) -> Result<SqliteStore, SqliteError> {
        conn.busy_timeout(self.busy_timeout)?;
        // Every query of `queries.rs` stays prepared; the default cache of 16 would thrash.
        conn.set_prepared_statement_cache_capacity(64);
        if self.verify {
            let verdict: String = conn.pragma_query_value(None, "quick_check", |row| row.get(0))?;
            if verdict != "ok" {
                return Err(SqliteError::Corrupt(verdict));
            }
        }
        // Refuse a newer schema before anything (journal mode included) is changed.
        let found: u32 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if found > schema::VERSION {
            // Closing would checkpoint a WAL left by the newer release into the file: leave the
            // file exactly as it is.
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )?;
            return Err(SqliteError::NewerSchema {
                found,
                supported: schema::VERSION,
            });
        }
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(SqliteError::ReadOnly(
                "the file cannot be opened for writing".into(),
            ));
        }
        if path.is_some() {
            let mode: String =
                conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(SqliteError::ReadOnly(format!("journal mode stays {mode}")));
            }
        }
        let sync = match self.synchronous {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", sync)?;
        conn.pragma_update(None, "foreign_keys", true)?;
        schema::migrate(&mut conn)?;
        let counters = {
            let tx = conn.transaction()?;
            queries::Counters::load(&tx)?
        };
        tracing::debug!(path = ?path, "batch sqlite store open");
        Ok(SqliteStore {
            inner: Mutex::new(Inner { conn, counters }),
            path,
        })
    }
}

/// A [`Store`] in one SQLite file: jobs, targets and results survive a restart.
///
/// One connection, in WAL mode, behind one lock: every call is one short transaction that
/// blocks its thread for the time SQLite takes (microseconds with
/// [`Synchronous::Normal`]). The rotation lives in the database too (a partial index of the
/// claimable jobs in submit order); only its cursor is kept in memory, so a restarted runner
/// starts the rotation again at the oldest live job.
///
/// # Guarantees
///
/// - **Restart.** [`Runner::new`](crate::Runner::new) over a store holding `queued` or
///   `running` jobs puts them back into the rotation in submit order. Targets already stored
///   keep their results and are not fetched again; pending ones are fetched.
/// - **At-least-once fetch, exactly-once storage.** A target in flight when the process died
///   was never stored: it is fetched again after the restart, and its result is stored once.
/// - **Nothing stored is lost** by a failed call: each call is one transaction, rolled back on
///   error (a full disk, a lock held too long).
/// - Claims never lapse ([`Store::lease_ttl`] is `None`): one process owns the file. Two
///   runners over one file at once are not supported; the PostgreSQL store is for that.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use batch::{Caller, Config, FetchError, Runner, store::SqliteStore};
///
/// # let dir = std::env::temp_dir().join(format!("batch-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(dir.join("jobs.db"))?;
/// let fetch = |_cancel, _caller: &Caller, n: &u32| {
///     let n = *n;
///     async move { Ok::<u32, FetchError>(n + 1) }
/// };
/// let runner = Runner::new(Config::default(), store, fetch).await?;
/// let id = runner.submit(&Caller::new("ann"), &[1, 2, 3]).await?;
/// # let _ = id;
/// runner.close().await;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    inner: Mutex<Inner>,
    path: Option<PathBuf>,
}

/// What the store's lock guards: the one connection, and the counters kept beside it.
#[derive(Debug)]
struct Inner {
    conn: Connection,
    counters: queries::Counters,
}

impl SqliteStore {
    /// Default options, to change before opening.
    pub fn options() -> SqliteOptions {
        SqliteOptions::default()
    }

    /// Opens (or creates) the database at `path` with default options.
    ///
    /// # Errors
    ///
    /// As [`SqliteOptions::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SqliteError> {
        SqliteOptions::default().open(path)
    }

    /// A private in-memory SQLite database with default options, for tests.
    ///
    /// # Errors
    ///
    /// Only if SQLite cannot allocate the database.
    pub fn open_in_memory() -> Result<Self, SqliteError> {
        SqliteOptions::default().open_in_memory()
    }

    /// The file, or `None` for an in-memory database.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Live (queued or running) jobs now.
    ///
    /// # Errors
    ///
    /// The database could not be read.
    pub fn live_jobs(&self) -> Result<usize, SqliteError> {
        self.read(queries::live_jobs)
    }

    /// Bytes stored now: every kept job's target JSON and results.
    pub fn stored_bytes(&self) -> u64 {
        self.inner.lock().counters.bytes()
    }

    /// Runs `f` in one immediate (writing) transaction. The transaction and the counters `f`
    /// changed are kept together only if `f` and the commit succeed.
    fn write<R, E>(
        &self,
        f: impl FnOnce(&Transaction<'_>, &mut queries::Counters) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<SqliteError>,
    {
        let mut inner = self.inner.lock();
        let Inner { conn, counters } = &mut *inner;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| E::from(err.into()))?;
        let mut changed = *counters;
        let value = f(&tx, &mut changed)?;
        tx.commit().map_err(|err| E::from(err.into()))?;
        *counters = changed;
        Ok(value)
    }

    /// Runs `f` in one read transaction.
    fn read<R>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<R, SqliteError>,
    ) -> Result<R, SqliteError> {
        let mut inner = self.inner.lock();
        let tx = inner.conn.transaction()?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    #[cfg(test)]
    pub(crate) fn with_connection<R>(&self, f: impl FnOnce(&Connection) -> R) -> R {
        f(&self.inner.lock().conn)
    }
}

/// A finished call as the ready future the [`Store`] trait returns.
fn done<R>(result: Result<R, SqliteError>) -> Ready<Result<R, StoreError>> {
    ready(result.map_err(StoreError::from))
}

impl From<SqliteError> for SubmitError {
    fn from(err: SqliteError) -> Self {
        SubmitError::Store(err.into())
    }
}

impl Store for SqliteStore {
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        done(self.write(|tx, c| queries::recover(tx, c, now)))
    }

    fn submit(&self, job: NewJob) -> impl Future<Output = Result<Submitted, SubmitError>> + Send {
        ready(self.write(|tx, c| queries::submit(tx, c, job)))
    }

    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        done(self.write(|tx, c| queries::claim(tx, c, now)))
    }

    fn renew(
        &self,
        claim: &Claim,
        _now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        done(self.read(|tx| queries::renew(tx, claim)))
    }

    fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<Completion, StoreError>> + Send {
        done(self.write(|tx, c| queries::complete(tx, c, claim, result, now)))
    }

    fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        done(self.write(|tx, c| queries::retry_later(tx, c, claim, busy_since, at, now)))
    }

    fn release(
        &self,
        claim: &Claim,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        done(self.write(|tx, c| queries::release(tx, c, claim, now)))
    }

    fn next_wakeup(&self) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        done(self.read(queries::next_wakeup))
    }

    fn status(
        &self,
        id: JobId,
        caller: &Caller,
    ) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send {
        done(self.read(|tx| queries::status(tx, id, caller)))
    }

    fn touch(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        done(self.write(|tx, c| queries::touch(tx, c, id, caller, now)))
    }

    fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        done(self.write(|tx, c| queries::cancel(tx, c, id, caller, now)))
    }

    fn evict_oldest(
        &self,
        max_bytes: u64,
    ) -> impl Future<Output = Result<Evicted, StoreError>> + Send {
        if self.stored_bytes() <= max_bytes {
            return done(Ok(Evicted::default()));
        }
        done(self.write(|tx, c| queries::evict_oldest(tx, c, max_bytes)))
    }
}

#[cfg(test)]
mod tests;
