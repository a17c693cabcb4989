//! [`TaskHandle`]: the result of one spawned task, delivered once through a one-slot channel.
//!
//! The slot and the waker of an async waiter share one small lock (never the pool's, never
//! taken while the pool's is held). Wakers are cloned, woken and dropped with that lock
//! released: a waker is the runtime's code, and running it under a lock could deadlock or
//! poison it.
//!
//! The worker fills the slot, takes the waker, unlocks, then wakes it. A poll clones a new
//! waker with the lock released and re-checks the slot before storing it, so a result that
//! arrived in between is returned at once rather than left with nobody to wake (the loom
//! model of an awaited handle checks this race). Dropping the handle, or a future awaiting
//! it, never cancels the task.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use lockgate_panicguard::Panic;

use crate::sync::{Arc, Condvar, Mutex, MutexGuard, lock, wait, wait_timeout};
use crate::{JoinError, JoinTimeoutError};

/// What the slot holds.
enum Slot<T> {
    /// The task has not finished.
    Pending,
    /// The task finished; `join` takes this.
    Done(Result<T, JoinError>),
    /// `join` or the future took the value.
    Taken,
}

/// Everything `Inner::state` guards.
struct State<T> {
    slot: Slot<T>,
    /// The waker of the last poll that returned `Pending`, woken (outside the lock) when the
    /// slot is filled.
    waker: Option<Waker>,
}

struct Inner<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

/// The sending half, moved into the task. Dropping it unsent fills the slot with an error,
/// so `join` never waits forever. The pool runs every task it accepted, so that happens
/// when the task unwinds before it sends (a panic outside the task's own catch, such as one
/// from a `tracing` subscriber while the task's panic is logged), or when the pool rejects
/// the task; `spawn` then returns a fresh closed handle and nobody reads this slot.
pub(crate) struct ResultSender<T> {
    inner: Option<Arc<Inner<T>>>,
}

impl<T> ResultSender<T> {
    pub(crate) fn send(mut self, result: Result<T, JoinError>) {
        if let Some(inner) = self.inner.take() {
            fill(&inner, result);
        }
    }
}

impl<T> Drop for ResultSender<T> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // Only reachable when the task was dropped unrun (a rejected spawn, whose handle
            // nobody holds) or unwound past its own catch before sending (a panicking
            // `tracing` subscriber; a payload whose drop panics is already caught by
            // `Panic::from_payload`).
            let lost = Panic::from_payload(Box::new("the task ended without a result"));
            fill(&inner, Err(JoinError::Panicked(lost)));
        }
    }
}

