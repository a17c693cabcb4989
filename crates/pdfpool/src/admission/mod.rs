//! [`AdmissionLayer`]: the pool's admission rule (rule 3: slots, a bounded FIFO queue, a wait
//! limit) as a tower layer for any service, without keys, callers or sharing.
//!
//! tower has the two halves: `ConcurrencyLimit` waits without bound, `LoadShed` refuses at
//! once. This layer does both in order: a request goes in while a slot is free, waits in a
//! FIFO queue of `queue` places for at most `wait` otherwise, and is refused at once when the
//! queue is full. The state machine is in `gate.rs`.
//!
//! The layer reports to the pool's [`Hooks`] (one seam for both), mapped in the docs of
//! [`AdmissionLayer::with_hooks`]. Hooks run after the gate's step they report, never under
//! its lock, under `panicguard` (the pool's `Installed`), on the task that polls the request.
//! Without hooks no clock is read and nothing is cloned for them: one branch per event.
//!
//! # Invariants of the reports
//!
//! 1. Every request reports exactly one of `started`, `queued` or `refused`, in `call`.
//! 2. A queued request reports exactly one of `started_from_queue`, `expired` or `abandoned`:
//!    its `QueueWatch` holds the report and gives it up once (taken by the first two, or by
//!    its drop).
//! 3. A request that went in reports exactly one of `finished` or `dropped`: its `Inside`
//!    holds the report and gives it up once (at the response, or in its drop).
//! 4. A report comes after the gate's step it reports: `Inside` gives its slot back before
//!    reporting, and `QueueWatch` is the last field of the waiting state, dropped after the
//!    wait that holds the queue place. So a hook reading `inside()` or `queued()` sees the
//!    step done, and never runs under the gate's lock.

mod gate;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use gate::{Entry, Gate, Slot};
use tokio::time::Instant;

use crate::error::{BusyCause, Error};
use crate::hooks::{Hooks, Installed};
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
/// its wait (a box, a oneshot) and a timer, and clones the inner service. With hooks
/// ([`with_hooks`](Self::with_hooks)), a request also clones the layer's `Arc` and reads the
/// clock for its reports; without, it pays one branch per event.
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
    limits: Arc<Limits>,
}

