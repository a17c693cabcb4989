//! loom: a new watcher misses no change (`watch.rs`, "No lost event").
//!
//! The model replays the handshake with loom primitives: the store is a mutex-guarded count
//! of stored targets, the watch table a mutex-guarded channel value (`None` until the
//! watcher registers), `watched` the table's size. A publisher (a worker storing a target):
//! change the store, then publish only if `watched` is not zero. A watcher: register (table
//! entry, then `watched`), read the store's summary, merge it in. Progress merges by "more
//! stored is newer", as `Progress::is_newer_than` does. However the two interleave, the
//! watcher's channel must end holding every stored target.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

#[derive(Default)]
struct Shared {
    /// Stored targets: the store.
    stored: Mutex<usize>,
    /// The watched job's channel value; `None` while nobody watches.
    channel: Mutex<Option<usize>>,
    /// Jobs in the table (`Watchers::watched`).
    watched: AtomicUsize,
}

impl Shared {
    /// `Watchers::publish`'s merge, under the table's lock.
    fn merge(&self, progress: usize) {
        if let Some(known) = self.channel.lock().unwrap().as_mut() {
            *known = (*known).max(progress);
        }
    }

    /// A worker stores a target, then publishes the store's answer.
    fn store_target(&self) {
        let progress = {
            let mut stored = self.stored.lock().unwrap();
            *stored += 1;
            *stored
        };
        if self.watched.load(Ordering::SeqCst) > 0 {
            self.merge(progress);
        }
    }

    /// `Runner::watch`: register, read the summary, merge it.
    fn watch(&self) {
        {
            let mut channel = self.channel.lock().unwrap();
            *channel = Some(0);
            self.watched.store(1, Ordering::SeqCst);
        }
        let summary = *self.stored.lock().unwrap();
        self.merge(summary);
    }
}

#[test]
fn loom_a_new_watcher_sees_every_stored_target() {
    loom::model(|| {
        let shared = Arc::new(Shared::default());
        let worker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                shared.store_target();
                shared.store_target();
            })
        };
        shared.watch();
        worker.join().unwrap();
        assert_eq!(*shared.channel.lock().unwrap(), Some(2));
    });
}
