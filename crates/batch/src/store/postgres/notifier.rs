//! The notifier: sends the notes of a process's claims and stores (a job's start, its
//! stored targets, its end) after their commits, in statements of its own.
//!
//! PostgreSQL takes a database-wide lock when a transaction that sent `NOTIFY` commits, and
//! holds it until the commit is done, the flush to disk included. A note sent inside a
//! durable store statement therefore made every other announcing store wait for its flush:
//! the end notes of jobs that end together, and the progress notes, went one flush at a time
//! (issue 14; measured in the commit that moved the sends here). Here each send is one statement that commits without waiting
//! for the disk, so the lock is held for no flush, and the stores send no `NOTIFY` at all.
//!
//! Rules (the notes wait in [`PendingNotes`], `carry.rs`):
//!
//! 1. A start or an end is sent at once: by the next send, which starts as soon as the one
//!    under way is answered. Progress of a job that goes on is sent newest per job, at most
//!    every `progress_interval` after the last send.
//! 2. At most one send is under way per store; notes that arrive meanwhile go with the next.
//! 3. A send that fails on a lost connection puts its notes back, and the notifier waits
//!    [`RETRY_WAIT`] before the next; any other failure drops them (logged), so that a note
//!    the server refuses cannot hold up the rest.
//! 4. When the store is dropped, the notes still waiting go out at once, in one last send
//!    (if the runtime still runs). Notes that a dying process leaves unsent are lost, as are
//!    notes the server loses in a crash: watchers in other processes learn those jobs'
//!    changes from their next note, or at the listener's next `Missed` (at least every poll
//!    interval, `listen.rs`), when they re-read the jobs they watch.
//!
//! The task starts at the first note, on the runtime of the call that pushed it, and ends
//! after its last send once the store is dropped. Each send takes a connection of the
//! store's pool for one statement.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::PostgresError;
use super::carry::PendingNotes;
use super::connect::Connections;
use super::queries;
use crate::error::StoreError;
use crate::job::JobId;

/// How long the notifier waits after a send failed on a lost connection.
const RETRY_WAIT: Duration = Duration::from_secs(1);

/// The waiting notes and the task that sends them.
#[derive(Debug)]
pub(super) struct Notifier {
    shared: Arc<Shared>,
    connections: Connections,
    channel: String,
    /// Tells the task to send what waits and end, when the store is dropped; set by the
    /// first note.
    task: OnceLock<DropGuard>,
}

/// What the task shares with the store.
#[derive(Debug)]
struct Shared {
    notes: PendingNotes,
    /// Wakes the task: notes came while none waited, or became due.
    wake: Notify,
}

impl Notifier {
    /// A notifier sending on `channel` over `connections`, progress at most every `interval`.
    pub(super) fn new(connections: Connections, channel: String, interval: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                notes: PendingNotes::new(interval),
                wake: Notify::new(),
            }),
            connections,
            channel,
            task: OnceLock::new(),
        }
    }

    /// Keeps `payload` as job `job`'s newest note, due at once if `at_once` (a start or an
    /// end), and wakes the task if it must look.
    pub(super) fn push(&self, job: JobId, payload: String, at_once: bool) {
        if self.shared.notes.push(job, payload, at_once) {
            self.start();
            // A permit is kept if the task is not waiting yet: no wake-up is lost.
            self.shared.wake.notify_one();
        }
    }

    /// Starts the task once, on the current runtime (every store call runs on one).
    fn start(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.task.get_or_init(|| {
            let stop = CancellationToken::new();
            tokio::spawn(run(
                Arc::clone(&self.shared),
                self.connections.clone(),
                self.channel.clone(),
                stop.clone(),
            ));
            stop.drop_guard()
        });
    }
}

/// The task: waits until notes are due and sends them; once `stop` is cancelled, sends what
/// waits and ends.
async fn run(
    shared: Arc<Shared>,
    connections: Connections,
    channel: String,
    stop: CancellationToken,
) {
    loop {
        if stop.is_cancelled() {
            let sending = shared.notes.sending_all();
            if !sending.payloads().is_empty() {
                let sent = send(&connections, &channel, sending.payloads()).await;
                report(&sent, sending.payloads().len(), false);
                sending.answered(&sent.map_err(StoreError::from));
            }
            return;
        }
        let wait = shared.notes.due_in(Instant::now());
        if wait != Some(Duration::ZERO) {
            let due = async {
                match wait {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = due => {}
                () = shared.wake.notified() => {}
                () = stop.cancelled() => {}
            }
            continue;
        }
        let sending = shared.notes.sending();
        if sending.payloads().is_empty() {
            continue;
        }
        let sent = send(&connections, &channel, sending.payloads()).await;
        let answer = sent.map_err(StoreError::from);
        let lost = matches!(answer, Err(StoreError::Unavailable(_)));
        report(&answer, sending.payloads().len(), lost);
        sending.answered(&answer);
        if lost {
            tokio::select! {
                () = tokio::time::sleep(RETRY_WAIT) => {}
                () = stop.cancelled() => {}
            }
        }
    }
}

/// Logs a failed send of `notes` notes; `kept`: they wait for the next.
fn report<E: std::fmt::Display>(answer: &Result<(), E>, notes: usize, kept: bool) {
    if let Err(error) = answer {
        tracing::warn!(
            %error,
            notes,
            kept,
            "batch postgres store: sending notes failed"
        );
    }
}

/// One send: one statement in autocommit on the store's own pool, a transaction on an
/// application's.
async fn send(
    connections: &Connections,
    channel: &str,
    payloads: &[String],
) -> Result<(), PostgresError> {
    let mut client = connections.client().await?;
    let within = tokio::time::timeout(connections.call_timeout(), async {
        if connections.autocommit() {
            return queries::send_notes(&client, channel, payloads).await;
        }
        let tx = connections.begin(&mut client).await?;
        queries::send_notes(&tx, channel, payloads).await?;
        tx.commit().await?;
        Ok(())
    })
    .await;
    within.unwrap_or_else(|_| Err(connections.abandon(client)))
}
