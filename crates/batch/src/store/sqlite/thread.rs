//! The thread that owns a SQLite store's connection, so that no SQLite call ever runs on a
//! tokio worker thread, and that commits the calls waiting for it together.
//!
//! # Protocol
//!
//! 1. [`ConnectionThread::spawn`] moves the connection (and the lock that makes this process
//!    its one owner) onto a thread of its own. The thread is the only code that touches them.
//! 2. A call is a closure sent over a channel with the means to answer it. The thread takes
//!    the calls waiting in the channel, up to [`MAX_BATCH`], as one *batch*: it begins one
//!    transaction ([`Batches::begin`]), runs the calls one by one in the order they were sent
//!    (each in a savepoint of its own, so a call that fails undoes only itself), commits, and
//!    only then answers them all. A quiet store commits each call alone, exactly as before;
//!    a busy one (several workers storing at once) shares one commit, one WAL write and, with
//!    `synchronous = FULL`, one fsync among the batch.
//! 3. No answer leaves before its commit: when a caller sees its call succeed, the call is as
//!    durable as a transaction of its own would be. If the batch cannot begin or commit, every
//!    call in it gets that failure (nothing of the batch is kept), and the counters beside the
//!    connection go back to where the batch began.
//! 4. The caller's future awaits the answer, so the executor runs other tasks meanwhile. A
//!    caller that stops waiting (its future dropped) does not stop its call: the call commits
//!    or rolls back with its batch, and the answer is dropped.
//! 5. A call that panics (a bug in this crate, never user code: user code never reaches the
//!    thread) is caught; its batch is rolled back and every call in it fails with
//!    [`StoreError::Failed`]; the thread serves the next batch.
//! 6. [`ConnectionThread::finish`] (or dropping it) closes the channel; the thread finishes
//!    the calls already sent, closes the connection (a WAL checkpoint: milliseconds), then
//!    releases the owner lock and ends. Nothing waits for that on a tokio thread: the store's
//!    `close` awaits the thread's `exited` signal, and after `drop` whoever opens the same
//!    file next in this process waits until the lock is released (`owner.rs`, step 3).
//!
//! This is I/O, not shared state: the thread and its channel are std's even under loom (the
//! models cover the runner's state machines, not SQLite).

use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::error::StoreError;

/// The most calls one transaction carries: enough to share a commit among every worker of a
/// busy runner, few enough that the first call of a batch waits little for the last.
pub(super) const MAX_BATCH: usize = 64;

/// What the thread owns: something that runs calls inside batches (step 2).
pub(super) trait Batches {
    /// Why a batch could not begin or commit.
    type Error;

    /// Begins a batch.
    fn begin(&mut self) -> Result<(), Self::Error>;

    /// Keeps every call of the batch, or (on error) none of them.
    fn commit(&mut self) -> Result<(), Self::Error>;

    /// Undoes every call of the batch.
    fn rollback(&mut self);

    /// The failure each call of a failed batch answers with (each gets its own).
    fn failure(error: &Self::Error) -> StoreError;

    /// Runs first on the thread, before any call: where an owner sets the thread up.
    fn started(&mut self) {}
}

/// A call waiting for the thread.
trait Call<C>: Send {
    /// Runs the call; what answers it once its batch has ended.
    fn run(self: Box<Self>, owned: &mut C) -> Answer;

    /// Answers the call with `error` without running it.
    fn fail(self: Box<Self>, error: StoreError);
}

/// Sends a call's answer once its batch ended: `None` if the batch committed, else its
/// failure. A call that failed by itself answers with its own error either way (it changed
/// nothing, and its error says why better than the batch's).
type Answer = Box<dyn FnOnce(Option<StoreError>) + Send>;

/// A call: the closure `f` and `send`, which delivers its answer.
struct Pending<F, S> {
    f: F,
    send: S,
}

impl<C, T, E, F, S> Call<C> for Pending<F, S>
where
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
    F: FnOnce(&mut C) -> Result<T, E> + Send,
    S: FnOnce(Result<T, E>) + Send + 'static,
{
    fn run(self: Box<Self>, owned: &mut C) -> Answer {
        let Pending { f, send } = *self;
        let result = f(owned);
        Box::new(move |failure| {
            send(match (result, failure) {
                (Ok(_), Some(error)) => Err(error.into()),
                (result, _) => result,
            });
        })
    }

    fn fail(self: Box<Self>, error: StoreError) {
        (self.send)(Err(error.into()));
    }
}

