//! The pool core: one `Mutex<State>` with three condvars, owning every rule of the pool,
//! beside the lock-free [`lane`] that carries the counts every submit and every finish
//! change (`queued`, `running`) and the accepted tasks.
//!
//! This block holds the states, invariants and lock rules; the grow / shrink / exit
//! protocol, step by step with the race each step prevents, follows it (from `README.md`
//! beside this file). The lane's own invariants (its word, its flags, and why a lock-free
//! step and a locked one never decide on different views) are in [`lane`].
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
//!         Idle: spinning (lock released, a few µs) then sleeping on `work`
//!          ├── claimed by a submit (idle -= 1, wakeups += 1) ──► Claimed ──► pop or exit check
//!          ├── closing ─────────────────────────────────────────► pop the rest, then Exited
//!          └── keep_alive elapsed, no claim, workers > min ─────► Exited
//! ```
//!
//! `starting = workers - idle - wakeups - running` counts Starting workers (their thread is
//! being created or has not taken the lock yet) and workers between a finish and the lock
//! (searching the lane, [`search`]); Claimed-but-not-yet-popped ones are
//! `wakeups`, a count of tokens rather than names: whichever idle worker wakes first takes
//! one. `spinning` counts the idle workers still spinning, which need no notification, and
//! `sleeping` those asleep on `work` with the notifications on their way to them
//! ([`sleepers`]). A submit notifies `work` only when `wakeups > spinning + sleeping.signalled()`
//! (a token neither a spinner nor an already-notified sleeper will take) and a sleeper is
//! left that no notification is on its way to (if none is, a worker started at build and
//! not yet in its idle wait takes the token), and a spinner re-checks the tokens under the
//! lock before it sleeps. A worker whose task panicked is still Running until it counts
//! the finish: the panic was caught. Whether a thread spins at all, and for how
//! long, is decided under the lock by the rules in [`spin`]; `spinning_submitters`, the
//! two spin credits and the yield pause are `State` fields like the rest. They only decide
//! how long a thread waits before it blocks, so no invariant below depends on them. A
//! worker thread that dies outside a task leaves through `worker::DeathGuard`, which undoes
//! its counts and starts a replacement if tasks wait.
//!
//! # Invariants (checked by `State::check` after every transition under the lock)
//!
//! `queued` and `running` live in the lane and also move without the lock: a busy pool's
//! submit raises `queued` (only while no worker is idle, the pool is at `max` and not
//! closing), a finishing worker lowers `running` or moves one task from `queued` to
//! `running` (only while nobody waits to hear of a finish), and a searching worker moves
//! one. Each invariant below holds for whatever the lock holder reads, because those
//! lock-free steps only move the counts in the directions the invariant allows.
//!
//! 1. `idle + wakeups + running <= workers <= max`: every counted state is a live worker,
//!    and the pool never holds more than `max` (why: rule 1's bound). Within that,
//!    `spinning + sleeping <= idle + wakeups` (spinners and sleepers are idle workers,
//!    claimed or not), and neither condvar has more notifications on their way than
//!    sleepers ([`sleepers`]; why: else a skipped notification could be one nobody sends).
//! 2. `queued + running <= max + capacity` where `capacity = max/2 + submit_buffer`:
//!    the accepted, unfinished tasks. With `running == max` this is exactly rule 2's
//!    "`max/2 + submit_buffer` further tasks". Both acceptances check it in the
//!    compare-and-swap that raises `queued`; a reservation moves a task from `queued` to
//!    `running` and keeps the sum, so only a finished task makes room.
//! 3. `idle == 0 || queued <= wakeups + starting`: a queued task never waits while a
//!    worker sleeps unclaimed (why: otherwise a task could sit forever beside a sleeping
//!    worker). A locked push claims an idle worker in the same critical section; a worker
//!    only becomes idle after seeing `queued == 0` in the same step that stops lock-free
//!    submits (`SUBMIT_FAST`), and those are allowed again only once no worker is idle.
//! 4. `spawning` equals the number of thread slots without a handle: a spawn is reserved
//!    (counted in `workers`, with a slot) before the lock is dropped, so two submitters
//!    seeing `workers < max` at once cannot both exceed `max`; its outcome is recorded under
//!    the lock again. The new worker may run, and even exit, before that, so `close` waits
//!    for `spawning == 0` as well as `workers == 0` (why: else it could miss a thread to
//!    join, and that thread would outlive `close`).
//! 5. once `closing` is set, nothing is pushed again: a locked acceptance checks `closing`,
//!    and the same critical section that sets it clears `SUBMIT_FAST`, so every task is
//!    either rejected with `Closed` or counted in `queued` before `close` starts waiting,
//!    and workers only exit while closing once `queued` is 0.
//! 6. a joiner (`Pool::join`) never sleeps through the moment the pool runs out of work:
//!    it counts itself in `joiners` (which clears `FINISH_FAST`, so every later finish takes
//!    the lock), then checks `out_of_work()` and starts waiting on `done` in one critical
//!    section, and the finish that leaves nothing queued or running bumps
//!    `emptied` and notifies `done` in its own critical section when `joiners > 0`. A joiner
//!    returns once `emptied` moved past the value it arrived with, so it also returns when
//!    new tasks were accepted right after that moment (why: else a steady submitter could
//!    make a joiner that was woken go back to sleep).
//! 7. the reported counts nest: `panicked <= finished` (the tallies, atomics counted by the
//!    finishing worker before the lane's `running` drops, so whoever sees a task finished
//!    in the lane sees it tallied), `threads_died <= threads_exited <=
//!    threads_started`, and `threads_started - threads_exited <= workers`: a thread is
//!    counted started at its first lock and exited in the critical section that uncounts it
//!    from `workers` (why: `PoolMetrics` reports them as they are, so a count bumped in the
//!    wrong place would show as a thread or a panic that never was).
//!
//! # Locks
//!
//! [`Shared::state`] guards everything above but the lane's counts and the tallies of
//! finished and panicked tasks (atomics); it is the only lock of the pool (the join slot of
//! [`crate::TaskHandle`] has its own, never taken while this one is held; under loom the
//! lane's FIFO is a locked `VecDeque`, taken only inside a push or a pop). The lane's flags
//! are written only under it. Condvars, all paired with `state`:
//! - `work`: idle workers wait here; a submitter that claims one calls `notify_one`, unless
//!   a spinner or a sleeper notified earlier and not yet awake will take that claim.
//! - `room`: submitters blocked on a full pool (`blocked`); a finish that is due to them (a
//!   batch of room, or the queue about to run dry: `Lane::room_due`) notifies one when some
//!   blocked submitter has no notification on its way (one already notified and not yet
//!   awake will take that room, so a second notification would only cost a syscall); a
//!   blocked submitter also looks by itself every `ROOM_WAIT_MAX`; closing notifies all. Before blocking, a submitter may spin (lock released, when [`spin`]
//!   allows) while a few tasks finish, watching the `finished` tally; to block, it counts
//!   itself in `blocked` (which clears `FINISH_FAST` unless every blocked submitter has a
//!   notification on its way) and looks at the counts once more before it waits.
//! - `done`: closers, woken when the last worker leaves or a join round finishes; joiners,
//!   woken when the pool runs out of work (invariant 6).
//!
//! # After the lock is dropped
//!
//! Tasks run, threads are spawned and joined, and `tracing` logs only outside the lock.
//! Condvars are notified after unlocking (a notification that needs a decision made under
//! the lock is recorded there first, as the `wakeups` token), except that a worker finishing
//! a task under the lock notifies `room` (and `done`, for joiners) with the lock held,
//! because it goes straight on to look for its next task under that same lock. Nothing
//! outside the lock reads `State`; spinners read `token_hint`, an atomic copy written under
//! it, and the `finished` tally, as hints only: every decision is re-made under the lock.
//!
#![doc = include_str!("README.md")]

