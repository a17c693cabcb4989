//! loom: two submits racing two idle workers that may spin or sleep (rule 1 and the `work`
//! notifications counted in `Sleepers`). Each task waits until the other has started, so the
//! model deadlocks unless both claims reach a worker: a notification skipped because a
//! sleeper was thought to be woken already, and then never sent, would leave the second task
//! queued beside a sleeping worker.

use crate::Pool;
use crate::sync::{Arc, Condvar, Mutex, lock, thread, wait};

#[test]
fn loom_two_claims_wake_two_workers() {
    loom::model(|| {
        let pool = Arc::new(Pool::new(2, 2).unwrap());
        // How many tasks have started; each waits until both have.
        let started = Arc::new((Mutex::new(0_usize), Condvar::new()));
        let task = |started: Arc<(Mutex<usize>, Condvar)>| {
            move || {
                let (count, both) = &*started;
                let mut count = lock(count);
                *count += 1;
                both.notify_all();
                while *count < 2 {
                    count = wait(both, count);
                }
            }
        };
        let other = {
            let (pool, started) = (Arc::clone(&pool), Arc::clone(&started));
            thread::spawn(move || pool.submit(task(started)).is_ok())
        };
        pool.submit(task(Arc::clone(&started))).unwrap();
        assert!(other.join().unwrap(), "the pool was not closing");
        pool.join().unwrap();
        assert_eq!(*lock(&started.0), 2);
        pool.close().unwrap();
    });
}
