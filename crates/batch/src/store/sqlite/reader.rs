//! The read connection: a second connection to a file store's database, on a thread of its
//! own, that answers the callers' reads (`status`, `summary`, `jobs`, `live_jobs`) beside the
//! writer.
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
//! 6. **The writer wins the CPU.** The reader's thread runs at a lower scheduling priority
//!    than the rest of the process ([`READER_NICENESS`] steps nicer, on Linux), so on a busy
//!    machine a long read takes its CPU time from the slack, not from the writer's stores. A
//!    read still runs when the CPU is contended, only slower: a nice thread's share is small,
//!    never zero. Where the OS refuses (another OS, a limit), the reader runs at the
//!    process's priority and only this rule is lost.
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

/// How many steps nicer than its process the reader's thread runs (rule 6). Under Linux's
/// scheduler each step gives about 1.25× less CPU weight; ten steps leave the reader about a
/// tenth of the writer's share when both want the CPU.
pub(super) const READER_NICENESS: i32 = 10;

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

    fn started(&mut self) {
        lower_this_threads_priority();
    }
}

/// Rule 6: makes the calling thread [`READER_NICENESS`] steps nicer than it is (capped at the
/// nicest, 19). Linux gives each thread a niceness of its own; nothing is unsafe here.
#[cfg(target_os = "linux")]
fn lower_this_threads_priority() {
    use rustix::process::{getpriority_process, setpriority_process};
    let thread = Some(rustix::thread::gettid());
    let lowered = getpriority_process(thread)
        .and_then(|now| setpriority_process(thread, (now + READER_NICENESS).min(19)));
    if let Err(error) = lowered {
        tracing::debug!(%error, "the SQLite reader runs at the process's priority");
    }
}

/// Rule 6 needs a per-thread niceness, which only Linux gives: elsewhere the reader runs at
/// the process's priority.
#[cfg(not(target_os = "linux"))]
fn lower_this_threads_priority() {}
