//! [`AdmissionLayer`]: the pool's admission rule (rule 3: slots, a bounded FIFO queue, a wait
//! limit) as a tower layer for any service, without keys, callers or sharing.
//!
//! tower has the two halves: `ConcurrencyLimit` waits without bound, `LoadShed` refuses at
//! once. This layer does both in order: a request goes in while a slot is free, waits in a
//! FIFO queue of `queue` places for at most `wait` otherwise, and is refused at once when the
//! queue is full. The state machine is in `gate.rs`.

mod gate;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use gate::{Entry, Gate};

use crate::BusyCause;
use crate::sync::Arc;

/// Bounds a tower service like a [`Pool`](crate::Pool) bounds jobs: at most `slots` requests
/// inside it at once, at most `queue` waiting (first come, first served), each for at most
/// `wait`; the others are refused with a typed [`Rejected`] a web service turns into
/// `503 Service Unavailable` with a `Retry-After`.
///
/// Every service this layer makes, and every clone of them, shares one set of limits (like
/// tower's `GlobalConcurrencyLimitLayer`): apply it once to a whole router and the limits hold
/// across all its routes. Cloning the layer shares them too; make another layer for separate
/// limits.
///
/// # Guarantees
///
/// - **Bounds.** At most `slots` requests are inside the inner service at every instant
///   (from entering to the end of the response future), at most `queue` wait.
/// - **Order.** Waiting requests go in in the order they arrived; a new request never
///   overtakes a waiting one (a freed slot goes straight to the queue's head).
/// - **Refusals.** With every slot taken and the queue full, a request is refused at once
///   ([`BusyCause::QueueFull`]); a request that waited `wait` (plus about a millisecond of
///   timer granularity) is refused then ([`BusyCause::WaitExpired`]). A refused request never
///   reaches the inner service.
/// - **Exact.** A slot that frees while requests wait passes to the oldest one at once, so a
///   queue place is free again at that instant, not when the waiter is next polled.
///
/// What it costs: one allocation per request (the response future is boxed: this crate has no
/// `unsafe` and no pin-projection macro), one lock acquisition to enter and one to leave; a
/// waiting request also allocates a oneshot and a timer.
///
/// Admission happens when the response future is first polled, not in `call`: a future
/// never polled takes no slot and no place.
///
/// Not promised: readiness. The service is always ready; the inner service's readiness is
/// awaited after admission, while holding the slot (the inner service is cloned per request,
/// as tower's `Buffer` and axum do, so it must be `Clone`).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use pdfpool::{AdmissionError, AdmissionLayer, BusyCause};
/// use tokio::sync::Semaphore;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let layer = AdmissionLayer::new(1, 0, Duration::from_secs(5));
/// let open = Arc::new(Semaphore::new(0)); // holds the requests inside until the end
/// let handler_open = Arc::clone(&open);
/// let service = layer.layer(service_fn(move |name: &'static str| {
///     let open = Arc::clone(&handler_open);
///     async move {
///         let _open = open.acquire().await.unwrap();
///         Ok::<_, std::convert::Infallible>(format!("hello, {name}"))
///     }
/// }));
/// let first = tokio::spawn(service.clone().oneshot("first"));
/// tokio::task::yield_now().await; // `first` goes in and stays there
/// // The only slot is taken and there is no queue: refused at once.
/// let refused = service.clone().oneshot("second").await.unwrap_err();
/// let AdmissionError::Rejected(rejected) = refused else { panic!("a rejection") };
/// assert_eq!(rejected.cause(), BusyCause::QueueFull);
/// assert_eq!(rejected.retry_after_secs(), 5);
/// assert_eq!((layer.inside(), layer.queued()), (1, 0));
/// open.add_permits(1);
/// assert_eq!(first.await.unwrap().unwrap(), "hello, first");
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AdmissionLayer {
    gate: Arc<Gate>,
}

