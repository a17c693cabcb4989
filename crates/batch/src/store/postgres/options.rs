//! [`PostgresOptions`]: the store's settings, each validated before anything connects, and the
//! constructors that turn them into a [`PostgresStore`].
//!
//! Every setter only records its value; the constructors check every value against its
//! documented bounds first and answer [`PostgresError::Config`], so a bad setting never
//! panics, never aborts on an allocation, and never touches the database.

use std::ops::RangeInclusive;
use std::time::Duration;

use deadpool_postgres::{Pool, Runtime, Timeouts};
use tokio_postgres::config::SslMode;

use super::connect::{self, Connector};
use super::{PostgresError, PostgresStore, schema};

/// Bounds of [`PostgresOptions::pool_size`]: a pool allocates its slots up front.
const POOL_SIZE: RangeInclusive<usize> = 1..=1024;
/// Bounds of [`PostgresOptions::lease_ttl`] and [`PostgresOptions::poll_interval`].
const LEASE_AND_POLL: RangeInclusive<Duration> =
    Duration::from_millis(10)..=Duration::from_secs(24 * 3600);
/// Bounds of [`PostgresOptions::progress_interval`]: zero (a note with every claim) to an hour.
const PROGRESS: RangeInclusive<Duration> = Duration::ZERO..=Duration::from_secs(3600);
/// Bounds of the connect and pool timeouts.
const TIMEOUT: RangeInclusive<Duration> = Duration::from_millis(1)..=Duration::from_secs(3600);
/// Bounds of [`PostgresOptions::tcp_keepalive`]: the kernel counts keepalive idle time in
/// whole seconds.
const KEEPALIVE: RangeInclusive<Duration> = Duration::from_secs(1)..=Duration::from_secs(2 * 3600);
/// The longest schema name: the `NOTIFY` channel `batch_<schema>` must fit PostgreSQL's
/// 63-byte identifiers.
const SCHEMA_MAX_LEN: usize = 40;

/// The planner settings every connection of the store runs with, as (name, value): as
/// startup options on the store's own pool, as `SET LOCAL` in each transaction on an
/// application's pool.
///
/// - `enable_bitmapscan` off: the claim walks `jobs_claimable` in order and stops at the
///   first job it can lock; a bitmap scan would read every entry, the dead ones included,
///   and sort (`claim_sql`). No other query of the store gains from one.
/// - `plan_cache_mode` `force_generic_plan`: every statement of the store finds its rows by
///   key or walks an index in order, so its plan does not depend on its parameters. With
///   PostgreSQL's default a connection plans each statement afresh for its first five
///   executions; for the claim's statement that took about a millisecond a time on a busy
///   server, and a replica that had just opened its connections claimed at a third of its
///   rate for its first 150 ms (measured in the commit that set them).
pub(super) const PLANNER_SETTINGS: [(&str, &str); 2] = [
    ("enable_bitmapscan", "off"),
    ("plan_cache_mode", "force_generic_plan"),
];

/// Settings for a [`PostgresStore`]; [`PostgresStore::options`] makes one.
///
/// Setters never fail; the constructors ([`connect`](Self::connect) and the others) check
/// every value against its bounds first and return [`PostgresError::Config`] naming the
/// setting, before any connection opens.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    schema: String,
    lease_ttl: Duration,
    poll_interval: Duration,
    progress_interval: Duration,
    pool_size: usize,
    connect_timeout: Duration,
    tcp_keepalive: Duration,
    pool_wait_timeout: Duration,
    call_timeout: Duration,
    #[cfg(feature = "postgres-tls")]
    tls: Option<super::tls::Tls>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "batch".into(),
            lease_ttl: Duration::from_secs(30),
            poll_interval: Duration::from_secs(5),
            progress_interval: Duration::from_millis(100),
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
            tcp_keepalive: Duration::from_secs(60),
            pool_wait_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(30),
            #[cfg(feature = "postgres-tls")]
            tls: None,
        }
    }
}

