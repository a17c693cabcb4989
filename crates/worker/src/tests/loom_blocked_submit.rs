//! loom: a `submit` that finds the pool full blocks, and a finishing task wakes it (rule 2).
//! `max = 1`, `submit_buffer = 0`: one unfinished task at a time, so the second submit must
//! wait for the first task; whatever the interleaving it is neither lost nor stuck, and the
//! tasks run in accept order.

use super::loom_support::submit_one_then_two;
use crate::Pool;
use crate::sync::{Arc, lock};

#[test]
fn loom_blocked_submit_is_woken_by_a_finishing_task() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 1).submit_buffer(0).build().unwrap());
        let order = submit_one_then_two(&pool);
        pool.close().unwrap();
        assert_eq!(*lock(&order), vec![1, 2]);
    });
}
