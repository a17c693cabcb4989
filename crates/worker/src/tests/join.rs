//! `Pool::join` and `join_timeout`: wait for every accepted task without closing.

use std::sync::Arc;
use std::time::Duration;

use super::support::{Gates, settle};
use crate::{Pool, PoolJoinError};

#[test]
fn join_waits_for_queued_and_running_tasks_and_leaves_the_pool_open() {
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(4).build().unwrap());
    let gates = Gates::default();
    for id in 0..3 {
        pool.submit(gates.task(id)).unwrap();
    }
    settle(&pool, 0);
    let joiner = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || pool.join())
    };
    pool.shared()
        .wait_until("a joiner waits", |c| c.joiners == 1);
    gates.release(0);
    gates.release(1);
    // Two of three done, one running: the joiner is still waiting.
    let c = pool
        .shared()
        .wait_until("two done", |c| c.finished == 2 && c.quiescent());
    assert_eq!((c.joiners, c.running), (1, 1));
    gates.release(2);
    joiner.join().unwrap().unwrap();
    assert_eq!(pool.completed(), 3);
    // Not closed: the same worker takes more work.
    let c = settle(&pool, 3);
    assert_eq!((c.workers, c.idle, c.closing), (1, 1, false));
    assert_eq!(pool.spawn(|| 4).join(), Ok(4));
    pool.close().unwrap();
}

#[test]
fn join_on_a_pool_with_nothing_accepted_returns_at_once() {
    let pool = Pool::new(2, 2).unwrap();
    pool.join().unwrap();
    pool.join_timeout(Duration::ZERO).unwrap();
    pool.close().unwrap();
    pool.join().unwrap(); // closed and drained: nothing to wait for
}

#[test]
fn several_joiners_return_at_the_same_empty_moment() {
    let pool = Arc::new(Pool::new(0, 2).unwrap());
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    pool.submit(gates.task(1)).unwrap();
    settle(&pool, 0);
    let joiners: Vec<_> = (0..3)
        .map(|_| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.join())
        })
        .collect();
    pool.shared()
        .wait_until("three joiners wait", |c| c.joiners == 3);
    gates.release_all();
    for joiner in joiners {
        joiner.join().unwrap().unwrap();
    }
    assert_eq!(pool.completed(), 2);
    pool.close().unwrap();
}

#[test]
fn join_from_inside_a_task_is_refused_and_changes_nothing() {
    let pool = Arc::new(Pool::new(1, 1).unwrap());
    let inner = Arc::clone(&pool);
    let result = pool
        .spawn(move || (inner.join(), inner.join_timeout(Duration::from_secs(60))))
        .join()
        .unwrap();
    assert_eq!(
        result,
        (
            Err(PoolJoinError::FromWorker),
            Err(PoolJoinError::FromWorker)
        )
    );
    assert!(!pool.shared().counters().closing);
    assert_eq!(pool.spawn(|| 1).join(), Ok(1));
    pool.close().unwrap();
}

#[test]
fn join_timeout_reports_unfinished_work_and_a_later_join_sees_it_done() {
    let pool = Pool::new(1, 1).unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    assert_eq!(
        pool.join_timeout(Duration::from_millis(1)),
        Err(PoolJoinError::Timeout)
    );
    assert_eq!(
        pool.shared().counters().joiners,
        0,
        "the timed-out joiner left"
    );
    gates.release(0);
    pool.join_timeout(Duration::MAX).unwrap();
    assert_eq!(pool.completed(), 1);
    pool.close().unwrap();
}
