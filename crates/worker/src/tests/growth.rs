//! Rule 1 (workers start at `min`, grow on demand to `max`) and rule 3 (the exit policy).

use std::time::Duration;

use super::support::{Gates, settle};
use crate::Pool;

#[test]
fn min_workers_start_at_once_and_wait_idle() {
    let pool = Pool::new(3, 5).unwrap();
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.idle, c.running), (3, 3, 0));
}

#[test]
fn grows_one_worker_per_task_while_none_is_idle_up_to_max() {
    let pool = Pool::new(1, 3).unwrap();
    let gates = Gates::default();
    for id in 0..3 {
        pool.submit(gates.task(id)).unwrap();
        let c = settle(&pool, 0);
        assert_eq!((c.workers, c.running, c.idle), (id + 1, id + 1, 0));
        gates.wait_started(id + 1);
    }
    // At max: the next task waits in the queue instead of starting a fourth worker.
    pool.submit(gates.task(3)).unwrap();
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.running, c.queued), (3, 3, 1));
    assert_eq!(gates.wait_started(3), vec![0, 1, 2]);
    gates.release(0);
    let c = settle(&pool, 1);
    assert_eq!((c.workers, c.running, c.queued), (3, 3, 0));
    assert_eq!(gates.wait_started(4), vec![0, 1, 2, 3]);
    gates.release_all();
    pool.close().unwrap();
}

#[test]
fn an_idle_worker_takes_the_task_instead_of_a_new_one() {
    let pool = Pool::new(2, 4).unwrap();
    settle(&pool, 0);
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.running, c.idle), (2, 1, 1));
    gates.release_all();
    pool.close().unwrap();
}

#[test]
fn a_finishing_worker_exits_only_when_above_min_and_enough_others_idle() {
    // min = 2: a worker exits when total > 2 and other idle > 1.
    let pool = Pool::new(2, 5).unwrap();
    let gates = Gates::default();
    for id in 0..5 {
        pool.submit(gates.task(id)).unwrap();
    }
    let c = settle(&pool, 0);
    assert_eq!((c.workers, c.running), (5, 5));
    // idle 0 -> stays idle; idle 1 -> stays; idle 2 -> exits (5 > 2, 2 > 1); and so on.
    let expected = [(5, 1), (5, 2), (4, 2), (3, 2), (2, 2)];
    for (id, (workers, idle)) in expected.into_iter().enumerate() {
        gates.release(id);
        let c = settle(&pool, id as u64 + 1);
        assert_eq!(
            (c.workers, c.idle),
            (workers, idle),
            "after task {id} finished"
        );
    }
    pool.close().unwrap();
}

#[test]
fn with_min_zero_the_last_busy_worker_leaves_when_another_idles() {
    let pool = Pool::new(0, 2).unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    pool.submit(gates.task(1)).unwrap();
    settle(&pool, 0);
    gates.release(0);
    let c = settle(&pool, 1);
    assert_eq!((c.workers, c.idle), (2, 1)); // 0 other idle: not > 0
    gates.release(1);
    let c = settle(&pool, 2);
    assert_eq!((c.workers, c.idle), (1, 1)); // 1 other idle > 0: exits
    pool.close().unwrap();
}

#[test]
fn keep_alive_lets_idle_workers_above_min_exit() {
    let pool = Pool::builder(1, 3)
        .keep_alive(Duration::from_millis(1))
        .build()
        .unwrap();
    let gates = Gates::default();
    for id in 0..3 {
        pool.submit(gates.task(id)).unwrap();
    }
    settle(&pool, 0);
    gates.release_all();
    // Whatever the exit rule left, the idle timeout takes the pool down to `min`.
    let c = pool
        .shared()
        .wait_until("down to min", |c| c.finished == 3 && c.workers == 1);
    assert_eq!(c.idle, 1);
    pool.close().unwrap();
}

#[test]
fn without_keep_alive_idle_workers_stay() {
    let pool = Pool::new(0, 2).unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    gates.release(0);
    // One worker, no other idle: it stays, with no timeout to take it away.
    let c = settle(&pool, 1);
    assert_eq!((c.workers, c.idle), (1, 1));
    pool.close().unwrap();
}

#[test]
fn worker_threads_carry_the_configured_name() {
    let pool = Pool::builder(0, 1).thread_name("named").build().unwrap();
    let name = pool.spawn(|| std::thread::current().name().map(String::from));
    assert_eq!(name.join().unwrap().as_deref(), Some("named-0"));
}
