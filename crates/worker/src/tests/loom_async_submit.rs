//! loom: an async submit waiting for room (`core/room.rs`). `max = 1`, `submit_buffer = 0`:
//! one unfinished task at a time, so a submit racing the worker's finish either finds the
//! room or registers its waker, and the finish (lock-free before the registration, or
//! through the lock after it) must reach it. `loom::future::block_on` parks until woken: a
//! lost wake-up is a deadlock loom reports.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering, thread};

/// Register, then look again, against a finishing task (lock-free or locked).
#[test]
fn loom_async_submit_is_woken_by_a_finishing_task() {
    loom::model(|| {
        let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
        pool.submit(|| ()).unwrap();
        assert!(loom::future::block_on(pool.submit_async(|| ())).is_ok());
        pool.close().unwrap();
        assert_eq!(pool.completed(), 2);
    });
}

/// A waiter polled once and dropped, racing another waiter and the finishing task: if the
/// finish woke the dropped one, the wake-up must pass on to the other. The dropped one's
/// task runs only if that one poll accepted it.
#[test]
fn loom_dropped_async_submit_passes_its_wake_on() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
        pool.submit(|| ()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = {
            let (pool, ran) = (Arc::clone(&pool), Arc::clone(&ran));
            thread::spawn(move || {
                let mut submit = pool.submit_async(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                let polled = Pin::new(&mut submit).poll(&mut Context::from_waker(Waker::noop()));
                drop(submit);
                polled.is_ready()
            })
        };
        assert!(loom::future::block_on(pool.submit_async(|| ())).is_ok());
        let accepted = dropped.join().unwrap();
        pool.close().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), usize::from(accepted));
        assert_eq!(pool.completed(), 2 + u64::from(accepted));
    });
}
