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

use gate::{Entry, Gate, Slot};

use crate::error::BusyCause;
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
/// What it costs: a request that finds a slot free and nobody waiting takes no lock (one
/// compare-and-swap to enter, one to leave); the gate's lock is taken only to queue a request,
/// to refuse one when every slot is taken, and to pass a freed slot to a waiting request. No
/// allocation for a request that goes in or is refused at once; a waiting request allocates
/// its wait (a box, a oneshot) and a timer, and clones the inner service.
///
/// Admission happens in `call`: the response future holds the slot (or the queue place) from
/// then on, polled or not, until it ends or is dropped. Readiness is the inner service's:
/// `poll_ready` forwards to it, so a request admitted at once calls the service it was ready
/// on. A request that must wait takes that ready service with it into the queue and leaves a
/// clone behind for the next call (as tower's `Buffer` does), so the inner service must be
/// `Clone`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use lockgate_pdfpool::{AdmissionError, AdmissionLayer, BusyCause};
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
    /// A layer letting `slots` requests in at once (at most `isize::MAX`, which more count
    /// as), with `queue` more waiting for at most `wait` each (capped at
    /// [`Pool::MAX_WAIT`](crate::Pool::MAX_WAIT)).
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
    ///
    /// [`Error::retry_after_secs`](crate::Error::retry_after_secs) rounds the pool's hint the
    /// same way.
    pub fn retry_after_secs(&self) -> u64 {
        crate::error::retry_after_secs(self.retry_after)
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Admission`]: the inner service's response future once the
    /// request holds a slot, or a wait in the queue first, or a refusal. No allocation unless
    /// the request waits.
    ///
    /// # Cancel safety
    ///
    /// Dropping it gives back what the request held: its queue place if it waited (a new
    /// request then queues at the back), or its slot (which passes to the oldest waiting
    /// request) along with the inner service's response future.
    #[must_use = "futures do nothing unless polled"]
    pub struct AdmissionFuture<F, S, Request> {
        #[pin]
        state: State<F, S, Request>,
    }
}

/// A queued request's wait for its slot (boxed: only waiting requests pay for it).
type SlotWait = Pin<Box<dyn Future<Output = Result<Slot, BusyCause>> + Send>>;

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, S, Request> {
        /// Inside: the inner service's response future, and the slot it holds.
        Calling { #[pin] future: F, slot: Option<Slot> },
        /// In the queue, with the service (already ready) and the request to call it with.
        Waiting {
            wait: SlotWait,
            inner: Option<S>,
            request: Option<Request>,
            retry_after: Duration,
        },
        /// Refused at once.
        Refused { rejected: Option<Rejected> },
    }
}

impl<F, S, Request> std::fmt::Debug for AdmissionFuture<F, S, Request> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Calling { .. } => "calling",
            State::Waiting { .. } => "waiting",
            State::Refused { .. } => "refused",
        };
        f.debug_struct("AdmissionFuture")
            .field("state", &state)
            .finish()
    }
}

impl<F, S, Request, Response, E> Future for AdmissionFuture<F, S, Request>
where
    F: Future<Output = Result<Response, E>>,
    S: tower_service::Service<Request, Response = Response, Error = E, Future = F>,
{
    type Output = Result<Response, AdmissionError<E>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project().state.project() {
                StateProj::Calling { future, slot } => {
                    let response = std::task::ready!(future.poll(cx));
                    // The slot frees as soon as the response is there.
                    drop(slot.take());
                    return Poll::Ready(response.map_err(AdmissionError::Service));
                }
                StateProj::Waiting {
                    wait,
                    inner,
                    request,
                    retry_after,
                } => {
                    let slot = match std::task::ready!(wait.as_mut().poll(cx)) {
                        Ok(slot) => slot,
                        Err(cause) => {
                            return Poll::Ready(Err(AdmissionError::Rejected(Rejected {
                                cause,
                                retry_after: *retry_after,
                            })));
                        }
                    };
                    let mut inner = inner.take().expect("a waiting request has its service");
                    let request = request.take().expect("a waiting request has its request");
                    let future = inner.call(request);
                    self.as_mut().project().state.set(State::Calling {
                        future,
                        slot: Some(slot),
                    });
                }
                StateProj::Refused { rejected } => {
                    let rejected = rejected.take().expect("polled after it returned Ready");
                    return Poll::Ready(Err(AdmissionError::Rejected(rejected)));
                }
            }
        }
    }
}

impl<S, Request> tower_service::Service<Request> for Admission<S>
where
    S: tower_service::Service<Request> + Clone,
{
    type Response = S::Response;
    type Error = AdmissionError<S::Error>;
    type Future = AdmissionFuture<S::Future, S, Request>;

    /// Ready when the inner service is: admission itself happens in `call`, so that a refusal
    /// is a response of its own and a waiting request holds no one else up.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(AdmissionError::Service)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let state = match Gate::enter(&self.gate) {
            Entry::Inside(slot) => State::Calling {
                future: self.inner.call(request),
                slot: Some(slot),
            },
            Entry::Queued(queued) => {
                // The ready service waits with the request; a clone stays for the next call.
                let clone = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, clone);
                State::Waiting {
                    wait: Box::pin(queued.wait()),
                    inner: Some(ready),
                    request: Some(request),
                    retry_after: self.gate.wait(),
                }
            }
            Entry::Full => State::Refused {
                rejected: Some(Rejected {
                    cause: BusyCause::QueueFull,
                    retry_after: self.gate.wait(),
                }),
            },
        };
        AdmissionFuture { state }
    }
}
