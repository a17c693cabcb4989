//! loom: `Pool::join` racing the workers that finish the tasks it waits for, and a second
//! joiner. Whatever the interleaving, each join returns (no lost `done` notification) and
//! only after both accepted tasks ran; the pool stays open and then closes normally.

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering, thread};

#[test]
fn loom_join_returns_after_every_accepted_task_ran() {
    loom::model(|| {
        let pool = Arc::new(Pool::new(0, 2).unwrap());
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let ran = Arc::clone(&ran);
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let other = {
            let (pool, ran) = (Arc::clone(&pool), Arc::clone(&ran));
            thread::spawn(move || {
                pool.join().unwrap();
                ran.load(Ordering::SeqCst)
            })
        };
        pool.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(other.join().unwrap(), 2);
        assert!(!pool.shared().counters().closing);
        pool.close().unwrap();
    });
}