impl AdmissionLayer {
    /// A layer letting `slots` requests in at once, with `queue` more waiting for at most
    /// `wait` each (capped at [`Pool::MAX_WAIT`](crate::Pool::MAX_WAIT)).
    ///
    /// # Panics
    ///
    /// If `slots` is 0: nothing could ever go in.
    #[track_caller]
    pub fn new(slots: usize, queue: usize, wait: Duration) -> Self {
        assert!(
            slots > 0,
            "pdfpool::AdmissionLayer::new: `slots` must be at least 1"
        );
        let wait = wait.min(crate::Pool::<(), (), ()>::MAX_WAIT);
        Self {
            gate: Arc::new(Gate::new(slots, queue, wait)),
        }
    }

    /// How many requests may be inside at once.
    pub fn slots(&self) -> usize {
        self.gate.slots()
    }

    /// How many requests may wait at most.
    pub fn queue_limit(&self) -> usize {
        self.gate.queue_limit()
    }

    /// How long a request waits at most (also the [`Rejected::retry_after`] hint).
    pub fn wait(&self) -> Duration {
        self.gate.wait()
    }

    /// How many requests are inside now (at most `slots`).
    pub fn inside(&self) -> usize {
        self.gate.inside()
    }

    /// How many requests wait now (at most `queue`).
    pub fn queued(&self) -> usize {
        self.gate.queued()
    }
}

impl<S> tower_layer::Layer<S> for AdmissionLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Admission<S> {
        Admission {
            inner,
            gate: Arc::clone(&self.gate),
        }
    }
}

/// The service made by [`AdmissionLayer`]: admits each request through the layer's shared
/// limits, then calls the inner service.
#[derive(Debug, Clone)]
pub struct Admission<S> {
    inner: S,
    gate: Arc<Gate>,
}

/// Why [`Admission`] returned no response: refused by the limits, or an error of the inner
/// service.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError<E> {
    /// The limits refused the request; the inner service never saw it.
    #[error(transparent)]
    Rejected(Rejected),
    /// The inner service failed (in `poll_ready` or in its response future).
    #[error(transparent)]
    Service(E),
}

/// A request refused by an [`AdmissionLayer`]: why, and when to retry. Map it to
/// `503 Service Unavailable` with `Retry-After: `[`retry_after_secs`](Self::retry_after_secs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("refused by admission control ({cause}); retry after {retry_after:?}")]
pub struct Rejected {
    cause: BusyCause,
    retry_after: Duration,
}

impl Rejected {
    /// Refused at once ([`BusyCause::QueueFull`]) or after waiting
    /// ([`BusyCause::WaitExpired`]).
    pub fn cause(&self) -> BusyCause {
        self.cause
    }

    /// A hint for when to retry: the layer's wait limit, by which time every request waiting
    /// now has gone in or given up. A hint, not a promise.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// [`retry_after`](Self::retry_after) in whole seconds, rounded up and at least 1: the
    /// value of an HTTP `Retry-After` header.
    pub fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        secs.max(1)
    }
}

/// The response future of [`Admission`]: admission, then the inner service's readiness and
/// call, boxed.
///
/// # Cancel safety
///
/// Dropping it gives back what the request held: its queue place if it waited (a new request
/// then queues at the back), or its slot (which passes to the oldest waiting request) along
/// with the inner service's response future.
pub type AdmissionFuture<R, E> =
    Pin<Box<dyn Future<Output = Result<R, AdmissionError<E>>> + Send + 'static>>;

impl<S, Request> tower_service::Service<Request> for Admission<S>
where
    S: tower_service::Service<Request> + Clone + Send + 'static,
    S::Future: Send + 'static,
    Request: Send + 'static,
{
    type Response = S::Response;
    type Error = AdmissionError<S::Error>;
    type Future = AdmissionFuture<S::Response, S::Error>;

    /// Always ready: admission happens in the response future, so that a refusal is a
    /// response of its own and a waiting request holds no one else up.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The clone stays for the next call; this request takes the service it was given.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            let rejected = |cause| {
                AdmissionError::Rejected(Rejected {
                    cause,
                    retry_after: gate.wait(),
                })
            };
            let _slot = match gate.enter() {
                Entry::Inside(slot) => slot,
                Entry::Queued(queued) => queued.wait().await.map_err(rejected)?,
                Entry::Full => return Err(rejected(BusyCause::QueueFull)),
            };
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(AdmissionError::Service)?;
            inner.call(request).await.map_err(AdmissionError::Service)
        })
    }
}
