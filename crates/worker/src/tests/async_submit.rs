//! `submit_async` / `spawn_async`: waiting for room without blocking, the waker protocol of
//! `core/room.rs` (register then look again, every finish wakes the oldest waiter, a
//! dropped waiter removes its waker and passes on a wake it got), and random cancellation.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::support::{Gates, settle};
use crate::Pool;

/// A waker that records whether it was woken since the last [`Flag::take`], and tells
/// [`Wakes`] so a test can wait for any wake-up without sleeping.
struct Flag {
    woken: AtomicBool,
    wakes: Arc<Wakes>,
}

#[derive(Default)]
struct Wakes {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Wakes {
    fn count(&self) -> u64 {
        *self.count.lock().unwrap()
    }

    /// Waits until more than `seen` wake-ups happened; panics after 30 s (a lost wake-up).
    fn wait_past(&self, seen: u64) -> u64 {
        self.wait_past_in(seen, None)
    }

    fn wait_past_in(&self, seen: u64, pool: Option<&Pool>) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut count = self.count.lock().unwrap();
        while *count <= seen {
            let now = Instant::now();
            assert!(
                now < deadline,
                "no wake-up came: one was lost: {:?}",
                pool.map(|pool| pool.shared().counters())
            );
            count = self.changed.wait_timeout(count, deadline - now).unwrap().0;
        }
        *count
    }
}

impl Flag {
    fn new(wakes: &Arc<Wakes>) -> Arc<Self> {
        Arc::new(Self {
            woken: AtomicBool::new(false),
            wakes: Arc::clone(wakes),
        })
    }

    fn take(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        *self.wakes.count.lock().unwrap() += 1;
        self.wakes.changed.notify_all();
    }
}

fn poll_with<F: Future + Unpin>(future: &mut F, flag: &Arc<Flag>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::clone(flag));
    Pin::new(future).poll(&mut Context::from_waker(&waker))
}

/// A pool of one worker and no waiting place, busy with gated task 0.
fn full_pool(gates: &Gates) -> Pool {
    let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
    pool.submit(gates.task(0)).unwrap();
    settle(&pool, 0);
    pool
}

#[test]
fn the_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let pool = Pool::new(0, 1).unwrap();
    send(&pool.submit_async(|| ()));
    send(&pool.spawn_async(|| 1));
}

#[test]
fn a_waiting_submit_is_woken_by_a_finish_and_then_accepted() {
    let gates = Gates::default();
    let pool = full_pool(&gates);
    let wakes = Arc::new(Wakes::default());
    let flag = Flag::new(&wakes);
    let mut submit = pool.submit_async(gates.task(1));
    assert!(poll_with(&mut submit, &flag).is_pending());
    assert!(poll_with(&mut submit, &flag).is_pending(), "polled again");
    assert_eq!(
        pool.shared().counters().room_wakers,
        1,
        "one waker, kept once"
    );
    gates.release(0);
    wakes.wait_past(0);
    assert!(flag.take());
    assert!(matches!(poll_with(&mut submit, &flag), Poll::Ready(Ok(()))));
    assert_eq!(gates.wait_started(2), vec![0, 1]);
    assert_eq!(pool.shared().counters().room_wakers, 0);
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(pool.completed(), 2);
}

#[test]
fn a_dropped_waiting_submit_accepts_nothing_and_leaves_no_waker() {
    let gates = Gates::default();
    let pool = full_pool(&gates);
    let marker = Arc::new(());
    let mut submit = pool.submit_async({
        let marker = Arc::clone(&marker);
        move || drop(marker)
    });
    let flag = Flag::new(&Arc::default());
    assert!(poll_with(&mut submit, &flag).is_pending());
    drop(submit);
    assert_eq!(Arc::strong_count(&marker), 1, "the task was dropped unrun");
    let counters = pool.shared().counters();
    assert_eq!((counters.room_wakers, counters.queued), (0, 0));
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(pool.completed(), 1);
}

