//! Every rule of `Pool` and its edges, on a current-thread runtime with a paused clock.

mod common;

use std::time::Duration;

use common::{TestPool, gated, never, settle, spawn_run};
use lockgate_pdfpool::{BusyCause, Error, Pool};
use tokio::task::JoinHandle;
use tokio::time::advance;

const WAIT: Duration = Duration::from_secs(10);

/// Refused at once: no slot, no queue place.
const QUEUE_FULL: Error = Error::Busy {
    cause: BusyCause::QueueFull,
    retry_after: WAIT,
};

/// The job waited past the limit.
const WAIT_EXPIRED: Error = Error::Busy {
    cause: BusyCause::WaitExpired,
    retry_after: WAIT,
};

/// Spawns `pool.join(&key)` as its own task.
fn spawn_join(pool: &TestPool, key: &'static str) -> JoinHandle<Option<Result<String, Error>>> {
    let pool = pool.clone();
    tokio::spawn(async move { pool.join(&key).await })
}

fn counters(pool: &TestPool) -> (usize, usize) {
    (pool.running(), pool.queued())
}

// Rule 1: join.

#[tokio::test(start_paused = true)]
async fn identical_requests_share_one_job_and_its_value() {
    let pool = TestPool::new(2, 2, WAIT);
    let (mut gate, job) = gated();
    let starter = spawn_run(&pool, "a.pdf", "alice", job);
    let second = spawn_run(&pool, "a.pdf", "bob", never());
    let joiner = spawn_join(&pool, "a.pdf");
    settle().await;
    assert_eq!(pool.waiting("a.pdf"), 2, "the sharers, not the starter");
    assert_eq!(counters(&pool), (1, 0), "joiners take no slot");
    gate.finish("text".into());
    assert_eq!(starter.await.unwrap(), Ok("text".into()));
    assert_eq!(second.await.unwrap(), Ok("text".into()));
    assert_eq!(joiner.await.unwrap(), Some(Ok("text".into())));
    assert_eq!(gate.calls(), 1);
    assert_eq!((counters(&pool), pool.waiting("a.pdf")), ((0, 0), 0));
}

#[tokio::test(start_paused = true)]
async fn a_busy_caller_may_still_join_another_key() {
    let pool = TestPool::new(2, 0, WAIT);
    let (mut own, own_job) = gated();
    let (mut other, other_job) = gated();
    let alice = spawn_run(&pool, "a.pdf", "alice", own_job);
    let bob = spawn_run(&pool, "b.pdf", "bob", other_job);
    settle().await;
    // alice owns a.pdf, yet joins b.pdf: rule 1 comes before rule 2, and takes no slot.
    let alice_joins = spawn_run(&pool, "b.pdf", "alice", never());
    settle().await;
    assert_eq!(pool.waiting("b.pdf"), 1, "alice shares bob's job");
    other.finish("b".into());
    own.finish("a".into());
    assert_eq!(alice_joins.await.unwrap(), Ok("b".into()));
    assert_eq!(bob.await.unwrap(), Ok("b".into()));
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
}

#[tokio::test(start_paused = true)]
async fn joining_takes_no_queue_place_even_when_the_queue_is_full() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let (mut b, b_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1));
    let carol = spawn_run(&pool, "b", "carol", never());
    let dave = spawn_run(&pool, "c", "dave", never());
    settle().await;
    assert_eq!(
        dave.await.unwrap(),
        Err(QUEUE_FULL),
        "queue full for a new key"
    );
    assert_eq!(pool.waiting("b"), 1, "carol joined the queued job");
    a.finish("a".into());
    settle().await;
    b.finish("b".into());
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
    assert_eq!(carol.await.unwrap(), Ok("b".into()));
}

#[tokio::test(start_paused = true)]
async fn join_without_a_job_in_flight_is_none_and_starts_nothing() {
    let pool = TestPool::new(1, 1, WAIT);
    assert_eq!(pool.join("a").await, None);
    assert_eq!(counters(&pool), (0, 0));
}

// Rule 2: one job per caller.