/// What every service of one layer shares: the gate, and the hooks it reports to.
struct Limits {
    gate: Arc<Gate>,
    hooks: Installed,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("gate", &self.gate)
            .field("hooks", &self.hooks.any())
            .finish()
    }
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
        Self::build(slots, queue, wait, None)
    }

    /// As [`new`](Self::new), reporting every request to `hooks`: the pool's [`Hooks`], with
    /// a request of the layer in the place of a job (it has no key, so nothing joins):
    ///
    /// | Hook | When |
    /// | --- | --- |
    /// | [`started`](Hooks::started) (zero wait) | a request went in at once |
    /// | [`queued`](Hooks::queued) | a request was queued: every slot was taken |
    /// | [`started_from_queue`](Hooks::started_from_queue) | a queued request went in, after its queue wait |
    /// | [`refused`](Hooks::refused) | refused at once: [`Error::Busy`] with [`BusyCause::QueueFull`] and the layer's wait as its hint |
    /// | [`expired`](Hooks::expired) | a queued request waited `wait` and was refused ([`BusyCause::WaitExpired`]) |
    /// | [`abandoned`](Hooks::abandoned) | a queued request's future was dropped before it went in |
    /// | [`finished`](Hooks::finished) | a request inside ended: the inner service answered (a response or its error), after its time inside |
    /// | [`dropped`](Hooks::dropped) | a request inside was dropped before the inner service answered (cancelled, or a panic unwinding through it) |
    ///
    /// [`joined`](Hooks::joined) and [`panicked`](Hooks::panicked) are never called. The
    /// events balance as the pool's do: every request is exactly one of `started`, `queued` or
    /// `refused`; every queued one leaves as one of `started_from_queue`, `expired` or
    /// `abandoned`; every one that went in ends as `finished` or `dropped`. With feature
    /// `metrics`, `MetricsHooks::layer` reports them under the layer's own metric names.
    ///
    /// The guarantees of [`Hooks`] hold: a hook runs after the step it reports, never under
    /// the gate's lock, with its panics caught, on the task polling the request. A slot passed
    /// to a queued request is its own at once (so [`inside`](Self::inside) does not change),
    /// but `started_from_queue` runs when that request is next polled.
    ///
    /// # Panics
    ///
    /// If `slots` is 0, as for [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    ///
    /// use lockgate_pdfpool::{AdmissionLayer, Hooks};
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// #[derive(Default)]
    /// struct Counts {
    ///     admitted: AtomicU64,
    ///     answered: AtomicU64,
    /// }
    ///
    /// impl Hooks for Counts {
    ///     fn started(&self, _queue_wait: Duration) {
    ///         self.admitted.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     fn finished(&self, _time_inside: Duration) {
    ///         self.answered.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let counts = Arc::new(Counts::default());
    /// let layer = AdmissionLayer::with_hooks(2, 4, Duration::from_secs(5), Arc::clone(&counts));
    /// let service = layer.layer(service_fn(|n: u32| async move {
    ///     Ok::<_, std::convert::Infallible>(n + 1)
    /// }));
    /// assert_eq!(service.oneshot(1).await.unwrap(), 2);
    /// assert_eq!(counts.admitted.load(Ordering::Relaxed), 1);
    /// assert_eq!(counts.answered.load(Ordering::Relaxed), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn with_hooks(slots: usize, queue: usize, wait: Duration, hooks: impl Hooks) -> Self {
        Self::build(slots, queue, wait, Some(Box::new(hooks)))
    }

    #[track_caller]
    fn build(slots: usize, queue: usize, wait: Duration, hooks: Option<Box<dyn Hooks>>) -> Self {
        assert!(
            slots > 0,
            "pdfpool::AdmissionLayer::new: `slots` must be at least 1"
        );
        let wait = wait.min(crate::Pool::<(), (), ()>::MAX_WAIT);
        Self {
            limits: Arc::new(Limits {
                gate: Arc::new(Gate::new(slots, queue, wait)),
                hooks: Installed::new(hooks),
            }),
        }
    }

    /// How many requests may be inside at once.
    pub fn slots(&self) -> usize {
        self.limits.gate.slots()
    }

    /// How many requests may wait at most.
    pub fn queue_limit(&self) -> usize {
        self.limits.gate.queue_limit()
    }

    /// How long a request waits at most (also the [`Rejected::retry_after`] hint).
    pub fn wait(&self) -> Duration {
        self.limits.gate.wait()
    }

    /// How many requests are inside now (at most `slots`).
    pub fn inside(&self) -> usize {
        self.limits.gate.inside()
    }

    /// How many requests wait now (at most `queue`).
    pub fn queued(&self) -> usize {
        self.limits.gate.queued()
    }
}

impl<S> tower_layer::Layer<S> for AdmissionLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Admission<S> {
        Admission {
            inner,
            limits: Arc::clone(&self.limits),
        }
    }
}

