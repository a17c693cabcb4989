//! Rule 4: a task panic is caught and logged, the worker goes on; a worker that dies anyway
//! is replaced when tasks wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::support::{Gates, settle};
use crate::{JoinError, Pool};

#[test]
fn a_panicking_task_does_not_cost_a_worker() {
    let pool = Pool::new(1, 1).unwrap();
    pool.submit(|| panic!("task failed")).unwrap();
    let c = settle(&pool, 1);
    assert_eq!((c.workers, c.idle), (1, 1));
    let thread = pool.spawn(|| std::thread::current().id());
    let again = pool.spawn(|| std::thread::current().id());
    assert_eq!(
        thread.join().unwrap(),
        again.join().unwrap(),
        "the same worker went on"
    );
    pool.close().unwrap();
}

#[test]
fn a_spawned_panic_reaches_join() {
    let pool = Pool::new(0, 1).unwrap();
    let handle = pool.spawn(|| -> u32 { panic!("no {}", "value") });
    match handle.join() {
        Err(JoinError::Panicked(panic)) => assert_eq!(panic.message(), "no value"),
        other => panic!("expected a panic, got {other:?}"),
    }
}

#[test]
fn a_panicking_task_is_not_retried() {
    let pool = Pool::new(0, 2).unwrap();
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tries);
    pool.submit(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        panic!("once");
    })
    .unwrap();
    pool.close().unwrap();
    assert_eq!(tries.load(Ordering::SeqCst), 1);
}

#[test]
fn a_dead_worker_is_replaced_by_one_that_takes_the_oldest_task() {
    let pool = Pool::builder(0, 1).submit_buffer(2).build().unwrap();
    let gates = Gates::default();
    let (go, gate) = std::sync::mpsc::channel::<()>();
    pool.submit(move || {
        let _ = gate.recv();
        crate::core::die_after_this_task();
    })
    .unwrap();
    pool.submit(gates.task(1)).unwrap();
    pool.submit(gates.task(2)).unwrap();
    settle(&pool, 0);
    go.send(()).unwrap();
    let c = settle(&pool, 1);
    assert_eq!((c.workers, c.running, c.queued), (1, 1, 1));
    assert_eq!(
        gates.wait_started(1),
        vec![1],
        "the replacement took the oldest task"
    );
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(pool.completed(), 3);
    let c = pool.shared().counters();
    assert_eq!(
        (c.threads_started, c.threads_exited, c.threads_died),
        (2, 2, 1),
        "the dead worker and its replacement, both gone after close"
    );
    assert_eq!(c.panicked, 0, "the worker died after its task, not in it");
}

#[test]
fn a_dead_worker_with_nothing_queued_is_not_replaced() {
    let pool = Pool::new(1, 2).unwrap();
    pool.submit(crate::core::die_after_this_task).unwrap();
    let c = settle(&pool, 1);
    assert_eq!(c.workers, 0, "min is not restored proactively");
    // A later submission grows the pool again.
    assert_eq!(pool.spawn(|| 5).join(), Ok(5));
    assert_eq!(pool.workers(), 1);
    pool.close().unwrap();
}

#[test]
fn panics_are_counted_whether_the_pool_or_the_task_caught_them() {
    let pool = Pool::new(1, 1).unwrap();
    pool.submit(|| panic!("caught by the worker")).unwrap();
    let spawned = pool.spawn(|| -> u8 { panic!("caught by the spawned task") });
    assert!(matches!(spawned.join(), Err(JoinError::Panicked(_))));
    assert_eq!(pool.spawn(|| 1).join(), Ok(1));
    pool.submit(|| ()).unwrap();
    pool.close().unwrap();
    let c = pool.shared().counters();
    assert_eq!((c.finished, c.panicked), (4, 2));
    assert_eq!(
        (c.threads_started, c.threads_exited, c.threads_died),
        (1, 1, 0)
    );
}
