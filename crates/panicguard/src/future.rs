//! Catching a panic in a future, poll by poll.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::{Panic, catch};

/// A future that resolves to `Ok(output)` of the future it wraps, or to `Err(Panic)` if a
/// poll of that future panicked.
///
/// Made by [`FutureExt::catch_panic`]. The wrapped future lives in one heap allocation
/// made at construction: that keeps this crate free of `unsafe` pin projection, costs one
/// `Box` per wrapped future, and makes `CatchPanic` `Unpin` whatever it wraps.
///
/// Once it has returned `Ready`, the wrapped future has been dropped; polling again is a
/// caller bug and panics.
///
/// # Cancel safety
///
/// Dropping a `CatchPanic` drops the wrapped future; it is exactly as cancel safe as the
/// future it wraps.
#[must_use = "futures do nothing unless polled"]
pub struct CatchPanic<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> CatchPanic<F> {
    /// Wraps `future`. Usually spelled `future.catch_panic()`.
    pub fn new(future: F) -> Self {
        Self {
            inner: Some(Box::pin(future)),
        }
    }
}

impl<F> std::fmt::Debug for CatchPanic<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatchPanic")
            .field("done", &self.inner.is_none())
            .finish()
    }
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self
            .inner
            .as_mut()
            .expect("CatchPanic polled after it returned Ready");
        let polled = catch(|| inner.as_mut().poll(cx));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.inner = None;
                Poll::Ready(Ok(output))
            }
            Err(panic) => {
                // A future that panicked may panic again while its locals drop; that second
                // panic has nothing to add to the first, so it is swallowed here.
                let broken = self.inner.take();
                let _ = catch(move || drop(broken));
                Poll::Ready(Err(panic))
            }
        }
    }
}

/// The old name of [`CatchPanic`].
#[deprecated(
    since = "0.1.0",
    note = "renamed `CatchPanic`, made by `catch_panic`, to stop clashing with `futures::FutureExt`"
)]
pub type CatchUnwind<F> = CatchPanic<F>;

/// Adds [`catch_panic`](FutureExt::catch_panic) to every future.
///
/// The method is not called `catch_unwind`: `futures::FutureExt` has a method of that name
/// for every future too, and with both traits in scope (most services import
/// `futures::FutureExt`) the call would be ambiguous (error E0034).
pub trait FutureExt: Future + Sized {
    /// Wraps this future so that a panic while polling it becomes `Err(Panic)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate_panicguard::FutureExt;
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let waker = std::task::Waker::noop();
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
    /// # }
    /// assert_eq!(block_on(async { 5 }.catch_panic()), Ok(5));
    /// ```
    fn catch_panic(self) -> CatchPanic<Self> {
        CatchPanic::new(self)
    }

    /// The old name of [`catch_panic`](FutureExt::catch_panic), kept for one release.
    #[deprecated(
        since = "0.1.0",
        note = "use `catch_panic`: `catch_unwind` is ambiguous (E0034) wherever `futures::FutureExt` is in scope"
    )]
    fn catch_unwind(self) -> CatchPanic<Self> {
        CatchPanic::new(self)
    }
}

impl<F: Future> FutureExt for F {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    /// Polls to completion on the current thread; the futures here never wait on I/O.
    fn block_on<F: Future>(future: F) -> F::Output {
        let mut cx = Context::from_waker(Waker::noop());
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
        }
    }

    /// Returns `Pending` once, so the panic after it happens on a later poll.
    struct YieldOnce(bool);

    impl Future for YieldOnce {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    fn assert_send<T: Send>(_: &T) {}

    #[test]
    fn ready_value_passes_through() {
        assert_eq!(block_on(async { 1 + 1 }.catch_panic()), Ok(2));
    }

    #[test]
    fn panic_on_first_poll_is_caught() {
        let fails = true;
        let caught = block_on(async { assert!(!fails, "first poll") }.catch_panic());
        assert_eq!(caught.unwrap_err().message(), "first poll");
    }

    #[test]
    fn panic_in_nested_future_after_a_yield_is_caught() {
        async fn leaf() -> u32 {
            YieldOnce(false).await;
            panic!("deep {}", "down")
        }
        async fn middle() -> u32 {
            leaf().await + 1
        }
        let caught = block_on(async { middle().await }.catch_panic()).unwrap_err();
        assert_eq!(caught.message(), "deep down");
    }

    #[test]
    fn adapter_is_send_when_the_future_is() {
        let future = async {
            YieldOnce(false).await;
            3
        }
        .catch_panic();
        assert_send(&future);
        assert_eq!(block_on(future), Ok(3));
    }

    #[test]
    fn drop_panic_after_a_panic_is_swallowed() {
        /// Panics when polled and again when dropped, outside any unwinding.
        struct PanicsTwice;
        impl Future for PanicsTwice {
            type Output = ();
            fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
                panic!("first")
            }
        }
        impl Drop for PanicsTwice {
            fn drop(&mut self) {
                panic!("second");
            }
        }
        let caught = block_on(PanicsTwice.catch_panic());
        assert_eq!(caught.unwrap_err().message(), "first");
    }

    #[test]
    #[should_panic(expected = "polled after it returned Ready")]
    fn polling_after_ready_blames_the_caller() {
        let mut future = std::pin::pin!(async { 1 }.catch_panic());
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(Ok(1)));
        let _ = future.as_mut().poll(&mut cx);
    }

    #[test]
    #[allow(deprecated)]
    fn the_deprecated_name_still_works() {
        let caught = block_on(async { panic!("old") }.catch_unwind());
        let renamed: CatchUnwind<std::future::Ready<u8>> = std::future::ready(4).catch_unwind();
        assert_eq!(caught.map(|()| 0).unwrap_err().message(), "old");
        assert_eq!(block_on(renamed), Ok(4));
    }
}