#[tokio::test(start_paused = true)]
async fn a_caller_with_a_running_job_is_refused_at_once_for_another_key() {
    let pool = TestPool::new(2, 2, WAIT);
    let (mut gate, job) = gated();
    let first = spawn_run(&pool, "a", "alice", job);
    settle().await;
    let (other_gate, other_job) = gated();
    assert_eq!(
        pool.run("b", "alice", other_job).await,
        Err(Error::CallerBusy)
    );
    assert_eq!(other_gate.calls(), 0);
    assert_eq!(counters(&pool), (1, 0));
    gate.finish("a".into());
    assert_eq!(first.await.unwrap(), Ok("a".into()));
    // Free again once the job ended.
    let (mut again, again_job) = gated();
    let second = spawn_run(&pool, "b", "alice", again_job);
    settle().await;
    again.finish("b".into());
    assert_eq!(second.await.unwrap(), Ok("b".into()));
}

#[tokio::test(start_paused = true)]
async fn a_caller_with_a_queued_job_is_refused_too() {
    let pool = TestPool::new(1, 2, WAIT);
    let (_a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let (_b, b_job) = gated();
    let _rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1));
    assert_eq!(pool.run("c", "bob", never()).await, Err(Error::CallerBusy));
    assert_eq!(counters(&pool), (1, 1));
}

