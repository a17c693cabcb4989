//! Rule 2: exact capacity, FIFO start, and the three ways a full pool answers.

use std::sync::Arc;
use std::time::Duration;

use super::support::{Gates, settle, submit_from_a_blocked_thread};
use crate::{Pool, SubmitTimeoutError, TrySubmitError};

/// Fills `max` workers, then checks exactly `max/2 + buffer` more are accepted.
fn exact_capacity(max: usize, buffer: usize) {
    let pool = Pool::builder(0, max).submit_buffer(buffer).build().unwrap();
    assert_eq!(pool.capacity(), max / 2 + buffer);
    let gates = Gates::default();
    for id in 0..max {
        pool.try_submit(gates.task(id)).unwrap();
    }
    settle(&pool, 0);
    for id in max..max + pool.capacity() {
        assert!(pool.try_submit(gates.task(id)).is_ok(), "task {id} refused");
    }
    let next = max + pool.capacity();
    let refused = pool.try_submit(gates.task(next)).unwrap_err();
    gates.forget(next);
    assert!(refused.is_full());
    let c = settle(&pool, 0);
    assert_eq!((c.running, c.queued), (max, max / 2 + buffer));
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(pool.completed(), (max + max / 2 + buffer) as u64);
}

#[test]
fn capacity_is_half_max_plus_buffer() {
    for (max, buffer) in [(1, 0), (1, 2), (2, 0), (3, 1), (4, 3), (7, 0)] {
        exact_capacity(max, buffer);
    }
}

#[test]
fn default_buffer_is_128() {
    let pool = Pool::new(0, 4).unwrap();
    assert_eq!(pool.capacity(), 2 + 128);
}

#[test]
fn tasks_start_in_accept_order() {
    let pool = Pool::builder(0, 2).submit_buffer(5).build().unwrap();
    let gates = Gates::default();
    for id in 0..8 {
        pool.try_submit(gates.task(id)).unwrap();
        // Two workers that take tasks at the same moment log them in either order; one
        // at a time, the log shows the order the queue handed them out.
        settle(&pool, 0);
        gates.wait_started((id + 1).min(2));
    }
    for done in 0..6 {
        gates.release(done);
        settle(&pool, done as u64 + 1);
        gates.wait_started(done + 3);
    }
    assert_eq!(gates.wait_started(8), (0..8).collect::<Vec<_>>());
    gates.release_all();
    pool.close().unwrap();
}

#[test]
fn full_pool_hands_the_task_back_from_try_submit_and_submit_timeout() {
    let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let marker = Arc::new(());
    let task = {
        let marker = Arc::clone(&marker);
        move || drop(marker)
    };
    let TrySubmitError::Full(task) = pool.try_submit(task).unwrap_err() else {
        panic!("expected Full");
    };
    let SubmitTimeoutError::Timeout(task) = pool.submit_timeout(task, Duration::ZERO).unwrap_err()
    else {
        panic!("expected Timeout");
    };
    assert_eq!(Arc::strong_count(&marker), 2, "the task came back whole");
    drop(task);
    gates.release_all();
    pool.close().unwrap();
}

#[test]
fn blocked_submit_proceeds_when_a_task_finishes() {
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
    let gates = Arc::new(Gates::default());
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let blocked = submit_from_a_blocked_thread(&pool, gates.task(1));
    gates.release(0);
    assert!(blocked.join().unwrap());
    assert_eq!(gates.wait_started(2), vec![0, 1]);
    gates.release_all();
    pool.close().unwrap();
}

#[test]
fn blocked_submit_returns_closed_when_close_begins() {
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
    let gates = Arc::new(Gates::default());
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let blocked = submit_from_a_blocked_thread(&pool, || ());
    let closer = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || pool.close())
    };
    assert!(!blocked.join().unwrap(), "the blocked submit saw Closed");
    gates.release_all();
    closer.join().unwrap().unwrap();
}

#[test]
fn blocked_submit_gets_room_less_than_a_batch_when_nothing_else_finishes() {
    // Limit 7 (one worker, six waiting places): a blocked submitter is woken by a batch of
    // 3 free places. Only one place frees here, and the task that takes the worker then
    // waits for the test, not for the submitter: the submit must still get that one place.
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(6).build().unwrap());
    let gates = Arc::new(Gates::default());
    for id in 0..7 {
        pool.submit(gates.task(id)).unwrap();
    }
    gates.wait_started(1);
    let blocked = submit_from_a_blocked_thread(&pool, gates.task(7));
    gates.release(0);
    assert!(blocked.join().unwrap(), "the pool was not closing");
    assert_eq!(gates.wait_started(2), vec![0, 1]);
    gates.release_all();
    assert_eq!(gates.wait_started(8), (0..8).collect::<Vec<_>>());
    pool.close().unwrap();
}

#[test]
fn full_pool_hands_the_task_back_from_try_spawn_and_spawn_timeout() {
    let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let marker = Arc::new(());
    let task = {
        let marker = Arc::clone(&marker);
        move || Arc::strong_count(&marker)
    };
    let TrySubmitError::Full(task) = pool.try_spawn(task).unwrap_err() else {
        panic!("expected Full");
    };
    let SubmitTimeoutError::Timeout(task) = pool
        .spawn_timeout(task, Duration::from_millis(5))
        .unwrap_err()
    else {
        panic!("expected Timeout");
    };
    assert_eq!(Arc::strong_count(&marker), 2, "the task came back whole");
    assert_eq!(pool.shared().counters().queued, 0, "nothing was accepted");
    gates.release_all();
    // With room again, the same task is accepted and its handle gives the value.
    let handle = pool.spawn_timeout(task, Duration::from_secs(60)).unwrap();
    assert_eq!(handle.join().unwrap(), 2);
    // The handle is filled before the worker counts the finish: wait for that.
    settle(&pool, 2);
    let handle = pool.try_spawn(|| 7).unwrap();
    assert_eq!(handle.join().unwrap(), 7);
    pool.close().unwrap();
    assert_eq!(pool.completed(), 3);
    let closed = pool.try_spawn(|| 1).unwrap_err();
    assert!(closed.is_closed());
    assert_eq!((closed.into_inner())(), 1);
    let closed = pool.spawn_timeout(|| 2, Duration::ZERO).unwrap_err();
    assert!(closed.is_closed());
    assert_eq!((closed.into_inner())(), 2);
}

#[test]
fn blocked_spawn_timeout_proceeds_when_a_task_finishes() {
    let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
    let gates = Gates::default();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    let spawner = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || {
            pool.spawn_timeout(|| -> u8 { panic!("late") }, Duration::from_secs(60))
                .map(|handle| handle.join())
        })
    };
    pool.shared()
        .wait_until("the spawner blocks", |c| c.blocked_submitters > 0);
    gates.release(0);
    let joined = spawner.join().unwrap().expect("accepted");
    assert_eq!(joined.unwrap_err().to_string(), "the task panicked: late");
    pool.close().unwrap();
    assert_eq!(pool.shared().counters().panicked, 1);
}
