//! [`TaskHandle`]: the result of one spawned task, delivered once through a one-slot channel.

use std::fmt;

use panicguard::Panic;

use crate::JoinError;
use crate::sync::{Arc, Condvar, Mutex, lock, wait};

/// What the slot holds.
enum Slot<T> {
    /// The task has not finished.
    Pending,
    /// The task finished; `join` takes this.
    Done(Result<T, JoinError>),
    /// `join` took the value.
    Taken,
}

struct Inner<T> {
    slot: Mutex<Slot<T>>,
    ready: Condvar,
}

/// The sending half, moved into the task. Dropping it unsent (the task was dropped without
/// finishing, which the pool only does when it rejected it) fills the slot with an error,
/// so `join` never waits forever.
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
            // Only reachable when the task was dropped unrun (a rejected spawn) or unwound
            // past its own catch (a panic payload that panics when dropped).
            let lost = Panic::from_payload(Box::new("the task ended without a result"));
            fill(&inner, Err(JoinError::Panicked(lost)));
        }
    }
}

fn fill<T>(inner: &Inner<T>, result: Result<T, JoinError>) {
    let mut slot = lock(&inner.slot);
    if matches!(*slot, Slot::Pending) {
        *slot = Slot::Done(result);
    }
    drop(slot);
    inner.ready.notify_all();
}

/// A handle to a task started with [`Pool::spawn`](crate::Pool::spawn): `join` waits for its
/// result, or for the [`Panic`] it ended with.
///
/// Compare [`std::thread::JoinHandle`]: the same shape, but the task runs on a pool worker,
/// and a panic arrives as [`JoinError::Panicked`] instead of a `Box<dyn Any>`. Dropping the
/// handle does not cancel the task; its result is dropped when it finishes.
///
/// # Examples
///
/// ```
/// let pool = worker::Pool::new(1, 2)?;
/// let answer = pool.spawn(|| 6 * 7);
/// assert_eq!(answer.join()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TaskHandle<T> {
    inner: Arc<Inner<T>>,
}

impl<T> TaskHandle<T> {
    /// A handle and the sender the task will fill.
    pub(crate) fn channel() -> (ResultSender<T>, Self) {
        let inner = Arc::new(Inner {
            slot: Mutex::new(Slot::Pending),
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
                slot: Mutex::new(Slot::Done(Err(JoinError::Closed))),
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
    pub fn join(self) -> Result<T, JoinError> {
        let mut slot = lock(&self.inner.slot);
        loop {
            match std::mem::replace(&mut *slot, Slot::Taken) {
                Slot::Done(result) => return result,
                Slot::Pending => {
                    *slot = Slot::Pending;
                    slot = wait(&self.inner.ready, slot);
                }
                Slot::Taken => unreachable!("join takes the handle by value"),
            }
        }
    }

    /// True once the task has finished (successfully or not); `join` will not wait then.
    pub fn is_finished(&self) -> bool {
        !matches!(*lock(&self.inner.slot), Slot::Pending)
    }
}

impl<T> fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}