impl PostgresOptions {
    /// The PostgreSQL schema (namespace) that holds the store's tables (default `batch`):
    /// runners that share jobs use the same one. 1 to 40 lowercase ASCII letters, digits and
    /// `_`, starting with a letter or `_`. A reserved word (`select`) is fine: the name is
    /// quoted wherever it enters SQL.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The lease of a claim (default 30 s, from 10 ms to 24 h): a replica that stops renewing
    /// (it died, or its process stalled) loses its claim this long after its last renewal,
    /// and another replica fetches the target again. The runner renews every third of it
    /// while the fetch runs. The server's clock stamps and judges leases, so the replicas'
    /// clocks need not agree.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// The fallback poll (default 5 s, from 10 ms to 24 h): an idle worker claims again at
    /// least this often even if no `NOTIFY` reached it (its `LISTEN` connection was being
    /// reopened).
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How often this process announces the progress of jobs that go on (default 100 ms, from
    /// zero to 1 h): the stored targets' notes wait, newest per job, and go out together at
    /// least this long after the last announcement this process sent. Replicas' watchers
    /// ([`CallerStore::events`](crate::store::CallerStore::events)) then see a running job's counts this
    /// late at most; a job's start and end are announced at once whatever this says (right
    /// after their commits). Every announcement wakes every replica's listening connection,
    /// so one per stored target (`Duration::ZERO`) costs each replica work for the targets of
    /// all the others.
    #[must_use]
    pub fn progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// The most connections this store opens for its calls (default 16, from 1 to 1024); one
    /// more listens for wake-ups. Give it at least twice the runner's worker count: a worker
    /// stores its last result while it claims its next target. Ignored by
    /// [`connect_pool`](Self::connect_pool), whose pool has its own size.
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size;
        self
    }

    /// How long opening one connection may take, from the TCP connect through TLS, startup
    /// and authentication (default 10 s, from 1 ms to 1 h). A server that accepts the TCP
    /// connection and never answers is [`PostgresError::Unavailable`] after this long. It
    /// bounds every connection the store opens (pooled, migrations, `LISTEN`) and the check
    /// of an idle pooled connection before its reuse (a trivial query, for a connection unused
    /// for a second or more; one that fails or misses it is replaced); it replaces a
    /// `connect_timeout` in the URL.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// TCP keepalive on every connection of the store (default 60 s, from 1 s to 2 h): after
    /// this long without traffic the kernel probes the server every quarter of it (at least
    /// every second), and gives up after 4 unanswered probes, so a server or network path that
    /// died is noticed about twice this long after the last traffic, and the call on it
    /// becomes [`StoreError::Unavailable`](crate::StoreError::Unavailable). Replaces the
    /// URL's `keepalives*` settings.
    #[must_use]
    pub fn tcp_keepalive(mut self, idle: Duration) -> Self {
        self.tcp_keepalive = idle;
        self
    }

    /// How long a call waits for a free pooled connection when all `pool_size` are busy
    /// (default 30 s, from 1 ms to 1 h); then the call is
    /// [`StoreError::Unavailable`](crate::StoreError::Unavailable) and the runner retries it.
    #[must_use]
    pub fn pool_wait_timeout(mut self, timeout: Duration) -> Self {
        self.pool_wait_timeout = timeout;
        self
    }

