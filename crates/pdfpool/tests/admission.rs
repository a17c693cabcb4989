//! `AdmissionLayer` on a plain tower service, on the paused clock: bounds, FIFO order, both
//! refusals with their hints, cancellation, errors of the inner service, the hooks, and a
//! stress run on a multi-thread runtime.

mod common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::settle;
use lockgate_pdfpool::{AdmissionError, AdmissionLayer, BusyCause, Error, Hooks};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tower::{Layer, Service, ServiceExt, service_fn};

const WAIT: Duration = Duration::from_secs(10);

/// An inner service whose calls wait for the test to release them, recording the order in
/// which requests arrived and the most that were inside at once.
#[derive(Clone)]
struct Inner {
    release: Arc<Semaphore>,
    arrived: Arc<Mutex<Vec<u32>>>,
    inside: Arc<AtomicUsize>,
    most_inside: Arc<AtomicUsize>,
}

impl Inner {
    fn new() -> Self {
        Self {
            release: Arc::new(Semaphore::new(0)),
            arrived: Arc::default(),
            inside: Arc::default(),
            most_inside: Arc::default(),
        }
    }

    fn arrived(&self) -> Vec<u32> {
        self.arrived.lock().unwrap().clone()
    }
}

impl Service<u32> for Inner {
    type Response = u32;
    type Error = Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<u32, Infallible>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        let this = self.clone();
        this.arrived.lock().unwrap().push(request);
        let now = this.inside.fetch_add(1, Ordering::SeqCst) + 1;
        this.most_inside.fetch_max(now, Ordering::SeqCst);
        Box::pin(async move {
            let permit = this.release.acquire().await.unwrap();
            permit.forget();
            this.inside.fetch_sub(1, Ordering::SeqCst);
            Ok(request)
        })
    }
}

type Outcome = Result<u32, AdmissionError<Infallible>>;

fn send(service: &lockgate_pdfpool::Admission<Inner>, request: u32) -> JoinHandle<Outcome> {
    let service = service.clone();
    tokio::spawn(service.oneshot(request))
}

