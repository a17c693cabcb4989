//! loom: the workers' sleep protocol loses no wake-up (`worker/mod.rs`, `Idle`).
//!
//! The model replays the protocol with loom primitives: the store is a mutex-guarded work
//! count, `Notify` is a mutex-guarded "registered / notified" pair with a condvar (tokio's
//! `notify_waiters` wakes only registered waiters and stores no permit, so the model does the
//! same). A worker: claim; on nothing, count in as idle, register, claim again, then block
//! until notified. A waker: add work to the store, then notify only if a worker is idle. A
//! lost wake-up would leave the worker blocked forever, which loom reports as a deadlock.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

#[derive(Default)]
struct Waiter {
    registered: bool,
    notified: bool,
}

#[derive(Default)]
struct Shared {
    work: Mutex<usize>,
    idle: AtomicUsize,
    waiter: Mutex<Waiter>,
    wake: Condvar,
}

impl Shared {
    fn claim(&self) -> bool {
        let mut work = self.work.lock().unwrap();
        if *work > 0 {
            *work -= 1;
            true
        } else {
            false
        }
    }

    /// `Runner::submit` / a finished target: change the store, then `wake_idle`.
    fn add_work(&self) {
        *self.work.lock().unwrap() += 1;
        if self.idle.load(Ordering::SeqCst) > 0 {
            let mut waiter = self.waiter.lock().unwrap();
            if waiter.registered {
                waiter.notified = true;
                self.wake.notify_all();
            }
        }
    }

    /// One worker taking `jobs` pieces of work, sleeping between them as `worker::run` does.
    fn work(&self, jobs: usize) {
        let mut taken = 0;
        while taken < jobs {
            if self.claim() {
                taken += 1;
                continue;
            }
            self.idle.fetch_add(1, Ordering::SeqCst);
            *self.waiter.lock().unwrap() = Waiter {
                registered: true,
                notified: false,
            };
            if self.claim() {
                self.idle.fetch_sub(1, Ordering::SeqCst);
                self.waiter.lock().unwrap().registered = false;
                taken += 1;
                continue;
            }
            let mut waiter = self.waiter.lock().unwrap();
            while !waiter.notified {
                waiter = self.wake.wait(waiter).unwrap();
            }
            waiter.registered = false;
            drop(waiter);
            self.idle.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn loom_idle_worker_is_always_woken() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        let worker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || shared.work(2))
        };
        shared.add_work();
        shared.add_work();
        worker.join().unwrap();
        assert_eq!(*shared.work.lock().unwrap(), 0);
    });
}

#[test]
fn loom_two_wakers_one_worker() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let shared = Arc::new(Shared::default());
        let worker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || shared.work(2))
        };
        let waker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || shared.add_work())
        };
        shared.add_work();
        waker.join().unwrap();
        worker.join().unwrap();
    });
}