mod lane;
mod search;
mod sleepers;
mod spawn;
mod spin;
mod worker;

#[cfg(all(test, not(loom)))]
pub(crate) use worker::die_after_this_task;

#[cfg(all(test, not(loom)))]
mod model;

use std::time::{Duration, Instant};

pub(crate) use lane::MAX_UNFINISHED;

use crate::sync::{
    Arc, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, lock, thread, thread_local,
    wait, wait_timeout,
};

/// A task as the queue stores it: boxed once, outside the lock.
pub(crate) type Task = Box<dyn Runnable>;

/// A boxed `FnOnce` that can also be handed back to its submitter as the type it came in.
pub(crate) trait Runnable: Send + 'static {
    /// Runs the task; says whether it panicked, for a task that catches its own panic.
    fn run(self: Box<Self>) -> Ran;
    /// Turns the box into `Any`, so a rejected task goes back as the caller's own type.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

/// How a task ended, as the pool counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    Returned,
    /// It panicked: caught by the worker, or by the task itself (as [`Spawned`] does).
    Panicked,
}

impl<F: FnOnce() + Send + 'static> Runnable for F {
    fn run(self: Box<Self>) -> Ran {
        (*self)();
        Ran::Returned
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// A task that catches its own panic (to hand it to a `TaskHandle`) and returns whether it
/// caught one, so the pool counts spawned tasks' panics like submitted ones'.
pub(crate) struct Spawned<F>(pub(crate) F);

impl<F: FnOnce() -> Ran + Send + 'static> Runnable for Spawned<F> {
    fn run(self: Box<Self>) -> Ran {
        (self.0)()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

thread_local! {
    /// The identity ([`Shared::id`]) of the pool whose worker this thread is, or 0.
    // loom's `thread_local!` has no `const { }` form, and the shim must accept both.
    #[allow(clippy::missing_const_for_thread_local)]
    static CURRENT_POOL: std::cell::Cell<usize> = std::cell::Cell::new(0);
}

/// The fixed settings of one pool.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) min: usize,
    pub(crate) max: usize,
    /// Waiting places beyond the workers: `max / 2 + submit_buffer`.
    pub(crate) capacity: usize,
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) thread_name: String,
}

