//! loom: `try_submit` at the capacity edge (rule 2). `max = 1`, `submit_buffer = 1`: one
//! task running plus one waiting place. With the worker held busy, two racing `try_submit`s
//! get exactly one acceptance and one `Full`, and the accepted one runs before `close`
//! returns.

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Condvar, Mutex, Ordering, lock, thread, wait};

#[test]
fn loom_try_submit_at_the_capacity_edge() {
    loom::model(|| {
        let pool = Arc::new(Pool::builder(1, 1).submit_buffer(1).build().unwrap());
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let ran = Arc::new(AtomicUsize::new(0));
        let held = Arc::clone(&gate);
        pool.submit(move || {
            let mut open = lock(&held.0);
            while !*open {
                open = wait(&held.1, open);
            }
        })
        .unwrap();
        let try_one = |pool: &Pool, ran: &Arc<AtomicUsize>| {
            let ran = Arc::clone(ran);
            match pool.try_submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }) {
                Ok(()) => 1,
                Err(err) => {
                    assert!(err.is_full(), "the pool is not closing");
                    0
                }
            }
        };
        let racer = {
            let (pool, ran) = (Arc::clone(&pool), Arc::clone(&ran));
            thread::spawn(move || try_one(&pool, &ran))
        };
        let accepted = try_one(&pool, &ran) + racer.join().unwrap();
        assert_eq!(accepted, 1);
        *lock(&gate.0) = true;
        gate.1.notify_all();
        pool.close().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}
