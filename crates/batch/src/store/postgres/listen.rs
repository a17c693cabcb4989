//! The store's `LISTEN` connection: turns `NOTIFY` messages into wake-ups for idle workers
//! and into [`StoreEvent`]s.
//!
//! One task per store owns one connection outside the pool, listens on the store's channel
//! and bumps a generation counter on every message that may make a job claimable (a
//! [`Note`] marked `wake`, a payload it cannot read, or an empty one from an older release).
//! [`Wakeups::changed`] resolves once the generation moved past the one the last claim saw,
//! so a message that arrives between a worker's empty claim and its wait is not lost. A lost
//! connection is reopened after [`RECONNECT_WAIT`]; reopening bumps the generation too
//! (messages sent meanwhile are gone), and the store's bounded fallback poll covers the gap.
//!
//! Every readable note is also sent to the [`CallerStore::events`](crate::store::CallerStore::events) receivers
//! as [`StoreEvent::Progress`]; each time `LISTEN` succeeds (the first time included: changes
//! before it were not heard either) they get [`StoreEvent::Missed`], and again every poll
//! interval while it listens: notes sent after their changes' commits (`notifier.rs`) are
//! lost when their process dies first, so no receiver may wait on one without a bound. A
//! malformed payload is logged and is only a wake-up. Sending on the broadcast channel never waits: a receiver that
//! falls behind lags, and treats that as `Missed`.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Notify, broadcast};
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::PostgresError;
use super::connect::{Connector, within};
use super::queries::Note;
use crate::store::StoreEvent;

/// How long the listener waits before reopening a lost connection.
const RECONNECT_WAIT: Duration = Duration::from_secs(1);

/// How many events a receiver may fall behind before it lags.
const EVENTS_CAPACITY: usize = 1024;

/// The generation counter and its waiters, and the events' sender, shared with the listener
/// task.
#[derive(Debug)]
struct Signal {
    generation: AtomicU64,
    notify: Notify,
    events: broadcast::Sender<StoreEvent>,
}

impl Default for Signal {
    fn default() -> Self {
        Self {
            generation: AtomicU64::new(0),
            notify: Notify::new(),
            events: broadcast::channel(EVENTS_CAPACITY).0,
        }
    }
}

impl Signal {
    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Sends `event` to the receivers there are (none is fine).
    fn publish(&self, event: StoreEvent) {
        let _ = self.events.send(event);
    }

    /// One `NOTIFY` arrived with `payload`.
    fn message(&self, payload: &str) {
        if payload.is_empty() {
            // A replica of an older release: a plain wake-up.
            self.bump();
            return;
        }
        match Note::parse(payload) {
            Some(note) => {
                if note.wake {
                    self.bump();
                }
                self.publish(StoreEvent::Progress {
                    job: note.job,
                    progress: note.progress,
                });
            }
            None => {
                tracing::warn!(
                    payload,
                    "batch postgres store: unreadable NOTIFY payload, taken as a wake-up"
                );
                self.bump();
            }
        }
    }
}

/// Wake-ups from other processes, for [`WorkerStore::changed`](crate::store::WorkerStore::changed).
#[derive(Debug)]
pub(super) struct Wakeups {
    config: tokio_postgres::Config,
    connector: Connector,
    connect_timeout: Duration,
    channel: String,
    /// How often a listening connection reports `Missed` again.
    resync: Duration,
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
        resync: Duration,
    ) -> Self {
        Self {
            config,
            connector,
            connect_timeout,
            channel,
            resync,
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

    /// A new receiver of the store's events; starts the listener if a runtime is at hand.
    pub(super) fn events(&self) -> broadcast::Receiver<StoreEvent> {
        let receiver = self.signal.events.subscribe();
        if tokio::runtime::Handle::try_current().is_ok() {
            self.start();
        }
        receiver
    }

    /// Starts the listener task once, on the current runtime.
    fn start(&self) {
        self.task.get_or_init(|| {
            let stop = CancellationToken::new();
            tokio::spawn(listen(
                Listener {
                    config: self.config.clone(),
                    connector: self.connector.clone(),
                    connect_timeout: self.connect_timeout,
                    channel: self.channel.clone(),
                    resync: self.resync,
                },
                self.signal.clone(),
                stop.clone(),
            ));
            stop.drop_guard()
        });
    }

    /// Resolves once a message arrived after the last claim started.
    pub(super) async fn changed(&self) {
        self.start();
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
    resync: Duration,
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
            listen_on(connected, listener, signal).await;
        }
        #[cfg(feature = "postgres-tls")]
        Connector::Rustls(tls) => {
            let connected = within(timeout, config.connect(tls.clone())).await;
            listen_on(connected, listener, signal).await;
        }
    }
}

/// Listens on one opened connection until it is lost.
async fn listen_on<S, T>(
    connected: Result<(Client, Connection<S, T>), PostgresError>,
    listener: &Listener,
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
                Ok(AsyncMessage::Notification(note)) => signal.message(note.payload()),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "batch postgres store: LISTEN connection lost");
                    return;
                }
            }
        }
    };
    let subscribe = async {
        let sql = format!("LISTEN \"{}\"", listener.channel);
        match client.batch_execute(&sql).await {
            // Changes made while this connection was not listening are not announced.
            Ok(()) => {
                signal.bump();
                signal.publish(StoreEvent::Missed);
            }
            Err(error) => {
                tracing::warn!(%error, "batch postgres store: LISTEN failed");
                return;
            }
        }
        loop {
            tokio::time::sleep(listener.resync).await;
            signal.publish(StoreEvent::Missed);
        }
    };
    tokio::select! {
        () = drive => {}
        () = subscribe => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Counts, JobId, JobStatus};
    use crate::summary::Progress;

    fn generation(signal: &Signal) -> u64 {
        signal.generation.load(Ordering::SeqCst)
    }

    #[test]
    fn notes_wake_as_marked_and_become_events() {
        let signal = Signal::default();
        let mut events = signal.events.subscribe();
        signal.message("p 3 running 2 0 0");
        assert_eq!(generation(&signal), 0, "a start wakes no worker");
        let counts = Counts {
            pending: 2,
            done: 0,
            failed: 0,
        };
        assert_eq!(
            events.try_recv().unwrap(),
            StoreEvent::Progress {
                job: JobId::new(3),
                progress: Progress::new(JobStatus::Running, counts, None),
            }
        );
        signal.message("w 3 cancelled 2 0 0");
        assert_eq!(generation(&signal), 1);
        assert!(matches!(
            events.try_recv().unwrap(),
            StoreEvent::Progress { progress, .. } if progress.status == JobStatus::Cancelled
        ));
    }

    #[test]
    fn unreadable_and_empty_payloads_are_plain_wake_ups() {
        let signal = Signal::default();
        let mut events = signal.events.subscribe();
        signal.message("");
        signal.message("w 3 sleeping 2 0 0");
        assert_eq!(generation(&signal), 2);
        assert!(events.try_recv().is_err(), "no event from either");
    }
}