/// How long a submitter may wait for room.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    No,
    Forever,
    Until(Instant),
}

/// Why a task was handed back; the facade turns this into its public error types.
pub(crate) enum Rejected {
    Full(Task),
    Closed(Task),
    Timeout(Task),
}

/// A worker thread, from its reservation until it is joined.
struct ThreadSlot {
    id: usize,
    handle: Option<thread::JoinHandle<()>>,
    exited: bool,
}

/// Everything `Shared::state` guards; see the module docs for the invariants.
struct State {
    /// Live workers, including reserved ones whose thread is still starting.
    workers: usize,
    /// Workers waiting for work that no submitter has claimed.
    idle: usize,
    /// Idle workers a submitter claimed and notified that have not woken yet: tokens, taken
    /// by whichever idle worker wakes first.
    wakeups: usize,
    /// Idle workers spinning (lock released) before they sleep; they need no notification.
    spinning: usize,
    /// Idle workers asleep on `work`, and the notifications on their way to them.
    sleeping: sleepers::Sleepers,
    /// Submitters spinning (lock released) for room before they block.
    spinning_submitters: usize,
    /// Whether idle workers' and submitters' spins have paid off lately (see [`spin`]).
    worker_spins: spin::SpinCredit,
    submitter_spins: spin::SpinCredit,
    /// Whether spinners may yield (off for a while after a slow yield, see [`spin`]).
    yields: spin::Yields,
    /// Thread spawns in flight: reserved, handle not recorded yet (invariant 4).
    spawning: usize,
    /// Intake stopped (invariant 5).
    closing: bool,
    /// Submitters blocked on `room`, and the notifications on their way to them.
    blocked: sleepers::Sleepers,
    /// Threads taken out of `threads` and being joined (by a closer or a spawner).
    joining: usize,
    /// Callers of `Pool::join` waiting on `done`.
    joiners: usize,
    /// How often the pool ran out of accepted work (queue empty, nothing running) while
    /// `joiners > 0`: a joiner returns once this moves past the value it saw on arrival.
    emptied: u64,
    /// Worker threads that ran (counted at their first lock), left (`leave`), left by dying
    /// (`DeathGuard`), and that the OS refused to start. Rare events, counted under the lock
    /// their transition takes anyway; only reported (`PoolMetrics`), never decided on.
    threads_started: u64,
    threads_exited: u64,
    threads_died: u64,
    spawn_failures: u64,
    /// The id the next reserved worker's thread slot gets.
    next_worker_id: usize,
    /// Every worker thread not joined yet: its id, its handle once spawned, whether it exited.
    threads: Vec<ThreadSlot>,
}

impl State {
    /// Starting workers (see the module docs), given the lane's `running` read under the lock.
    fn starting(&self, running: usize) -> usize {
        self.workers - self.idle - self.wakeups - running
    }

