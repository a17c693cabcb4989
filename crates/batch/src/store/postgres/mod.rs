//! [`PostgresStore`]: jobs in a PostgreSQL database that several runner processes share.

mod error;
mod listen;
mod queries;
mod schema;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Transaction};
use tokio_postgres::NoTls;

pub use error::PostgresError;

use crate::error::{StoreError, SubmitError};
use crate::job::{Caller, Job, JobId, TargetState};
use crate::store::{CancelOutcome, Claim, Completion, Evicted, NewJob, Store, Submitted};
use crate::time::Timestamp;

/// Settings for a [`PostgresStore`]; [`PostgresStore::options`] makes one.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    schema: String,
    lease_ttl: Duration,
    poll_interval: Duration,
    pool_size: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "batch".into(),
            lease_ttl: Duration::from_secs(30),
            poll_interval: Duration::from_secs(5),
            pool_size: 16,
        }
    }
}

impl PostgresOptions {
    /// The PostgreSQL schema (namespace) that holds the store's tables (default `batch`):
    /// runners that share jobs use the same one. Lowercase ASCII letters, digits and `_`,
    /// starting with a letter or `_`.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The lease of a claim (default 30 s): a replica that stops renewing (it died, or its
    /// process stalled) loses its claim this long after its last renewal, and another replica
    /// fetches the target again. The runner renews every third of it while the fetch runs.
    /// Runners compare leases with their own clocks: keep the replicas' clock skew well below
    /// a third of it.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// The fallback poll (default 5 s): an idle worker claims again at least this often even
    /// if no `NOTIFY` reached it (its `LISTEN` connection was being reopened).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The most connections this store opens for its calls (default 16); one more listens for
    /// wake-ups. Give it at least the runner's worker count.
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// Connects to the database at `url` (a libpq connection string or URL, such as
    /// `postgres://batch@db.internal/app`), creates or migrates the store's schema, and
    /// returns the store.
    ///
    /// # Errors
    ///
    /// [`PostgresError::Config`] for an invalid URL or schema name,
    /// [`PostgresError::Unavailable`] when the server cannot be reached,
    /// [`PostgresError::NewerSchema`] for a schema from a newer release (left untouched),
    /// [`PostgresError::Other`] for anything else the server refused (such as a missing
    /// `CREATE` privilege).
    pub async fn connect(&self, url: &str) -> Result<PostgresStore, PostgresError> {
        self.migrate(url).await?;
        self.open_lazy(url)
    }

    /// Creates or migrates the store's schema at `url` over one connection of its own, which
    /// is closed before this returns. [`connect`](Self::connect) calls it.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn migrate(&self, url: &str) -> Result<(), PostgresError> {
        let config = self.config(url)?;
        let (mut client, connection) = config.connect(NoTls).await?;
        let driver = tokio::spawn(connection);
        let migrated = schema::migrate(&mut client, &self.schema).await;
        drop(client);
        let _ = driver.await;
        migrated
    }

    /// The store over a schema that [`migrate`](Self::migrate) prepared, without connecting:
    /// connections open on first use, inside the runtime that uses the store. For callers that
    /// cannot await here (a test's store factory).
    ///
    /// # Errors
    ///
    /// [`PostgresError::Config`] for an invalid URL or schema name.
    pub fn open_lazy(&self, url: &str) -> Result<PostgresStore, PostgresError> {
        let config = self.config(url)?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                // Checks each connection with a trivial query before reuse, so one the server
                // closed (`pg_terminate_backend`, a restart) is replaced instead of failing.
                recycling_method: RecyclingMethod::Verified,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(self.pool_size.max(1))
            .build()
            .map_err(|err| PostgresError::Config(err.to_string()))?;
        let channel = format!("batch_{}", self.schema);
        Ok(PostgresStore {
            pool,
            wakeups: listen::Wakeups::new(config, channel.clone()),
            channel,
            lease_ttl: self.lease_ttl,
            poll_interval: self.poll_interval,
            last_now: AtomicU64::new(0),
        })
    }

    fn config(&self, url: &str) -> Result<tokio_postgres::Config, PostgresError> {
        let schema = &self.schema;
        let valid = schema.len() <= 40
            && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(PostgresError::Config(format!(
                "schema {schema:?}: use lowercase ASCII letters, digits and _"
            )));
        }
        if self.lease_ttl.is_zero() || self.poll_interval.is_zero() {
            return Err(PostgresError::Config(
                "lease_ttl and poll_interval must be above zero".into(),
            ));
        }
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|err: tokio_postgres::Error| PostgresError::Config(err.to_string()))?;
        config.options(format!("-c search_path={schema}"));
        // Names the store's connections in `pg_stat_activity`, for operators.
        config.application_name(format!("batch {schema}"));
        Ok(config)
    }
}

