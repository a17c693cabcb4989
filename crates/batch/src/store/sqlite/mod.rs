//! [`SqliteStore`]: every job in one SQLite file, durable across restarts.

mod error;
mod options;
mod owner;
mod pages;
mod queries;
mod reader;
mod schema;
mod thread;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;

pub use error::SqliteError;
pub use options::{SqliteOptions, Synchronous};

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId};
use crate::page::{JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery};
use crate::store::{
    BoxFuture, CallerStore, CancelOutcome, Claim, ClaimEnd, Completion, Evicted, Finished, NewJob,
    Submitted, WorkerStore,
};
use crate::summary::JobSummary;
use crate::time::Timestamp;
use owner::OwnerLock;
use reader::Reader;
use thread::ConnectionThread;

/// A [`Store`](super::Store) in one SQLite file: jobs, targets and results survive a restart.
///
/// Two connections, in WAL mode, each on a thread of its own, so SQLite's work (and its
/// fsyncs, with [`Synchronous::Full`]) never blocks the tokio thread that awaits it. The
/// writer's thread runs the workers' calls and every write one at a time, in the order they
/// were made; calls that arrive while it is busy share the next commit (group commit), each
/// in a savepoint of its own, and none answers before its commit. The reader's thread answers
/// [`status`](CallerStore::status), [`summary`](CallerStore::summary),
/// [`jobs`](CallerStore::jobs), the pages ([`jobs_page`](CallerStore::jobs_page),
/// [`job`](CallerStore::job), [`targets_page`](CallerStore::targets_page)) and
/// [`live_jobs`](Self::live_jobs) from a snapshot that holds
/// every write answered before the read was made: a long read (every target of a big job)
/// never holds a write back. The rotation lives in the database too (a partial
/// index of the claimable jobs in submit order, and the cursor's row), so a restarted runner
/// goes on with the job after the one claimed last.
///
/// # Guarantees
///
/// - **One owner.** While a store has a file open, a second open of that file, from this
///   process or another, through the same name or any other (a symlink, a hard link, a
///   relative path), fails with [`SqliteError::InUse`] and changes nothing. The lock is the
///   kernel's, on the database file itself: it goes with the process, so a killed owner's
///   file opens at once in its successor. A dropped store's file opens again at once in the
///   same process. A file with more than one hard link is refused at open
///   ([`SqliteError::InvalidPath`]): SQLite names its WAL after the path, so a second name
///   can lose committed transactions.
/// - **Restart.** [`Runner::new`](crate::Runner::new) over a store holding `queued` or
///   `running` jobs puts them back into the rotation where it was. Targets already stored
///   keep their results and are not fetched again; pending ones are fetched.
/// - **At-least-once fetch, exactly-once storage.** A target in flight when the process died
///   was never stored: it is fetched again after the restart, and its result is stored once.
/// - **Nothing stored is lost** by a failed call: each call is one savepoint of a transaction,
///   undone on error (a full disk, a lock held too long), and answered only once committed.
/// - Claims never lapse ([`WorkerStore::lease_ttl`] is `None`): one process owns the file. Several
///   runner processes over one set of jobs need the PostgreSQL store.
///
/// # Blocking
///
/// Opening reads the file (its `quick_check` reads all of it) on the calling thread: open
/// before starting a runtime, or inside `tokio::task::spawn_blocking`, for a large file.
/// Dropping the store blocks nothing: its thread finishes the calls already sent and closes
/// the file (one WAL checkpoint) in the background. Opening the same file again in this
/// process waits for that; another process sees [`SqliteError::InUse`] until it is done.
/// [`close`](SqliteStore::close) awaits it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use lockgate_batch::store::{SqliteError, SqliteStore};
/// use lockgate_batch::{Caller, Config, FetchError, Runner};
///
/// # let dir = std::env::temp_dir().join(format!("batch-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(dir.join("jobs.db"))?;
/// // The file has one owner at a time.
/// assert!(matches!(SqliteStore::open(dir.join("jobs.db")), Err(SqliteError::InUse { .. })));
///
/// let fetch = lockgate_batch::fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n + 1) });
/// let runner = Runner::new(Config::default(), store, fetch).await?;
/// let id = runner.submit(&Caller::new("ann"), &[1, 2, 3]).await?;
/// # let _ = id;
/// runner.close().await;
/// # drop(runner);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    /// The writer: every write, and the workers' reads.
    thread: ConnectionThread<Inner>,
    /// The callers' reads (`reader.rs`); `None` in memory, where they go to the writer.
    reader: Option<ConnectionThread<Reader>>,
    /// The owner lock's key, for handing the closing thread over on drop (`None` in memory).
    owner_key: Option<owner::FileId>,
    /// The bytes stored, as of the last commit: read without a trip to the thread.
    stored_bytes: Arc<AtomicU64>,
}