    /// Asserts the numbered invariants (debug builds only), with the lane's counts and the
    /// tallies read under the lock: the lock-free side only moves them in directions that
    /// keep these relations (see `lane`).
    fn check(&self, config: &Config, lane: lane::Counts, tallies: (u64, u64)) {
        let lane::Counts { queued, running } = lane;
        debug_assert!(
            self.idle + self.wakeups + running <= self.workers,
            "inv 1: counted states exceed workers"
        );
        debug_assert!(self.workers <= config.max, "inv 1: more than max workers");
        debug_assert!(
            self.spinning + self.sleeping.asleep() <= self.idle + self.wakeups,
            "inv 1: spinners and sleepers are idle workers, claimed or not"
        );
        self.sleeping.check("inv 1: `work`");
        self.blocked.check("inv 1: `room`");
        debug_assert!(
            queued + running <= config.max.saturating_add(config.capacity),
            "inv 2: more unfinished tasks than the capacity rule allows"
        );
        debug_assert!(
            self.idle == 0 || queued <= self.wakeups + self.starting(running),
            "inv 3: a task waits beside an unclaimed idle worker"
        );
        debug_assert_eq!(
            self.threads
                .iter()
                .filter(|slot| slot.handle.is_none())
                .count(),
            self.spawning,
            "inv 4: the spawns in flight are exactly the slots without a handle"
        );
        debug_assert!(tallies.1 <= tallies.0, "inv 7: panics beyond finishes");
        debug_assert!(
            self.threads_died <= self.threads_exited && self.threads_exited <= self.threads_started,
            "inv 7: thread counts do not nest"
        );
        debug_assert!(
            self.threads_started - self.threads_exited <= self.workers as u64,
            "inv 7: more threads running than workers counted"
        );
    }

    /// Reserves a new worker: counts it and records its slot; the caller spawns it.
    fn reserve_worker(&mut self) -> usize {
        let id = self.next_worker_id;
        self.next_worker_id += 1;
        self.workers += 1;
        self.spawning += 1;
        self.threads.push(ThreadSlot {
            id,
            handle: None,
            exited: false,
        });
        id
    }

    /// Takes the handles of exited workers, to be joined outside the lock.
    fn take_exited(&mut self) -> Vec<thread::JoinHandle<()>> {
        let mut reaped = Vec::new();
        self.threads.retain_mut(|slot| {
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

    fn counters(&self, lane: lane::Counts, (finished, panicked): (u64, u64)) -> Counters {
        Counters {
            workers: self.workers,
            idle: self.idle,
            wakeups: self.wakeups,
            running: lane.running,
            queued: lane.queued,
            spawning: self.spawning,
            blocked_submitters: self.blocked.asleep(),
            joiners: self.joiners,
            finished,
            panicked,
            threads_started: self.threads_started,
            threads_exited: self.threads_exited,
            threads_died: self.threads_died,
            spawn_failures: self.spawn_failures,
            closing: self.closing,
        }
    }

    /// Whether a thread of kind `who` may spin now, and how (see [`spin`]).
    fn spin_plan(
        &mut self,
        budget: &spin::Budget,
        who: Spinner,
        cpus: usize,
        running: usize,
    ) -> Option<spin::Plan> {
        let awake = running + self.spinning + self.spinning_submitters;
        let credit = match who {
            Spinner::Worker => &mut self.worker_spins,
            Spinner::Submitter => &mut self.submitter_spins,
        };
        spin::plan(budget, credit, &mut self.yields, awake, cpus)
    }

    /// Records how a spin of a thread of kind `who` ended.
    fn spin_ended(&mut self, who: Spinner, outcome: spin::Outcome) {
        let credit = match who {
            Spinner::Worker => &mut self.worker_spins,
            Spinner::Submitter => &mut self.submitter_spins,
        };
        spin::record(credit, &mut self.yields, outcome);
    }

    /// `close` may finish waiting: no worker is left or about to start.
    fn drained(&self) -> bool {
        self.workers == 0 && self.spawning == 0
    }
}

/// Who spins: the two kinds keep separate credit (see [`spin`]).
#[derive(Debug, Clone, Copy)]
enum Spinner {
    Worker,
    Submitter,
}

/// A point-in-time copy of the counters, for the facade and for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counters {
    pub(crate) workers: usize,
    pub(crate) idle: usize,
    pub(crate) wakeups: usize,
    pub(crate) running: usize,
    pub(crate) queued: usize,
    pub(crate) spawning: usize,
    pub(crate) blocked_submitters: usize,
    pub(crate) joiners: usize,
    pub(crate) finished: u64,
    // Read by `PoolMetrics` and the tests only.
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) panicked: u64,
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) threads_started: u64,
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) threads_exited: u64,
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) threads_died: u64,
    #[cfg_attr(not(any(test, feature = "metrics")), allow(dead_code))]
    pub(crate) spawn_failures: u64,
    pub(crate) closing: bool,
}

