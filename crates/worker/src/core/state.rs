//! The locked state machine: [`State`], everything the pool's one lock guards, in named
//! parts, each with the invariants it carries. Every rule of the pool is decided under this
//! lock, on this state and the lane's counts read under it. The fast entries
//! ([`fast`](super::fast)) decide nothing of their own: each one makes a transition this
//! state machine would have made at that moment, or does nothing and falls back to it.
//!
//! # States of a worker
//!
//! ```text
//!   reserved by a submit (workers += 1)      one of `min`, reserved at build
//!                 │                          (workers += 1, idle += 1)
//!                 ▼                                      │
//!             Starting ── takes the queue head ─┐        │
//!                 │ queue empty                 ▼        │
//!                 │              ┌──────────► Running    │
//!                 │              │ take          │ task done (one step of the lane)
//!                 ▼              │               ▼        │
//!        exit check ◄── queue empty ◄── queue non-empty? ─┘ (yes: take the next one)
//!          │ workers > min and idle > min/2 (idle: the *other* idle workers)
//!          ├──────────────────────────────────────────────────────► Exited
//!          │ else
//!          ▼
//!         Idle: (may spin, lock released, a few µs) then sleeping on `work`
//!          ├── claimed by a submit (idle -= 1, wakeups += 1) ──► Claimed ──► pop or exit check
//!          ├── closing ─────────────────────────────────────────► pop the rest, then Exited
//!          └── keep_alive elapsed, no claim, workers > min ─────► Exited
//! ```
//!
//! `starting = workers - idle - wakeups - running` counts Starting workers (their thread is
//! being created or has not taken the lock yet) and workers between a finish and the lock
//! (searching the lane first, the search entry); Claimed-but-not-yet-popped ones
//! are `wakeups`, a count of tokens rather than names: whichever idle worker wakes first
//! takes one. An idle worker waits on `work` ([`Waits::sleeping`]), or spins first with the
//! lock released ([`Waits::spinning`], the spin entry). A submit notifies `work` only when
//! `wakeups > spinning + sleeping.signalled()` (a token neither a spinner nor an
//! already-notified sleeper will take) and a sleeper is left that no notification is on its
//! way to (if none is, a worker started at build and not yet in its idle wait takes the
//! token); every spinner checks for a token under the lock before it sleeps. A worker whose
//! task panicked is still Running until it counts the finish: the panic was caught. A worker
//! thread that dies outside a task leaves through `worker::DeathGuard`, which undoes its
//! counts and starts a replacement if tasks wait.
//!
//! # The parts
//!
//! | part | what | invariants |
//! | --- | --- | --- |
//! | [`Workers`] | the live workers, the idle ones, the claims on idle ones (`wakeups`) | 1, 3 |
//! | [`Threads`] | one slot per worker thread until it is joined; spawns and joins in flight | 4 |
//! | [`Waits`] | who waits on which condvar (and spins before it), the join rounds, the async submitters' wakers | 1, 6, 8 |
//! | `closing` | intake stopped | 5 |
//! | [`ThreadTallies`] | thread events, reported and never decided on | 7 |
//! | [`spin::Policy`] | whether a thread may spin before it blocks, and how long | none |
//!
//! The spin policy decides no rule: it only sets how long a thread waits with the lock
//! released before it blocks, so no invariant depends on it, and the reference build (every
//! fast entry falling back, see [`fast`](super::fast)) never consults it. Beside the lock and
//! outside it: the lane's counts `queued` and `running` ([`lane`]), and the
//! tallies of finished and panicked tasks (atomics in `Shared`).
//!
//! # Invariants (checked by [`State::check`] after every transition under the lock)
//!
//! `queued` and `running` live in the lane and also move without the lock, through the fast
//! entries: a busy pool's submit raises `queued` (only while no worker is idle, the pool is at
//! `max` and not closing), a finishing worker lowers `running` or moves one task from
//! `queued` to `running` (only while nobody waits to hear of a finish), and a searching
//! worker moves one. Each invariant below holds for whatever the lock holder reads, because
//! those steps only move the counts in the directions the invariant allows.
//!
//! 1. `idle + wakeups + running <= workers <= max` ([`Workers`]): every counted state is a
//!    live worker, and the pool never holds more than `max` (why: rule 1's bound). Within
//!    that, `spinning + sleeping <= idle + wakeups` ([`Waits`]: spinners and sleepers are idle
//!    workers, claimed or not), and neither condvar has more notifications on their way than
//!    sleepers ([`sleepers`]; why: else a skipped notification could be one
//!    nobody sends).
//! 2. `queued + running <= max + capacity` where `capacity = max/2 + submit_buffer` (the
//!    lane's): the accepted, unfinished tasks. With `running == max` this is exactly rule 2's
//!    "`max/2 + submit_buffer` further tasks". Both acceptances check it in the
//!    compare-and-swap that raises `queued`; a reservation moves a task from `queued` to
//!    `running` and keeps the sum, so only a finished task makes room.
//! 3. `idle == 0 || queued <= wakeups + starting` ([`Workers`] and the lane): a queued task
//!    never waits while a worker sleeps unclaimed (why: otherwise a task could sit forever
//!    beside a sleeping worker). A locked push claims an idle worker in the same critical
//!    section; a worker only becomes idle after seeing `queued == 0` in the same step that
//!    stops lock-free submits (`SUBMIT_FAST`), and those are allowed again only once no
//!    worker is idle.
//! 4. `spawning` equals the number of thread slots without a handle ([`Threads`]): a spawn is
//!    reserved (counted in `workers`, with a slot) before the lock is dropped, so two
//!    submitters seeing `workers < max` at once cannot both exceed `max`; its outcome is
//!    recorded under the lock again. The new worker may run, and even exit, before that, so
//!    `close` waits for `spawning == 0` as well as `workers == 0` (why: else it could miss a
//!    thread to join, and that thread would outlive `close`).
//! 5. once `closing` is set, nothing is pushed again: a locked acceptance checks `closing`,
//!    and the same critical section that sets it clears `SUBMIT_FAST`, so every task is
//!    either rejected with `Closed` or counted in `queued` before `close` starts waiting,
//!    and workers only exit while closing once `queued` is 0.
//! 6. a joiner (`Pool::join`) never sleeps through the moment the pool runs out of work
//!    ([`Waits`]): it counts itself in `joiners` (which clears `FINISH_FAST`, so every later
//!    finish takes the lock), then checks `out_of_work()` and starts waiting on `done` in one
//!    critical section, and the finish that leaves nothing queued or running bumps `emptied`
//!    and notifies `done` in its own critical section when `joiners > 0`. A joiner returns
//!    once `emptied` moved past the value it arrived with, so it also returns when new tasks
//!    were accepted right after that moment (why: else a steady submitter could make a
//!    joiner that was woken go back to sleep).
//! 7. the reported counts nest ([`ThreadTallies`]): `panicked <= finished` (the task tallies,
//!    atomics counted by the finishing worker before the lane's `running` drops, so whoever
//!    sees a task finished in the lane sees it tallied), `died <= exited <= started`, and
//!    `started - exited <= workers`: a thread is counted started at its first lock and exited
//!    in the critical section that uncounts it from `workers` (why: `PoolMetrics` reports
//!    them as they are, so a count bumped in the wrong place would show as a thread or a
//!    panic that never was).
//! 8. an async submitter ([`room`]) never sleeps through room made for it ([`Waits`]):
//!    while any waker is registered in `room_wakers`, `FINISH_FAST` is clear, so every
//!    finish is counted under the lock, and each one takes (and, after unlocking, wakes) the
//!    oldest registered waker. A submitter registers its waker, sets the flags and looks for
//!    room once more in one critical section, so room freed before its registration is seen
//!    by that look and room freed after it comes with a wake-up. A waker is registered only
//!    while its future waits: the poll that accepts or is refused removes it, so does
//!    dropping the future, and a future dropped after it was woken passes the wake-up on to
//!    the oldest registered waker (why: else a cancelled waiter could eat the one wake-up
//!    meant for a live one, and that one would wait until some other task finished).

