//! [`SqliteOptions`]: how a [`SqliteStore`] is opened, each setting checked before the file
//! is touched.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::owner::OwnerLock;
use super::{SqliteError, SqliteStore, queries, schema};

/// The longest [`SqliteOptions::busy_timeout`]: SQLite counts it in `int` milliseconds
/// (about 24.8 days).
pub(crate) const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

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
    /// [`SqliteError::Locked`] (default 5 s; at most about 24.8 days, SQLite's `int` of milliseconds, checked at
    /// open).
    /// The wait happens on the store's own thread, never on a tokio thread.
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

    /// Opens (or creates) the database at `path`, which this store then owns: a second open
    /// of the same file fails with [`SqliteError::InUse`] until this store is dropped.
    ///
    /// Blocks the calling thread while it checks and migrates the file (see
    /// [`SqliteStore`]'s "Blocking").
    ///
    /// # Errors
    ///
    /// Checked before the file is touched: [`SqliteError::InvalidSetting`] for an option out
    /// of range, [`SqliteError::InvalidPath`] for `""` or `":memory:"` (use
    /// [`SqliteStore::open_in_memory`]), [`SqliteError::InUse`] when another store
    /// owns the file. Then [`SqliteError::Corrupt`] for a file that is not a sound SQLite
    /// database, [`SqliteError::Unreadable`] when it cannot be opened,
    /// [`SqliteError::ReadOnly`], [`SqliteError::Locked`] when another connection holds it
    /// past the busy timeout, [`SqliteError::NewerSchema`] for a database from a newer release
    /// (left untouched).
    pub fn open(&self, path: impl AsRef<Path>) -> Result<SqliteStore, SqliteError> {
        let path = path.as_ref();
        self.validate()?;
        if path.as_os_str().is_empty() || path.as_os_str() == ":memory:" {
            return Err(SqliteError::InvalidPath {
                path: path.to_path_buf(),
                reason: "SQLite reads it as a private temporary database, not a file; \
                         use open_in_memory for that"
                    .into(),
            });
        }
        // The owner lock comes first: a refused open must not even read the file.
        let owner = OwnerLock::acquire(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // The canonical path: SQLite names its WAL after it, whatever name was given.
        let conn = Connection::open_with_flags(owner.path(), flags)?;
        self.prepare(conn, Some(owner))
    }

    /// Opens a private in-memory database, as [`SqliteStore::open_in_memory`].
    pub(crate) fn open_in_memory(&self) -> Result<SqliteStore, SqliteError> {
        self.validate()?;
        self.prepare(Connection::open_in_memory()?, None)
    }

    /// Checks every setting.
    fn validate(&self) -> Result<(), SqliteError> {
        if self.busy_timeout > MAX_BUSY_TIMEOUT {
            return Err(SqliteError::InvalidSetting {
                setting: "busy_timeout",
                reason: format!(
                    "{:?} is above the most SQLite takes, {MAX_BUSY_TIMEOUT:?}",
                    self.busy_timeout
                ),
            });
        }
        Ok(())
    }

    fn prepare(
        &self,
        mut conn: Connection,
        owner: Option<OwnerLock>,
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
        if owner.is_some() {
            // A file (an in-memory database has no owner lock and no WAL).
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
        tracing::debug!(path = ?owner.as_ref().map(OwnerLock::path), "batch sqlite store open");
        SqliteStore::start(conn, counters, owner, self.busy_timeout)
    }
}
