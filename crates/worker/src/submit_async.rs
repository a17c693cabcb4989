//! [`SubmitAsync`] and [`SpawnAsync`]: a submit that waits for room without blocking the
//! thread that polls it. The waker protocol (register, then look again under the lock; every
//! finish wakes the oldest waiter; a dropped waiter removes its waker and passes on a wake it
//! got) is in the `//!` block of `core/room.rs`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::core::{Rejected, RoomWait};
use crate::pool::{SpawnJob, hand_back};
use crate::{SubmitError, TaskHandle};

/// The future of [`Pool::submit_async`](crate::Pool::submit_async): accepts the task once
/// the pool has room, without blocking the polling thread.
///
/// # Cancel safety
///
/// Dropping it before it completes accepts nothing: the task is accepted only in the poll
/// that returns `Ready(Ok(()))`, so a future dropped while pending (in `select!`, or by a
/// timeout) drops its task unrun, and leaves no waker behind that could take a wake-up
/// meant for another waiter.
///
/// # Examples
///
/// Cancelled by `select!` while the pool is full: the runtime's thread ran the other branch
/// meanwhile, and the task was never accepted.
///
/// ```
/// use std::time::Duration;
///
/// let pool = lockgate_worker::Pool::builder(1, 1).submit_buffer(0).build()?;
/// let (release, gate) = std::sync::mpsc::channel::<()>();
/// pool.submit(move || gate.recv().unwrap())?; // the pool is full
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
/// runtime.block_on(async {
///     tokio::select! {
///         _ = pool.submit_async(|| println!("never accepted")) => unreachable!(),
///         () = tokio::time::sleep(Duration::from_millis(10)) => {}
///     }
/// });
/// release.send(())?;
/// pool.close()?;
/// assert_eq!(pool.completed(), 1); // the gated task only
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited; the task is accepted only once this completes"]
pub struct SubmitAsync<'a, F> {
    wait: RoomWait<'a>,
    task: PhantomData<fn() -> F>,
}

impl<'a, F> SubmitAsync<'a, F>
where
    F: FnOnce() + Send + 'static,
{
    pub(crate) fn new(wait: RoomWait<'a>) -> Self {
        Self {
            wait,
            task: PhantomData,
        }
    }
}

impl<F> Future for SubmitAsync<'_, F>
where
    F: FnOnce() + Send + 'static,
{
    type Output = Result<(), SubmitError<F>>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().wait.poll(cx).map(|accepted| {
            accepted.map_err(|rejected| match rejected {
                Rejected::Closed(task) => SubmitError(hand_back(task)),
                Rejected::Full(_) | Rejected::Timeout(_) => {
                    unreachable!("an async submit waits for room: it is only refused as closed")
                }
            })
        })
    }
}

impl<F> fmt::Debug for SubmitAsync<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubmitAsync(..)")
    }
}

/// The future of [`Pool::spawn_async`](crate::Pool::spawn_async): accepts the task once the
/// pool has room, without blocking the polling thread, and gives its [`TaskHandle`].
///
/// # Cancel safety
///
/// As for [`SubmitAsync`]: dropped before it completes, it accepted nothing and its task is
/// dropped unrun.
///
/// # Examples
///
/// Two awaits: the first for room (acceptance), the second, on the handle, for the value.
///
/// ```
/// let pool = lockgate_worker::Pool::new(1, 2)?;
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let answer = runtime.block_on(async {
///     let handle = pool.spawn_async(|| 6 * 7).await?; // accepted
///     Ok::<_, Box<dyn std::error::Error>>(handle.await?) // finished
/// })?;
/// assert_eq!(answer, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "futures do nothing unless awaited; the task is accepted only once this completes"]
pub struct SpawnAsync<'a, F, T> {
    wait: RoomWait<'a>,
    /// The handle the task's job fills, given out once the job is accepted.
    handle: Option<TaskHandle<T>>,
    task: PhantomData<fn() -> F>,
}

impl<'a, F, T> SpawnAsync<'a, F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(wait: RoomWait<'a>, handle: TaskHandle<T>) -> Self {
        Self {
            wait,
            handle: Some(handle),
            task: PhantomData,
        }
    }
}

impl<F, T> Future for SpawnAsync<'_, F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = Result<TaskHandle<T>, SubmitError<F>>;

    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.wait.poll(cx).map(|accepted| match accepted {
            Ok(()) => Ok(this
                .handle
                .take()
                .expect("the handle is given out once, when the job is accepted")),
            Err(Rejected::Closed(job)) => Err(SubmitError(SpawnJob::<F, T>::hand_back(job))),
            Err(Rejected::Full(_) | Rejected::Timeout(_)) => {
                unreachable!("an async spawn waits for room: it is only refused as closed")
            }
        })
    }
}

impl<F, T> fmt::Debug for SpawnAsync<'_, F, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpawnAsync(..)")
    }
}