use super::{Config, Counters, lane, room, sleepers, spin};
use crate::sync::thread;

/// Everything `Shared::state` guards, in parts; see the module docs for the invariants.
pub(super) struct State {
    pub(super) workers: Workers,
    pub(super) threads: Threads,
    pub(super) waits: Waits,
    /// Intake stopped (invariant 5): set once by the first `close` (or a `Drop` on a worker),
    /// never cleared.
    pub(super) closing: bool,
    pub(super) tallies: ThreadTallies,
    pub(super) spin: spin::Policy,
}

/// Who can take a task: the live workers and, of those, the idle ones and the claims on them.
///
/// Carries invariant 1 (`idle + wakeups + running <= live <= max`) and, with the lane's
/// `queued`, invariant 3 (a queued task never waits beside an unclaimed idle worker).
#[derive(Debug, Default)]
pub(super) struct Workers {
    /// Live workers, including reserved ones whose thread is still starting (`workers` in
    /// the invariants and the protocol).
    pub(super) live: usize,
    /// Workers waiting for work that no submitter has claimed.
    pub(super) idle: usize,
    /// Idle workers a submitter claimed and notified that have not woken yet: tokens, taken
    /// by whichever idle worker wakes first. `Shared` keeps a copy outside the lock for the
    /// spin entry to watch (`fast::Hints`).
    pub(super) wakeups: usize,
}