    /// The longest one store call may take, from taking a pooled connection to its commit's
    /// answer (default 30 s, from 1 ms to 1 h). Past it the call is
    /// [`StoreError::Unavailable`](crate::StoreError::Unavailable) and the runner tries it
    /// again, as it does after a dropped connection; the connection is dropped (never reused)
    /// and the server is asked to cancel what it ran (a cancel request). This is what ends a
    /// call to a server that stopped answering while its kernel still keeps the connection
    /// up (a stopped process, a frozen machine or network path), which keepalive cannot see.
    ///
    /// The server is told the same bound as its `statement_timeout` on every connection of
    /// the store (replacing one in the URL's `options`), so a statement is cancelled there too
    /// if the client stops waiting; migrations run without it. The kernel is told it too, as
    /// the connections' TCP user timeout (Linux; replacing the URL's `tcp_user_timeout`):
    /// data the server's host has not acknowledged for this long closes the connection, so a
    /// host that vanished is let go of rather than retransmitted to for many minutes. Give it room above the slowest
    /// call the store makes under load: a store's commit waits for the disk, and `status` of a
    /// big job reads every target.
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Speak TLS on every connection, trusting exactly the certificates in `pem` (one or
    /// more `BEGIN CERTIFICATE` blocks): a private CA, a managed service's CA bundle, or a
    /// server's self-signed certificate (feature `postgres-tls`). No other root is trusted,
    /// neither the system's nor a bundled list. Put `sslmode=require` in the URL so that no
    /// connection falls back to plain TCP.
    ///
    /// The server's certificate chain is verified against these roots and must name the host
    /// connected to (an IP address must be among its subject alternative names): libpq's
    /// `sslmode=verify-full`, which tokio-postgres spells `require`. TLS 1.2 and 1.3 with
    /// rustls' safe defaults and its `ring` crypto provider; no client certificate. The PEM is
    /// checked by the constructors ([`PostgresError::Config`] if it holds no certificate or a
    /// block does not parse).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use lockgate_batch::store::PostgresStore;
    ///
    /// let ca = std::fs::read("/etc/ssl/private-ca.pem")?;
    /// let store = PostgresStore::options()
    ///     .tls_roots_pem(ca)
    ///     .connect("postgres://batch@db.internal/app?sslmode=require")
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "postgres-tls")]
    #[must_use]
    pub fn tls_roots_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls = Some(super::tls::Tls::RootsPem(pem.into().into()));
        self
    }

    /// Speak TLS on every connection with a rustls (0.23) configuration the application
    /// built: the system's roots (through `rustls-native-certs`), a client certificate, another
    /// crypto provider (feature `postgres-tls`). Replaces
    /// [`tls_roots_pem`](Self::tls_roots_pem).
    #[cfg(feature = "postgres-tls")]
    #[must_use]
    pub fn tls_config(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(super::tls::Tls::Config(std::sync::Arc::new(config)));
        self
    }

    /// Connects to the database at `url` (a libpq connection string or URL, such as
    /// `postgres://batch@db.internal/app`), creates or migrates the store's schema, and
    /// returns the store.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future closes the migration connection; a migration cut short rolls back
    /// (each runs in one transaction) and the store is not created.
    ///
    /// # Errors
    ///
    /// [`PostgresError::Config`] for an invalid or empty URL, an option out of its bounds, or
    /// `sslmode=require` without TLS (feature `postgres-tls`, `tls_roots_pem`), or a TLS
    /// root that does not parse;
    /// [`PostgresError::Unavailable`] when the server cannot be reached or does not complete
    /// the connection within [`connect_timeout`](Self::connect_timeout);
    /// [`PostgresError::Tls`] when the server's certificate is not trusted;
    /// [`PostgresError::NewerSchema`] for a schema from a newer release (left untouched);
    /// [`PostgresError::Other`] for anything else the server refused (such as a missing
    /// `CREATE` privilege).
    pub async fn connect(&self, url: &str) -> Result<PostgresStore, PostgresError> {
        self.connect_config(parse(url)?).await
    }

    /// As [`connect`](Self::connect), with the connection settings as a
    /// [`tokio_postgres::Config`] (built in code, or from a URL with secrets added). The
    /// store adds its `search_path`, `enable_bitmapscan=off` (which its claim needs) and
    /// `plan_cache_mode=force_generic_plan` (its statements' plans do not depend on their
    /// parameters) to the config's `options`, sets `application_name` if the config has
    /// none, and replaces its connect timeout and keepalive settings with this store's.
    ///
    /// # Cancel safety
    ///
    /// As [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_config(
        &self,
        config: tokio_postgres::Config,
    ) -> Result<PostgresStore, PostgresError> {
        let connector = self.connector()?;
        let config = self.prepare(config, &connector)?;
        migrate_over(&connector, &config, self).await?;
        self.open_prepared(config, connector)
    }

    /// The store over a [`deadpool_postgres::Pool`] the application already has, after
    /// creating or migrating the schema through one of its connections. `listen` is how the
    /// store opens its one connection outside the pool, the `LISTEN` connection that wakes
    /// idle workers on other replicas' changes (a pool cannot hold it: deadpool drops a
    /// connection's notifications); it is opened with this store's TLS, connect timeout and
    /// keepalive, so give it the same host and credentials as the pool.
    ///
    /// The pool's connections need no particular settings: every call sets the store's
    /// schema with `SET LOCAL search_path` in its own transaction (one more statement per
    /// call than the store's own pool). The pool keeps its own size and timeouts; a call that
    /// cannot get a connection within this store's wait, create and recycle timeouts together
    /// is [`StoreError::Unavailable`](crate::StoreError::Unavailable).
    ///
    /// # Cancel safety
    ///
    /// As [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_pool(
        &self,
        pool: Pool,
        listen: tokio_postgres::Config,
    ) -> Result<PostgresStore, PostgresError> {
        let connector = self.connector()?;
        let listen = self.prepare(listen, &connector)?;
        let store = PostgresStore::new(self, pool, listen, connector, true);
        let mut client = store.client().await?;
        schema::migrate(&mut client, &self.schema).await?;
        drop(client);
        Ok(store)
    }

    /// Creates or migrates the store's schema at `url` over one connection of its own, which
    /// is closed before this returns. [`connect`](Self::connect) calls it.
    ///
    /// # Cancel safety
    ///
    /// As [`connect`](Self::connect).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn migrate(&self, url: &str) -> Result<(), PostgresError> {
        let connector = self.connector()?;
        let config = self.prepare(parse(url)?, &connector)?;
        migrate_over(&connector, &config, self).await
    }

    /// The store over a schema that [`migrate`](Self::migrate) prepared, without connecting:
    /// connections open on first use, inside the runtime that uses the store. For callers that
    /// cannot await here (a test's store factory). A server that does not answer shows up at
    /// the first call (as [`Runner::new`](crate::Runner::new)'s recovery): a
    /// [`StoreError::Unavailable`](crate::StoreError::Unavailable) within
    /// [`connect_timeout`](Self::connect_timeout).
    ///
    /// # Errors
    ///
    /// [`PostgresError::Config`] as for [`connect`](Self::connect).
    pub fn open_lazy(&self, url: &str) -> Result<PostgresStore, PostgresError> {
        let connector = self.connector()?;
        let config = self.prepare(parse(url)?, &connector)?;
        self.open_prepared(config, connector)
    }

    fn open_prepared(
        &self,
        config: tokio_postgres::Config,
        connector: Connector,
    ) -> Result<PostgresStore, PostgresError> {
        let pool = Pool::builder(connector.manager(config.clone()))
            .pre_recycle(connect::verify_idle(self.connect_timeout))
            .max_size(self.pool_size)
            .runtime(Runtime::Tokio1)
            .timeouts(Timeouts {
                wait: Some(self.pool_wait_timeout),
                create: Some(self.connect_timeout),
                recycle: Some(self.connect_timeout),
            })
            .build()
            .map_err(|err| PostgresError::Config(err.to_string()))?;
        Ok(PostgresStore::new(self, pool, config, connector, false))
    }

    pub(super) fn schema_name(&self) -> &str {
        &self.schema
    }

    pub(super) fn lease(&self) -> Duration {
        self.lease_ttl
    }

    pub(super) fn poll(&self) -> Duration {
        self.poll_interval
    }

    pub(super) fn progress(&self) -> Duration {
        self.progress_interval
    }

    /// The connector the TLS setting asks for (checked here: a PEM that does not parse).
    fn connector(&self) -> Result<Connector, PostgresError> {
        #[cfg(feature = "postgres-tls")]
        if let Some(tls) = &self.tls {
            return Ok(Connector::Rustls(tls.connector()?));
        }
        Ok(Connector::Plain)
    }

    pub(super) fn open_timeout(&self) -> Duration {
        self.connect_timeout
    }

    pub(super) fn call(&self) -> Duration {
        self.call_timeout
    }

    /// The settings every connection of the store runs with, as (name, value): the planner's
    /// ([`PLANNER_SETTINGS`]) and the server's side of the call deadline.
    pub(super) fn settings(&self) -> impl Iterator<Item = (&'static str, String)> {
        let deadline = (
            "statement_timeout",
            format!("{}ms", self.call_timeout.as_millis()),
        );
        PLANNER_SETTINGS
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned()))
            .chain(std::iter::once(deadline))
    }

    /// The longest a call may wait for a connection of a pool it did not build.
    pub(super) fn get_timeout(&self) -> Duration {
        self.pool_wait_timeout
            .saturating_add(self.connect_timeout.saturating_mul(2))
    }

    /// Checks every option, then `config` against them, and adds the store's settings.
    fn prepare(
        &self,
        mut config: tokio_postgres::Config,
        connector: &Connector,
    ) -> Result<tokio_postgres::Config, PostgresError> {
        self.validate()?;
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            return Err(PostgresError::Config(
                "the connection string names no host (is it empty?)".into(),
            ));
        }
        if matches!(config.get_ssl_mode(), SslMode::Require) && !connector.has_tls() {
            return Err(PostgresError::Config(
                "sslmode=require needs TLS: enable the `postgres-tls` feature and give \
                 PostgresOptions::tls_roots_pem or tls_config"
                    .into(),
            ));
        }
        let mut settings = format!("-c search_path=\"{}\"", self.schema);
        for (name, value) in self.settings() {
            settings += &format!(" -c {name}={value}");
        }
        let options = match config.get_options() {
            Some(theirs) if !theirs.trim().is_empty() => format!("{theirs} {settings}"),
            _ => settings,
        };
        config.options(options);
        if config.get_application_name().is_none() {
            // Names the store's connections in `pg_stat_activity`, for operators.
            config.application_name(format!("batch {}", self.schema));
        }
        let probe_every = (self.tcp_keepalive / 4).max(Duration::from_secs(1));
        config
            .connect_timeout(self.connect_timeout)
            // Sent data unacknowledged this long closes the connection: a host that vanished
            // under a call (or under a connection abandoned past its deadline) is let go of
            // instead of retransmitted to for many minutes.
            .tcp_user_timeout(self.call_timeout)
            .keepalives(true)
            .keepalives_idle(self.tcp_keepalive)
            .keepalives_interval(probe_every)
            .keepalives_retries(4);
        Ok(config)
    }

    /// Every option within its documented bounds.
    fn validate(&self) -> Result<(), PostgresError> {
        let schema = &self.schema;
        let valid_schema = (1..=SCHEMA_MAX_LEN).contains(&schema.len())
            && schema.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid_schema {
            return Err(PostgresError::Config(format!(
                "schema {schema:?}: use 1 to {SCHEMA_MAX_LEN} lowercase ASCII letters, digits \
                 and _, starting with a letter or _"
            )));
        }
        if !POOL_SIZE.contains(&self.pool_size) {
            return Err(PostgresError::Config(format!(
                "pool_size {}: must be from {} to {}",
                self.pool_size,
                POOL_SIZE.start(),
                POOL_SIZE.end()
            )));
        }
        let durations = [
            ("lease_ttl", self.lease_ttl, &LEASE_AND_POLL),
            ("poll_interval", self.poll_interval, &LEASE_AND_POLL),
            ("progress_interval", self.progress_interval, &PROGRESS),
            ("connect_timeout", self.connect_timeout, &TIMEOUT),
            ("tcp_keepalive", self.tcp_keepalive, &KEEPALIVE),
            ("pool_wait_timeout", self.pool_wait_timeout, &TIMEOUT),
            ("call_timeout", self.call_timeout, &TIMEOUT),
        ];
        for (name, value, bounds) in durations {
            if !bounds.contains(&value) {
                return Err(PostgresError::Config(format!(
                    "{name} {value:?}: must be from {:?} to {:?}",
                    bounds.start(),
                    bounds.end()
                )));
            }
        }
        Ok(())
    }
}

