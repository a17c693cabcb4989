//! loom: two workers under the exit policy (rule 3). With `min = 0`, whatever the
//! interleaving, once both tasks are done exactly one worker is left, idle: the first to
//! finish saw no other idle worker and stayed, the second saw it and left.

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering};

#[test]
fn loom_two_workers_settle_to_one_idle() {
    loom::model(|| {
        let pool = Pool::new(0, 2).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let ran = Arc::clone(&ran);
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        let settled = pool.shared().wait_until("both done", |c| {
            c.finished == 2 && c.running == 0 && c.quiescent()
        });
        assert_eq!((settled.workers, settled.idle), (1, 1));
        pool.close().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    });
}