impl Counters {
    /// Every worker is Idle or Running, no spawn or wakeup is in flight, and a queued task
    /// means every worker is busy: the pool will not change until a task finishes or
    /// someone calls it.
    #[cfg(test)]
    pub(crate) fn quiescent(&self) -> bool {
        self.spawning == 0
            && self.wakeups == 0
            && self.workers == self.idle + self.running
            && (self.queued == 0 || self.idle == 0)
    }
}

/// A value on cache lines of its own (128 bytes: two lines, as adjacent-line prefetchers
/// pull pairs), so threads polling it do not slow the threads writing its neighbours.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Tasks finished and panicked since the pool was built (see [`Shared::tallies`]).
struct Tallies {
    finished: AtomicU64,
    panicked: AtomicU64,
}

/// The state shared by the facade and every worker thread.
pub(crate) struct Shared {
    config: Config,
    /// [`spin::cpus`], read once.
    cpus: usize,
    state: Padded<Mutex<State>>,
    work: Condvar,
    room: Condvar,
    done: Condvar,
    /// A copy of `State::wakeups`, written under the lock, read by spinning idle workers
    /// without it.
    token_hint: Padded<AtomicUsize>,
    /// The counts every submit and finish change, and the accepted tasks (see [`lane`]).
    lane: Padded<lane::Lane>,
    /// Workers looking for a task without the lock before they go idle (see [`search`]).
    search: Padded<search::Search>,
    /// Tasks finished since the pool was built (`Pool::completed`), and of those the ones
    /// that panicked: counted by the finishing worker before the lane's `running` drops,
    /// so whoever sees a task finished in the lane sees it here too. Spinning submitters
    /// watch `finished`.
    tallies: Padded<Tallies>,
    /// Notified after every transition, so tests can wait for a state without sleeping.
    #[cfg(test)]
    observe: Condvar,
    /// Test hook: how many upcoming thread spawns to refuse, as if the OS had.
    #[cfg(test)]
    pub(crate) refuse_spawns: crate::sync::AtomicUsize,
}

impl Shared {
    /// Creates the core and starts `min` workers.
    pub(crate) fn start(config: Config) -> Arc<Self> {
        let shared = Self::unstarted(config);
        Self::launch(&shared);
        shared
    }

    /// The core with no worker yet (tests set hooks before [`Shared::launch`]).
    pub(crate) fn unstarted(config: Config) -> Arc<Self> {
        Arc::new(Self::new(config))
    }

    /// Starts the `min` workers (rule 1).
    pub(crate) fn launch(shared: &Arc<Self>) {
        let ids: Vec<usize> = {
            let mut state = lock(&shared.state);
            let ids = (0..shared.config.min)
                .map(|_| state.reserve_worker())
                .collect();
            // Counted idle from now on, so a submit right after `build` claims one of them
            // instead of starting yet another worker.
            state.idle += shared.config.min;
            shared.sync_flags(&state);
            shared.check(&state);
            ids
        };
        for id in ids {
            spawn::spawn_worker(shared, id, spawn::Role::Idle, spawn::Reap::Yes);
        }
    }

