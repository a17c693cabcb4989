//! Test scaffolding: gated tasks the test finishes one by one, and a start log.
//!
//! Plain std primitives are fine here: this file is never part of a loom model.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use crate::Pool;
use crate::core::Counters;

/// Hands out tasks that record their start and then block until released.
#[derive(Default)]
pub(crate) struct Gates {
    started: Arc<(Mutex<Vec<usize>>, Condvar)>,
    releases: Mutex<BTreeMap<usize, mpsc::Sender<()>>>,
}

impl Gates {
    /// A task with id `id`: logs its start, then waits for [`Gates::release`].
    pub(crate) fn task(&self, id: usize) -> impl FnOnce() + Send + 'static {
        let (release, gate) = mpsc::channel::<()>();
        self.releases.lock().unwrap().insert(id, release);
        let started = Arc::clone(&self.started);
        move || {
            started.0.lock().unwrap().push(id);
            started.1.notify_all();
            // A dropped sender also releases: a test that gives up never hangs a worker.
            let _ = gate.recv();
        }
    }

    /// Forgets task `id` (it was rejected and never runs).
    pub(crate) fn forget(&self, id: usize) {
        self.releases.lock().unwrap().remove(&id);
    }

    /// Lets task `id` finish.
    pub(crate) fn release(&self, id: usize) {
        let release = self.releases.lock().unwrap().remove(&id);
        release
            .expect("task released twice or never made")
            .send(())
            .ok();
    }

    /// Lets every task made so far finish, started or not.
    pub(crate) fn release_all(&self) {
        for (_, release) in std::mem::take(&mut *self.releases.lock().unwrap()) {
            release.send(()).ok();
        }
    }

    /// Waits until `n` tasks have started; returns the start log.
    pub(crate) fn wait_started(&self, n: usize) -> Vec<usize> {
        let (log, changed) = &*self.started;
        let log = changed
            .wait_while(log.lock().unwrap(), |log| log.len() < n)
            .unwrap();
        assert_eq!(log.len(), n, "more tasks started than expected: {log:?}");
        log.clone()
    }
}

/// Waits until the pool is quiescent with `finished` tasks done.
pub(crate) fn settle(pool: &Pool, finished: u64) -> Counters {
    pool.shared()
        .wait_until("quiescent", |c| c.quiescent() && c.finished == finished)
}

/// Submits `task` from a new thread and waits until that submit blocks on the full pool;
/// the thread's result is whether the submit was accepted.
pub(crate) fn submit_from_a_blocked_thread(
    pool: &Arc<Pool>,
    task: impl FnOnce() + Send + 'static,
) -> std::thread::JoinHandle<bool> {
    let submitter = {
        let pool = Arc::clone(pool);
        std::thread::spawn(move || pool.submit(task).is_ok())
    };
    pool.shared()
        .wait_until("a submitter blocks", |c| c.blocked_submitters > 0);
    submitter
}
