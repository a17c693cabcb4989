//! The public API of `Pool`, `Builder`, `TaskHandle` and the error types, from outside.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockgate_worker::{
    BuildError, CloseError, JoinError, Pool, SubmitTimeoutError, TrySubmitError,
};

#[test]
fn build_rejects_zero_max_and_min_above_max() {
    assert_eq!(Pool::new(0, 0).unwrap_err(), BuildError::ZeroMax);
    assert_eq!(
        Pool::builder(5, 4).build().unwrap_err(),
        BuildError::MinAboveMax { min: 5, max: 4 }
    );
    assert_eq!(
        BuildError::MinAboveMax { min: 5, max: 4 }.to_string(),
        "`min` (5) must not exceed `max` (4)"
    );
    let pool = Pool::new(4, 4).unwrap();
    assert_eq!((pool.min(), pool.max(), pool.capacity()), (4, 4, 2 + 128));
}

#[test]
fn build_rejects_sizes_that_overflow_or_exceed_max_workers() {
    use lockgate_worker::{MAX_UNFINISHED, MAX_WORKERS};
    // Once a "capacity overflow" panic while reserving `min` workers.
    assert_eq!(
        Pool::new(usize::MAX, usize::MAX).unwrap_err(),
        BuildError::TooManyWorkers {
            max: usize::MAX,
            limit: MAX_WORKERS
        }
    );
    assert_eq!(
        Pool::new(0, 5_000).unwrap_err(),
        BuildError::TooManyWorkers {
            max: 5_000,
            limit: MAX_WORKERS
        }
    );
    let largest = MAX_UNFINISHED - MAX_WORKERS - MAX_WORKERS / 2;
    assert_eq!(
        Pool::builder(0, MAX_WORKERS)
            .submit_buffer(largest + 1)
            .build()
            .unwrap_err(),
        BuildError::SubmitBufferTooLarge {
            submit_buffer: largest + 1,
            max: MAX_WORKERS,
            largest
        }
    );
    // The edges themselves are accepted (no worker starts with `min == 0`).
    let pool = Pool::builder(0, MAX_WORKERS)
        .submit_buffer(largest)
        .build()
        .unwrap();
    assert_eq!(pool.capacity(), MAX_WORKERS / 2 + largest);
    assert_eq!(pool.spawn(|| 3).join(), Ok(3));
    pool.close().unwrap();
}

#[test]
fn unbuffered_pool_of_one_has_no_waiting_place() {
    let pool = Pool::builder(0, 1).submit_buffer(0).build().unwrap();
    assert_eq!(pool.capacity(), 0);
}

#[test]
fn submit_timeout_accepts_when_there_is_room() {
    let pool = Pool::new(1, 1).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    pool.submit_timeout(
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
        },
        Duration::from_secs(60),
    )
    .unwrap();
    pool.close().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn closed_pool_hands_back_tasks_from_every_entry_point() {
    let pool = Pool::new(1, 2).unwrap();
    pool.close().unwrap();
    let marker = Arc::new(());
    let held = Arc::clone(&marker);
    let err = pool.submit(move || drop(held)).unwrap_err();
    assert_eq!(err.to_string(), "the pool is closed");
    assert_eq!(Arc::strong_count(&marker), 2, "the task came back unrun");
    (err.into_inner())();
    assert_eq!(Arc::strong_count(&marker), 1);
    assert!(matches!(
        pool.try_submit(|| ()),
        Err(TrySubmitError::Closed(_))
    ));
    assert!(matches!(
        pool.submit_timeout(|| (), Duration::ZERO),
        Err(SubmitTimeoutError::Closed(_))
    ));
    assert_eq!(pool.spawn(|| 1).join(), Err(JoinError::Closed));
}

#[test]
fn errors_display_and_debug_without_the_task() {
    let full: TrySubmitError<fn()> = TrySubmitError::Full(|| ());
    assert_eq!(full.to_string(), "the pool is full");
    assert_eq!(format!("{full:?}"), "Full(..)");
    let timeout: SubmitTimeoutError<fn()> = SubmitTimeoutError::Timeout(|| ());
    assert_eq!(
        timeout.to_string(),
        "the pool stayed full until the timeout"
    );
    assert!(timeout.is_timeout() && !timeout.is_closed());
    assert_eq!(
        CloseError::FromWorker.to_string(),
        "close called from inside one of the pool's own tasks; it cannot wait for itself"
    );
}

#[test]
fn handle_reports_finished_and_the_value() {
    let pool = Pool::new(1, 1).unwrap();
    let handle = pool.spawn(|| String::from("done"));
    pool.close().unwrap();
    assert!(handle.is_finished());
    assert_eq!(format!("{handle:?}"), "TaskHandle { finished: true }");
    assert_eq!(handle.join().unwrap(), "done");
}

#[test]
fn pool_debug_shows_settings_and_counters() {
    let pool = Pool::new(1, 2).unwrap();
    let shown = format!("{pool:?}");
    assert!(
        shown.starts_with("Pool { min: 1, max: 2, capacity: 129, workers: 1"),
        "{shown}"
    );
}

#[test]
fn pool_and_handle_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Pool>();
    assert_send_sync::<lockgate_worker::TaskHandle<u8>>();
}