/// A thread owning a value `C` (the connection and what lives beside it) and running calls on
/// it in batches, in order.
pub(super) struct ConnectionThread<C> {
    calls: Option<mpsc::Sender<Box<dyn Call<C>>>>,
    thread: Option<JoinHandle<()>>,
    /// Fired by the thread once it has dropped what it owns.
    exited: Option<oneshot::Receiver<()>>,
}

impl<C> std::fmt::Debug for ConnectionThread<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionThread")
            .field("open", &self.calls.is_some())
            .finish_non_exhaustive()
    }
}

impl<C: Batches + Send + 'static> ConnectionThread<C> {
    /// Starts the thread, which owns `owned` until the thread ends.
    ///
    /// # Errors
    ///
    /// The OS refused a new thread.
    pub(super) fn spawn(name: &str, owned: C) -> std::io::Result<Self> {
        let (calls, receiver) = mpsc::channel::<Box<dyn Call<C>>>();
        let (exit, exited) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut owned = owned;
                owned.started();
                while let Ok(first) = receiver.recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match receiver.try_recv() {
                            Ok(call) => batch.push(call),
                            Err(_) => break,
                        }
                    }
                    run_batch(&mut owned, batch);
                }
                // Step 6: the connection closes here, before the lock beside it is released.
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

    /// Sends `call` to the thread; `false` if it is gone.
    fn send(&self, call: Box<dyn Call<C>>) -> bool {
        match &self.calls {
            Some(calls) => calls.send(call).is_ok(),
            None => false,
        }
    }

    /// Runs `f` on the thread; its answer once its batch ended.
    ///
    /// # Errors
    ///
    /// `f`'s own error; else the batch's failure (step 3), or [`StoreError::Failed`] if a call
    /// of its batch panicked.
    pub(super) async fn call<T, E>(
        &self,
        f: impl FnOnce(&mut C) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let send = move |result| {
            // The caller may have gone (step 4): its answer is dropped.
            let _ = reply.send(result);
        };
        if !self.send(Box::new(Pending { f, send })) {
            return Err(thread_gone().into());
        }
        answer.await.unwrap_or_else(|_| Err(thread_gone().into()))
    }

    /// Runs `f` on the thread and blocks the calling thread until it answers: for synchronous
    /// code outside any runtime (tests).
    #[cfg(test)]
    pub(super) fn call_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut C) -> R + Send + 'static,
    ) -> Result<R, StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        let f = move |owned: &mut C| Ok::<R, StoreError>(f(owned));
        let send = move |result| {
            let _ = reply.send(result);
        };
        if !self.send(Box::new(Pending { f, send })) {
            return Err(thread_gone());
        }
        answer.recv().unwrap_or_else(|_| Err(thread_gone()))
    }
}

/// Runs one batch (steps 2, 3 and 5).
fn run_batch<C: Batches>(owned: &mut C, batch: Vec<Box<dyn Call<C>>>) {
    if let Err(error) = owned.begin() {
        for call in batch {
            call.fail(C::failure(&error));
        }
        return;
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut calls = batch.into_iter();
    let mut panicked = false;
    for call in calls.by_ref() {
        match lockgate_panicguard::catch(|| call.run(owned)) {
            Ok(answer) => answers.push(answer),
            Err(panic) => {
                tracing::error!(panic = panic.message(), "sqlite store call panicked");
                panicked = true;
                break;
            }
        }
    }
    if panicked {
        owned.rollback();
        for call in calls {
            call.fail(thread_gone());
        }
        for answer in answers {
            answer(Some(thread_gone()));
        }
        return;
    }
    match owned.commit() {
        Ok(()) => answers.into_iter().for_each(|answer| answer(None)),
        Err(error) => answers
            .into_iter()
            .for_each(|answer| answer(Some(C::failure(&error)))),
    }
}

/// The answer of a call whose batch had a call panic (or of a thread that is gone, which only
/// a panic in this module could cause).
fn thread_gone() -> StoreError {
    StoreError::Failed(
        "the sqlite store's call failed inside the store (a bug; see the logs)".into(),
    )
}

impl<C> Drop for ConnectionThread<C> {
    /// Closes the channel and lets the thread end on its own (step 6).
    fn drop(&mut self) {
        drop(self.calls.take());
    }
}
