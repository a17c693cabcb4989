//! How the store opens connections: plain or TLS, with the whole set-up (TCP, TLS, startup,
//! authentication) bounded by the connect timeout.
//!
//! One [`Connector`] serves the store's three kinds of connection: the one that migrates the
//! schema, the `LISTEN` connection, and the pool's. The pool is not generic over the TLS
//! connector (deadpool boxes it), so the choice stays a runtime value and no public type grows
//! a type parameter. [`Connections`] hands out the pool's connections to the store's calls and
//! to its notifier.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction,
};
use tokio::task::JoinHandle;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config, NoTls, Socket};

use super::PostgresError;

/// The store's pool, and what a transaction on one of its connections runs first.
#[derive(Debug, Clone)]
pub(super) struct Connections {
    pool: Pool,
    /// `SET LOCAL search_path …` and the planner setting the claim needs (`options.rs`), run
    /// first in every transaction over a pool the application gave
    /// ([`PostgresOptions::connect_pool`](super::PostgresOptions::connect_pool)), whose
    /// connections do not start with them. `None` on the store's own pool.
    per_call: Option<Arc<str>>,
    /// The longest wait for a connection of such a pool (ours has deadpool's own timeouts).
    get_timeout: Option<Duration>,
}

impl Connections {
    /// Connections of the store's own pool (`per_call` `None`) or of an application's.
    pub(super) fn new(pool: Pool, per_call: Option<String>, get_timeout: Option<Duration>) -> Self {
        Self {
            pool,
            per_call: per_call.map(Arc::from),
            get_timeout,
        }
    }

    /// Whether a one-statement call may run in autocommit: on the store's own pool, whose
    /// connections start in its schema and settings.
    pub(super) fn autocommit(&self) -> bool {
        self.per_call.is_none()
    }

    /// A pooled connection, within the timeouts.
    pub(super) async fn client(&self) -> Result<Object, PostgresError> {
        let Some(timeout) = self.get_timeout else {
            return Ok(self.pool.get().await?);
        };
        match tokio::time::timeout(timeout, self.pool.get()).await {
            Ok(client) => Ok(client?),
            Err(_) => Err(PostgresError::Unavailable(format!(
                "no pooled connection within {timeout:?}"
            ))),
        }
    }

    /// Opens a transaction on `client`, in the store's schema and planner settings.
    pub(super) async fn begin<'a>(
        &self,
        client: &'a mut Object,
    ) -> Result<Transaction<'a>, PostgresError> {
        let tx = client.transaction().await?;
        if let Some(sql) = &self.per_call {
            tx.batch_execute(sql).await?;
        }
        Ok(tx)
    }
}

/// Plain TCP, or TLS through rustls.
#[derive(Clone)]
pub(super) enum Connector {
    /// No TLS: `sslmode=prefer` (tokio-postgres' default) falls back to plain TCP and
    /// `sslmode=require` is refused before connecting.
    Plain,
    /// rustls, verifying the server against the roots it was given.
    #[cfg(feature = "postgres-tls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Plain => f.write_str("Plain"),
            #[cfg(feature = "postgres-tls")]
            Self::Rustls(_) => f.write_str("Rustls"),
        }
    }
}

impl Connector {
    /// Whether connections can speak TLS.
    pub(super) fn has_tls(&self) -> bool {
        !matches!(self, Self::Plain)
    }

    /// Opens one connection outside the pool and drives it on a task of its own.
    pub(super) async fn open(
        &self,
        config: &Config,
        timeout: Duration,
    ) -> Result<(Client, JoinHandle<()>), PostgresError> {
        match self {
            Self::Plain => open_with(config, NoTls, timeout).await,
            #[cfg(feature = "postgres-tls")]
            Self::Rustls(tls) => open_with(config, tls.clone(), timeout).await,
        }
    }

    /// The pool's connection manager: a connection whose driver saw it close is replaced
    /// before reuse ([`verify_idle`] adds a query for connections that sat idle).
    pub(super) fn manager(&self, config: Config) -> Manager {
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        match self {
            Self::Plain => Manager::from_config(config, NoTls, manager_config),
            #[cfg(feature = "postgres-tls")]
            Self::Rustls(tls) => Manager::from_config(config, tls.clone(), manager_config),
        }
    }
}

/// A pooled connection unused for at least this long is checked with a trivial query before
/// reuse ([`verify_idle`]).
pub(super) const VERIFY_AFTER_IDLE: Duration = Duration::from_secs(1);

/// The pool's check before reusing a connection unused for [`VERIFY_AFTER_IDLE`] or more: an
/// empty query, answered within `timeout`, or the connection is dropped and the pool tries
/// the next (or opens one). So one the server closed while it sat idle
/// (`pg_terminate_backend`, a restart) is replaced instead of failing the call. A connection
/// in steady use is not checked: the check cost a round trip per store call, 8 to 10% of
/// zero-work throughput (measured in the commit that dropped it), and the driver task sees most closes at once (the
/// server says so on the socket); a close it has not seen yet fails the call as
/// [`StoreError::Unavailable`](crate::StoreError::Unavailable), which the runner retries.
pub(super) fn verify_idle(timeout: Duration) -> Hook {
    Hook::async_fn(move |client, metrics| {
        let idle = metrics.last_used() >= VERIFY_AFTER_IDLE;
        Box::pin(async move {
            if !idle {
                return Ok(());
            }
            match tokio::time::timeout(timeout, client.simple_query("")).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(err)) => Err(HookError::Backend(err)),
                Err(_) => Err(HookError::message(
                    "an idle connection's check did not answer within connect_timeout",
                )),
            }
        })
    })
}

async fn open_with<T>(
    config: &Config,
    tls: T,
    timeout: Duration,
) -> Result<(Client, JoinHandle<()>), PostgresError>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, connection) = within(timeout, config.connect(tls)).await?;
    let driver = tokio::spawn(async move {
        // The connection's end is reported to the client's next call.
        let _ = connection.await;
    });
    Ok((client, driver))
}

/// `connecting`, unless it takes longer than `timeout`: a server that accepted the TCP
/// connection and never answers is [`PostgresError::Unavailable`], not a hang.
pub(super) async fn within<T>(
    timeout: Duration,
    connecting: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, PostgresError> {
    match tokio::time::timeout(timeout, connecting).await {
        Ok(connected) => connected.map_err(PostgresError::from),
        Err(_) => Err(PostgresError::Unavailable(format!(
            "the server did not complete the connection within connect_timeout ({timeout:?})"
        ))),
    }
}