/// A [`Store`] in a PostgreSQL database, shared by several runner processes (replicas).
///
/// Every replica points its runner at the same database and schema; their workers drain the
/// jobs together under the rules of one runner. Each call is one transaction over a pooled
/// connection (`deadpool-postgres`).
///
/// # Guarantees
///
/// - **One rotation across replicas.** The rotation's cursor is a row every claim locks, so
///   claims from all replicas follow the one-process round-robin exactly; the job row is taken
///   `FOR UPDATE SKIP LOCKED`. The price: claims are serialized on that row (one short
///   transaction each).
/// - **Leases and fencing.** A claim holds a lease of [`PostgresOptions::lease_ttl`], renewed
///   by the runner every third of it while the fetch runs; a slow fetch that keeps renewing is
///   never fetched twice. A claim whose lease lapsed is taken back by the next claim anywhere
///   (reported through [`Hooks::rescued`](crate::Hooks::rescued) and `tracing`); every write
///   matches the claim's fencing token, so the replica that lost it can never overwrite what
///   the new owner stored.
/// - **A replica dies** (SIGKILL, a lost machine): its targets are fetched again by the others
///   after `lease_ttl` (at-least-once fetch), and each result is stored exactly once.
/// - **Wake-ups**: submit, a stored target, a retry, a release and a cancel send `NOTIFY`; idle
///   workers of every replica `LISTEN` and claim at once, and claim again at least every
///   [`PostgresOptions::poll_interval`] regardless.
/// - **A lost connection** is a [`StoreError::Unavailable`]: the runner retries the call on a
///   fresh connection; the transaction rolled back, so nothing is lost or stored twice.
/// - `max_live_jobs`, one live job per caller, and the byte budget hold across replicas
///   (`submit` and eviction take advisory locks).
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
///
/// use batch::{Caller, Config, FetchError, Runner, store::PostgresStore};
///
/// let store = PostgresStore::options()
///     .lease_ttl(Duration::from_secs(30))
///     .connect("postgres://batch@db.internal/app")
///     .await?;
/// let fetch = |_cancel, _caller: &Caller, n: &u32| {
///     let n = *n;
///     async move { Ok::<u32, FetchError>(n + 1) }
/// };
/// let runner = Runner::new(Config::default(), store, fetch).await?;
/// runner.submit(&Caller::new("ann"), &[1, 2, 3]).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PostgresStore {
    pool: Pool,
    wakeups: listen::Wakeups,
    channel: String,
    lease_ttl: Duration,
    poll_interval: Duration,
    /// The latest `now` a claim passed, in microseconds: the fallback poll counts from it.
    last_now: AtomicU64,
}

impl PostgresStore {
    /// Default options, to change before connecting.
    pub fn options() -> PostgresOptions {
        PostgresOptions::default()
    }

    /// Connects with default options; see [`PostgresOptions::connect`].
    ///
    /// # Errors
    ///
    /// As [`PostgresOptions::connect`].
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        PostgresOptions::default().connect(url).await
    }

    /// Live (queued or running) jobs now, across every replica.
    ///
    /// # Errors
    ///
    /// The database could not be read.
    pub async fn live_jobs(&self) -> Result<usize, PostgresError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let live = queries::live_jobs(&tx).await?;
        tx.commit().await?;
        Ok(live)
    }

    /// Bytes stored now: every kept job's target JSON and results.
    ///
    /// # Errors
    ///
    /// The database could not be read.
    pub async fn stored_bytes(&self) -> Result<u64, PostgresError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let bytes = queries::stored_bytes(&tx).await?;
        tx.commit().await?;
        Ok(bytes)
    }
}

