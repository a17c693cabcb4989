//! The read connection: a second connection to a file store's database, on a thread of its
//! own, that answers the callers' reads (`status`, `summary`, `jobs`, the pages of
//! `store/sqlite/pages.rs`, `live_jobs`) beside the writer.
//!
//! # Why
//!
//! The writer thread runs its calls one at a time. A read on it holds every write behind it
//! for as long as it takes: `status` of a job of 100,000 targets reads and decodes every
//! target (hundreds of milliseconds), and a client polling it kept a job's targets from being
//! stored at all. In WAL mode readers and the writer never block each other, so the reads
//! move to a connection of their own.
//!
//! # Rules
//!
//! 1. **Read your writes.** A read runs in a read transaction that begins on the reader's
//!    thread after the call arrived ([`ConnectionThread`]'s batch: `BEGIN`, the reads in the
//!    order sent, `COMMIT`). Every write whose answer a caller had before sending the read had
//!    committed before that answer left (the writer's step 3), so its snapshot holds it.
//! 2. **One snapshot per read.** A read of several statements (`status`: the job row, then
//!    its targets) sees one committed state, never half of a write.
//! 3. **Reads only.** The connection is `query_only`: a write through it fails instead of
//!    taking the write lock from the writer.
//! 4. **Reads wait for reads, never for writes.** Reads run one at a time, in the order sent,
//!    so a long read delays the reads sent after it; a write never waits for a read, nor a
//!    read for a write.
//! 5. **The owner lock outlives both connections.** The reader and the writer each hold the
//!    [`OwnerLock`] through an `Arc` and close their connection before letting go of it, so
//!    the file's lock (and this process's registry entry) goes only once neither connection
//!    is open (`owner.rs`, step 3).
//!
//! A read transaction lasts one batch of reads, so the WAL is held from being reset only
//! while reads run, and the writer's checkpoints finish between them.
//!
//! A private in-memory database has no file to open twice: its reads stay on the writer's
//! thread.
//!
//! [`ConnectionThread`]: super::thread::ConnectionThread

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::SqliteError;
use super::owner::OwnerLock;
use super::thread::Batches;
use crate::error::StoreError;

/// What the reader's thread owns. Fields drop in order: the connection closes before the
/// owner lock is let go (rule 5).
#[derive(Debug)]
pub(super) struct Reader {
    conn: Connection,
    _owner: Arc<OwnerLock>,
}

impl Reader {
    /// Opens the read connection to the database `owner` holds, which the writer has already
    /// opened, migrated and put in WAL mode.
    ///
    /// # Errors
    ///
    /// SQLite could not open the file or set the connection up.
    pub(super) fn open(owner: Arc<OwnerLock>, busy_timeout: Duration) -> Result<Self, SqliteError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(owner.path(), flags)?;
        // A reader waits only in the rare moments a WAL reset or recovery holds its lock.
        conn.busy_timeout(busy_timeout)?;
        conn.set_prepared_statement_cache_capacity(16);
        conn.pragma_update(None, "query_only", true)?;
        Ok(Self {
            conn,
            _owner: owner,
        })
    }

    /// Runs `f`, which only reads, in the batch's read transaction.
    pub(super) fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, SqliteError>,
    ) -> Result<R, SqliteError> {
        f(&self.conn)
    }

    fn execute(&self, sql: &str) -> Result<(), SqliteError> {
        super::execute(&self.conn, sql)
    }
}

impl Batches for Reader {
    type Error = SqliteError;

    fn begin(&mut self) -> Result<(), SqliteError> {
        // DEFERRED: a read transaction, whose snapshot is taken at its first read (rule 1).
        self.execute("BEGIN")
    }

    fn commit(&mut self) -> Result<(), SqliteError> {
        self.execute("COMMIT")
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = self.execute("ROLLBACK");
        }
    }

    fn failure(error: &SqliteError) -> StoreError {
        error.duplicate().into()
    }
}
