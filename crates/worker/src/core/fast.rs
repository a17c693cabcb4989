//! The fast entries: the shortcuts beside the locked state machine ([`state`](super::state)).
//!
//! Each entry either makes exactly the transition the locked path would have made at that
//! moment, without the lock (or, for a spin, waits with the lock released and changes nothing
//! a rule reads), and returns [`Entry::Done`]; or it does nothing and returns
//! [`Entry::FallBack`], and the caller takes the locked path. Each is called from one place,
//! right before the locked path it stands in for, and says below why it is equivalent. No
//! rule lives here: an entry acts only in states the lock holder allows through the lane's
//! flags (`State::lane_flags`) or the spin policy (`spin::Policy`), and a rule changed in the
//! state machine needs only those conditions re-checked.
//!
//! | entry | stands in for | called from |
//! | --- | --- | --- |
//! | [`submit`] (`SUBMIT_FAST`) | a locked submit to a busy pool: count, push, nothing else | `Shared::submit` |
//! | [`finish`] (`FINISH_FAST`) | a worker's locked finish, and its next reservation | `worker::run_reserved` |
//! | [`search()`] | the reservation a worker going idle makes under the lock | `worker::run_reserved` |
//! | [`spin_idle`] | the start of an idle worker's sleep on `work` | `worker::idle_wait` |
//! | [`spin_for_room`] | the start of a full pool's submitter's sleep on `room` | `Shared::submit` |
//!
//! # The reference build
//!
//! Under `--cfg lockgate_reference` (a test-only build, the gate's `reference` step) every
//! entry falls back at once, so the pool runs on the locked state machine alone: no
//! lock-free submit, finish or search, and no spinning. The proptest model and the stress
//! tests pass in both builds, which is how the entries are shown to agree with the state
//! machine; the loom models of the entries run in the normal build.

use super::lane::Finished;
use super::spin::{self, Spinner};
use super::{Padded, Shared, State, Task, search};
use crate::sync::{AtomicUsize, MutexGuard, Ordering, lock};

/// Whether this is the reference build, in which every entry falls back.
const REFERENCE: bool = cfg!(lockgate_reference);

/// How a fast entry ended.
#[must_use]
pub(super) enum Entry<D, F = ()> {
    /// It made the transition the locked path would have made: the caller goes on from there.
    Done(D),
    /// It did nothing: the caller takes the locked path, with what the entry hands back.
    FallBack(F),
}

/// What the fast entries keep beside the lock, each on cache lines of its own: hints read and
/// updated without the lock, never decided on.
pub(super) struct Hints {
    /// [`spin::cpus`], read once.
    pub(super) cpus: usize,
    /// A copy of `Workers::wakeups`, written under the lock (`Shared::give_token`,
    /// `Shared::take_token`), watched by spinning idle workers without it.
    pub(super) tokens: Padded<AtomicUsize>,
    /// The search's own state (see [`search`](mod@search)).
    pub(super) search: Padded<search::Search>,
}

impl Hints {
    pub(super) fn new() -> Self {
        Self {
            cpus: spin::cpus(),
            tokens: Padded(AtomicUsize::new(0)),
            search: Padded(search::Search::new()),
        }
    }
}

/// A lock-free submit (`SUBMIT_FAST`): `FallBack` hands the task back.
///
/// Equivalent: the flag is set only while no worker is idle, the pool is at `max` and not
/// closing. A locked submit then finds `closing` false, accepts if `queued + running` is
/// below the limit, pushes, finds no idle worker to claim and no room to grow, and unlocks:
/// `queued + 1` and a push, nothing else. This entry checks the flag and the limit in the
/// compare-and-swap that raises `queued`, so it is ordered wholly before or after a critical
/// section that clears the flag (lane invariant 3), and pushes after it, as the FIFO allows
/// (lane invariant 2).
pub(super) fn submit(shared: &Shared, task: Task) -> Entry<(), Task> {
    if REFERENCE {
        return Entry::FallBack(task);
    }
    match shared.lane.accept_fast(task) {
        Ok(()) => Entry::Done(()),
        Err(task) => Entry::FallBack(task),
    }
}

/// After a finish counted without the lock: what the worker does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// The next queued task was reserved in the same step: pop it and run it.
    Reserved,
    /// Nothing was queued: search, then go to the lock to idle or exit.
    Empty,
}

/// A worker's lock-free finish (`FINISH_FAST`), taking the next queued task in the same step;
/// the caller has tallied the task (both paths tally first).
///
/// Equivalent: the locked finish (`Shared::record_finish`) lowers `running`, notifies `room`
/// when the finish is due to a blocked submitter (`Lane::room_due`), wakes the oldest
/// waiting async submitter, and ends a join round when a joiner waits and nothing is left;
/// then the worker reserves the next queued task if there is one. The flag is set only
/// while no joiner and no async submitter waits, and
/// with `ROOM_WANTED` set (a blocked submitter without a notification) this entry falls back
/// exactly when the finish is due: so the locked finish would have notified nobody, and what
/// is left is `running - 1`, or the reservation (`queued - 1`), which this entry makes in one
/// compare-and-swap that checks both flags.
pub(super) fn finish(shared: &Shared) -> Entry<Next> {
    if REFERENCE {
        return Entry::FallBack(());
    }
    match shared.lane.finish_fast() {
        Finished::Next => Entry::Done(Next::Reserved),
        Finished::Empty => Entry::Done(Next::Empty),
        Finished::Locked => Entry::FallBack(()),
    }
}

