//! Rule 1's failure path: the OS refuses a thread; the error is logged, nothing is lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::support::{Gates, settle};
use crate::Pool;
use crate::sync::Ordering as ShimOrdering;

fn refuse(pool: &Pool, spawns: usize) {
    pool.shared()
        .refuse_spawns
        .store(spawns, ShimOrdering::SeqCst);
}

#[test]
fn a_refused_worker_leaves_its_task_queued_for_the_next_one() {
    let pool = Pool::new(0, 2).unwrap();
    refuse(&pool, 1);
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.queued), (0, 1), "no worker, the task waits");
    // The next submission starts a worker, which takes the oldest task first.
    pool.submit(gates.task(1)).unwrap();
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.running, c.queued), (1, 1, 1));
    assert_eq!(gates.wait_started(1), vec![0]);
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(pool.completed(), 2);
    let c = pool.shared().counters();
    assert_eq!(
        (c.spawn_failures, c.threads_started, c.threads_exited),
        (1, 1, 1)
    );
}

#[test]
fn close_runs_tasks_no_worker_could_take() {
    let pool = Pool::new(0, 3).unwrap();
    refuse(&pool, usize::MAX);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let ran = Arc::clone(&ran);
        pool.submit(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    assert_eq!((pool.workers(), pool.queued()), (0, 3));
    pool.close().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 3, "close ran them itself");
}

#[test]
fn refused_min_workers_are_not_an_error() {
    let config = crate::core::Config {
        min: 2,
        max: 2,
        capacity: 1,
        keep_alive: None,
        thread_name: "refused".into(),
    };
    let shared = crate::core::Shared::unstarted(config);
    shared.refuse_spawns.store(1, ShimOrdering::SeqCst);
    crate::core::Shared::launch(&shared);
    let pool = Pool::from_shared(shared);
    let c = settle(&pool, 0);
    assert_eq!(c.workers, 1);
    assert_eq!(pool.spawn(|| 7).join(), Ok(7));
    pool.close().unwrap();
}

#[test]
fn join_runs_tasks_no_worker_could_take() {
    let pool = Pool::new(0, 2).unwrap();
    refuse(&pool, usize::MAX);
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let ran = Arc::clone(&ran);
        pool.submit(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    assert_eq!((pool.workers(), pool.queued()), (0, 3));
    pool.join().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 3, "join ran them itself");
    assert!(!pool.shared().counters().closing, "and left the pool open");
    refuse(&pool, 0);
    assert_eq!(pool.spawn(|| 2).join(), Ok(2));
    pool.close().unwrap();
}

#[test]
fn a_task_run_by_a_joiner_cannot_wait_for_itself() {
    let pool = Arc::new(Pool::new(0, 1).unwrap());
    refuse(&pool, usize::MAX);
    let inner = Arc::clone(&pool);
    let (sent, seen) = std::sync::mpsc::channel();
    pool.submit(move || {
        sent.send((inner.join(), inner.close())).unwrap();
    })
    .unwrap();
    pool.join().unwrap(); // runs the task here: no worker could start
    assert_eq!(
        seen.recv().unwrap(),
        (
            Err(crate::PoolJoinError::FromWorker),
            Err(crate::CloseError::FromWorker)
        )
    );
    assert!(!pool.shared().on_own_worker(), "the joiner is itself again");
    pool.close().unwrap();
}