#[test]
fn a_finish_wakes_the_oldest_waiter_and_a_dropped_woken_one_passes_the_wake_on() {
    let gates = Gates::default();
    let pool = full_pool(&gates);
    let wakes = Arc::new(Wakes::default());
    let (first, second) = (Flag::new(&wakes), Flag::new(&wakes));
    let mut oldest = pool.submit_async(|| ());
    let mut next = pool.spawn_async(|| 2);
    assert!(poll_with(&mut oldest, &first).is_pending());
    assert!(poll_with(&mut next, &second).is_pending());
    gates.release(0);
    let seen = wakes.wait_past(0);
    assert!(first.take(), "the oldest waiter is woken first");
    assert!(!second.take());
    settle(&pool, 1);
    assert_eq!(wakes.count(), seen, "one finish, one wake-up");
    // Cancelled after its wake-up and before it took the room: the wake goes on.
    drop(oldest);
    wakes.wait_past(seen);
    assert!(second.take());
    let Poll::Ready(Ok(handle)) = poll_with(&mut next, &second) else {
        panic!("the room was there for the next waiter");
    };
    assert_eq!(handle.join().unwrap(), 2);
    pool.close().unwrap();
    assert_eq!(pool.completed(), 2);
}

#[test]
fn a_woken_waiter_that_finds_the_room_taken_waits_again_in_its_old_place() {
    let gates = Gates::default();
    let pool = full_pool(&gates);
    let wakes = Arc::new(Wakes::default());
    let (first, second) = (Flag::new(&wakes), Flag::new(&wakes));
    let mut oldest = pool.submit_async(gates.task(2));
    let mut next = pool.submit_async(gates.task(3));
    assert!(poll_with(&mut oldest, &first).is_pending());
    assert!(poll_with(&mut next, &second).is_pending());
    gates.release(0);
    let seen = wakes.wait_past(0);
    assert!(first.take());
    // A thread's submit takes the room before the woken waiter is polled.
    pool.try_submit(gates.task(1)).unwrap();
    assert!(
        poll_with(&mut oldest, &first).is_pending(),
        "the room was taken"
    );
    gates.release(1);
    wakes.wait_past(seen);
    assert!(first.take(), "still the oldest: woken first again");
    assert!(!second.take());
    assert!(matches!(
        poll_with(&mut oldest, &first),
        Poll::Ready(Ok(()))
    ));
    gates.release(2);
    wakes.wait_past(seen + 1);
    assert!(second.take());
    assert!(matches!(poll_with(&mut next, &second), Poll::Ready(Ok(()))));
    gates.release_all();
    pool.close().unwrap();
    assert_eq!(gates.wait_started(4), vec![0, 1, 2, 3]);
}

#[test]
fn close_hands_the_task_back_to_a_waiting_submit() {
    let gates = Gates::default();
    let pool = Arc::new(full_pool(&gates));
    let wakes = Arc::new(Wakes::default());
    let flag = Flag::new(&wakes);
    let mut spawn = pool.spawn_async(|| 5);
    assert!(poll_with(&mut spawn, &flag).is_pending());
    let closer = {
        let pool = Arc::clone(&pool);
        std::thread::spawn(move || pool.close())
    };
    wakes.wait_past(0);
    let Poll::Ready(Err(closed)) = poll_with(&mut spawn, &flag) else {
        panic!("closing refuses the waiting spawn");
    };
    assert_eq!((closed.into_inner())(), 5);
    gates.release_all();
    closer.join().unwrap().unwrap();
    assert_eq!(pool.completed(), 1);
    let mut late = pool.submit_async(|| ());
    assert!(matches!(poll_with(&mut late, &flag), Poll::Ready(Err(_))));
}

#[test]
#[should_panic(expected = "polled after it completed")]
fn polling_after_completion_panics() {
    let pool = Pool::new(1, 1).unwrap();
    let flag = Flag::new(&Arc::default());
    let mut submit = pool.submit_async(|| ());
    assert!(poll_with(&mut submit, &flag).is_ready());
    let _ = poll_with(&mut submit, &flag);
}

/// A small deterministic generator (xorshift64*), so a failing seed can be rerun.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// One live async submit of the random test.
struct Live<'a, F> {
    id: usize,
    future: crate::SubmitAsync<'a, F>,
    flag: Arc<Flag>,
    polled: bool,
}

impl<F: FnOnce() + Send + 'static> Live<'_, F> {
    /// Polls it; `true` when it completed (accepted: the pool is not closing).
    fn poll(&mut self, accepted: &mut [bool]) -> bool {
        self.polled = true;
        self.flag.take();
        match poll_with(&mut self.future, &self.flag) {
            Poll::Ready(result) => {
                assert!(result.is_ok(), "the pool is not closing");
                accepted[self.id] = true;
                true
            }
            Poll::Pending => false,
        }
    }
}