// Rule 3: slots, queue, wait limit.

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_at_once_without_calling_the_closure() {
    let pool = TestPool::new(1, 1, WAIT);
    let (_a, a_job) = gated();
    let (_b, b_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let _rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    let (c, c_job) = gated();
    assert_eq!(pool.run("c", "carol", c_job).await, Err(QUEUE_FULL));
    assert_eq!(c.calls(), 0);
    assert_eq!(counters(&pool), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_zero_queue_refuses_once_every_slot_is_taken() {
    let pool = TestPool::new(1, 0, WAIT);
    let (_a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    assert_eq!(pool.run("b", "bob", never()).await, Err(QUEUE_FULL));
}

#[tokio::test(start_paused = true)]
async fn queued_jobs_start_first_come_first_served() {
    let pool = TestPool::new(1, 2, WAIT);
    let (mut a, a_job) = gated();
    let (mut b, b_job) = gated();
    let (mut c, c_job) = gated();
    let ra = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    let rc = spawn_run(&pool, "c", "carol", c_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 2));
    assert_eq!((b.calls(), c.calls()), (0, 0));
    a.finish("a".into());
    settle().await;
    assert_eq!(
        (b.calls(), c.calls()),
        (1, 0),
        "b queued first, starts first"
    );
    assert_eq!(counters(&pool), (1, 1));
    b.finish("b".into());
    settle().await;
    assert_eq!(c.calls(), 1);
    c.finish("c".into());
    assert_eq!(ra.await.unwrap(), Ok("a".into()));
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
    assert_eq!(rc.await.unwrap(), Ok("c".into()));
    assert_eq!(counters(&pool), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn waiting_past_the_limit_is_busy_for_everyone_on_the_job() {
    let pool = TestPool::new(1, 1, WAIT);
    let (_a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    let (b, b_job) = gated();
    let starter = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    advance(Duration::from_secs(4)).await;
    // Joiners share the job's deadline, not a fresh one.
    let joiner = spawn_join(&pool, "b");
    let sharer = spawn_run(&pool, "b", "carol", never());
    settle().await;
    advance(Duration::from_millis(5_999)).await;
    settle().await;
    assert!(!starter.is_finished(), "one millisecond before the limit");
    assert_eq!(pool.waiting("b"), 2);
    advance(Duration::from_millis(1)).await;
    settle().await;
    assert_eq!(starter.await.unwrap(), Err(WAIT_EXPIRED));
    assert_eq!(joiner.await.unwrap(), Some(Err(WAIT_EXPIRED)));
    assert_eq!(sharer.await.unwrap(), Err(WAIT_EXPIRED));
    assert_eq!(WAIT_EXPIRED.retry_after(), Some(WAIT));
    assert_eq!(b.calls(), 0, "an expired job never runs");
    assert_eq!(counters(&pool), (1, 0));
    assert_eq!(pool.waiting("b"), 0);
    // bob is free again, and the queue place is back.
    let (_b2, b2_job) = gated();
    let _again = spawn_run(&pool, "b", "bob", b2_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_queued_job_that_starts_in_time_runs_in_full_past_the_limit() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let (mut b, b_job) = gated();
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    advance(Duration::from_secs(5)).await;
    a.finish("a".into());
    settle().await;
    assert_eq!(b.calls(), 1);
    advance(WAIT * 3).await;
    settle().await;
    assert!(!rb.is_finished(), "the limit bounds the queue wait only");
    b.finish("b".into());
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_around_run_gives_the_queue_place_back() {
    let pool = TestPool::new(1, 1, WAIT);
    let (_a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    let (b, b_job) = gated();
    let shorter = tokio::time::timeout(Duration::from_secs(1), pool.run("b", "bob", b_job)).await;
    assert!(shorter.is_err(), "the caller gave up first");
    assert_eq!(counters(&pool), (1, 0));
    assert_eq!(pool.waiting("b"), 0);
    assert_eq!(b.calls(), 0);
    let (_b2, b2_job) = gated();
    let _again = spawn_run(&pool, "b2", "bob", b2_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1), "bob is free and the place is back");
}

// Rule 3, cancellation of queued jobs.

#[tokio::test(start_paused = true)]
async fn the_last_waiter_leaving_a_queued_job_frees_its_place_and_caller() {
    let pool = TestPool::new(1, 1, WAIT);
    let (_a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let (b, b_job) = gated();
    let starter = spawn_run(&pool, "b", "bob", b_job);
    let joiner = spawn_join(&pool, "b");
    settle().await;
    assert_eq!(pool.waiting("b"), 1, "the joiner; bob started the job");
    starter.abort();
    settle().await;
    assert_eq!(
        pool.waiting("b"),
        1,
        "the joiner still waits; the starter left"
    );
    assert_eq!(
        counters(&pool),
        (1, 1),
        "a waiter is left: the job keeps its place"
    );
    assert_eq!(pool.run("c", "bob", never()).await, Err(Error::CallerBusy));
    joiner.abort();
    settle().await;
    assert_eq!(counters(&pool), (1, 0));
    assert_eq!(pool.waiting("b"), 0);
    assert_eq!(b.calls(), 0, "an abandoned job never runs");
    let (_c, c_job) = gated();
    let _rc = spawn_run(&pool, "c", "bob", c_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1), "bob is free again");
}

#[tokio::test(start_paused = true)]
async fn a_queued_job_outlives_its_starter_while_someone_waits() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let _ra = spawn_run(&pool, "a", "alice", a_job);
    let (mut b, b_job) = gated();
    let starter = spawn_run(&pool, "b", "bob", b_job);
    let joiner = spawn_join(&pool, "b");
    settle().await;
    starter.abort();
    a.finish("a".into());
    settle().await;
    assert_eq!(b.calls(), 1, "the starter's closure runs for the joiner");
    b.finish("b".into());
    assert_eq!(joiner.await.unwrap(), Some(Ok("b".into())));
}

// Rule 4: the job outlives its caller.

#[tokio::test(start_paused = true)]
async fn a_running_job_outlives_every_waiter_and_keeps_its_caller_busy() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let starter = spawn_run(&pool, "a", "alice", a_job);
    let joiner = spawn_join(&pool, "a");
    settle().await;
    starter.abort();
    joiner.abort();
    settle().await;
    assert_eq!((pool.running(), pool.waiting("a")), (1, 0));
    assert_eq!(
        pool.run("b", "alice", never()).await,
        Err(Error::CallerBusy)
    );
    // A later request for the key joins the orphan job instead of starting another.
    let late = spawn_run(&pool, "a", "bob", never());
    settle().await;
    a.finish("a".into());
    assert_eq!(late.await.unwrap(), Ok("a".into()));
    assert_eq!(a.calls(), 1);
    assert_eq!(counters(&pool), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn an_orphan_job_that_ends_frees_its_slot_for_the_queue() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let starter = spawn_run(&pool, "a", "alice", a_job);
    let (mut b, b_job) = gated();
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    starter.abort();
    settle().await;
    a.finish("nobody hears this".into());
    settle().await;
    assert_eq!(b.calls(), 1);
    b.finish("b".into());
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
}

// Rule 5: no cache; panics.

#[tokio::test(start_paused = true)]
async fn the_key_is_forgotten_when_the_job_ends() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut first, first_job) = gated();
    let r1 = spawn_run(&pool, "a", "alice", first_job);
    settle().await;
    first.finish("v1".into());
    assert_eq!(r1.await.unwrap(), Ok("v1".into()));
    let (mut second, second_job) = gated();
    let r2 = spawn_run(&pool, "a", "alice", second_job);
    settle().await;
    assert_eq!(second.calls(), 1, "no cache: the closure is called again");
    second.finish("v2".into());
    assert_eq!(r2.await.unwrap(), Ok("v2".into()));
}

#[tokio::test(start_paused = true)]
async fn a_panic_reaches_every_sharer_and_frees_slot_and_caller() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let starter = spawn_run(&pool, "a", "alice", a_job);
    let sharer = spawn_run(&pool, "a", "bob", never());
    let (mut b, b_job) = gated();
    let queued = spawn_run(&pool, "b", "carol", b_job);
    settle().await;
    a.panic("extractor crashed");
    for outcome in [starter.await.unwrap(), sharer.await.unwrap()] {
        match outcome {
            Err(Error::Panicked(panic)) => assert_eq!(panic.message(), "extractor crashed"),
            other => panic!("expected Panicked, got {other:?}"),
        }
    }
    settle().await;
    assert_eq!(b.calls(), 1, "the slot went to the queue");
    b.finish("b".into());
    assert_eq!(queued.await.unwrap(), Ok("b".into()));
    let (mut again, again_job) = gated();
    let retry = spawn_run(&pool, "c", "alice", again_job);
    settle().await;
    again.finish("c".into());
    assert_eq!(retry.await.unwrap(), Ok("c".into()), "alice is free again");
}

#[tokio::test(start_paused = true)]
async fn a_panic_while_calling_the_closure_is_caught_too() {
    let pool = TestPool::new(1, 1, WAIT);
    let outcome = pool
        .run("a", "alice", || -> common::BoxJob<String> {
            panic!("before any future")
        })
        .await;
    match outcome {
        Err(Error::Panicked(panic)) => assert_eq!(panic.message(), "before any future"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    assert_eq!(counters(&pool), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_job_that_panics_again_while_dropped_reports_the_first_panic() {
    /// Panics when polled, and again when dropped.
    struct PanicsTwice;
    impl std::future::Future for PanicsTwice {
        type Output = String;
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<String> {
            panic!("first")
        }
    }
    impl Drop for PanicsTwice {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                panic!("second");
            }
        }
    }
    let pool = TestPool::new(1, 1, WAIT);
    match pool.run("a", "alice", || PanicsTwice).await {
        Err(Error::Panicked(panic)) => assert_eq!(panic.message(), "first"),
        other => panic!("expected the first panic, got {other:?}"),
    }
    assert_eq!(counters(&pool), (0, 0));
    let (mut again, job) = gated();
    let retry = spawn_run(&pool, "a", "alice", job);
    settle().await;
    again.finish("fine".into());
    assert_eq!(retry.await.unwrap(), Ok("fine".into()));
}

#[tokio::test(start_paused = true)]
async fn a_value_whose_clone_panics_fails_only_that_copy() {
    #[derive(Debug, PartialEq)]
    struct Fragile(u8);
    impl Clone for Fragile {
        fn clone(&self) -> Self {
            panic!("clone refused")
        }
    }
    let pool: Pool<&str, &str, Fragile> = Pool::new(1, 0, WAIT);
    let (mut gate, job) = gated();
    let starter = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("a", "alice", job).await })
    };
    let sharer = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.join("a").await })
    };
    settle().await;
    gate.finish(Fragile(7));
    let mut outcomes = [starter.await.unwrap(), sharer.await.unwrap().unwrap()];
    outcomes.sort_by_key(Result::is_ok);
    match &outcomes[..] {
        [Err(Error::Panicked(panic)), Ok(Fragile(7))] => {
            assert_eq!(panic.message(), "clone refused");
        }
        other => panic!("expected one copy failed and the original delivered: {other:?}"),
    }
}

