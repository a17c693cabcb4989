//! loom: submits racing `close`. Whichever wins, no accepted task is lost, and `close`
//! returns only after every accepted task ran. The second submit may start a second worker
//! (spawn racing close) or find the first one idle.

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering, thread};

#[test]
fn loom_submit_racing_close_loses_nothing() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 2).submit_buffer(0).build().unwrap());
        let ran = Arc::new(AtomicUsize::new(0));
        let submitter = {
            let (pool, ran) = (Arc::clone(&pool), Arc::clone(&ran));
            thread::spawn(move || {
                (0..2)
                    .filter(|_| {
                        let ran = Arc::clone(&ran);
                        pool.submit(move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        })
                        .is_ok()
                    })
                    .count()
            })
        };
        pool.close().unwrap();
        // Read before joining the submitter: an accepted task must already have run.
        let ran_by_close = ran.load(Ordering::SeqCst);
        let accepted = submitter.join().unwrap();
        assert_eq!(ran_by_close, accepted);
        assert_eq!((pool.workers(), pool.queued(), pool.running()), (0, 0, 0));
    });
}
