//! `TaskHandle`: `join`, `join_timeout`, and awaiting it as a future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use lockgate_worker::{JoinError, JoinTimeoutError, Pool};

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn join_timeout_hands_the_handle_back_until_the_task_finishes() {
    let pool = Pool::new(1, 1).unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let handle = pool.spawn(move || {
        gate.recv().unwrap();
        7
    });
    let timed_out = handle.join_timeout(Duration::ZERO).unwrap_err();
    assert!(timed_out.is_timeout());
    assert_eq!(
        timed_out.to_string(),
        "the task had not finished at the timeout"
    );
    let handle = timed_out
        .into_handle()
        .expect("a timeout carries the handle");
    assert!(!handle.is_finished());
    release.send(()).unwrap();
    assert_eq!(handle.join_timeout(Duration::MAX).unwrap(), 7);
    pool.close().unwrap();
}

#[test]
fn join_timeout_reports_a_panic_and_a_closed_pool() {
    let pool = Pool::new(1, 1).unwrap();
    let failed = pool
        .spawn(|| -> u8 { panic!("late") })
        .join_timeout(Duration::from_secs(60))
        .unwrap_err();
    assert!(!failed.is_timeout());
    assert_eq!(failed.to_string(), "the task panicked: late");
    assert!(matches!(
        failed,
        JoinTimeoutError::Join(JoinError::Panicked(_))
    ));
    pool.close().unwrap();
    let refused = pool.spawn(|| 1).join_timeout(Duration::ZERO).unwrap_err();
    assert!(matches!(refused, JoinTimeoutError::Join(JoinError::Closed)));
    assert!(refused.into_handle().is_none());
}

#[test]
fn awaiting_a_handle_frees_the_runtime_thread_while_the_task_runs() {
    let pool = Pool::new(1, 1).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let slow = pool.spawn(move || {
        gate.recv().unwrap();
        "slow"
    });
    let result = runtime.block_on(async move {
        // The one runtime thread runs this task while `slow` is awaited: if awaiting blocked
        // the thread, the release would never be sent.
        let releaser = tokio::task::spawn(async move { release.send(()).unwrap() });
        let value = slow.await;
        releaser.await.unwrap();
        value
    });
    assert_eq!(result, Ok("slow"));
    let panicked = runtime.block_on(pool.spawn(|| -> u8 { panic!("async") }));
    assert!(matches!(panicked, Err(JoinError::Panicked(_))));
    pool.close().unwrap();
    assert_eq!(runtime.block_on(pool.spawn(|| 1)), Err(JoinError::Closed));
}

#[test]
fn a_pending_poll_is_woken_once_when_the_task_finishes() {
    let pool = Pool::new(1, 1).unwrap();
    let (release, gate) = mpsc::channel::<()>();
    let mut handle = pool.spawn(move || {
        gate.recv().unwrap();
        3
    });
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending()); // same waker: kept, not cloned again
    release.send(()).unwrap();
    pool.join().unwrap();
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(Pin::new(&mut handle).poll(&mut cx), Poll::Ready(Ok(3)));
    pool.close().unwrap();
}

#[test]
fn dropping_a_polled_handle_leaves_the_task_running() {
    let pool = Pool::new(1, 1).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (release, gate) = mpsc::channel::<()>();
    let counted = Arc::clone(&ran);
    let mut handle = pool.spawn(move || {
        gate.recv().unwrap();
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
    drop(handle); // cancels the wait, not the task
    release.send(()).unwrap();
    pool.close().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