impl Workers {
    /// Rule 3 for a worker with nothing to do, not counted idle itself (so `idle` is the
    /// *other* idle workers): it exits rather than idles.
    pub(super) fn spare(&self, min: usize) -> bool {
        self.live > min && self.idle > min / 2
    }
}

/// A worker thread, from its reservation until it is joined.
struct ThreadSlot {
    id: usize,
    handle: Option<thread::JoinHandle<()>>,
    exited: bool,
}

/// One slot per worker thread until it is joined, and the spawns and joins in flight.
///
/// Carries invariant 4: `spawning` equals the slots without a handle. [`Threads::reserve`]
/// adds both; [`Threads::spawned`] and [`Threads::refused`] record a spawn's outcome and
/// remove both.
#[derive(Default)]
pub(super) struct Threads {
    /// Thread spawns in flight: reserved, handle not recorded yet.
    pub(super) spawning: usize,
    /// Threads taken out of `slots` and being joined (by a closer or a spawner).
    pub(super) joining: usize,
    /// The id the next reserved worker's slot gets.
    next_id: usize,
    /// Every worker thread not joined yet: its id, its handle once spawned, whether it exited.
    slots: Vec<ThreadSlot>,
}

impl Threads {
    /// Adds the slot of a worker about to be spawned; returns its id.
    fn reserve(&mut self) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        self.spawning += 1;
        self.slots.push(ThreadSlot {
            id,
            handle: None,
            exited: false,
        });
        id
    }

    /// The OS started worker `id`'s thread.
    pub(super) fn spawned(&mut self, id: usize, handle: thread::JoinHandle<()>) {
        self.spawning -= 1;
        if let Some(slot) = self.slots.iter_mut().find(|slot| slot.id == id) {
            slot.handle = Some(handle);
        }
    }

    /// The OS refused worker `id`'s thread: its slot goes.
    pub(super) fn refused(&mut self, id: usize) {
        self.spawning -= 1;
        self.slots.retain(|slot| slot.id != id);
    }

    /// Worker `id` left its loop: its thread may be joined.
    pub(super) fn exited(&mut self, id: usize) {
        if let Some(slot) = self.slots.iter_mut().find(|slot| slot.id == id) {
            slot.exited = true;
        }
    }

    /// Takes the handles of exited workers, to be joined outside the lock.
    pub(super) fn take_exited(&mut self) -> Vec<thread::JoinHandle<()>> {
        let mut reaped = Vec::new();
        self.slots.retain_mut(|slot| {
            if slot.exited
                && let Some(handle) = slot.handle.take()
            {
                reaped.push(handle);
                return false;
            }
            true
        });
        reaped
    }

    /// Takes every handle, for `close` once the pool is drained (no spawn in flight).
    pub(super) fn take_all(&mut self) -> Vec<thread::JoinHandle<()>> {
        self.slots
            .drain(..)
            .filter_map(|slot| slot.handle)
            .collect()
    }

    fn without_handle(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| slot.handle.is_none())
            .count()
    }
}

/// Who waits on which condvar, and the join rounds.
///
/// Carries its share of invariant 1 (`spinning + sleeping.asleep() <= idle + wakeups`, and
/// no condvar has more notifications on their way than sleepers) and invariant 6 (a joiner
/// never sleeps through the moment the pool runs out of work).
#[derive(Debug, Default)]
pub(super) struct Waits {
    /// Idle workers spinning (lock released) before they sleep: the spin entry's. They look
    /// for a token under the lock before sleeping, so a submit needs no notification for a
    /// token they cover. Always 0 in the reference build.
    pub(super) spinning: usize,
    /// Idle workers asleep on `work`, and the notifications on their way to them.
    pub(super) sleeping: sleepers::Sleepers,
    /// Submitters blocked on `room`, and the notifications on their way to them.
    pub(super) blocked: sleepers::Sleepers,
    /// Async submitters waiting for room: their wakers, oldest first (invariant 8).
    pub(super) room_wakers: room::RoomWakers,
    /// Callers of `Pool::join` waiting on `done`.
    pub(super) joiners: usize,
    /// How often the pool ran out of accepted work (queue empty, nothing running) while
    /// `joiners > 0`: a joiner returns once this moves past the value it saw on arrival.
    pub(super) emptied: u64,
}

/// Worker threads that ran (counted at their first lock), left (`leave`), left by dying
/// (`DeathGuard`), and that the OS refused to start. Rare events, counted under the lock
/// their transition takes anyway; only reported (`PoolMetrics`), never decided on.
///
/// Carries invariant 7 (the counts nest).
#[derive(Debug, Default)]
pub(super) struct ThreadTallies {
    pub(super) started: u64,
    pub(super) exited: u64,
    pub(super) died: u64,
    pub(super) refused: u64,
}

