//! `Pool::shutdown`: closes, waits for every running job to end and reach its waiters, and
//! for every job task to be gone; cancel safe.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{gated, never, settle};
use lockgate_pdfpool::{Error, Pool};

type TestPool = Pool<&'static str, &'static str, String>;

const WAIT: Duration = Duration::from_secs(10);

/// Sets its flag when dropped: tells when a job's future is gone.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_nothing_running_resolves_at_once() {
    let pool = TestPool::new(1, 1, WAIT);
    let at_once = tokio::time::timeout(Duration::ZERO, pool.shutdown()).await;
    assert_eq!(at_once, Ok(()));
    assert!(pool.is_closed());
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_the_queue_and_waits_for_every_running_job() {
    let pool = TestPool::new(2, 1, WAIT);
    let (mut a, a_job) = gated();
    let (mut b, b_job) = gated();
    let a_dropped = Arc::new(AtomicBool::new(false));
    let a_job = {
        let flag = DropFlag(Arc::clone(&a_dropped));
        move || {
            let future = a_job();
            async move {
                let _flag = flag;
                future.await
            }
        }
    };
    let ra = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("a", "alice", a_job).await })
    };
    let rb = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("b", "bob", b_job).await })
    };
    let queued = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("c", "carol", never()).await })
    };
    settle().await;
    assert_eq!((pool.running(), pool.queued()), (2, 1));
    let shutdown = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.shutdown().await })
    };
    settle().await;
    assert_eq!(queued.await.unwrap(), Err(Error::Closed));
    assert_eq!(pool.run("d", "dave", never()).await, Err(Error::Closed));
    assert!(!shutdown.is_finished(), "two jobs still run");
    a.finish("a".into());
    settle().await;
    assert!(a_dropped.load(Ordering::SeqCst));
    assert!(!shutdown.is_finished(), "one job still runs");
    // A running job can still be joined during the drain.
    let joiner = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.join("b").await })
    };
    settle().await;
    b.finish("b".into());
    shutdown.await.unwrap();
    assert_eq!((pool.running(), pool.queued()), (0, 0));
    assert_eq!(ra.await.unwrap(), Ok("a".into()));
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
    assert_eq!(joiner.await.unwrap(), Some(Ok("b".into())));
}

#[tokio::test(start_paused = true)]
async fn a_dropped_shutdown_leaves_the_jobs_running_and_a_second_one_finishes_the_drain() {
    let pool = TestPool::new(1, 0, WAIT);
    let (mut a, a_job) = gated();
    let ra = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("a", "alice", a_job).await })
    };
    settle().await;
    let gave_up = tokio::time::timeout(Duration::from_secs(1), pool.shutdown()).await;
    assert!(gave_up.is_err(), "the job still runs");
    assert!(pool.is_closed());
    assert_eq!(pool.running(), 1, "dropping shutdown cancels no job");
    let again = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.shutdown().await })
    };
    settle().await;
    assert!(!again.is_finished());
    a.finish("a".into());
    again.await.unwrap();
    assert_eq!(ra.await.unwrap(), Ok("a".into()));
    // Once drained, shutting down again is immediate.
    assert_eq!(
        tokio::time::timeout(Duration::ZERO, pool.shutdown()).await,
        Ok(())
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_a_job_that_panics() {
    let pool = TestPool::new(1, 0, WAIT);
    let (mut a, a_job) = gated();
    let ra = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("a", "alice", a_job).await })
    };
    settle().await;
    let shutdown = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.shutdown().await })
    };
    settle().await;
    assert!(!shutdown.is_finished());
    a.panic("boom");
    shutdown.await.unwrap();
    assert!(matches!(ra.await.unwrap(), Err(Error::Panicked(_))));
}