/// What the connection's thread owns. Fields drop in order: the connection closes before the
/// owner lock is released.
#[derive(Debug)]
struct Inner {
    conn: Connection,
    /// The counters as of the last call; kept only if its batch commits.
    counters: queries::Counters,
    /// The counters as the open batch found them, to go back to if it fails.
    committed: queries::Counters,
    /// Set when SQLite rolled the open batch back by itself (see `write`).
    aborted: Option<SqliteError>,
    /// The store's copy of `committed.bytes()`, updated after every commit.
    stored_bytes: Arc<AtomicU64>,
    _owner: Option<Arc<OwnerLock>>,
}

impl Inner {
    /// Runs `f` in a savepoint of the batch's transaction: if `f` fails, its changes (and its
    /// changes to the counters) are undone and the batch goes on.
    ///
    /// Some errors (a full disk, an I/O error) make SQLite roll back the whole transaction by
    /// itself. Then nothing of the batch is left to keep: the failure is remembered in
    /// `aborted`, every later call of the batch fails with it without running (it would
    /// otherwise commit on its own, outside any transaction), and so does the commit.
    fn write<R, E>(
        &mut self,
        f: impl FnOnce(&Connection, &mut queries::Counters) -> Result<R, E>,
    ) -> Result<R, E>
    where
        E: From<SqliteError>,
    {
        if let Some(aborted) = &self.aborted {
            return Err(aborted.duplicate().into());
        }
        self.execute("SAVEPOINT call").map_err(E::from)?;
        let mut changed = self.counters;
        let result = f(&self.conn, &mut changed);
        if self.conn.is_autocommit() {
            // SQLite ended the transaction (a full disk, an I/O error): abort the batch.
            self.aborted = Some(SqliteError::Aborted(
                "an earlier call of its batch failed and SQLite rolled the batch back".into(),
            ));
            return match result {
                Err(error) => Err(error),
                Ok(_) => {
                    Err(SqliteError::Aborted("the transaction ended inside a call".into()).into())
                }
            };
        }
        let ended = match &result {
            Ok(_) => self.execute("RELEASE call"),
            Err(_) => self
                .execute("ROLLBACK TO call")
                .and_then(|()| self.execute("RELEASE call")),
        };
        if let Err(error) = ended {
            // The savepoint cannot be ended: nothing of the batch can be trusted.
            let _ = self.execute("ROLLBACK");
            self.aborted = Some(error.duplicate());
            return Err(error.into());
        }
        if result.is_ok() {
            self.counters = changed;
        }
        result
    }

    /// Runs `f`, which only reads, inside the batch's transaction.
    fn read<R>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<R, SqliteError>,
    ) -> Result<R, SqliteError> {
        f(&self.conn)
    }

    fn execute(&self, sql: &str) -> Result<(), SqliteError> {
        execute(&self.conn, sql)
    }
}

/// Runs `sql`, a statement without parameters (a transaction's begin or end), through the
/// statement cache.
fn execute(conn: &Connection, sql: &str) -> Result<(), SqliteError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

impl thread::Batches for Inner {
    type Error = SqliteError;

