//! The store's `LISTEN` connection: turns `NOTIFY` messages into wake-ups for idle workers.
//!
//! One task per store owns one connection outside the pool, listens on the store's channel
//! and bumps a generation counter on every message. [`Wakeups::changed`] resolves once the
//! generation moved past the one the last claim saw, so a message that arrives between a
//! worker's empty claim and its wait is not lost. A lost connection is reopened after
//! [`RECONNECT_WAIT`]; reopening bumps the generation too (messages sent meanwhile are gone),
//! and the store's bounded fallback poll covers the gap.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::PostgresError;
use super::connect::{Connector, within};

/// How long the listener waits before reopening a lost connection.
const RECONNECT_WAIT: Duration = Duration::from_secs(1);

/// The generation counter and its waiters, shared with the listener task.
#[derive(Debug, Default)]
struct Signal {
    generation: AtomicU64,
    notify: Notify,
}

impl Signal {
    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// Wake-ups from other processes, for [`Store::changed`](crate::Store::changed).
#[derive(Debug)]
pub(super) struct Wakeups {
    config: tokio_postgres::Config,
    connector: Connector,
    connect_timeout: Duration,
    channel: String,
    signal: Arc<Signal>,
    /// The generation the last claim started at.
    seen: AtomicU64,
    /// Stops the listener task when the store is dropped. Set by the first wait, so that the
    /// task runs on the runtime that uses the store.
    task: OnceLock<DropGuard>,
}

impl Wakeups {
    pub(super) fn new(
        config: tokio_postgres::Config,
        connector: Connector,
        connect_timeout: Duration,
        channel: String,
    ) -> Self {
        Self {
            config,
            connector,
            connect_timeout,
            channel,
            signal: Arc::default(),
            seen: AtomicU64::new(0),
            task: OnceLock::new(),
        }
    }

    /// A claim is about to look at the database: messages up to now are accounted for.
    pub(super) fn claiming(&self) {
        let now = self.signal.generation.load(Ordering::SeqCst);
        self.seen.fetch_max(now, Ordering::SeqCst);
    }

    /// Resolves once a message arrived after the last claim started.
    pub(super) async fn changed(&self) {
        self.task.get_or_init(|| {
            let stop = CancellationToken::new();
            tokio::spawn(listen(
                Listener {
                    config: self.config.clone(),
                    connector: self.connector.clone(),
                    connect_timeout: self.connect_timeout,
                    channel: self.channel.clone(),
                },
                self.signal.clone(),
                stop.clone(),
            ));
            stop.drop_guard()
        });
        let notified = self.signal.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.signal.generation.load(Ordering::SeqCst) > self.seen.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}

/// How the listener task connects, and to which channel it listens.
struct Listener {
    config: tokio_postgres::Config,
    connector: Connector,
    connect_timeout: Duration,
    channel: String,
}

/// The listener task: listen, forward, reopen on loss, until `stop`.
async fn listen(listener: Listener, signal: Arc<Signal>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = listen_once(&listener, &signal) => {}
            () = stop.cancelled() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(RECONNECT_WAIT) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// One connection's life: returns when it is lost (or was never opened).
async fn listen_once(listener: &Listener, signal: &Signal) {
    let (config, timeout) = (&listener.config, listener.connect_timeout);
    match &listener.connector {
        Connector::Plain => {
            let connected = within(timeout, config.connect(NoTls)).await;
            listen_on(connected, &listener.channel, signal).await;
        }
        #[cfg(feature = "postgres-tls")]
        Connector::Rustls(tls) => {
            let connected = within(timeout, config.connect(tls.clone())).await;
            listen_on(connected, &listener.channel, signal).await;
        }
    }
}

/// Listens on one opened connection until it is lost.
async fn listen_on<S, T>(
    connected: Result<(Client, Connection<S, T>), PostgresError>,
    channel: &str,
    signal: &Signal,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    let (client, mut connection) = match connected {
        Ok(pair) => pair,
        Err(error) => {
            tracing::warn!(%error, "batch postgres store: cannot open the LISTEN connection");
            return;
        }
    };
    let drive = async {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(_)) => signal.bump(),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "batch postgres store: LISTEN connection lost");
                    return;
                }
            }
        }
    };
    let subscribe = async {
        let sql = format!("LISTEN \"{channel}\"");
        match client.batch_execute(&sql).await {
            // Changes made while this connection was not listening are not announced.
            Ok(()) => signal.bump(),
            Err(error) => {
                tracing::warn!(%error, "batch postgres store: LISTEN failed");
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = drive => {}
        () = subscribe => {}
    }
}
