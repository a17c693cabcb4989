//! loom: a `TaskHandle` awaited as a future. The worker that fills the slot races the poll
//! that stores the waker: whatever the interleaving, the waiting `block_on` is woken (no
//! lost wake-up between "still pending" and "waker stored"). A handle polled once and then
//! dropped leaves its task running, and `close` still drains it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering};

#[test]
fn loom_awaited_handle_is_woken_by_the_finishing_worker() {
    loom::model(|| {
        let pool = Pool::new(0, 1).unwrap();
        let handle = pool.spawn(|| 5);
        assert_eq!(loom::future::block_on(handle), Ok(5));
        pool.close().unwrap();
    });
}

#[test]
fn loom_dropping_a_polled_handle_leaves_the_task_running() {
    loom::model(|| {
        let pool = Pool::new(0, 1).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&ran);
        let mut handle = pool.spawn(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let mut cx = Context::from_waker(Waker::noop());
        let _ = Pin::new(&mut handle).poll(&mut cx);
        drop(handle);
        pool.close().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}
