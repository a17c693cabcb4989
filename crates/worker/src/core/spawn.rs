//! Starting worker threads and joining the ones that left.
//!
//! A worker is reserved (counted in `workers` and `spawning`, with a slot in `threads`) under
//! the lock by whoever decided it is needed; the OS thread is created here, outside the lock,
//! and the outcome recorded under the lock again. Exited workers' threads are joined on the
//! next spawn and by `close`, so no more than a few finished threads wait to be joined.

use super::{Shared, join_all, worker};
use crate::sync::{Arc, lock, thread};

/// Whether a spawn may also join exited workers. A dying worker must not: its own slot is
/// already marked exited, and a thread cannot join itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reap {
    Yes,
    No,
}

/// What a new worker does first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// One of the `min` workers: counted idle from its reservation, so a submit can claim
    /// it before its thread runs, and it starts by waiting.
    Idle,
    /// Started for a queued task (rule 1) or to replace a dead worker: it starts by popping.
    Pop,
}

/// Starts the reserved worker `id`. If the OS refuses the thread, logs it, un-reserves the
/// worker and leaves the queue as it is (rule 1): a later submit, a finishing worker, or
/// `close` takes the tasks.
pub(super) fn spawn_worker(shared: &Arc<Shared>, id: usize, role: Role, reap: Reap) {
    let result = os_spawn(shared, id, role);
    let mut state = lock(&shared.state);
    let refused = match result {
        Ok(handle) => {
            state.threads.spawned(id, handle);
            None
        }
        Err(error) => {
            state.threads.refused(id);
            state.workers.live -= 1;
            state.tallies.refused += 1;
            if role == Role::Idle {
                // It was counted idle; if a submitter already claimed it, the claim lapses
                // and the claimed task stays queued like any other (rule 1).
                if state.workers.idle > 0 {
                    state.workers.idle -= 1;
                } else {
                    shared.take_token(&mut state);
                }
            }
            Some(error)
        }
    };
    let reaped = match reap {
        Reap::Yes => state.threads.take_exited(),
        Reap::No => Vec::new(),
    };
    // Counted until joined: `close` must not return while a thread it can no longer see
    // in `threads` is still finishing.
    let joining = !reaped.is_empty();
    if joining {
        state.threads.joining += 1;
    }
    let last_out = state.closing && state.drained();
    let (workers, queued) = (state.workers.live, shared.lane.counts().queued);
    shared.unlock_checked(state);
    if let Some(error) = refused {
        tracing::error!(%error, workers, queued, "could not start a worker thread; its task stays queued");
    }
    if last_out {
        shared.done.notify_all();
    }
    if joining {
        join_all(reaped);
        let mut state = lock(&shared.state);
        state.threads.joining -= 1;
        let closing = state.closing;
        drop(state);
        if closing {
            shared.done.notify_all();
        }
    }
}

/// Creates the OS thread for worker `id`.
fn os_spawn(
    shared: &Arc<Shared>,
    id: usize,
    role: Role,
) -> std::io::Result<thread::JoinHandle<()>> {
    #[cfg(test)]
    {
        use crate::sync::Ordering;
        let refuse = shared
            .refuse_spawns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refuse {
            return Err(std::io::Error::other("thread spawn refused by a test"));
        }
    }
    let for_worker = Arc::clone(shared);
    thread::Builder::new()
        .name(format!("{}-{id}", shared.config.thread_name))
        .spawn(move || worker::run(for_worker, id, role))
}
