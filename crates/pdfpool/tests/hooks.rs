//! `Hooks`: every event once, in order, with exact durations on the paused clock; hooks run
//! outside the table's lock and a panicking hook changes nothing.

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{TestPool, gated, never, secs, settle, spawn_run};
use lockgate_pdfpool::{BusyCause, Error, Hooks};
use tokio::time::advance;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Queued,
    Started(Duration),
    Joined,
    Refused(Error),
    Expired(Duration),
    Abandoned(Duration),
    Finished(Duration),
    Panicked(Duration),
    Dropped(Duration),
}

/// Records every event; with `pool` set, also what the pool's counters read inside the hook
/// (which would deadlock if a hook ran under the table's lock).
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
    pool: OnceLock<TestPool>,
    counters: Mutex<Vec<(usize, usize)>>,
}

impl Recorder {
    fn push(&self, event: Event) {
        if let Some(pool) = self.pool.get() {
            self.counters
                .lock()
                .unwrap()
                .push((pool.running(), pool.queued()));
        }
        self.events.lock().unwrap().push(event);
    }

    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut self.events.lock().unwrap())
    }
}

impl Hooks for Recorder {
    fn queued(&self) {
        self.push(Event::Queued);
    }
    fn started(&self, queue_wait: Duration) {
        self.push(Event::Started(queue_wait));
    }
    fn joined(&self) {
        self.push(Event::Joined);
    }
    fn refused(&self, why: &Error) {
        self.push(Event::Refused(why.clone()));
    }
    fn expired(&self, queue_wait: Duration) {
        self.push(Event::Expired(queue_wait));
    }
    fn abandoned(&self, queue_wait: Duration) {
        self.push(Event::Abandoned(queue_wait));
    }
    fn finished(&self, job_time: Duration) {
        self.push(Event::Finished(job_time));
    }
    fn panicked(&self, job_time: Duration) {
        self.push(Event::Panicked(job_time));
    }
    fn dropped(&self, job_time: Duration) {
        self.push(Event::Dropped(job_time));
    }
}

fn recorded_pool(slots: usize, queue: usize) -> (TestPool, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let pool = TestPool::with_hooks(slots, queue, WAIT, Arc::clone(&recorder));
    (pool, recorder)
}

#[tokio::test(start_paused = true)]
async fn every_admission_and_end_is_reported_once_with_its_durations() {
    let (pool, recorder) = recorded_pool(1, 1);
    let (mut a, a_job) = gated();
    let alice = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    let bob = spawn_run(&pool, "a", "bob", never());
    let (mut b, b_job) = gated();
    let carol = spawn_run(&pool, "b", "carol", b_job);
    settle().await;
    assert_eq!(
        pool.run("c", "dave", never())
            .await
            .unwrap_err()
            .retry_after(),
        Some(WAIT)
    );
    assert_eq!(
        pool.run("d", "alice", never()).await,
        Err(Error::CallerBusy)
    );
    assert_eq!(
        recorder.take(),
        vec![
            Event::Started(Duration::ZERO),
            Event::Joined,
            Event::Queued,
            Event::Refused(Error::Busy {
                cause: BusyCause::QueueFull,
                retry_after: WAIT
            }),
            Event::Refused(Error::CallerBusy),
        ]
    );
    advance(secs(3)).await;
    a.finish("a".into());
    settle().await;
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
    assert_eq!(bob.await.unwrap(), Ok("a".into()));
    // "a" ran 3 s; "b" waited those 3 s in the queue and starts in the slot "a" freed.
    assert_eq!(
        recorder.take(),
        vec![Event::Finished(secs(3)), Event::Started(secs(3))]
    );
    advance(secs(2)).await;
    b.panic("boom");
    assert!(matches!(carol.await.unwrap(), Err(Error::Panicked(_))));
    assert_eq!(recorder.take(), vec![Event::Panicked(secs(2))]);
}

#[tokio::test(start_paused = true)]
async fn queued_jobs_report_expiry_abandonment_and_close() {
    let (pool, recorder) = recorded_pool(1, 1);
    let (_a, a_job) = gated();
    let _alice = spawn_run(&pool, "a", "alice", a_job);
    let expiring = spawn_run(&pool, "b", "bob", never());
    settle().await;
    advance(WAIT).await;
    settle().await;
    assert!(matches!(
        expiring.await.unwrap(),
        Err(Error::Busy {
            cause: BusyCause::WaitExpired,
            ..
        })
    ));
    let abandoned = spawn_run(&pool, "c", "carol", never());
    settle().await;
    advance(secs(1)).await;
    abandoned.abort();
    settle().await;
    let closed = spawn_run(&pool, "d", "dave", never());
    settle().await;
    advance(secs(4)).await;
    pool.close();
    assert_eq!(closed.await.unwrap(), Err(Error::Closed));
    assert_eq!(pool.run("e", "erin", never()).await, Err(Error::Closed));
    let joined = pool.join("nothing").await;
    assert_eq!(joined, None, "a join of nothing is no event");
    assert_eq!(
        recorder.take(),
        vec![
            Event::Started(Duration::ZERO),
            Event::Queued,
            Event::Expired(WAIT),
            Event::Queued,
            Event::Abandoned(secs(1)),
            Event::Queued,
            Event::Abandoned(secs(4)),
            Event::Refused(Error::Closed),
        ]
    );
}

#[test]
fn a_job_whose_runtime_goes_away_is_reported_dropped() {
    let (pool, recorder) = recorded_pool(1, 0);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (_a, a_job) = gated();
    runtime.block_on(async {
        let _alice = spawn_run(&pool, "a", "alice", a_job);
        settle().await;
        advance(secs(7)).await;
    });
    drop(runtime);
    assert_eq!(
        recorder.take(),
        vec![Event::Started(Duration::ZERO), Event::Dropped(secs(7))]
    );
    assert_eq!(pool.running(), 0);
}

#[tokio::test(start_paused = true)]
async fn hooks_run_outside_the_lock_and_see_the_new_state() {
    let (pool, recorder) = recorded_pool(1, 1);
    recorder.pool.set(pool.clone()).ok().unwrap();
    let (mut a, a_job) = gated();
    let alice = spawn_run(&pool, "a", "alice", a_job);
    let bob = spawn_run(&pool, "b", "bob", never());
    settle().await;
    assert_eq!(pool.queued(), 1);
    bob.abort();
    settle().await;
    a.finish("a".into());
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
    // (running, queued) as each hook saw it: after its event, never blocked by the lock.
    assert_eq!(
        *recorder.counters.lock().unwrap(),
        vec![(1, 0), (1, 1), (1, 0), (0, 0)]
    );
}

/// Panics in every hook.
struct Exploding;

impl Hooks for Exploding {
    fn started(&self, _: Duration) {
        panic!("hook exploded");
    }
    fn finished(&self, _: Duration) {
        panic!("hook exploded");
    }
    fn refused(&self, _: &Error) {
        panic!("hook exploded");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_hook_changes_nothing() {
    let pool = TestPool::with_hooks(1, 0, WAIT, Exploding);
    let (mut a, a_job) = gated();
    let alice = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    assert!(matches!(
        pool.run("b", "bob", never()).await,
        Err(Error::Busy { .. })
    ));
    a.finish("a".into());
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
    assert_eq!((pool.running(), pool.queued()), (0, 0));
    assert_eq!(
        pool.run("c", "carol", || async { "c".to_owned() }).await,
        Ok("c".into())
    );
}
