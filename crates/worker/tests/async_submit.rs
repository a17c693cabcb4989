//! `submit_async` / `spawn_async` on a tokio runtime with a paused clock: a waiting submit
//! leaves the runtime's thread free, and a cancelled one (by `select!` or a timeout)
//! accepted nothing.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use lockgate_worker::Pool;

/// A pool of one worker and no waiting place, busy until the returned sender sends.
fn full_pool() -> (Pool, mpsc::Sender<()>) {
    let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
    let (release, gate) = mpsc::channel::<()>();
    pool.submit(move || gate.recv().unwrap()).unwrap();
    (pool, release)
}

#[tokio::test(start_paused = true)]
async fn a_waiting_submit_leaves_the_runtime_free_and_a_cancelled_one_accepts_nothing() {
    let (pool, release) = full_pool();
    let marker = Arc::new(());
    let task = {
        let marker = Arc::clone(&marker);
        move || drop(marker)
    };
    // The sleep can only fire if the runtime's one thread is free while the submit waits.
    tokio::select! {
        _ = pool.submit_async(task) => panic!("the pool is full"),
        () = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    assert_eq!(
        Arc::strong_count(&marker),
        1,
        "the dropped submit's task was dropped unrun"
    );
    release.send(()).unwrap();
    let answer = pool.spawn_async(|| 42).await.unwrap();
    assert_eq!(answer.await.unwrap(), 42);
    tokio::task::spawn_blocking(move || {
        pool.close().unwrap();
        assert_eq!(pool.completed(), 2);
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_spawn_accepts_nothing_and_the_next_waiter_gets_the_room() {
    let (pool, release) = full_pool();
    let pool = Arc::new(pool);
    let late = tokio::time::timeout(Duration::from_secs(1), pool.spawn_async(|| "late")).await;
    assert!(late.is_err(), "timed out while the pool was full");
    let waiter = tokio::spawn({
        let pool = Arc::clone(&pool);
        async move { pool.spawn_async(|| "next").await.unwrap().await.unwrap() }
    });
    tokio::task::yield_now().await; // the waiter registers its waker
    release.send(()).unwrap();
    assert_eq!(waiter.await.unwrap(), "next");
    tokio::task::spawn_blocking(move || {
        pool.close().unwrap();
        assert_eq!(
            pool.completed(),
            2,
            "the gate task and the waiter's, not the late one"
        );
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn many_async_spawns_into_a_small_pool_all_run() {
    let pool = Arc::new(Pool::builder(1, 2).submit_buffer(1).build().unwrap());
    let spawner = tokio::spawn({
        let pool = Arc::clone(&pool);
        async move {
            let mut handles = Vec::new();
            for n in 0..40u64 {
                handles.push(pool.spawn_async(move || n).await.unwrap());
            }
            let mut sum = 0;
            for handle in handles {
                sum += handle.await.unwrap();
            }
            sum
        }
    });
    assert_eq!(spawner.await.unwrap(), (0..40).sum::<u64>());
    tokio::task::spawn_blocking(move || pool.close().unwrap())
        .await
        .unwrap();
}
