//! loom: the lane's hand-offs (`core/lane.rs`, invariant 3). A pool of one worker, busy with
//! its first task, so the second submit may take the lock-free path (`SUBMIT_FAST`) while
//! that worker finishes, searches, and goes idle. Whatever the interleaving, the second task
//! runs without `close` having to find it: `join` would otherwise wait forever beside a
//! sleeping worker (a deadlock loom reports), and both tasks start in submit order.

use super::loom_support::submit_one_then_two;
use crate::Pool;
use crate::sync::{Arc, lock, thread};

#[test]
fn loom_fast_submit_racing_a_worker_going_idle() {
    loom::model(|| {
        let pool = Arc::new(Pool::new(1, 1).unwrap());
        let order = submit_one_then_two(&pool);
        pool.join().unwrap();
        assert_eq!(*lock(&order), vec![1, 2]);
        pool.close().unwrap();
    });
}

/// A submitter blocked on the full pool of one (no waiting place) racing the worker's
/// lock-free finish: it sets `ROOM_WANTED` before its last look at the counts, so either
/// it sees the room or the finish comes through the lock and wakes it.
#[test]
fn loom_blocked_submit_racing_a_lock_free_finish() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
        // Busy the worker so the next finish may take the lock-free path.
        pool.submit(|| ()).unwrap();
        let (a, b) = (Arc::clone(&pool), Arc::clone(&pool));
        let one = thread::spawn(move || a.submit(|| ()).is_ok());
        assert!(b.submit(|| ()).is_ok());
        assert!(one.join().unwrap());
        pool.join().unwrap();
        assert_eq!(pool.completed(), 3);
        pool.close().unwrap();
    });
}