// close().

#[tokio::test(start_paused = true)]
async fn close_refuses_new_jobs_drops_queued_ones_and_lets_running_ones_finish() {
    let pool = TestPool::new(1, 1, WAIT);
    let (mut a, a_job) = gated();
    let ra = spawn_run(&pool, "a", "alice", a_job);
    let (b, b_job) = gated();
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    pool.close();
    assert!(pool.is_closed());
    assert_eq!(rb.await.unwrap(), Err(Error::Closed));
    assert_eq!(counters(&pool), (1, 0));
    assert_eq!(pool.run("c", "carol", never()).await, Err(Error::Closed));
    // Joining the running job is not new work.
    let late = spawn_run(&pool, "a", "dave", never());
    let joiner = spawn_join(&pool, "a");
    settle().await;
    assert_eq!(pool.waiting("a"), 2);
    a.finish("a".into());
    assert_eq!(ra.await.unwrap(), Ok("a".into()));
    assert_eq!(late.await.unwrap(), Ok("a".into()));
    assert_eq!(joiner.await.unwrap(), Some(Ok("a".into())));
    assert_eq!(b.calls(), 0);
    pool.close();
    assert_eq!(counters(&pool), (0, 0));
}

// The runtime going away.

#[test]
fn jobs_whose_runtime_shuts_down_end_with_closed_and_free_their_slots() {
    let pool = TestPool::new(1, 1, WAIT);
    let jobs = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let waiters = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (_a, a_job) = gated();
    let (b, b_job) = gated();
    let starters = {
        let pool = pool.clone();
        jobs.spawn(async move {
            // "b" queues behind "a"; neither ever ends by itself.
            tokio::join!(pool.run("a", "alice", a_job), pool.run("b", "bob", b_job))
        })
    };
    jobs.block_on(settle());
    assert_eq!(counters(&pool), (1, 1));
    let joiners = {
        let pool = pool.clone();
        waiters.spawn(async move { tokio::join!(pool.join("a"), pool.join("b")) })
    };
    waiters.block_on(settle());
    assert_eq!((pool.waiting("a"), pool.waiting("b")), (1, 1));
    // Dropping the runtime drops the job task of "a": its slot frees, "b" is promoted and
    // spawned on the runtime being shut down, which drops it too.
    drop(jobs);
    assert_eq!(counters(&pool), (0, 0), "no slot is lost");
    assert_eq!(b.calls(), 0, "b's task was dropped before its first poll");
    let (a_outcome, b_outcome) = waiters.block_on(joiners).unwrap();
    assert_eq!(a_outcome, Some(Err(Error::Closed)));
    assert_eq!(b_outcome, Some(Err(Error::Closed)));
    drop(starters);
}

