//! loom: a `submit` that finds the pool full blocks, and a finishing task wakes it (rule 2).
//! `max = 1`, `submit_buffer = 0`: one unfinished task at a time, so the second submit must
//! wait for the first task; whatever the interleaving it is neither lost nor stuck, and the
//! tasks run in accept order.

use crate::Pool;
use crate::sync::{Arc, Mutex, lock, thread};

#[test]
fn loom_blocked_submit_is_woken_by_a_finishing_task() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = Arc::clone(&order);
        pool.submit(move || lock(&first).push(1)).unwrap();
        let second = {
            let (pool, order) = (Arc::clone(&pool), Arc::clone(&order));
            thread::spawn(move || pool.submit(move || lock(&order).push(2)).is_ok())
        };
        assert!(second.join().unwrap(), "the pool was not closing");
        pool.close().unwrap();
        assert_eq!(*lock(&order), vec![1, 2]);
    });
}
