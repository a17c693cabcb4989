//! The body of a worker thread: take the queue head, run it outside the lock, and after each
//! task count the finish and take the next one in one step of the lane (the finish entry
//! does it without the lock while nobody waits on finishes); with nothing left (and nothing
//! found by the search entry), decide under the lock whether to exit (rule 3) or go idle
//! (after the spin entry, if the spin policy allows one).

use super::fast::{self, Entry, Next};
use super::room::RoomWake;
use super::spawn::{Reap, Role, spawn_worker};
use super::{CURRENT_POOL, Ran, Shared, State, Task, spin};
use crate::sync::{Arc, MutexGuard, lock, wait, wait_timeout};

/// Runs one task, turning its panic into a log line (rule 4): the worker goes on. Returns
/// whether it panicked, caught here or by the task itself.
pub(crate) fn run_task(task: Task) -> Ran {
    let ran = lockgate_panicguard::catch(|| task.run()).unwrap_or_else(|panic| {
        tracing::error!(
            panic = panic.message(),
            "a pool task panicked; its worker goes on"
        );
        Ran::Panicked
    });
    #[cfg(all(test, not(loom)))]
    if DIE_AFTER_TASK.replace(false) {
        panic!("test hook: the worker dies outside its task");
    }
    ran
}

#[cfg(all(test, not(loom)))]
std::thread_local! {
    static DIE_AFTER_TASK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test hook, called from inside a task: the worker thread running it panics right after the
/// task, outside it (what a panicking `tracing` subscriber or a pool bug would do), so the
/// death path of rule 4 can be tested.
#[cfg(all(test, not(loom)))]
pub(crate) fn die_after_this_task() {
    DIE_AFTER_TASK.set(true);
}

/// The worker loop. Returns when the worker exits by the rules; unwinds only if something
/// outside a task panicked, and then [`DeathGuard`] repairs the counts.
pub(super) fn run(shared: Arc<Shared>, id: usize, role: Role) {
    CURRENT_POOL.with(|current| current.set(shared.id()));
    let mut guard = DeathGuard {
        shared: &shared,
        id,
        in_task: false,
        armed: true,
    };
    let min = shared.config.min;
    let mut state = lock(&shared.state);
    state.tallies.started += 1;
    if role == Role::Idle {
        let (next, exit) = idle_wait(&shared, state, Counted::Already);
        state = next;
        if exit {
            guard.armed = false;
            leave(&shared, state, id);
            return;
        }
    }
    loop {
        // Under the lock, with nothing to run: take the next task, or stop submits from
        // skipping the lock before this worker may go idle (lane invariant 3).
        if shared.lane.reserve_or_close_fast_submits() {
            shared.unlock_checked(state);
            state = run_reserved(&shared, &mut guard);
            continue;
        }
        if state.closing {
            break;
        }
        // Rule 3, checked whenever a worker finds nothing to do: after its task finished,
        // and also when the task it was started or woken for was taken first by a worker
        // that finished (else that spare worker would idle beyond the rule). It is not
        // counted idle yet, so `idle` is the *other* idle workers.
        if state.workers.spare(min) {
            break;
        }
        let (next, exit) = idle_wait(&shared, state, Counted::No);
        state = next;
        if exit {
            break;
        }
    }
    guard.armed = false;
    leave(&shared, state, id);
}

/// Runs the task this worker reserved, and the next ones as long as the finish and search
/// entries hand them over without the lock; returns under the lock once the queue was empty
/// or a finish had to be counted there (the locked finish).
fn run_reserved<'a>(shared: &'a Shared, guard: &mut DeathGuard<'_>) -> MutexGuard<'a, State> {
    loop {
        let task = shared.lane.pop();
        guard.in_task = true;
        let ran = run_task(task);
        guard.in_task = false;
        // Unit tests observe counters under the lock and expect the tally and the lane's
        // finish as one step (in real use `finished` may lead `running` for that moment).
        let observed = cfg!(all(test, not(loom))).then(|| lock(&shared.state));
        // Both paths tally first: whoever sees the task finished in the lane sees it tallied.
        shared.tally(ran);
        // The finish entry (`fast::finish`), beside the locked finish it stands in for.
        match fast::finish(shared) {
            Entry::Done(Next::Reserved) => {
                drop(observed);
                shared.changed_lock_free();
            }
            Entry::Done(Next::Empty) => {
                drop(observed);
                // The search entry (`fast::search`), before the locked step that would
                // reserve a task that arrived (`run`'s loop).
                match fast::search(shared) {
                    Entry::Done(()) => shared.changed_lock_free(),
                    Entry::FallBack(()) => return lock(&shared.state),
                }
            }
            Entry::FallBack(()) => {
                let mut state = observed.unwrap_or_else(|| lock(&shared.state));
                let room = shared.record_finish(&mut state);
                if room.is_some() {
                    // Woken with the lock released. Meanwhile this worker is between its
                    // finish and the lock, as after a lock-free finish that found nothing
                    // queued (counted in `starting`), and `run` looks at everything again.
                    shared.unlock_checked(state);
                    room.wake();
                    return lock(&shared.state);
                }
                return state;
            }
        }
    }
}

/// Waits as an idle worker until claimed, closing, or (with `keep_alive`) idle too long.
/// Returns the guard and whether to exit; on return the worker is no longer counted idle.
fn idle_wait<'a>(
    shared: &'a Shared,
    mut state: MutexGuard<'a, State>,
    counted: Counted,
) -> (MutexGuard<'a, State>, bool) {
    if counted == Counted::No {
        state.workers.idle += 1;
        shared.check(&state);
        shared.changed();
    }
    // The spin entry (`fast::spin_idle`), before the sleep on `work` below it stands in for:
    // a submitter that claims a spinning worker skips the notification (a syscall), which
    // dominates the cost of short tasks. Several spinners may see one token; the ones that
    // lose it under the lock spin on with what is left of their budget instead of all going
    // to sleep at once.
    let mut budget = spin::Budget::default();
    while state.workers.wakeups == 0 && !state.closing {
        match fast::spin_idle(shared, state, &mut budget) {
            Entry::Done(again) => state = again,
            Entry::FallBack(again) => {
                state = again;
                break;
            }
        }
    }
    let mut timed_out = false;
    loop {
        // A claim wins over closing and over the timeout: the claimer counted on us. A
        // spinner that ends its spin always passes here before sleeping, so no token it was
        // counted for is left behind.
        if state.workers.wakeups > 0 {
            shared.take_token(&mut state);
            return (state, false);
        }
        if state.closing {
            state.workers.idle -= 1;
            return (state, false);
        }
        if timed_out && state.workers.live > shared.config.min {
            state.workers.idle -= 1;
            return (state, true);
        }
        state.waits.sleeping.fall_asleep();
        match shared.config.keep_alive {
            None => state = wait(&shared.work, state),
            Some(keep_alive) => (state, timed_out) = wait_timeout(&shared.work, state, keep_alive),
        }
        state.waits.sleeping.woke();
    }
}