#[test]
fn a_starter_whose_job_runtime_shuts_down_gets_closed() {
    let pool = TestPool::new(1, 1, WAIT);
    let jobs = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (_a, a_job) = gated();
    // The starter is polled by another executor, inside the jobs runtime's context, so its
    // job's task runs there and the starter awaits that task from outside.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut starter = std::pin::pin!(pool.run("a", "alice", a_job));
    {
        let _entered = jobs.enter();
        assert!(starter.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(counters(&pool), (1, 0));
    drop(jobs);
    assert_eq!(counters(&pool), (0, 0), "no slot is lost");
    assert_eq!(
        starter.as_mut().poll(&mut cx),
        std::task::Poll::Ready(Err(Error::Closed))
    );
}

// Construction.

#[tokio::test(start_paused = true)]
async fn an_unbounded_wait_is_capped_instead_of_overflowing() {
    let pool = TestPool::new(1, 1, Duration::MAX);
    let (mut a, a_job) = gated();
    let ra = spawn_run(&pool, "a", "alice", a_job);
    let (mut b, b_job) = gated();
    let rb = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    assert_eq!(counters(&pool), (1, 1));
    advance(Duration::from_secs(365 * 24 * 60 * 60)).await;
    settle().await;
    assert_eq!(counters(&pool), (1, 1), "a year later, still queued");
    a.finish("a".into());
    settle().await;
    b.finish("b".into());
    assert_eq!(ra.await.unwrap(), Ok("a".into()));
    assert_eq!(rb.await.unwrap(), Ok("b".into()));
}

#[test]
#[should_panic(expected = "`slots` must be at least 1")]
fn zero_slots_is_a_caller_bug() {
    let _pool = TestPool::new(0, 1, WAIT);
}

#[test]
fn pools_and_their_futures_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    fn assert_send<T: Send>(_: &T) {}
    let pool = TestPool::new(1, 1, WAIT);
    assert_send_sync(&pool);
    assert_send(&pool.run("a", "alice", never()));
    assert_send(&pool.join("a"));
    assert!(format!("{pool:?}").contains("running: 0"));
}

// Outside a Tokio runtime.

/// Polls `future` to completion with a no-op waker: an executor that is not Tokio.
fn block_on_without_tokio<F: std::future::Future>(future: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

#[test]
fn a_job_started_outside_a_runtime_ends_with_closed_and_frees_its_slot() {
    let pool = TestPool::new(1, 1, WAIT);
    let outcome = block_on_without_tokio(pool.run("a", "alice", never()));
    assert_eq!(outcome, Err(Error::Closed));
    assert_eq!(counters(&pool), (0, 0));
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn queueing_on_a_runtime_without_time_blames_the_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = TestPool::new(1, 1, WAIT);
        let (_a, a_job) = gated();
        let _ra = spawn_run(&pool, "a", "alice", a_job);
        settle().await;
        // The job has to wait, and the wait limit needs a timer.
        let _ = pool.run("b", "bob", never()).await;
    });
}

