//! Rule 5: close drains everything accepted, is idempotent, and refuses to wait for itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::support::{Gates, settle};
use crate::{CloseError, JoinError, Pool};

#[test]
fn close_runs_every_queued_task_then_rejects() {
    let pool = Pool::builder(0, 1).submit_buffer(10).build().unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let ran = Arc::clone(&ran);
        pool.try_submit(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 10);
    let c = pool.shared().counters();
    assert_eq!((c.workers, c.idle, c.running, c.queued), (0, 0, 0, 0));
    assert!(pool.try_submit(|| ()).unwrap_err().is_closed());
    assert!(pool.submit(|| ()).is_err());
    assert_eq!(pool.spawn(|| 1).join(), Err(JoinError::Closed));
}

#[test]
fn close_is_idempotent_from_many_threads() {
    let pool = Arc::new(Pool::new(2, 4).unwrap());
    let gates = Arc::new(Gates::default());
    for id in 0..4 {
        pool.submit(gates.task(id)).unwrap();
    }
    settle(&pool, 0);
    let closers: Vec<_> = (0..3)
        .map(|_| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.close())
        })
        .collect();
    pool.shared().wait_until("closing", |c| c.closing);
    gates.release_all();
    for closer in closers {
        closer.join().unwrap().unwrap();
        // Each closer returns only once the pool is drained.
        assert_eq!(pool.completed(), 4);
    }
    pool.close().unwrap();
    assert_eq!(pool.workers(), 0);
}

#[test]
fn close_from_inside_a_task_is_refused_but_begins_closing() {
    let pool = Arc::new(Pool::new(1, 1).unwrap());
    let inner = Arc::clone(&pool);
    let result = pool.spawn(move || inner.close()).join().unwrap();
    assert_eq!(result, Err(CloseError::FromWorker));
    assert!(pool.try_submit(|| ()).unwrap_err().is_closed());
    pool.close().unwrap();
    assert_eq!(pool.workers(), 0);
}

#[test]
fn a_task_may_submit_to_its_own_pool() {
    let pool = Arc::new(Pool::new(1, 2).unwrap());
    let inner = Arc::clone(&pool);
    let nested = pool.spawn(move || inner.spawn(|| "nested")).join().unwrap();
    assert_eq!(nested.join().unwrap(), "nested");
    pool.close().unwrap();
}

#[test]
fn try_submit_is_the_way_out_of_a_reentrant_full_pool() {
    // One worker, no waiting places: a task that submits to its own pool finds it full.
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
    let inner = Arc::clone(&pool);
    let outcome = pool
        .spawn(move || match inner.try_submit(|| ()) {
            Ok(()) => "queued",
            Err(err) if err.is_full() => {
                // Do the work inline instead of blocking on ourselves.
                (err.into_inner())();
                "ran inline"
            }
            Err(_) => "closed",
        })
        .join()
        .unwrap();
    assert_eq!(outcome, "ran inline");
}

#[test]
fn dropping_the_last_handle_inside_a_task_does_not_deadlock() {
    let pool = Arc::new(Pool::new(1, 1).unwrap());
    let (sent, received) = std::sync::mpsc::channel();
    let inner = Arc::clone(&pool);
    let shared = Arc::clone(pool.shared());
    pool.submit(move || {
        let _ = received.recv();
        drop(inner); // the last `Arc<Pool>`: its Drop runs here, on the worker
    })
    .unwrap();
    drop(pool);
    sent.send(()).unwrap();
    // The pool began closing in the background; its worker leaves on its own.
    let c = shared.wait_until("drained", |c| c.closing && c.workers == 0);
    assert_eq!(c.finished, 1);
}

#[test]
fn drop_closes_and_waits() {
    let ran = Arc::new(AtomicUsize::new(0));
    {
        let pool = Pool::new(0, 2).unwrap();
        for _ in 0..20 {
            let ran = Arc::clone(&ran);
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
    }
    assert_eq!(ran.load(Ordering::SeqCst), 20);
}
