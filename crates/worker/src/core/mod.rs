//! The pool core: the rules in one place, the shortcuts beside them.
//!
//! - [`state`]: the locked state machine. `State`, under one `Mutex` with three condvars, in
//!   named parts (workers, threads, waits, closing, thread tallies, and the spin policy apart
//!   from the rules); its `//!` block has the worker states and the numbered invariants. Every
//!   rule is decided under this lock.
//! - [`lane`]: the counts every submit and every finish change (`queued`, `running`) and the
//!   flags, in one atomic word, and the FIFO of accepted tasks. Both paths move the counts
//!   through it; the flags, written only under the lock, say when a lock-free step may.
//! - [`fast`]: the fast entries (a lock-free submit, a lock-free finish, the lock-free search
//!   before going idle, and the spins before sleeping). Each makes exactly the transition the
//!   locked path would have made, or does nothing and falls back to it, and is called from one
//!   place, right before that locked path. `--cfg lockgate_reference` turns every entry off.
//! - [`worker`], [`spawn`]: a worker thread's loop and the thread spawns and joins; this file:
//!   the submit, close and join paths, and [`Shared`], which holds it all.
//!
//! The grow / shrink / exit protocol, step by step with the race each step prevents, follows
//! this block (from `README.md` beside this file).
//!
//! # Locks
//!
//! [`Shared::state`] guards [`State`]; it is the only lock of the pool (the join slot of
//! [`crate::TaskHandle`] has its own, never taken while this one is held; under loom the
//! lane's FIFO is a locked `VecDeque`, taken only inside a push or a pop). The lane's counts
//! and the tallies of finished and panicked tasks are atomics outside it; the lane's flags
//! are written only under it. Condvars, all paired with `state`:
//! - `work`: idle workers wait here; a submitter that claims one calls `notify_one`, unless
//!   a spinner or a sleeper notified earlier and not yet awake will take that claim.
//! - `room`: submitters blocked on a full pool (`Waits::blocked`); a finish that is due to
//!   them (a batch of room, or the queue about to run dry: `Lane::room_due`) notifies one
//!   when some blocked submitter has no notification on its way (one already notified and
//!   not yet awake will take that room, so a second notification would only cost a
//!   syscall); a blocked submitter also looks by itself every `ROOM_WAIT_MAX`; closing
//!   notifies all. Before blocking, a submitter may spin (the spin entry) while a few tasks
//!   finish; to block, it counts itself in `blocked` (which clears `FINISH_FAST` unless
//!   every blocked submitter has a notification on its way) and looks at the counts once
//!   more before it waits. Async submitters cannot wait on a condvar: they leave their
//!   task's waker in `Waits::room_wakers` instead (see [`room`]), and every locked finish
//!   takes the oldest one (`FINISH_FAST` is clear while one is registered); closing takes
//!   them all.
//! - `done`: closers, woken when the last worker leaves or a join round finishes; joiners,
//!   woken when the pool runs out of work (invariant 6).
//!
//! # After the lock is dropped
//!
//! Tasks run, threads are spawned and joined, `tracing` logs, and the wakers of async
//! submitters are cloned, woken and dropped only outside the lock (a waker is the runtime's
//! code: `record_finish` hands the waker it took to its caller, which wakes it after
//! unlocking).
//! Condvars are notified after unlocking (a notification that needs a decision made under
//! the lock is recorded there first, as the `wakeups` token), except that a worker finishing
//! a task under the lock notifies `room` (and `done`, for joiners) with the lock held,
//! because it goes straight on to look for its next task under that same lock. Nothing
//! outside the lock reads `State`; spinners read `fast::Hints::tokens`, an atomic copy of
//! `wakeups` written under it, and the `finished` tally, as hints only: every decision is
//! re-made under the lock.
//!
#![doc = include_str!("README.md")]

mod fast;
mod lane;
mod room;
mod search;
mod sleepers;
mod spawn;
mod spin;
mod state;
mod worker;

#[cfg(all(test, not(loom)))]
pub(crate) use worker::die_after_this_task;

#[cfg(all(test, not(loom)))]
mod model;

use std::time::{Duration, Instant};

pub(crate) use lane::MAX_UNFINISHED;

use fast::Entry;
pub(crate) use room::RoomWait;
use room::RoomWake;
use state::State;