/// Whether a worker entering [`idle_wait`] is already counted in `idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Already,
    No,
}

/// Leaves the pool: uncounts the worker and marks its thread joinable.
fn leave(shared: &Shared, mut state: MutexGuard<'_, State>, id: usize) {
    state.workers.live -= 1;
    state.tallies.exited += 1;
    state.threads.exited(id);
    let last_out = state.closing && state.drained();
    shared.unlock_checked(state);
    if last_out {
        shared.done.notify_all();
    }
}

/// Repairs the counts if the worker loop unwinds (a panic outside a task, e.g. in a `tracing`
/// subscriber), and starts a replacement when tasks are queued (rule 4).
struct DeathGuard<'a> {
    shared: &'a Arc<Shared>,
    id: usize,
    /// The panic came from inside `run_task`: the task was consumed and counts as finished
    /// (as returned: had it panicked, its report is what failed, and it is not counted).
    in_task: bool,
    armed: bool,
}

impl Drop for DeathGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let shared = self.shared;
        let mut state = lock(&shared.state);
        let mut room = RoomWake::default();
        if self.in_task {
            shared.tally(Ran::Returned);
            room = shared.record_finish(&mut state);
        }
        state.tallies.died += 1;
        // One worker fewer: stop submits from skipping the lock before looking at the queue
        // (lane invariant 3), so no task accepted after the look is left without a worker.
        let queued = shared.lane.close_fast_submits().queued;
        let replacement = (queued > 0).then(|| state.reserve_worker());
        leave(shared, state, self.id);
        room.wake();
        tracing::error!(
            worker = self.id,
            replaced = replacement.is_some(),
            "a worker thread died outside a task"
        );
        if let Some(id) = replacement {
            spawn_worker(shared, id, Role::Pop, Reap::No);
        }
    }
}