/// Many async submits into a small busy pool, polled, re-polled and dropped at random
/// points (before their first poll, while waiting, after a wake-up they did not act on).
/// The tasks hold their worker until the test opens the door past them, so the pool fills
/// whatever the threads' relative speed (a sanitizer slows the test's thread more than the
/// tasks' spins) and submits wait; now and then the test opens the door and waits for a
/// wake-up, so both cancelled and accepted waiters are many. Then every live one is driven to the end by its wake-ups alone (a lost wake-up fails
/// the test after 30 s). Every accepted task ran exactly once, and no task of a dropped
/// future ran.
fn random_cancellation(seed: u64, tasks: usize) {
    const LIVE: usize = 8;
    let pool = Pool::builder(1, 3).submit_buffer(2).build().unwrap();
    let ran: Arc<Vec<AtomicUsize>> = Arc::new((0..tasks).map(|_| AtomicUsize::new(0)).collect());
    let wakes = Arc::new(Wakes::default());
    let mut rng = Rng(seed);
    let mut accepted = vec![false; tasks];
    let mut live = Vec::new();
    let mut next = 0;
    // Tasks with an id below the door may finish.
    let door = Arc::new(AtomicUsize::new(0));
    while next < tasks {
        let action = rng.below(10);
        if live.is_empty() || (live.len() < LIVE && action < 4) {
            let id = next;
            next += 1;
            let (ran, door) = (Arc::clone(&ran), Arc::clone(&door));
            let spins = rng.below(200);
            let future = pool.submit_async(move || {
                while door.load(Ordering::Acquire) <= id {
                    std::thread::yield_now();
                }
                for _ in 0..spins {
                    std::hint::spin_loop();
                }
                ran[id].fetch_add(1, Ordering::Relaxed);
            });
            let mut new = Live {
                id,
                future,
                flag: Flag::new(&wakes),
                polled: false,
            };
            // Some are not polled yet: they may be dropped before their first poll.
            if action < 2 || !new.poll(&mut accepted) {
                live.push(new);
            }
        } else if action == 9 {
            // Let the workers make some room: wait for a wake-up, which must come while
            // every live future waits, polled and not woken (a woken one may hold the room
            // it was woken for until it is polled or dropped). Counted before looking at
            // the flags: a wake-up after the count shows in it, one before it in its flag.
            door.store(next, Ordering::Release);
            let seen = wakes.count();
            let waiting = live
                .iter()
                .all(|l| l.polled && !l.flag.woken.load(Ordering::Acquire));
            if waiting {
                wakes.wait_past_in(seen, Some(&pool));
            }
        } else if action < 6 {
            // Dropped wherever it is: unpolled, waiting, or woken and not polled since.
            let dropped = live.swap_remove(rng.below(live.len()));
            assert!(!accepted[dropped.id]);
        } else {
            // Polled, woken or not (a poll without a wake-up must change nothing).
            let at = rng.below(live.len());
            if live[at].poll(&mut accepted) {
                live.swap_remove(at);
            }
        }
    }
    // The end: every task may finish; poll only what was woken (or never polled), and
    // otherwise wait for a wake-up, which must come while any future waits.
    door.store(usize::MAX, Ordering::Release);
    while !live.is_empty() {
        let seen = wakes.count();
        let before = live.len();
        let mut at = 0;
        while at < live.len() {
            let due = !live[at].polled || live[at].flag.woken.load(Ordering::Acquire);
            if due && live[at].poll(&mut accepted) {
                live.swap_remove(at);
            } else {
                at += 1;
            }
        }
        if live.len() == before {
            wakes.wait_past_in(seen, Some(&pool));
        }
    }
    pool.close().unwrap();
    let mut count = 0;
    for (id, ran) in ran.iter().enumerate() {
        let ran = ran.load(Ordering::Relaxed);
        assert_eq!(ran, usize::from(accepted[id]), "task {id} (seed {seed})");
        count += ran;
    }
    assert_eq!(pool.completed(), count as u64);
    assert!(
        count > 0 && count < tasks,
        "both outcomes happened: {count}"
    );
    assert!(wakes.count() > 0, "some waited and were woken");
}

#[test]
fn random_cancellation_accepts_nothing_for_a_dropped_future_and_runs_every_accepted_task() {
    // Miri runs the lib's tests too (the gate's `miri` step): one short sequence there.
    if cfg!(miri) {
        random_cancellation(42, 150);
        return;
    }
    for seed in [1, 0x9e37_79b9_7f4a_7c15, 42, 7, 1234, 99, 31337, 5] {
        random_cancellation(seed, 1500);
    }
}
