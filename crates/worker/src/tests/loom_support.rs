//! Shared steps of the loom models.

use crate::Pool;
use crate::sync::{Arc, Mutex, lock, thread};

/// Submits a task that logs 1 from this thread, then one that logs 2 from another thread
/// (so it races whatever the first task's worker does next), and returns the log once both
/// submits were accepted.
pub(crate) fn submit_one_then_two(pool: &Arc<Pool>) -> Arc<Mutex<Vec<u32>>> {
    let order = Arc::new(Mutex::new(Vec::new()));
    let first = Arc::clone(&order);
    pool.submit(move || lock(&first).push(1)).unwrap();
    let second = {
        let (pool, order) = (Arc::clone(pool), Arc::clone(&order));
        thread::spawn(move || pool.submit(move || lock(&order).push(2)).is_ok())
    };
    assert!(second.join().unwrap(), "the pool was not closing");
    order
}