// `waiting`, borrowed keys and the limits.

/// A pool keyed and called by `String`s, asked with `&str`s.
type OwnedPool = Pool<String, String, String>;

#[tokio::test(start_paused = true)]
async fn waiting_counts_the_sharers_but_never_the_starter() {
    const SHARERS: usize = 100;
    let pool = OwnedPool::new(1, 0, WAIT);
    let (mut gate, job) = gated();
    let starter = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("a".into(), "alice".into(), job).await })
    };
    settle().await;
    assert_eq!(pool.waiting("a"), 0, "only the starter waits");
    let joiners: Vec<_> = (0..SHARERS)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { pool.join("a").await })
        })
        .collect();
    settle().await;
    assert_eq!(pool.waiting("a"), SHARERS);
    // The starter leaving changes nothing; a joiner then reuses its waiter slot and counts.
    starter.abort();
    settle().await;
    assert_eq!(pool.waiting("a"), SHARERS);
    let late = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.join("a").await })
    };
    settle().await;
    assert_eq!(pool.waiting("a"), SHARERS + 1);
    late.abort();
    settle().await;
    assert_eq!(pool.waiting("a"), SHARERS);
    gate.finish("text".into());
    for joiner in joiners {
        assert_eq!(joiner.await.unwrap(), Some(Ok("text".into())));
    }
    assert_eq!(pool.waiting("a"), 0);
}

#[tokio::test(start_paused = true)]
async fn join_and_waiting_take_a_borrowed_key() {
    let pool = OwnedPool::new(1, 0, WAIT);
    let key: &str = "report.pdf";
    assert_eq!(pool.join(key).await, None);
    assert_eq!(pool.waiting(key), 0);
    let (mut gate, job) = gated();
    let starter = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run(key.to_owned(), "alice".into(), job).await })
    };
    settle().await;
    let joiner = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.join(key).await })
    };
    settle().await;
    assert_eq!(pool.waiting(key), 1);
    gate.finish("text".into());
    assert_eq!(joiner.await.unwrap(), Some(Ok("text".into())));
    assert_eq!(starter.await.unwrap(), Ok("text".into()));
}

#[test]
fn the_limits_read_back_as_given_and_wait_is_capped() {
    let pool = TestPool::new(3, 5, WAIT);
    assert_eq!(
        (pool.slots(), pool.queue_limit(), pool.wait()),
        (3, 5, WAIT)
    );
    let unlimited = TestPool::new(1, 0, Duration::MAX);
    assert_eq!((unlimited.slots(), unlimited.queue_limit()), (1, 0));
    assert_eq!(unlimited.wait(), TestPool::MAX_WAIT);
}

#[tokio::test(start_paused = true)]
async fn retry_after_secs_rounds_the_pools_wait_up_to_a_whole_second() {
    let pool = TestPool::new(1, 0, Duration::from_millis(2_500));
    let (mut gate, job) = gated();
    let running = spawn_run(&pool, "a", "alice", job);
    settle().await;
    let refused = pool.run("b", "bob", never()).await.unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(2_500)));
    assert_eq!(
        refused.retry_after_secs(),
        Some(3),
        "2.5 s rounds up, not down"
    );
    gate.finish("done".into());
    assert_eq!(running.await.unwrap(), Ok("done".into()));

    let busy = |retry_after| Error::Busy {
        cause: BusyCause::WaitExpired,
        retry_after,
    };
    assert_eq!(busy(Duration::ZERO).retry_after_secs(), Some(1));
    assert_eq!(busy(Duration::from_millis(1)).retry_after_secs(), Some(1));
    assert_eq!(
        busy(Duration::from_millis(2_001)).retry_after_secs(),
        Some(3)
    );
    assert_eq!(busy(Duration::from_secs(5)).retry_after_secs(), Some(5));
    assert_eq!(Error::CallerBusy.retry_after_secs(), None);
    assert_eq!(Error::Closed.retry_after_secs(), None);
}