/// The service made by [`AdmissionLayer`]: admits each request through the layer's shared
/// limits, then calls the inner service.
#[derive(Debug, Clone)]
pub struct Admission<S> {
    inner: S,
    limits: Arc<Limits>,
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
        Calling { #[pin] future: F, inside: Inside },
        /// In the queue, with the service (already ready) and the request to call it with.
        Waiting {
            wait: SlotWait,
            inner: Option<S>,
            request: Option<Request>,
            retry_after: Duration,
            // Last: dropped after `wait`, so `abandoned` is reported once the queue place is
            // given back.
            watch: QueueWatch,
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
                StateProj::Calling { future, inside } => {
                    let response = std::task::ready!(future.poll(cx));
                    // The slot frees as soon as the response is there.
                    inside.end(false);
                    return Poll::Ready(response.map_err(AdmissionError::Service));
                }
                StateProj::Waiting {
                    wait,
                    inner,
                    request,
                    retry_after,
                    watch,
                } => {
                    let slot = match std::task::ready!(wait.as_mut().poll(cx)) {
                        Ok(slot) => slot,
                        Err(cause) => {
                            watch.expired();
                            return Poll::Ready(Err(AdmissionError::Rejected(Rejected {
                                cause,
                                retry_after: *retry_after,
                            })));
                        }
                    };
                    let inside = watch.went_in(slot);
                    let mut inner = inner.take().expect("a waiting request has its service");
                    let request = request.take().expect("a waiting request has its request");
                    let future = inner.call(request);
                    self.as_mut()
                        .project()
                        .state
                        .set(State::Calling { future, inside });
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
        let limits = &self.limits;
        let state = match Gate::enter(&limits.gate) {
            Entry::Inside(slot) => {
                limits.hooks.call(|hooks| hooks.started(Duration::ZERO));
                // Before the call: a panic in it gives the slot back and reports `dropped`.
                let inside = Inside::new(slot, limits);
                State::Calling {
                    future: self.inner.call(request),
                    inside,
                }
            }
            Entry::Queued(queued) => {
                limits.hooks.call(|hooks| hooks.queued());
                // The ready service waits with the request; a clone stays for the next call.
                let clone = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, clone);
                State::Waiting {
                    wait: Box::pin(queued.wait()),
                    inner: Some(ready),
                    request: Some(request),
                    retry_after: limits.gate.wait(),
                    watch: QueueWatch::new(limits),
                }
            }
            Entry::Full => {
                let rejected = Rejected {
                    cause: BusyCause::QueueFull,
                    retry_after: limits.gate.wait(),
                };
                limits.hooks.call(|hooks| {
                    hooks.refused(&Error::Busy {
                        cause: rejected.cause,
                        retry_after: rejected.retry_after,
                    });
                });
                State::Refused {
                    rejected: Some(rejected),
                }
            }
        };
        AdmissionFuture { state }
    }
}

/// A hook report owed: the layer's shared state and when the report's wait began. Only made
/// when hooks are installed.
type Report = Option<(Arc<Limits>, Instant)>;

fn report(limits: &Arc<Limits>) -> Report {
    limits
        .hooks
        .any()
        .then(|| (Arc::clone(limits), Instant::now()))
}

/// A request inside the inner service: its slot, and (with hooks) its `finished` or
/// `dropped` report, made once the slot is given back.
struct Inside {
    slot: Option<Slot>,
    report: Report,
}

impl Inside {
    fn new(slot: Slot, limits: &Arc<Limits>) -> Self {
        Self {
            slot: Some(slot),
            report: report(limits),
        }
    }

    /// Gives the slot back, then reports the request's time inside (once).
    fn end(&mut self, dropped: bool) {
        drop(self.slot.take());
        if let Some((limits, since)) = self.report.take() {
            let time_inside = since.elapsed();
            limits.hooks.call(|hooks| {
                if dropped {
                    hooks.dropped(time_inside);
                } else {
                    hooks.finished(time_inside);
                }
            });
        }
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        self.end(true);
    }
}

/// A queued request's report (with hooks): it went in, expired, or (dropped first) was
/// abandoned, after its queue wait.
struct QueueWatch {
    report: Report,
}

impl QueueWatch {
    fn new(limits: &Arc<Limits>) -> Self {
        Self {
            report: report(limits),
        }
    }

    /// The request got `slot`: reports `started_from_queue` and starts its time inside.
    fn went_in(&mut self, slot: Slot) -> Inside {
        let report = self.report.take().map(|(limits, since)| {
            let queue_wait = since.elapsed();
            limits
                .hooks
                .call(|hooks| hooks.started_from_queue(queue_wait));
            (limits, Instant::now())
        });
        Inside {
            slot: Some(slot),
            report,
        }
    }

    fn expired(&mut self) {
        if let Some((limits, since)) = self.report.take() {
            let queue_wait = since.elapsed();
            limits.hooks.call(|hooks| hooks.expired(queue_wait));
        }
    }
}

impl Drop for QueueWatch {
    fn drop(&mut self) {
        if let Some((limits, since)) = self.report.take() {
            let queue_wait = since.elapsed();
            limits.hooks.call(|hooks| hooks.abandoned(queue_wait));
        }
    }
}