fn cause(outcome: Outcome) -> (BusyCause, Duration) {
    match outcome {
        Err(AdmissionError::Rejected(rejected)) => (rejected.cause(), rejected.retry_after()),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn slots_then_a_fifo_queue_then_refusals_at_once() {
    let layer = AdmissionLayer::new(2, 3, WAIT);
    let inner = Inner::new();
    let service = layer.layer(inner.clone());
    let mut requests = Vec::new();
    for n in 0..8 {
        requests.push(send(&service, n));
        settle().await; // each request reaches the gate before the next: a known order
    }
    assert_eq!((layer.inside(), layer.queued()), (2, 3));
    assert_eq!(inner.arrived(), vec![0, 1], "only two are inside");
    let refused: Vec<Outcome> = {
        let mut refused = Vec::new();
        for request in requests.drain(5..) {
            refused.push(request.await.unwrap());
        }
        refused
    };
    for outcome in refused {
        assert_eq!(cause(outcome), (BusyCause::QueueFull, WAIT));
    }
    // Each release frees a slot that goes to the oldest waiter: 2, then 3, then 4.
    inner.release.add_permits(5);
    for (n, request) in requests.into_iter().enumerate() {
        assert_eq!(request.await.unwrap().unwrap(), n as u32);
    }
    assert_eq!(inner.arrived(), vec![0, 1, 2, 3, 4]);
    assert_eq!(inner.most_inside.load(Ordering::SeqCst), 2);
    assert_eq!((layer.inside(), layer.queued()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_waiter_is_refused_at_the_wait_limit_and_never_reaches_the_service() {
    let layer = AdmissionLayer::new(1, 1, WAIT);
    let inner = Inner::new();
    let service = layer.layer(inner.clone());
    let first = send(&service, 1);
    settle().await;
    let waiter = send(&service, 2);
    settle().await;
    tokio::time::advance(WAIT - Duration::from_millis(1)).await;
    settle().await;
    assert!(!waiter.is_finished(), "a millisecond before the limit");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(cause(waiter.await.unwrap()), (BusyCause::WaitExpired, WAIT));
    assert_eq!((layer.inside(), layer.queued()), (1, 0));
    inner.release.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap(), 1);
    assert_eq!(inner.arrived(), vec![1]);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_request_gives_back_its_place_or_its_slot() {
    let layer = AdmissionLayer::new(1, 2, WAIT);
    let inner = Inner::new();
    let service = layer.layer(inner.clone());
    let inside = send(&service, 1);
    let gives_up = send(&service, 2);
    let stays = send(&service, 3);
    settle().await;
    assert_eq!((layer.inside(), layer.queued()), (1, 2));
    gives_up.abort();
    settle().await;
    assert_eq!(
        (layer.inside(), layer.queued()),
        (1, 1),
        "its place is free"
    );
    // Dropping the request inside the service frees its slot for the next in line.
    inside.abort();
    settle().await;
    assert_eq!((layer.inside(), layer.queued()), (1, 0));
    assert_eq!(inner.arrived(), vec![1, 3]);
    inner.release.add_permits(1);
    assert_eq!(stays.await.unwrap().unwrap(), 3);
    assert_eq!((layer.inside(), layer.queued()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn errors_of_the_inner_service_pass_through_and_free_the_slot() {
    let layer = AdmissionLayer::new(1, 0, WAIT);
    let failing = layer.layer(service_fn(|n: u32| async move {
        Err::<u32, _>(format!("no {n}"))
    }));
    match failing.clone().oneshot(7).await {
        Err(AdmissionError::Service(message)) => assert_eq!(message, "no 7"),
        other => panic!("expected the service's error, got {other:?}"),
    }
    assert_eq!(layer.inside(), 0);
    let ok = layer.layer(service_fn(|n: u32| async move { Ok::<_, String>(n) }));
    assert_eq!(
        ok.oneshot(8).await.unwrap(),
        8,
        "the limits are shared and free again"
    );
}

#[test]
fn the_limits_read_back_and_clones_share_them() {
    let layer = AdmissionLayer::new(3, 4, Duration::MAX);
    assert_eq!((layer.slots(), layer.queue_limit()), (3, 4));
    assert_eq!(layer.wait(), lockgate_pdfpool::Pool::<(), (), ()>::MAX_WAIT);
    let clone = layer.clone();
    let _service = clone.layer(service_fn(|n: u32| async move { Ok::<_, Infallible>(n) }));
    assert_eq!((clone.inside(), layer.inside()), (0, 0));
}

#[test]
fn retry_after_secs_rounds_up_to_a_whole_second() {
    let rejected = |wait| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let layer = AdmissionLayer::new(1, 0, wait);
            let service = layer.layer(service_fn(|()| {
                std::future::pending::<Result<(), Infallible>>()
            }));
            let _inside = tokio::spawn(service.clone().oneshot(()));
            settle().await;
            match service.oneshot(()).await {
                Err(AdmissionError::Rejected(rejected)) => rejected,
                _ => panic!("expected a rejection"),
            }
        })
    };
    assert_eq!(rejected(Duration::from_millis(1)).retry_after_secs(), 1);
    assert_eq!(rejected(Duration::from_millis(2_001)).retry_after_secs(), 3);
    assert_eq!(rejected(Duration::ZERO).retry_after_secs(), 1);
    assert_eq!(rejected(Duration::from_secs(5)).retry_after_secs(), 5);
    // The pool's `Error` rounds its hint the same way.
    for millis in [0, 1, 999, 1_000, 1_001, 2_500, 5_000] {
        let wait = Duration::from_millis(millis);
        let busy = lockgate_pdfpool::Error::Busy {
            cause: BusyCause::QueueFull,
            retry_after: wait,
        };
        assert_eq!(
            busy.retry_after_secs(),
            Some(rejected(wait).retry_after_secs()),
            "{millis} ms"
        );
    }
}

/// Takes one off the count of calls inside when dropped.
struct Leaves(Arc<AtomicUsize>);

impl Drop for Leaves {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Many requests on two worker threads, a third of them given up at random points: the inner
/// service never has more than `slots` inside, and the gate ends empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_bounds_hold_and_the_gate_ends_empty() {
    let small = std::env::var_os("TEST_SCALE").is_some_and(|scale| scale == "small");
    let requests: u32 = if small { 200 } else { 2_000 };
    const SLOTS: usize = 3;
    let layer = AdmissionLayer::new(SLOTS, 5, Duration::from_millis(50));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let service = {
        let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
        layer.layer(service_fn(move |n: u32| {
            let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
            async move {
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Counted out when the call ends or is dropped (its request given up).
                let _leaves = Leaves(inside);
                for _ in 0..n % 4 {
                    tokio::task::yield_now().await;
                }
                Ok::<_, Infallible>(n)
            }
        }))
    };
    let mut tasks = Vec::new();
    for n in 0..requests {
        let task = tokio::spawn(service.clone().oneshot(n));
        if n % 3 == 0 {
            tokio::task::yield_now().await;
            task.abort();
        }
        tasks.push(task);
    }
    let (mut served, mut refused) = (0, 0);
    for task in tasks {
        match task.await {
            Ok(Ok(_)) => served += 1,
            Ok(Err(AdmissionError::Rejected(_))) => refused += 1,
            Ok(Err(other)) => panic!("unexpected {other:?}"),
            Err(aborted) => assert!(aborted.is_cancelled()),
        }
    }
    assert!(served > 0, "some requests got in ({refused} refused)");
    assert!(most.load(Ordering::SeqCst) <= SLOTS);
    assert_eq!((layer.inside(), layer.queued()), (0, 0));
}

/// Hooks that log every event with its duration (ms) and the layer's `(inside, queued)` read
/// from inside the hook, which takes the gate's lock: a hook called under it would deadlock.
#[derive(Default)]
struct Log {
    layer: OnceLock<AdmissionLayer>,
    lines: Mutex<Vec<String>>,
}

impl Log {
    fn push(&self, event: String) {
        let layer = self
            .layer
            .get()
            .expect("the layer is set before any request");
        let line = format!("{event} ({}, {})", layer.inside(), layer.queued());
        self.lines.lock().unwrap().push(line);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lines.lock().unwrap())
    }
}

impl Hooks for Log {
    fn queued(&self) {
        self.push("queued".into());
    }
    fn started(&self, queue_wait: Duration) {
        self.push(format!("started {}", queue_wait.as_millis()));
    }
    fn started_from_queue(&self, queue_wait: Duration) {
        self.push(format!("from_queue {}", queue_wait.as_millis()));
    }
    fn joined(&self) {
        self.push("joined".into());
    }
    fn refused(&self, why: &Error) {
        let why = match why {
            Error::Busy {
                cause: BusyCause::QueueFull,
                retry_after,
            } => format!("queue_full {}", retry_after.as_millis()),
            other => format!("{other:?}"),
        };
        self.push(format!("refused {why}"));
    }
    fn expired(&self, queue_wait: Duration) {
        self.push(format!("expired {}", queue_wait.as_millis()));
    }
    fn abandoned(&self, queue_wait: Duration) {
        self.push(format!("abandoned {}", queue_wait.as_millis()));
    }
    fn finished(&self, time_inside: Duration) {
        self.push(format!("finished {}", time_inside.as_millis()));
    }
    fn panicked(&self, time_inside: Duration) {
        self.push(format!("panicked {}", time_inside.as_millis()));
    }
    fn dropped(&self, time_inside: Duration) {
        self.push(format!("dropped {}", time_inside.as_millis()));
    }
}

#[tokio::test(start_paused = true)]
async fn the_hooks_see_every_request_once_with_exact_waits_and_times_inside() {
    let log = Arc::new(Log::default());
    let layer = AdmissionLayer::with_hooks(1, 1, WAIT, Arc::clone(&log));
    log.layer.set(layer.clone()).unwrap();
    let inner = Inner::new();
    let service = layer.layer(inner.clone());

    // In at once, queued, refused at once.
    let first = send(&service, 1);
    settle().await;
    let second = send(&service, 2);
    settle().await;
    assert_eq!(
        cause(send(&service, 3).await.unwrap()),
        (BusyCause::QueueFull, WAIT)
    );
    assert_eq!(
        log.take(),
        [
            "started 0 (1, 0)",
            "queued (1, 1)",
            "refused queue_full 10000 (1, 1)"
        ]
    );

    // The first answers after 2 s; its slot passes to the second, which waited 2 s.
    tokio::time::advance(Duration::from_secs(2)).await;
    inner.release.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap(), 1);
    settle().await;
    assert_eq!(
        log.take(),
        ["finished 2000 (1, 0)", "from_queue 2000 (1, 0)"]
    );

    // A waiter past the limit, then one that goes away after 1 s.
    let expires = send(&service, 4);
    settle().await;
    tokio::time::advance(WAIT).await;
    assert_eq!(
        cause(expires.await.unwrap()),
        (BusyCause::WaitExpired, WAIT)
    );
    let leaves = send(&service, 5);
    settle().await;
    tokio::time::advance(Duration::from_secs(1)).await;
    leaves.abort();
    settle().await;
    assert_eq!(
        log.take(),
        [
            "queued (1, 1)",
            "expired 10000 (1, 0)",
            "queued (1, 1)",
            "abandoned 1000 (1, 0)"
        ]
    );

    // The second, inside for 11 s, is dropped before the service answers.
    second.abort();
    settle().await;
    assert_eq!(log.take(), ["dropped 11000 (0, 0)"]);
    assert_eq!(inner.arrived(), vec![1, 2]);
}

/// Panics in every event.
struct Panics;

impl Hooks for Panics {
    fn started(&self, _: Duration) {
        panic!("a hook panics");
    }
    fn finished(&self, _: Duration) {
        panic!("a hook panics");
    }
    fn queued(&self) {
        panic!("a hook panics");
    }
    fn started_from_queue(&self, _: Duration) {
        panic!("a hook panics");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_hook_is_caught_and_the_request_goes_on() {
    let layer = AdmissionLayer::with_hooks(1, 1, WAIT, Panics);
    let inner = Inner::new();
    let service = layer.layer(inner.clone());
    let first = send(&service, 1);
    let second = send(&service, 2);
    settle().await;
    assert_eq!((layer.inside(), layer.queued()), (1, 1));
    inner.release.add_permits(2);
    assert_eq!(first.await.unwrap().unwrap(), 1);
    assert_eq!(second.await.unwrap().unwrap(), 2);
    assert_eq!((layer.inside(), layer.queued()), (0, 0));
}