    fn begin(&mut self) -> Result<(), SqliteError> {
        // IMMEDIATE: the write lock is taken (or refused as Locked) here, never halfway
        // through a call.
        self.execute("BEGIN IMMEDIATE")?;
        self.committed = self.counters;
        self.aborted = None;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SqliteError> {
        if let Some(aborted) = self.aborted.take() {
            thread::Batches::rollback(self);
            return Err(aborted);
        }
        match self.execute("COMMIT") {
            Ok(()) => {
                self.committed = self.counters;
                self.stored_bytes
                    .store(self.committed.bytes(), Ordering::Release);
                Ok(())
            }
            Err(error) => {
                thread::Batches::rollback(self);
                Err(error)
            }
        }
    }

    fn rollback(&mut self) {
        if !self.conn.is_autocommit() {
            // A failed rollback leaves nothing to undo: SQLite has ended the transaction.
            let _ = self.execute("ROLLBACK");
        }
        self.counters = self.committed;
    }

    fn failure(error: &SqliteError) -> StoreError {
        error.duplicate().into()
    }
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

    /// A private in-memory SQLite database (SQLite's `:memory:`): the SQLite code path without
    /// a file, for tests. It is gone when the store is dropped.
    ///
    /// # Errors
    ///
    /// Only if SQLite cannot allocate the database.
    pub fn open_in_memory() -> Result<Self, SqliteError> {
        SqliteOptions::default().open_in_memory()
    }

    /// Starts the writer's thread over an opened, migrated connection and, for a file, the
    /// reader's thread over a second connection to it.
    fn start(
        conn: Connection,
        counters: queries::Counters,
        owner: Option<OwnerLock>,
        busy_timeout: std::time::Duration,
    ) -> Result<Self, SqliteError> {
        let stored_bytes = Arc::new(AtomicU64::new(counters.bytes()));
        let owner_key = owner.as_ref().map(|owner| owner.id().clone());
        let owner = owner.map(Arc::new);
        let no_thread = |err: std::io::Error| {
            SqliteError::Unreadable(format!("no thread for the store: {err}"))
        };
        let reader = match &owner {
            Some(owner) => {
                let reader = Reader::open(Arc::clone(owner), busy_timeout)?;
                Some(ConnectionThread::spawn("batch-sqlite-read", reader).map_err(no_thread)?)
            }
            None => None,
        };
        let inner = Inner {
            conn,
            counters,
            committed: counters,
            aborted: None,
            stored_bytes: Arc::clone(&stored_bytes),
            _owner: owner,
        };
        let thread = ConnectionThread::spawn("batch-sqlite", inner).map_err(no_thread)?;
        Ok(Self {
            thread,
            reader,
            owner_key,
            stored_bytes,
        })
    }

    /// Closes the store and waits, without blocking a thread, until its connection is closed
    /// and the file released (dropping the store does the same in the background).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the close starts at the first poll and finishes without the future.
    pub async fn close(mut self) {
        if let Some(reader) = &mut self.reader {
            reader.close().await;
        }
        self.thread.close().await;
    }

    /// Live (queued or running) jobs now.
    ///
    /// # Errors
    ///
    /// The database could not be read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn live_jobs(&self) -> Result<usize, StoreError> {
        self.caller_read(queries::live_jobs).await
    }

    /// Bytes stored now: every kept job's target JSON and results (as of the last call that
    /// finished).
    pub(crate) fn stored_bytes(&self) -> u64 {
        self.stored_bytes.load(Ordering::Acquire)
    }

    /// Runs `f` on the connection's thread, in its own savepoint of the batch's transaction;
    /// its answer once that committed.
    async fn write<R, E, O>(
        &self,
        f: impl FnOnce(&Connection, &mut queries::Counters) -> Result<R, E> + Send + 'static,
    ) -> Result<R, O>
    where
        R: Send + 'static,
        E: From<SqliteError> + Send + 'static,
        O: From<E> + From<StoreError> + Send + 'static,
    {
        self.thread
            .call(move |inner| inner.write(f).map_err(O::from))
            .await
    }

    /// Runs `f`, which only reads, on the writer's thread: a worker's read, which must see
    /// the writer's state as it is now.
    async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, SqliteError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.thread
            .call(move |inner| inner.read(f).map_err(StoreError::from))
            .await
    }

    /// Runs `f`, which only reads, for a caller: on the reader's thread, beside the writer
    /// (`reader.rs`), or on the writer's in memory.
    async fn caller_read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, SqliteError> + Send + 'static,
    ) -> Result<R, StoreError> {
        match &self.reader {
            Some(reader) => {
                reader
                    .call(move |reader| reader.read(f).map_err(StoreError::from))
                    .await
            }
            None => self.read(f).await,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_connection<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> R + Send + 'static,
    ) -> R {
        self.thread
            .call_blocking(move |inner| f(&inner.conn))
            .expect("the connection's thread answers")
    }
}

impl Drop for SqliteStore {
    /// Closes the connection on its thread without waiting (see "Blocking").
    fn drop(&mut self) {
        if let Some(key) = &self.owner_key {
            owner::hand_over(key, || {
                if let Some(reader) = &mut self.reader {
                    drop(reader.finish());
                }
                self.thread.finish()
            });
        }
    }
}