use crate::sync::{
    Arc, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, lock, thread, thread_local, wait,
    wait_timeout,
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
    /// It panicked: caught by the worker, or by the task itself (as `Pool::spawn`'s job
    /// does).
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
    /// Async submitters waiting for room with a waker registered (not woken yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) room_wakers: usize,
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
struct TaskTallies {
    finished: AtomicU64,
    panicked: AtomicU64,
}

/// The state shared by the facade and every worker thread.
pub(crate) struct Shared {
    config: Config,
    /// The locked state machine (see [`state`]).
    state: Padded<Mutex<State>>,
    work: Condvar,
    room: Condvar,
    done: Condvar,
    /// The counts every submit and finish change, and the accepted tasks (see [`lane`]).
    lane: Padded<lane::Lane>,
    /// Tasks finished since the pool was built (`Pool::completed`), and of those the ones
    /// that panicked: counted by the finishing worker before the lane's `running` drops,
    /// so whoever sees a task finished in the lane sees it here too. Spinning submitters
    /// watch `finished`.
    tallies: Padded<TaskTallies>,
    /// What the fast entries keep beside the lock (see [`fast`]).
    hints: fast::Hints,
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
            state.workers.idle += shared.config.min;
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
            state: Padded(Mutex::new(State::new())),
            config,
            work: Condvar::new(),
            room: Condvar::new(),
            done: Condvar::new(),
            lane: Padded(lane::Lane::new(limit)),
            tallies: Padded(TaskTallies {
                finished: AtomicU64::new(0),
                panicked: AtomicU64::new(0),
            }),
            hints: fast::Hints::new(),
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

    /// Records a claim on an idle worker (`wakeups += 1`) and its lock-free copy (the spin
    /// entry's hint).
    fn give_token(&self, state: &mut State) {
        state.workers.wakeups += 1;
        self.hints
            .tokens
            .store(state.workers.wakeups, Ordering::Release);
    }

    /// Consumes a claim (`wakeups -= 1`) and updates its lock-free copy.
    fn take_token(&self, state: &mut State) {
        state.workers.wakeups -= 1;
        self.hints
            .tokens
            .store(state.workers.wakeups, Ordering::Release);
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

    /// Sets the lane's flags from `state` (`State::lane_flags`: when the fast entries may
    /// act). Called at the end of every critical section that may change those conditions,
    /// and by a thread about to wait on one of them before it looks at the counts a last
    /// time. Returns the lane's counts after that step.
    fn sync_flags(&self, state: &State) -> lane::Counts {
        self.lane.set_flags(state.lane_flags(&self.config))
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
    /// Under the lock, the task is counted and pushed and, in the same critical section,
    /// either an idle worker is claimed or a new worker is reserved (rule 1). While the pool
    /// is busy at `max` (the lane's `SUBMIT_FAST`), the submit entry does the same without
    /// the lock: one compare-and-swap and a push.
    pub(crate) fn submit(this: &Arc<Self>, task: Task, wait: Wait) -> Result<(), Rejected> {
        // The submit entry (`fast::submit`), before the locked submit it stands in for.
        let task = match fast::submit(this, task) {
            Entry::Done(()) => {
                this.changed_lock_free();
                return Ok(());
            }
            Entry::FallBack(task) => task,
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
            // The spin entry (`fast::spin_for_room`), before the wait on `room` below it stands
            // in for: a blocked submitter costs a finishing worker a notification and itself
            // a sleep and a wake-up, per batch of room. A submitter that loses the room to
            // another goes on with what is left of its budget.
            if may_wait(wait) {
                match fast::spin_for_room(this, state, &mut budget) {
                    Entry::Done(again) => {
                        state = again;
                        continue;
                    }
                    Entry::FallBack(again) => state = again,
                }
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
            state.waits.blocked.fall_asleep();
            this.sync_flags(&state);
            if this.lane.accept() {
                // Never asleep: taking up a notification meant for another sleeper only
                // costs a spare one later (see `sleepers`).
                state.waits.blocked.woke();
                break;
            }
            this.changed();
            state = match timeout {
                None => crate::sync::wait(&this.room, state),
                Some(timeout) => wait_timeout(&this.room, state, timeout).0,
            };
            state.waits.blocked.woke();
        }
        Self::enqueue(this, state, task);
        Ok(())
    }

    /// Queues a task [`lane::Lane::accept`] counted under the lock, claims an idle worker
    /// or reserves a new one in the same critical section (rule 1), and unlocks.
    fn enqueue(this: &Arc<Self>, mut state: MutexGuard<'_, State>, task: Task) {
        this.lane.push(task);
        if state.workers.idle > 0 {
            state.workers.idle -= 1;
            this.give_token(&mut state);
            // Spinning idle workers look for tokens themselves, and so does a sleeper already
            // notified that has not run yet: wake another sleeper only for the tokens they
            // cannot cover, and only if one is left to wake.
            let covered = state.waits.spinning + state.waits.sleeping.signalled();
            let wake = state.workers.wakeups > covered && state.waits.sleeping.signal_one();
            this.unlock_checked(state);
            if wake {
                this.work.notify_one();
            }
        } else if state.workers.live < this.config.max {
            let id = state.reserve_worker();
            this.unlock_checked(state);
            spawn::spawn_worker(this, id, spawn::Role::Pop, spawn::Reap::Yes);
        } else {
            this.unlock_checked(state);
        }
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
            let handles = state.threads.take_all();
            if handles.is_empty() {
                if state.threads.joining == 0 {
                    return;
                }
                state = wait(&self.done, state);
                continue;
            }
            state.threads.joining += 1;
            drop(state);
            join_all(handles);
            state = lock(&self.state);
            state.threads.joining -= 1;
            self.done.notify_all();
        }
    }

    /// Runs the task just reserved ([`lane::Lane::reserve`]) on the calling thread, counted
    /// as a worker while it runs: for a closer or joiner that finds tasks queued and no
    /// worker left to take them.
    fn stand_in<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        state.workers.live += 1;
        self.unlock_checked(state);
        let task = self.lane.pop();
        // While it runs, this thread counts as one of the pool's workers: the task's own
        // `close` or `join` must get `FromWorker`, not wait for the task itself.
        let outer = CURRENT_POOL.with(|current| current.replace(self.id()));
        let ran = worker::run_task(task);
        CURRENT_POOL.with(|current| current.set(outer));
        let mut state = lock(&self.state);
        self.tally(ran);
        let room = self.record_finish(&mut state);
        state.workers.live -= 1;
        self.sync_flags(&state);
        self.check(&state);
        if room.is_some() {
            // The closer's or joiner's loop looks at everything again under the lock.
            self.unlock_checked(state);
            room.wake();
            state = lock(&self.state);
        }
        state
    }

    /// Records a finished task under the lock (`running -= 1`; the caller tallied it), hands
    /// its room to one blocked submitter when the finish is due to one (`Lane::room_due`: a
    /// batch of room, or the queue about to run dry; a blocked submitter looks by itself
    /// every `ROOM_WAIT_MAX` for less), and ends a join round when that was the last
    /// accepted task. The finish entry (`fast::finish`) stands in for exactly the calls
    /// that would notify nobody.
    ///
    /// Every such finish also takes the oldest waiting async submitter's waker ([`room`]:
    /// it has no timer to look for less than a batch by itself), which the caller wakes
    /// after unlocking.
    ///
    /// Notifies the condvars with the lock held: the caller goes straight on under this
    /// lock (a worker looks for its next task), so there is no unlock to notify after.
    fn record_finish(&self, state: &mut State) -> RoomWake {
        if self.lane.finish() && state.waits.blocked.signal_one() {
            self.room.notify_one();
        }
        if state.waits.joiners > 0 && self.lane.counts().out_of_work() {
            state.waits.emptied += 1;
            self.done.notify_all();
        }
        state.waits.room_wakers.wake_one()
    }

    /// Waits until every accepted task has finished (a moment with nothing queued and
    /// nothing running), or until `deadline`; `false` when the deadline passed first. The
    /// caller has checked it is not one of this pool's workers.
    pub(crate) fn join(&self, deadline: Option<Instant>) -> bool {
        let mut state = lock(&self.state);
        let arrived = state.waits.emptied;
        loop {
            // Counted before looking: from here every finish comes through the lock and
            // sees this joiner (`FINISH_FAST` cleared), so the last one cannot pass unseen.
            state.waits.joiners += 1;
            let counts = self.sync_flags(&state);
            if counts.out_of_work() || state.waits.emptied != arrived {
                state.waits.joiners -= 1;
                self.unlock_checked(state);
                return true;
            }
            if state.drained() && self.lane.reserve() {
                // Tasks wait with no worker to take them (the OS refused them all): run
                // them here, as `close` would, rather than wait for a worker that may never
                // come.
                state.waits.joiners -= 1;
                state = self.stand_in(state);
                continue;
            }
            self.changed();
            match deadline {
                None => state = wait(&self.done, state),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        state.waits.joiners -= 1;
                        self.unlock_checked(state);
                        return false;
                    }
                    state = wait_timeout(&self.done, state, deadline - now).0;
                }
            }
            state.waits.joiners -= 1;
        }
    }

    /// Begins closing without waiting (for a `Drop` on one of the pool's own workers).
    pub(crate) fn begin_close(&self) {
        let mut state = lock(&self.state);
        let first = !state.closing;
        state.closing = true;
        // Async submitters waiting for room return `Closed` when polled.
        let wakers = state.waits.room_wakers.wake_all();
        // No submit is accepted without the lock from here (invariant 5).
        self.sync_flags(&state);
        drop(state);
        for waker in wakers {
            waker.wake();
        }
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
