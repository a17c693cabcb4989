//! How the store opens connections: plain or TLS, with the whole set-up (TCP, TLS, startup,
//! authentication) bounded by the connect timeout.
//!
//! One [`Connector`] serves the store's three kinds of connection: the one that migrates the
//! schema, the `LISTEN` connection, and the pool's. The pool is not generic over the TLS
//! connector (deadpool boxes it), so the choice stays a runtime value and no public type grows
//! a type parameter. [`Connections`] hands out the pool's connections to the store's calls and
//! to its notifier.
//!
//! # Every call has a deadline
//!
//! Keepalive cannot see a server that stopped (SIGSTOP, a frozen VM) or a path that stopped
//! forwarding while the peer's kernel still answers, and a transaction has no end of its own.
//! So each store call runs within [`Connections::call_timeout`]
//! ([`PostgresOptions::call_timeout`](super::PostgresOptions::call_timeout)), from taking a
//! pooled connection to its commit's answer (the store's `transaction!` and `one_statement!`
//! macros, and the notifier's sends). A call past it:
//!
//! 1. answers [`PostgresError::Unavailable`], which the runner retries as it does a dropped
//!    connection (a claim stays out, a result is stored later, never twice: the token fences);
//! 2. takes its connection out of the pool ([`Connections::abandon`]): it may still be inside
//!    a statement, and is never handed to another call;
//! 3. asks the server, on a connection of its own and within the connect timeout, to cancel
//!    what that connection runs (a cancel request), so a live but slow server stops the work
//!    and rolls the transaction back. A frozen server gets nothing; the abandoned connection
//!    ends when the server answers again or the kernel gives up on it.
//!
//! The server enforces the same bound itself (`statement_timeout`, set on every connection of
//! the store: `options.rs`), for a client that stops mid-statement; and so does the kernel,
//! as each connection's TCP user timeout, for a server's host that vanished (data left
//! unacknowledged that long closes the connection, an abandoned one included).

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
    /// The longest one call may take (the module's "Every call has a deadline").
    call_timeout: Duration,
    /// How a cancel request reaches the server, and how long it may take.
    connector: Connector,
    cancel_timeout: Duration,
}

impl Connections {
    /// Connections of the store's own pool (`per_call` `None`) or of an application's, whose
    /// calls each end within `call_timeout`; a cancel request goes through `connector` within
    /// `cancel_timeout`.
    pub(super) fn new(
        pool: Pool,
        per_call: Option<String>,
        get_timeout: Option<Duration>,
        call_timeout: Duration,
        connector: Connector,
        cancel_timeout: Duration,
    ) -> Self {
        Self {
            pool,
            per_call: per_call.map(Arc::from),
            get_timeout,
            call_timeout,
            connector,
            cancel_timeout,
        }
    }

    /// The longest one store call may take.
    pub(super) fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Gives up on `client`, whose call missed its deadline (steps 2 and 3 of the module's
    /// "Every call has a deadline"), and answers the call's error.
    pub(super) fn abandon(&self, client: Object) -> PostgresError {
        let cancel = client.cancel_token();
        // Out of the pool for good: the connection may be inside a statement.
        drop(Object::take(client));
        let (connector, timeout) = (self.connector.clone(), self.cancel_timeout);
        tokio::spawn(async move {
            let cancelled = tokio::time::timeout(timeout, connector.cancel(&cancel)).await;
            if !matches!(cancelled, Ok(Ok(()))) {
                tracing::debug!(
                    "batch postgres store: the cancel request did not reach the server"
                );
            }
        });
        tracing::warn!(
            call_timeout = ?self.call_timeout,
            "batch postgres store: a call missed its deadline; its connection is abandoned"
        );
        PostgresError::Unavailable(format!(
            "the call did not finish within call_timeout ({:?}); its connection was dropped \
             and the server asked to cancel it",
            self.call_timeout
        ))
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

    /// Sends a cancel request for what `token`'s connection runs.
    async fn cancel(
        &self,
        token: &tokio_postgres::CancelToken,
    ) -> Result<(), tokio_postgres::Error> {
        match self {
            Self::Plain => token.cancel_query(NoTls).await,
            #[cfg(feature = "postgres-tls")]
            Self::Rustls(tls) => token.cancel_query(tls.clone()).await,
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