impl From<SqliteError> for SubmitError {
    fn from(err: SqliteError) -> Self {
        SubmitError::Store(err.into())
    }
}

/// A claim is one call on the connection's thread, which runs calls in order: `finish`
/// takes no next claim, and the worker claims when it needs one.
impl WorkerStore for SqliteStore {
    fn recover(&self, now: Timestamp) -> impl Future<Output = Result<usize, StoreError>> + Send {
        self.write(move |tx, c| queries::recover(tx, c, now))
    }

    fn claim(
        &self,
        now: Timestamp,
    ) -> impl Future<Output = Result<Option<Claim>, StoreError>> + Send {
        self.write(move |tx, c| queries::claim(tx, c, now))
    }

    fn renew(
        &self,
        claim: &Claim,
        _now: Timestamp,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        let claim = claim.clone();
        self.read(move |tx| queries::renew(tx, &claim))
    }

    fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        _take_next: bool,
    ) -> impl Future<Output = Result<Finished, StoreError>> + Send {
        let claim = claim.clone();
        let finished = self.write(move |tx, c| {
            let ended = match end {
                ClaimEnd::Stored(result) => {
                    return queries::complete(tx, c, &claim, result, now);
                }
                ClaimEnd::RetryLater { busy_since, at } => {
                    queries::retry_later(tx, c, &claim, busy_since, at, now)?
                }
                ClaimEnd::Released => queries::release(tx, c, &claim, now)?,
            };
            Ok(if ended {
                Completion::Pending
            } else {
                Completion::Stale
            })
        });
        async move { finished.await.map(Finished::from) }
    }

    fn next_wakeup(
        &self,
        _now: Timestamp,
    ) -> impl Future<Output = Result<Option<Timestamp>, StoreError>> + Send {
        self.read(queries::next_wakeup)
    }

    async fn evict_oldest(&self, max_bytes: u64) -> Result<Evicted, StoreError> {
        // The common case answers without a trip to the connection's thread.
        if self.stored_bytes() <= max_bytes {
            return Ok(Evicted::default());
        }
        self.write(move |tx, c| queries::evict_oldest(tx, c, max_bytes))
            .await
    }
}

impl CallerStore for SqliteStore {
    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(self.write(move |tx, c| queries::submit(tx, c, job)))
    }

    fn status<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreError>> {
        let caller = caller.clone();
        Box::pin(self.caller_read(move |tx| queries::status(tx, id, &caller)))
    }

    fn summary<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Option<JobSummary>, StoreError>> {
        let caller = caller.clone();
        Box::pin(self.caller_read(move |tx| queries::summary(tx, id, &caller)))
    }

    fn jobs<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Vec<JobSummary>, StoreError>> {
        let caller = caller.clone();
        Box::pin(self.caller_read(move |tx| queries::jobs(tx, &caller)))
    }

    fn touch<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let caller = caller.clone();
        Box::pin(self.write(move |tx, c| queries::touch(tx, c, id, &caller, now)))
    }

    fn cancel<'a>(
        &'a self,
        id: JobId,
        caller: &'a Caller,
        now: Timestamp,
    ) -> BoxFuture<'a, Result<CancelOutcome, StoreError>> {
        let caller = caller.clone();
        Box::pin(self.write(move |tx, c| queries::cancel(tx, c, id, &caller, now)))
    }

    fn jobs_page<'a>(
        &'a self,
        scope: &'a Scope,
        query: &'a JobsQuery,
    ) -> BoxFuture<'a, Result<JobsPage, StoreError>> {
        let (scope, query) = (scope.clone(), query.clone());
        Box::pin(self.caller_read(move |tx| pages::jobs_page(tx, &scope, &query)))
    }

    fn job<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
    ) -> BoxFuture<'a, Result<Option<JobListing>, StoreError>> {
        let scope = scope.clone();
        Box::pin(self.caller_read(move |tx| pages::job(tx, &scope, id)))
    }

    fn targets_page<'a>(
        &'a self,
        scope: &'a Scope,
        id: JobId,
        query: &'a TargetsQuery,
    ) -> BoxFuture<'a, Result<Option<TargetsPage>, StoreError>> {
        let (scope, query) = (scope.clone(), *query);
        Box::pin(self.caller_read(move |tx| pages::targets_page(tx, &scope, id, &query)))
    }
}

#[cfg(test)]
mod tests;