/// Creates or migrates the schema over one connection of its own, closed before returning.
async fn migrate_over(
    connector: &Connector,
    config: &tokio_postgres::Config,
    options: &PostgresOptions,
) -> Result<(), PostgresError> {
    let (mut client, driver) = connector.open(config, options.connect_timeout).await?;
    let migrated = schema::migrate(&mut client, &options.schema).await;
    drop(client);
    let _ = driver.await;
    migrated
}

/// A libpq connection string or URL; a malformed one is a configuration error.
fn parse(url: &str) -> Result<tokio_postgres::Config, PostgresError> {
    url.parse()
        .map_err(|err: tokio_postgres::Error| PostgresError::Config(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store's connections start in its schema and plan its claim as an ordered index
    /// scan (`claim_sql`), after whatever options the application gave.
    #[test]
    fn connections_start_with_the_stores_settings_after_the_applications() {
        let options = PostgresOptions::default().schema("jobs_a");
        let mut config = parse("postgres://someone@localhost/db").unwrap();
        config.options("-c statement_timeout=5s");
        let prepared = options.prepare(config, &Connector::Plain).unwrap();
        assert_eq!(
            prepared.get_tcp_user_timeout(),
            Some(&Duration::from_secs(30))
        );
        assert_eq!(
            prepared.get_options(),
            Some(
                "-c statement_timeout=5s -c search_path=\"jobs_a\" -c enable_bitmapscan=off \
                 -c plan_cache_mode=force_generic_plan -c statement_timeout=30000ms"
            )
        );
    }
}