/// Runs `$body` (which uses the open transaction `$tx`) on a pooled connection, committing
/// only if it succeeds; a dropped call rolls back.
macro_rules! transaction {
    ($store:expr, |$tx:ident| $body:expr) => {{
        let call = async {
            let mut client = $store.pool.get().await?;
            let $tx: Transaction<'_> = client.transaction().await?;
            let value = $body.await?;
            $tx.commit().await?;
            Ok::<_, PostgresError>(value)
        };
        call.await.map_err(StoreError::from)
    }};
}

impl Store for PostgresStore {
    fn lease_ttl(&self) -> Option<Duration> {
        Some(self.lease_ttl)
    }

    async fn recover(&self, _now: Timestamp) -> Result<usize, StoreError> {
        // Claims out belong to other replicas (or a dead one): their leases decide.
        transaction!(self, |tx| queries::live_jobs(&tx))
    }

    async fn submit(&self, job: NewJob) -> Result<Submitted, SubmitError> {
        let mut client = self.pool.get().await.map_err(PostgresError::from)?;
        let tx = client.transaction().await.map_err(PostgresError::from)?;
        let submitted = queries::submit(&tx, &self.channel, job).await?;
        tx.commit().await.map_err(PostgresError::from)?;
        Ok(submitted)
    }

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        self.wakeups.claiming();
        self.last_now.fetch_max(now.as_micros(), Ordering::SeqCst);
        transaction!(self, |tx| queries::claim(&tx, now, self.lease_ttl))
    }

    async fn renew(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        transaction!(self, |tx| queries::renew(&tx, claim, now, self.lease_ttl))
    }

    async fn complete(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Result<Completion, StoreError> {
        transaction!(self, |tx| queries::complete(
            &tx,
            &self.channel,
            claim,
            result,
            now
        ))
    }

    async fn retry_later(
        &self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        transaction!(self, |tx| queries::retry_later(
            &tx,
            &self.channel,
            claim,
            busy_since,
            at,
            now
        ))
    }

    async fn release(&self, claim: &Claim, now: Timestamp) -> Result<bool, StoreError> {
        transaction!(self, |tx| queries::release(&tx, &self.channel, claim, now))
    }

    async fn next_wakeup(&self) -> Result<Option<Timestamp>, StoreError> {
        let due = transaction!(self, |tx| queries::next_wakeup(&tx))?;
        let last = self.last_now.load(Ordering::SeqCst);
        // The bounded fallback poll, counted from the last claim.
        let poll =
            (last > 0).then(|| Timestamp::from_micros(last).saturating_add(self.poll_interval));
        Ok(match (due, poll) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    fn changed(&self) -> impl Future<Output = ()> + Send {
        self.wakeups.changed()
    }

    async fn status(&self, id: JobId, caller: &Caller) -> Result<Option<Job>, StoreError> {
        transaction!(self, |tx| queries::status(&tx, id, caller))
    }

    async fn touch(&self, id: JobId, caller: &Caller, now: Timestamp) -> Result<bool, StoreError> {
        transaction!(self, |tx| queries::touch(&tx, id, caller, now))
    }

    async fn cancel(
        &self,
        id: JobId,
        caller: &Caller,
        now: Timestamp,
    ) -> Result<CancelOutcome, StoreError> {
        transaction!(self, |tx| queries::cancel(
            &tx,
            &self.channel,
            id,
            caller,
            now
        ))
    }

    async fn evict_oldest(&self, max_bytes: u64) -> Result<Evicted, StoreError> {
        transaction!(self, |tx| queries::evict_oldest(&tx, max_bytes))
    }
}

#[cfg(test)]
mod tests;