    fn new(config: Config) -> Self {
        let limit = (config.max + config.capacity) as u64;
        Self {
            state: Padded(Mutex::new(State {
                workers: 0,
                idle: 0,
                wakeups: 0,
                spinning: 0,
                sleeping: sleepers::Sleepers::default(),
                spinning_submitters: 0,
                worker_spins: spin::SpinCredit::new(),
                submitter_spins: spin::SpinCredit::new(),
                yields: spin::Yields::default(),
                spawning: 0,
                closing: false,
                blocked: sleepers::Sleepers::default(),
                joining: 0,
                joiners: 0,
                emptied: 0,
                threads_started: 0,
                threads_exited: 0,
                threads_died: 0,
                spawn_failures: 0,
                next_worker_id: 0,
                threads: Vec::new(),
            })),
            config,
            cpus: spin::cpus(),
            work: Condvar::new(),
            room: Condvar::new(),
            done: Condvar::new(),
            token_hint: Padded(AtomicUsize::new(0)),
            lane: Padded(lane::Lane::new(limit)),
            search: Padded(search::Search::new()),
            tallies: Padded(Tallies {
                finished: AtomicU64::new(0),
                panicked: AtomicU64::new(0),
            }),
            #[cfg(test)]
            observe: Condvar::new(),
            #[cfg(test)]
            refuse_spawns: crate::sync::AtomicUsize::new(0),
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// This pool's identity while it lives: the address of its shared state.
    fn id(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// True on a worker thread of this pool.
    pub(crate) fn on_own_worker(&self) -> bool {
        CURRENT_POOL.with(|current| current.get() == self.id())
    }

    /// Tells test observers that the state changed (no-op outside tests).
    fn changed(&self) {
        #[cfg(test)]
        self.observe.notify_all();
    }

    /// Records a claim on an idle worker (`wakeups += 1`) and its lock-free copy.
    fn give_token(&self, state: &mut State) {
        state.wakeups += 1;
        self.token_hint.store(state.wakeups, Ordering::Release);
    }

    /// Consumes a claim (`wakeups -= 1`) and updates its lock-free copy.
    fn take_token(&self, state: &mut State) {
        state.wakeups -= 1;
        self.token_hint.store(state.wakeups, Ordering::Release);
    }

    /// The tallies as of now, `(finished, panicked)`, for checks and counters.
    fn tallies(&self) -> (u64, u64) {
        // `panicked` first: read the other way round, a panic counted between the two
        // reads could show more panics than finishes.
        let panicked = self.tallies.panicked.load(Ordering::Acquire);
        (self.tallies.finished.load(Ordering::Acquire), panicked)
    }

    /// Counts a finished task in the tallies; before the lane's `running` drops.
    fn tally(&self, ran: Ran) {
        self.tallies.finished.fetch_add(1, Ordering::Release);
        if ran == Ran::Panicked {
            self.tallies.panicked.fetch_add(1, Ordering::Release);
        }
    }

    /// Asserts the invariants (debug builds only).
    fn check(&self, state: &State) {
        state.check(&self.config, self.lane.counts(), self.tallies());
    }

    /// Sets the lane's flags from `state` (see [`lane`]): submits skip the lock while no
    /// worker is idle, the pool is at `max` and not closing; finishes skip it while no
    /// joiner waits, except the one that frees a batch of room while a blocked submitter
    /// waits for it. Called at the end of every critical section that may change those
    /// conditions, and by a thread about to wait on one of them before it looks at the
    /// counts a last time. Returns the lane's counts after that step.
    fn sync_flags(&self, state: &State) -> lane::Counts {
        let submit_fast = state.idle == 0 && state.workers == self.config.max && !state.closing;
        let finish_fast = state.joiners == 0;
        // A blocked submitter with a notification on its way needs no other: it looks at the
        // counts when it wakes (and blocks again, setting this flag first, if it must).
        let room_wanted = state.blocked.asleep() > state.blocked.signalled();
        self.lane.set_flags(submit_fast, finish_fast, room_wanted)
    }

    fn unlock_checked(&self, state: MutexGuard<'_, State>) {
        self.sync_flags(&state);
        self.check(&state);
        drop(state);
        self.changed();
    }

    /// Tells test observers about a transition made without the lock: takes the lock
    /// first, so an observer between reading the counts and waiting cannot miss it (no-op
    /// outside tests, and under loom, whose models do not observe).
    fn changed_lock_free(&self) {
        #[cfg(all(test, not(loom)))]
        {
            drop(lock(&self.state));
            self.observe.notify_all();
        }
    }

    /// Accepts `task` if the capacity rule allows, waiting for room as `wait` says.
    ///
    /// While the pool is busy at `max` (the lane's `SUBMIT_FAST`), a submit is one
    /// compare-and-swap and a push, without the lock. Otherwise, under the lock, the task is
    /// counted and pushed and, in the same critical section, either an idle worker is
    /// claimed or a new worker is reserved (rule 1).
    pub(crate) fn submit(this: &Arc<Self>, task: Task, wait: Wait) -> Result<(), Rejected> {
        let task = match this.lane.accept_fast(task) {
            Ok(()) => {
                this.changed_lock_free();
                return Ok(());
            }
            Err(task) => task,
        };
        let mut budget = spin::Budget::default();
        let mut state = lock(&this.state);
        loop {
            if state.closing {
                return Err(this.reject(state, Rejected::Closed(task)));
            }
            if this.lane.accept() {
                break;
            }
            let running = this.lane.counts().running;
            if let Some(plan) = (may_wait(wait) && budget.left())
                .then(|| state.spin_plan(&budget, Spinner::Submitter, this.cpus, running))
                .flatten()
            {
                // Wait a little before blocking: a blocked submitter costs a finishing worker
                // a notification and itself a sleep and a wake-up, per batch of room. Only
                // with a CPU to spare (see `spin`): the room comes from the workers. A
                // submitter that loses the room to another goes on with what is left of its
                // budget.
                state.spinning_submitters += 1;
                let finished = this.tallies.finished.load(Ordering::Acquire);
                drop(state);
                let batch = this.lane.room_batch();
                let outcome = spin::spin(&mut budget, plan, || {
                    this.tallies
                        .finished
                        .load(Ordering::Acquire)
                        .wrapping_sub(finished)
                        >= batch
                });
                state = lock(&this.state);
                state.spinning_submitters -= 1;
                state.spin_ended(Spinner::Submitter, outcome);
                continue;
            }
            // A finish due to it wakes a blocked submitter (`Lane::room_due`: a batch of
            // room, or the queue about to run dry); less than that reaches it when it wakes by
            // itself, at the latest after `ROOM_WAIT_MAX`.
            let nap = (this.lane.room_batch() > 1).then_some(lane::ROOM_WAIT_MAX);
            let timeout = match wait {
                Wait::No => return Err(this.reject(state, Rejected::Full(task))),
                Wait::Forever => nap,
                Wait::Until(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(this.reject(state, Rejected::Timeout(task)));
                    }
                    Some(nap.map_or(deadline - now, |nap| nap.min(deadline - now)))
                }
            };
            // From here the finish that frees a batch of room comes through the lock and
            // sees this submitter (`ROOM_WANTED`): look once more for room freed before that.
            state.blocked.fall_asleep();
            this.sync_flags(&state);
            if this.lane.accept() {
                // Never asleep: taking up a notification meant for another sleeper only
                // costs a spare one later (see `sleepers`).
                state.blocked.woke();
                break;
            }
            this.changed();
            state = match timeout {
                None => crate::sync::wait(&this.room, state),
                Some(timeout) => wait_timeout(&this.room, state, timeout).0,
            };
            state.blocked.woke();
        }
        this.lane.push(task);
        if state.idle > 0 {
            state.idle -= 1;
            this.give_token(&mut state);
            // Spinning idle workers look for tokens themselves, and so does a sleeper already
            // notified that has not run yet: wake another sleeper only for the tokens they
            // cannot cover, and only if one is left to wake.
            let wake = state.wakeups > state.spinning + state.sleeping.signalled()
                && state.sleeping.signal_one();
            this.unlock_checked(state);
            if wake {
                this.work.notify_one();
            }
        } else if state.workers < this.config.max {
            let id = state.reserve_worker();
            this.unlock_checked(state);
            spawn::spawn_worker(this, id, spawn::Role::Pop, spawn::Reap::Yes);
        } else {
            this.unlock_checked(state);
        }
        Ok(())
    }

    /// Unlocks after a refused submit, whose wait may have changed the lane's flags.
    fn reject(&self, state: MutexGuard<'_, State>, rejected: Rejected) -> Rejected {
        self.unlock_checked(state);
        rejected
    }

    /// Stops intake and waits until every accepted task has run and every worker thread
    /// has been joined. The caller has checked it is not one of this pool's workers.
    pub(crate) fn close(&self) {
        self.begin_close();
        let mut state = lock(&self.state);
        loop {
            if !state.drained() {
                state = wait(&self.done, state);
                continue;
            }
            if self.lane.reserve() {
                // No worker is left to run it (the OS refused them all): the closing thread
                // stands in as a worker for it, so nothing accepted is lost.
                state = self.stand_in(state);
                continue;
            }
            let handles: Vec<_> = state
                .threads
                .drain(..)
                .filter_map(|slot| slot.handle)
                .collect();
            if handles.is_empty() {
                if state.joining == 0 {
                    return;
                }
                state = wait(&self.done, state);
                continue;
            }
            state.joining += 1;
            drop(state);
            join_all(handles);
            state = lock(&self.state);
            state.joining -= 1;
            self.done.notify_all();
        }
    }

    /// Runs the task just reserved ([`lane::Lane::reserve`]) on the calling thread, counted
    /// as a worker while it runs: for a closer or joiner that finds tasks queued and no
    /// worker left to take them.
    fn stand_in<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        state.workers += 1;
        self.unlock_checked(state);
        let task = self.lane.pop();
        // While it runs, this thread counts as one of the pool's workers: the task's own
        // `close` or `join` must get `FromWorker`, not wait for the task itself.
        let outer = CURRENT_POOL.with(|current| current.replace(self.id()));
        let ran = worker::run_task(task);
        CURRENT_POOL.with(|current| current.set(outer));
        let mut state = lock(&self.state);
        self.tally(ran);
        self.record_finish(&mut state);
        state.workers -= 1;
        self.sync_flags(&state);
        self.check(&state);
        state
    }

    /// Records a finished task under the lock (`running -= 1`; the caller tallied it), hands
    /// its room to one blocked submitter when the finish is due to one (`Lane::room_due`: a
    /// batch of room, or the queue about to run dry; a blocked submitter looks by itself
    /// every `ROOM_WAIT_MAX` for less), and ends a join round when that was the last
    /// accepted task. The lock-free finish (`Lane::finish_fast`) stands in for exactly the
    /// calls that would notify nobody.
    ///
    /// Notifies with the lock held: the caller goes straight on under this lock (a worker
    /// looks for its next task), so there is no unlock to notify after.
    fn record_finish(&self, state: &mut State) {
        if self.lane.finish() && state.blocked.signal_one() {
            self.room.notify_one();
        }
        if state.joiners > 0 && self.lane.counts().out_of_work() {
            state.emptied += 1;
            self.done.notify_all();
        }
    }

    /// Waits until every accepted task has finished (a moment with nothing queued and
    /// nothing running), or until `deadline`; `false` when the deadline passed first. The
    /// caller has checked it is not one of this pool's workers.
    pub(crate) fn join(&self, deadline: Option<Instant>) -> bool {
        let mut state = lock(&self.state);
        let arrived = state.emptied;
        loop {
            // Counted before looking: from here every finish comes through the lock and
            // sees this joiner (`FINISH_FAST` cleared), so the last one cannot pass unseen.
            state.joiners += 1;
            let counts = self.sync_flags(&state);
            if counts.out_of_work() || state.emptied != arrived {
                state.joiners -= 1;
                self.unlock_checked(state);
                return true;
            }
            if state.drained() && self.lane.reserve() {
                // Tasks wait with no worker to take them (the OS refused them all): run
                // them here, as `close` would, rather than wait for a worker that may never
                // come.
                state.joiners -= 1;
                state = self.stand_in(state);
                continue;
            }
            self.changed();
            match deadline {
                None => state = wait(&self.done, state),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        state.joiners -= 1;
                        self.unlock_checked(state);
                        return false;
                    }
                    state = wait_timeout(&self.done, state, deadline - now).0;
                }
            }
            state.joiners -= 1;
        }
    }

    /// Begins closing without waiting (for a `Drop` on one of the pool's own workers).
    pub(crate) fn begin_close(&self) {
        let mut state = lock(&self.state);
        let first = !state.closing;
        state.closing = true;
        // No submit is accepted without the lock from here (invariant 5).
        self.sync_flags(&state);
        drop(state);
        if first {
            // Idle workers leave, blocked submitters return `Closed`.
            self.work.notify_all();
            self.room.notify_all();
            self.changed();
        }
    }

    pub(crate) fn counters(&self) -> Counters {
        let state = lock(&self.state);
        state.counters(self.lane.counts(), self.tallies())
    }

    /// Test hook: blocks until `pred` holds for the counters. Panics after 30 s so a broken
    /// rule fails the test instead of hanging it; this is a safety net, not a timing check.
    #[cfg(test)]
    pub(crate) fn wait_until(&self, what: &str, pred: impl Fn(&Counters) -> bool) -> Counters {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut state = lock(&self.state);
        loop {
            let counters = state.counters(self.lane.counts(), self.tallies());
            if pred(&counters) {
                return counters;
            }
            let now = Instant::now();
            assert!(now < deadline, "pool never reached `{what}`: {counters:?}");
            state = wait_timeout(&self.observe, state, deadline - now).0;
        }
    }
}

/// Whether a submitter that found the pool full may wait at all (and so spin first).
fn may_wait(wait: Wait) -> bool {
    match wait {
        Wait::No => false,
        Wait::Forever => true,
        Wait::Until(deadline) => Instant::now() < deadline,
    }
}

/// Joins worker threads that have left their loop. A worker never panics out of its loop
/// except through `DeathGuard`, which already logged it, so the join result carries nothing.
fn join_all(handles: Vec<thread::JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.join();
    }
}
