//! loom: a panicking task beside a normal one. The panic is caught, both count as finished,
//! the panic is counted once, no worker is lost to it, and `close` drains normally.

use std::sync::Once;

use crate::Pool;
use crate::sync::{Arc, AtomicUsize, Ordering};

const MODELLED: &str = "modelled panic";

/// Keeps the panic hook from printing the modelled panic once per explored interleaving.
fn quiet_modelled_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&MODELLED) {
                default(info);
            }
        }));
    });
}

#[test]
fn loom_panicking_task_beside_a_normal_one() {
    quiet_modelled_panics();
    loom::model(|| {
        let pool = Pool::new(0, 2).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        pool.submit(|| std::panic::panic_any(MODELLED)).unwrap();
        let counted = Arc::clone(&ran);
        pool.submit(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        pool.close().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(pool.completed(), 2);
        assert_eq!((pool.workers(), pool.running()), (0, 0));
        let counts = pool.shared().counters();
        assert_eq!(
            counts.panicked, 1,
            "the one panic is counted, whichever worker ran it"
        );
        assert_eq!(counts.threads_exited, counts.threads_started);
    });
}