impl State {
    pub(super) fn new() -> Self {
        Self {
            workers: Workers::default(),
            threads: Threads::default(),
            waits: Waits::default(),
            closing: false,
            tallies: ThreadTallies::default(),
            spin: spin::Policy::new(),
        }
    }

    /// Starting workers (see the module docs), given the lane's `running` read under the lock.
    pub(super) fn starting(&self, running: usize) -> usize {
        self.workers.live - self.workers.idle - self.workers.wakeups - running
    }

    /// Reserves a new worker: counts it and adds its slot; the caller spawns it.
    pub(super) fn reserve_worker(&mut self) -> usize {
        self.workers.live += 1;
        self.threads.reserve()
    }

    /// `close` may finish waiting: no worker is left or about to start.
    pub(super) fn drained(&self) -> bool {
        self.workers.live == 0 && self.threads.spawning == 0
    }

    /// When the fast entries may act, as the lane's flags (see [`lane`]): submits skip the
    /// lock while no worker is idle, the pool is at `max` and not closing; finishes skip it
    /// while no joiner waits, except the one that frees a batch of room while a blocked
    /// submitter waits for it (`room_wanted`).
    pub(super) fn lane_flags(&self, config: &Config) -> lane::Flags {
        lane::Flags {
            submit_fast: self.workers.idle == 0 && self.workers.live == config.max && !self.closing,
            // Nor while an async submitter waits for room: every finish then takes the lock
            // and wakes one (invariant 8).
            finish_fast: self.waits.joiners == 0 && self.waits.room_wakers.waiting() == 0,
            // A blocked submitter with a notification on its way needs no other: it looks at
            // the counts when it wakes (and blocks again, setting this flag first, if it must).
            room_wanted: self.waits.blocked.asleep() > self.waits.blocked.signalled(),
        }
    }

    /// Asserts the numbered invariants (debug builds only), with the lane's counts and the
    /// task tallies `(finished, panicked)` read under the lock: the lock-free side only moves
    /// them in directions that keep these relations (see [`lane`]).
    pub(super) fn check(&self, config: &Config, lane: lane::Counts, tallies: (u64, u64)) {
        let lane::Counts { queued, running } = lane;
        let Workers {
            live,
            idle,
            wakeups,
        } = self.workers;
        debug_assert!(
            idle + wakeups + running <= live,
            "inv 1: counted states exceed workers"
        );
        debug_assert!(live <= config.max, "inv 1: more than max workers");
        debug_assert!(
            self.waits.spinning + self.waits.sleeping.asleep() <= idle + wakeups,
            "inv 1: spinners and sleepers are idle workers, claimed or not"
        );
        self.waits.sleeping.check("inv 1: `work`");
        self.waits.blocked.check("inv 1: `room`");
        debug_assert!(
            queued + running <= config.max.saturating_add(config.capacity),
            "inv 2: more unfinished tasks than the capacity rule allows"
        );
        debug_assert!(
            idle == 0 || queued <= wakeups + self.starting(running),
            "inv 3: a task waits beside an unclaimed idle worker"
        );
        debug_assert_eq!(
            self.threads.without_handle(),
            self.threads.spawning,
            "inv 4: the spawns in flight are exactly the slots without a handle"
        );
        let ThreadTallies {
            started,
            exited,
            died,
            ..
        } = self.tallies;
        debug_assert!(tallies.1 <= tallies.0, "inv 7: panics beyond finishes");
        debug_assert!(
            died <= exited && exited <= started,
            "inv 7: thread counts do not nest"
        );
        debug_assert!(
            started - exited <= live as u64,
            "inv 7: more threads running than workers counted"
        );
    }

    /// A copy of the counters, with the lane's counts and the task tallies read under the lock.
    pub(super) fn counters(
        &self,
        lane: lane::Counts,
        (finished, panicked): (u64, u64),
    ) -> Counters {
        Counters {
            workers: self.workers.live,
            idle: self.workers.idle,
            wakeups: self.workers.wakeups,
            running: lane.running,
            queued: lane.queued,
            spawning: self.threads.spawning,
            blocked_submitters: self.waits.blocked.asleep(),
            room_wakers: self.waits.room_wakers.waiting(),
            joiners: self.waits.joiners,
            finished,
            panicked,
            threads_started: self.tallies.started,
            threads_exited: self.tallies.exited,
            threads_died: self.tallies.died,
            spawn_failures: self.tallies.refused,
            closing: self.closing,
        }
    }
}
