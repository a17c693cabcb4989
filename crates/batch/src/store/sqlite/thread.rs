//! The thread that owns a SQLite store's connection, so that no SQLite call ever runs on a
//! tokio worker thread.
//!
//! # Protocol
//!
//! 1. [`ConnectionThread::spawn`] moves the connection (and the lock that makes this process
//!    its one owner) onto a thread of its own. The thread is the only code that touches them.
//! 2. A call is a closure sent over a channel with a oneshot for its answer. The thread runs
//!    calls one at a time in the order they were sent (one connection, one transaction at a
//!    time: what the store's lock used to enforce), and between calls it sleeps in `recv`.
//! 3. The caller's future awaits the oneshot, so the executor runs other tasks meanwhile. A
//!    caller that stops waiting (its future dropped) does not stop its call: the call is one
//!    transaction, committed or rolled back whole, and the answer is dropped.
//! 4. A call that panics (a bug in this crate, never user code: user code never reaches the
//!    thread) is caught: its transaction rolls back on unwind, its caller gets
//!    [`StoreError::Failed`], and the thread serves the next call.
//! 5. [`ConnectionThread::finish`] (or dropping it) closes the channel; the thread finishes
//!    the calls already sent, closes the connection (a WAL checkpoint: milliseconds), then
//!    releases the owner lock and ends. Nothing waits for that on a tokio thread: the store's
//!    `close` awaits the thread's `exited` signal, and `drop` leaves the join to whoever opens
//!    the same file next in this process (`owner::closing`).
//!
//! This is I/O, not shared state: the thread and its channel are std's even under loom (the
//! models cover the runner's state machines, not SQLite).

use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::error::StoreError;

/// A call to run on the connection's thread, with what it owns.
type Call<C> = Box<dyn FnOnce(&mut C) + Send>;

/// A thread owning a value `C` (the connection and what lives beside it) and running calls on
/// it in order.
#[derive(Debug)]
pub(super) struct ConnectionThread<C> {
    calls: Option<mpsc::Sender<Call<C>>>,
    thread: Option<JoinHandle<()>>,
    /// Fired by the thread once it has dropped what it owns.
    exited: Option<oneshot::Receiver<()>>,
}

impl<C: Send + 'static> ConnectionThread<C> {
    /// Starts the thread, which owns `owned` until the thread ends.
    ///
    /// # Errors
    ///
    /// The OS refused a new thread.
    pub(super) fn spawn(name: &str, owned: C) -> std::io::Result<Self> {
        let (calls, receiver) = mpsc::channel::<Call<C>>();
        let (exit, exited) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut owned = owned;
                while let Ok(call) = receiver.recv() {
                    // The call's own oneshot carries its answer; a panic drops that oneshot, and
                    // the caller reads the drop as a failure (step 4).
                    if let Err(panic) = panicguard::catch(|| call(&mut owned)) {
                        tracing::error!(panic = panic.message(), "sqlite store call panicked");
                    }
                }
                // Step 5: the connection closes here, before the lock beside it is released.
                drop(owned);
                let _ = exit.send(());
            })?;
        Ok(Self {
            calls: Some(calls),
            thread: Some(thread),
            exited: Some(exited),
        })
    }

    /// Closes the channel: the thread ends once the calls already sent are done. Its handle,
    /// to join or to hand on; `None` if finished before.
    pub(super) fn finish(&mut self) -> Option<JoinHandle<()>> {
        drop(self.calls.take());
        self.thread.take()
    }

    /// Closes the channel and waits, without blocking a thread, until the thread has dropped
    /// what it owns.
    pub(super) async fn close(&mut self) {
        drop(self.finish());
        if let Some(exited) = self.exited.take() {
            // An error means the thread is gone anyway.
            let _ = exited.await;
        }
    }

    /// Runs `f` on the thread; its answer.
    ///
    /// # Errors
    ///
    /// [`StoreError::Failed`] if `f` panicked.
    pub(super) async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut C) -> R + Send + 'static,
    ) -> Result<R, StoreError> {
        let (reply, answer) = oneshot::channel();
        let call: Call<C> = Box::new(move |owned| {
            // The caller may have gone (step 3): its answer is dropped.
            let _ = reply.send(f(owned));
        });
        let sent = match &self.calls {
            Some(calls) => calls.send(call).is_ok(),
            None => false,
        };
        if !sent {
            return Err(thread_gone());
        }
        answer.await.map_err(|_| thread_gone())
    }

    /// Runs `f` on the thread and blocks the calling thread until it answers: for synchronous
    /// code outside any runtime (tests).
    #[cfg(test)]
    pub(super) fn call_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut C) -> R + Send + 'static,
    ) -> Result<R, StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let call: Call<C> = Box::new(move |owned| {
            let _ = reply.send(f(owned));
        });
        let calls = self.calls.as_ref().ok_or_else(thread_gone)?;
        calls.send(call).map_err(|_| thread_gone())?;
        answer.recv().map_err(|_| thread_gone())
    }
}

/// The answer of a call that panicked (or of a thread that is gone, which only a panic in
/// this module could cause).
fn thread_gone() -> StoreError {
    StoreError::Failed(
        "the sqlite store's call failed inside the store (a bug; see the logs)".into(),
    )
}

impl<C> Drop for ConnectionThread<C> {
    /// Closes the channel and lets the thread end on its own (step 5).
    fn drop(&mut self) {
        drop(self.calls.take());
    }
}