fn fill<T>(inner: &Inner<T>, result: Result<T, JoinError>) {
    let mut state = lock(&inner.state);
    if matches!(state.slot, Slot::Pending) {
        state.slot = Slot::Done(result);
    }
    let waker = state.waker.take();
    drop(state);
    inner.ready.notify_all();
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// A handle to a task started with [`Pool::spawn`](crate::Pool::spawn): `join` waits for its
/// result, or for the [`Panic`] it ended with; `.await` does the same without blocking.
///
/// Compare [`std::thread::JoinHandle`]: the same shape, but the task runs on a pool worker,
/// and a panic arrives as [`JoinError::Panicked`] instead of a `Box<dyn Any>`. Dropping the
/// handle does not cancel the task; its result is dropped when it finishes.
///
/// # Guarantees
///
/// - The result is delivered exactly once: to `join`, to `join_timeout`, or as the output of
///   the future.
/// - As a [`Future`] it never blocks the polling thread: a `Pending` poll stores the
///   waker, and the worker that finishes the task wakes it (after releasing every lock).
///   Only the waker of the most recent poll is kept, as for any future.
///
/// # Cancel safety
///
/// Dropping the handle, or a future awaiting it, never cancels the task: it runs to the end
/// and its result is dropped. Awaiting `&mut handle` (in `select!`, say) and dropping that
/// borrow loses nothing; the handle can be awaited or joined again later.
///
/// # Examples
///
/// ```
/// let pool = lockgate_worker::Pool::new(1, 2)?;
/// let answer = pool.spawn(|| 6 * 7);
/// assert_eq!(answer.join()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Awaited from async code, the runtime's thread is free while the task runs:
///
/// ```
/// let pool = lockgate_worker::Pool::new(1, 2)?;
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let sum = runtime.block_on(async {
///     let (a, b) = (pool.spawn(|| 40), pool.spawn(|| 2));
///     Ok::<_, lockgate_worker::JoinError>(a.await? + b.await?)
/// })?;
/// assert_eq!(sum, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TaskHandle<T> {
    inner: Arc<Inner<T>>,
}

impl<T> TaskHandle<T> {
    /// A handle and the sender the task will fill.
    pub(crate) fn channel() -> (ResultSender<T>, Self) {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                slot: Slot::Pending,
                waker: None,
            }),
            ready: Condvar::new(),
        });
        let sender = ResultSender {
            inner: Some(Arc::clone(&inner)),
        };
        (sender, Self { inner })
    }

    /// A handle for a task the pool rejected because it was closing.
    pub(crate) fn closed() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    slot: Slot::Done(Err(JoinError::Closed)),
                    waker: None,
                }),
                ready: Condvar::new(),
            }),
        }
    }

    /// Waits for the task and returns its value.
    ///
    /// # Errors
    ///
    /// - [`JoinError::Panicked`] if the task panicked (the pool logged it too and went on).
    /// - [`JoinError::Closed`] if the pool was closing when the task was spawned; it never ran.
    ///
    /// # Panics
    ///
    /// If the handle was already awaited to completion as a future (its result is gone).
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        match self.wait_until(None) {
            Ok(result) => result,
            Err(_timed_out) => unreachable!("a wait without a deadline does not time out"),
        }
    }

    /// Waits at most `timeout` for the task and returns its value; on a timeout the handle
    /// comes back, to wait again or to drop (the task runs on either way).
    ///
    /// # Errors
    ///
    /// - [`JoinTimeoutError::Timeout`] with the handle if the task had not finished.
    /// - [`JoinTimeoutError::Join`] with [`JoinError::Panicked`] or [`JoinError::Closed`],
    ///   as for [`TaskHandle::join`].
    ///
    /// # Panics
    ///
    /// If the handle was already awaited to completion as a future (its result is gone).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool = lockgate_worker::Pool::new(1, 1)?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// let slow = pool.spawn(move || { gate.recv().unwrap(); "done" });
    /// let slow = slow.join_timeout(Duration::from_millis(10)).unwrap_err().into_handle().unwrap();
    /// release.send(())?;
    /// assert_eq!(slow.join_timeout(Duration::from_secs(60))?, "done");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn join_timeout(self, timeout: Duration) -> Result<T, JoinTimeoutError<T>> {
        // A timeout too large for `Instant` waits like `join`.
        let deadline = Instant::now().checked_add(timeout);
        match self.wait_until(deadline) {
            Ok(result) => result.map_err(JoinTimeoutError::Join),
            Err(handle) => Err(JoinTimeoutError::Timeout(handle)),
        }
    }

    /// Waits for the result until `deadline` (`None`: no deadline); the handle back when the
    /// deadline passed first.
    #[track_caller]
    fn wait_until(self, deadline: Option<Instant>) -> Result<Result<T, JoinError>, Self> {
        let mut state = lock(&self.inner.state);
        loop {
            if let Some(result) = take_done(&mut state) {
                return Ok(result);
            }
            match deadline {
                None => state = wait(&self.inner.ready, state),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        drop(state);
                        return Err(self);
                    }
                    state = wait_timeout(&self.inner.ready, state, deadline - now).0;
                }
            }
        }
    }

    /// True once the task has finished (successfully or not); `join` will not wait then.
    pub fn is_finished(&self) -> bool {
        !matches!(lock(&self.inner.state).slot, Slot::Pending)
    }
}

/// Takes the result if the task finished; `None` while it runs.
#[track_caller]
fn take_done<T>(state: &mut MutexGuard<'_, State<T>>) -> Option<Result<T, JoinError>> {
    match std::mem::replace(&mut state.slot, Slot::Taken) {
        Slot::Done(result) => Some(result),
        Slot::Pending => {
            state.slot = Slot::Pending;
            None
        }
        Slot::Taken => panic!("the TaskHandle's result was already taken by awaiting it"),
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, JoinError>;

    /// # Cancel safety
    ///
    /// Dropping the future drops the handle; the task runs on (see [`TaskHandle`]).
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = lock(&self.inner.state);
        if let Some(result) = take_done(&mut state) {
            return Poll::Ready(result);
        }
        if state
            .waker
            .as_ref()
            .is_some_and(|stored| stored.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        // Clone the new waker and drop the old one with the lock released (both run the
        // runtime's code), then re-check: the task may have finished in between, and then
        // nobody would wake the waker stored now.
        drop(state);
        let waker = cx.waker().clone();
        let mut state = lock(&self.inner.state);
        if let Some(result) = take_done(&mut state) {
            drop(state);
            drop(waker);
            return Poll::Ready(result);
        }
        let replaced = state.waker.replace(waker);
        drop(state);
        drop(replaced);
        Poll::Pending
    }
}

impl<T> fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