/// A worker whose queue ran dry looks for a task without the lock for a few microseconds
/// (see [`search`](mod@search)); `Done`: one was reserved, pop it.
///
/// Equivalent: without it the worker takes the lock, and there its first step reserves the
/// next queued task if one is there (`Lane::reserve_or_close_fast_submits`) and unlocks. A
/// searching worker is between states (counted in `starting`, as on its way to the lock), and
/// the search's reservation (`Lane::reserve`) is that same step taken earlier: it keeps the
/// unfinished sum, so it needs no flag, and nothing else of the state changes.
pub(super) fn search(shared: &Shared) -> Entry<()> {
    if REFERENCE {
        return Entry::FallBack(());
    }
    if shared.hints.search.find(&shared.lane, shared.hints.cpus) {
        Entry::Done(())
    } else {
        Entry::FallBack(())
    }
}

/// The guard of the pool's lock.
type Guard<'a> = MutexGuard<'a, State>;

/// An idle worker spins once, with the lock released, watching for a claim, if the spin
/// policy allows: `Done` (under the lock again) means it spun, so look again and maybe spin
/// on; `FallBack` means it did not, so sleep.
///
/// Equivalent: a condvar wait may return at any time with nothing to show, so the locked
/// path already looks at everything again after a wait; a spin is such a wait, with the lock
/// released and no syscall. It changes nothing a rule reads but `Waits::spinning`, and puts
/// that back. The one rule that reads it, a submit's notification, skips the notification
/// for a token a spinner covers: safe because a spinner always passes the locked check for
/// a token before it sleeps.
pub(super) fn spin_idle<'a>(
    shared: &'a Shared,
    mut state: Guard<'a>,
    budget: &mut spin::Budget,
) -> Entry<Guard<'a>, Guard<'a>> {
    if REFERENCE || !budget.left() {
        return Entry::FallBack(state);
    }
    let (spinning, running) = (state.waits.spinning, shared.lane.counts().running);
    let Some(plan) = state.spin.plan(
        budget,
        Spinner::Worker,
        spinning,
        running,
        shared.hints.cpus,
    ) else {
        return Entry::FallBack(state);
    };
    state.waits.spinning += 1;
    drop(state);
    let outcome = spin::spin(budget, plan, || {
        shared.hints.tokens.load(Ordering::Acquire) > 0
    });
    let mut state = lock(&shared.state);
    state.waits.spinning -= 1;
    state.spin.ended(Spinner::Worker, outcome);
    Entry::Done(state)
}

/// A submitter that found the pool full spins once, with the lock released, watching a
/// batch of tasks finish, if the spin policy allows: `Done` (under the lock again) means it
/// spun, so look for room again; `FallBack` means it did not, so block.
///
/// Equivalent: as for [`spin_idle`], a spin is a wait after which the locked path looks at
/// everything again; this one changes nothing a rule reads (a spinning submitter is not
/// `blocked`, so no finish owes it a notification, and it needs none: it is awake).
pub(super) fn spin_for_room<'a>(
    shared: &'a Shared,
    mut state: Guard<'a>,
    budget: &mut spin::Budget,
) -> Entry<Guard<'a>, Guard<'a>> {
    if REFERENCE || !budget.left() {
        return Entry::FallBack(state);
    }
    let (spinning, running) = (state.waits.spinning, shared.lane.counts().running);
    let Some(plan) = state.spin.plan(
        budget,
        Spinner::Submitter,
        spinning,
        running,
        shared.hints.cpus,
    ) else {
        return Entry::FallBack(state);
    };
    let finished = shared.tallies.finished.load(Ordering::Acquire);
    drop(state);
    let batch = shared.lane.room_batch();
    let outcome = spin::spin(budget, plan, || {
        shared
            .tallies
            .finished
            .load(Ordering::Acquire)
            .wrapping_sub(finished)
            >= batch
    });
    let mut state = lock(&shared.state);
    state.spin.ended(Spinner::Submitter, outcome);
    Entry::Done(state)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Entry, REFERENCE, submit};
    use crate::Pool;
    use crate::tests::support::{Gates, settle};

    /// The cfg reaches the entries: on a pool busy at `max` the submit entry accepts in the
    /// normal build and falls back, changing nothing, in the reference build.
    #[test]
    fn the_submit_entry_acts_on_a_busy_pool_except_in_the_reference_build() {
        let pool = Pool::new(1, 1).unwrap();
        let gates = Gates::default();
        pool.submit(gates.task(0)).unwrap();
        gates.wait_started(1);
        settle(&pool, 0);
        let accepted = match submit(pool.shared(), Box::new(gates.task(1))) {
            Entry::Done(()) => true,
            Entry::FallBack(_) => {
                gates.forget(1);
                false
            }
        };
        assert_eq!(
            accepted, !REFERENCE,
            "the entry acted (reference build: {REFERENCE})"
        );
        let queued = usize::from(accepted);
        assert_eq!(pool.shared().counters().queued, queued);
        gates.release_all();
        pool.close().unwrap();
        assert_eq!(pool.completed(), 1 + queued as u64);
    }
}
