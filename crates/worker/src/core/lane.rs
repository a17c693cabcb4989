//! The fast lane: the counts every submit and every finished task change, in one atomic word,
//! and the accepted tasks in a lock-free FIFO, so a submit to a busy pool and a worker going
//! from one task to the next take no lock unless someone waits to hear of them (a joiner, or
//! a submitter blocked for room: see the flags).
//!
//! # The word
//!
//! ```text
//!   bit 63          62           61            60..36     35..0
//!   FINISH_FAST     SUBMIT_FAST  ROOM_WANTED   running    queued
//! ```
//!
//! - `queued`: tasks accepted and not yet taken by a worker. A task is counted here before
//!   it is pushed, so the FIFO may briefly hold fewer (a push in flight), never more.
//! - `running`: tasks taken by a worker (or a stand-in) and not finished.
//! - `SUBMIT_FAST`: a submit may accept by compare-and-swap alone, without the lock. Set
//!   under the lock only while no worker is idle, the pool is at `max` and not closing: a
//!   task accepted then needs nobody woken and no worker started (rule 1), and a worker
//!   that frees up takes it through [`Lane::reserve`].
//! - `FINISH_FAST`: a finished task may be counted by compare-and-swap alone. Set under the
//!   lock only while no joiner waits and no async submitter waits for room (every finish
//!   wakes one), so a finish that nobody needs to hear about skips the lock.
//! - `ROOM_WANTED`: a submitter is blocked on a full pool with no notification on its way.
//!   The finish that leaves [`Lane::room_batch`] places free (or more), or at most one task
//!   queued ([`Lane::room_due`]), takes the lock to wake it; the finishes before it do not,
//!   and a locked finish would not notify for them either. Set under the lock, like the
//!   other two.
//!
//! The lock-free steps ([`Lane::accept_fast`], [`Lane::finish_fast`], and [`Lane::reserve`]
//! in a search) are reached only through the fast entries ([`fast`](super::fast)), which
//! say why each one is a step the locked path would have taken.
//!
//! # Invariants
//!
//! 1. `queued + running <= limit` (the pool's rule 2): the only increase of the sum is an
//!    acceptance, and both acceptances ([`Lane::accept_fast`], [`Lane::accept`]) check it
//!    in the compare-and-swap that raises `queued`.
//! 2. every reservation (`queued -= 1, running += 1`) pops exactly one task from the FIFO,
//!    and every acceptance pushes exactly one: so the FIFO's length plus the pushes in
//!    flight equals `queued`, and a reserved pop always finds its task, waiting at most for
//!    the push in flight (the submitter is between its compare-and-swap and its push).
//! 3. the flags are written only under the pool's lock, and a transition after which a
//!    lock-free step would be wrong changes the flag in the word *before* it reads the
//!    counts to decide anything: a worker going idle clears `SUBMIT_FAST` in the same
//!    compare-and-swap that sees `queued == 0`; a joiner about to wait and an async
//!    submitter registering its waker clear `FINISH_FAST`, and a submitter about to block sets `ROOM_WANTED`, before it re-checks
//!    the counts. The lock-free steps check their flags in the same compare-and-swap that
//!    changes the counts, so each one is ordered wholly before or wholly after the change
//!    (one word, one modification order: no `SeqCst` reasoning across words is needed, and
//!    loom explores it exactly).
//!
//! # Order
//!
//! Tasks start in FIFO order: accept order is push order, which for one submitter is the
//! order of its calls. Two submits that overlap in time have no order a caller could see
//! before both returned.

#[cfg(all(test, loom))]
use std::collections::VecDeque;

use crate::sync::{AtomicU64, Ordering, thread};
#[cfg(all(test, loom))]
use crate::sync::{Mutex, lock};

use super::Task;

const QUEUED_BITS: u32 = 36;
const RUNNING_BITS: u32 = 25;
const QUEUED_ONE: u64 = 1;
const RUNNING_ONE: u64 = 1 << QUEUED_BITS;
const QUEUED_MASK: u64 = RUNNING_ONE - 1;
const RUNNING_MASK: u64 = ((1 << RUNNING_BITS) - 1) << QUEUED_BITS;
const ROOM_WANTED: u64 = 1 << 61;
const SUBMIT_FAST: u64 = 1 << 62;
const FLAGS: u64 = ROOM_WANTED | SUBMIT_FAST | FINISH_FAST;
const FINISH_FAST: u64 = 1 << 63;

/// The most unfinished tasks (`max + max / 2 + submit_buffer`) the word can count.
pub(crate) const MAX_UNFINISHED: u64 = QUEUED_MASK;

/// A copy of the word's counts at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) queued: usize,
    pub(super) running: usize,
}

impl Counts {
    /// Every accepted task has finished: none queued, none running.
    pub(super) fn out_of_work(self) -> bool {
        self.queued == 0 && self.running == 0
    }
}

/// The flags as the lock holder wants them (`State::lane_flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Flags {
    /// `SUBMIT_FAST`.
    pub(super) submit_fast: bool,
    /// `FINISH_FAST`.
    pub(super) finish_fast: bool,
    /// `ROOM_WANTED`.
    pub(super) room_wanted: bool,
}

/// How a lock-free finish ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finished {
    /// The finish was counted and the next queued task reserved: pop it and run it.
    Next,
    /// The finish was counted and nothing was queued: go to the lock to idle or exit.
    Empty,
    /// `FINISH_FAST` was clear: count the finish under the lock.
    Locked,
}

/// The word and the FIFO; see the module docs.
pub(super) struct Lane {
    word: AtomicU64,
    fifo: Fifo,
    /// The most unfinished tasks (rule 2).
    limit: u64,
    /// See [`Lane::room_batch`].
    room_batch: u64,
}

fn counts(word: u64) -> Counts {
    // Both fields are at most 36 bits: they fit a `usize` on every 64-bit target, and on a
    // 32-bit one `Builder` keeps the limit below `usize::MAX`.
    Counts {
        queued: (word & QUEUED_MASK) as usize,
        running: ((word & RUNNING_MASK) >> QUEUED_BITS) as usize,
    }
}

fn unfinished(word: u64) -> u64 {
    (word & QUEUED_MASK) + ((word & RUNNING_MASK) >> QUEUED_BITS)
}

impl Lane {
    /// A lane for a pool of at most `limit` unfinished tasks.
    pub(super) fn new(limit: u64) -> Self {
        Self {
            word: AtomicU64::new(0),
            fifo: Fifo::new(limit),
            limit,
            room_batch: (limit / 2).clamp(1, ROOM_BATCH_MAX),
        }
    }

    /// How many free places wake a blocked submitter: half the limit, at least 1 and at
    /// most [`ROOM_BATCH_MAX`]; fewer when the queue is about to run dry. A producer
    /// faster than the workers then sleeps and wakes once per batch of tasks, not once per
    /// task (each wake-up costs it a CPU the workers need). The submitter sleeps with a
    /// timeout ([`ROOM_WAIT_MAX`]) so that room less than a batch still reaches it when no
    /// further task finishes (a task may wait for what the submitter does next).
    pub(super) fn room_batch(&self) -> u64 {
        self.room_batch
    }

    /// The counts now (exact under the lock only for what the lock-free side cannot change,
    /// see the pool's invariants).
    pub(super) fn counts(&self) -> Counts {
        counts(self.word.load(Ordering::Acquire))
    }

    /// Accepts `task` without the lock, if `SUBMIT_FAST` is set and there is room under
    /// `limit`; otherwise hands it back for the locked path.
    pub(super) fn accept_fast(&self, task: Task) -> Result<(), Task> {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & SUBMIT_FAST == 0 || unfinished(word) >= self.limit {
                return Err(task);
            }
            match self.word.compare_exchange_weak(
                word,
                word + QUEUED_ONE,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        self.fifo.push(task);
        Ok(())
    }

    /// Accepts a task under the lock if there is room under the limit: counts it; the
    /// caller pushes it with [`Lane::push`] before it unlocks. `false`: the pool is full.
    pub(super) fn accept(&self) -> bool {
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                (unfinished(word) < self.limit).then_some(word + QUEUED_ONE)
            })
            .is_ok()
    }

    /// Pushes a task [`Lane::accept`] counted.
    pub(super) fn push(&self, task: Task) {
        self.fifo.push(task);
    }

    /// Reserves the next queued task (`queued -= 1, running += 1`); the caller then
    /// [`Lane::pop`]s it. `false` when nothing is queued. Keeps the unfinished sum, so it
    /// needs no flag and no lock.
    pub(super) fn reserve(&self) -> bool {
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                (word & QUEUED_MASK > 0).then(|| word - QUEUED_ONE + RUNNING_ONE)
            })
            .is_ok()
    }

    /// Under the lock, for a worker with nothing to run: reserves the next queued task
    /// (`true`), or, if none is queued, clears `SUBMIT_FAST` in the same step (`false`), so
    /// no task can be accepted without the lock while this worker goes idle (invariant 3).
    pub(super) fn reserve_or_close_fast_submits(&self) -> bool {
        let mut reserved = false;
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                reserved = word & QUEUED_MASK > 0;
                Some(if reserved {
                    word - QUEUED_ONE + RUNNING_ONE
                } else {
                    word & !SUBMIT_FAST
                })
            });
        reserved
    }

    /// Under the lock: clears `SUBMIT_FAST` for a transition about to make its condition
    /// false, and returns the counts as of that step (invariant 3).
    pub(super) fn close_fast_submits(&self) -> Counts {
        counts(self.word.fetch_and(!SUBMIT_FAST, Ordering::AcqRel) & !SUBMIT_FAST)
    }

    /// Takes the task a reservation counted. Its push may still be in flight (the submitter
    /// is between its compare-and-swap and its push, a few instructions): then spin, and
    /// yield if the submitter lost its CPU there.
    pub(super) fn pop(&self) -> Task {
        let mut round = 0u32;
        loop {
            if let Some(task) = self.fifo.pop() {
                return task;
            }
            if round < POP_SPIN_ROUNDS && !cfg!(all(test, loom)) {
                for _ in 0..1u32 << round {
                    std::hint::spin_loop();
                }
                round += 1;
            } else {
                thread::yield_now();
            }
        }
    }

    /// Counts a finished task without the lock if `FINISH_FAST` is set, reserving the next
    /// queued task in the same step when there is one (see [`Finished`]).
    pub(super) fn finish_fast(&self) -> Finished {
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & FINISH_FAST == 0 {
                return Finished::Locked;
            }
            // A blocked submitter is owed a notification: the locked finish sends it.
            if word & ROOM_WANTED != 0 && self.room_due(word) {
                return Finished::Locked;
            }
            let next = word & QUEUED_MASK > 0;
            let new = if next {
                word - QUEUED_ONE
            } else {
                word - RUNNING_ONE
            };
            match self
                .word
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next => return Finished::Next,
                Ok(_) => return Finished::Empty,
                Err(now) => word = now,
            }
        }
    }

    /// Counts a finished task under the lock (`running -= 1`), whatever the flags. Returns
    /// whether this finish hands a blocked submitter its room ([`Lane::room_due`]).
    pub(super) fn finish(&self) -> bool {
        self.room_due(self.word.fetch_sub(RUNNING_ONE, Ordering::AcqRel))
    }

    /// Whether the finish of a task, from the word `before` it, wakes a blocked submitter:
    /// it leaves a batch of room ([`Lane::room_batch`]) or more, or the workers are about to
    /// run out of queued tasks (at most one queued: waiting for a batch would idle them). The
    /// one rule for both finishes: the locked one notifies `room` only then, and the
    /// lock-free one takes the lock exactly then while a submitter waits (`ROOM_WANTED`).
    fn room_due(&self, before: u64) -> bool {
        let room = self.limit - (unfinished(before) - 1);
        let running_dry = before & QUEUED_MASK <= 1;
        room >= self.room_batch || running_dry
    }

    /// Under the lock: sets or clears the three flags. A flag changed so a decision can
    /// follow must change before the counts are read (invariant 3); this does all three in
    /// one step and returns the counts as of that step.
    pub(super) fn set_flags(&self, flags: Flags) -> Counts {
        let flags = if flags.submit_fast { SUBMIT_FAST } else { 0 }
            | if flags.finish_fast { FINISH_FAST } else { 0 }
            | if flags.room_wanted { ROOM_WANTED } else { 0 };
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & FLAGS == flags {
                return counts(word);
            }
            let new = (word & !FLAGS) | flags;
            match self
                .word
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return counts(new),
                Err(now) => word = now,
            }
        }
    }
}

/// The most places [`Lane::room_batch`] waits for.
const ROOM_BATCH_MAX: u64 = 64;

/// The longest a blocked submitter sleeps before it looks for room less than a batch.
pub(super) const ROOM_WAIT_MAX: std::time::Duration = std::time::Duration::from_millis(1);

/// Spin rounds (`1 << round` hints each) a reserved pop waits for a push in flight before it
/// yields.
const POP_SPIN_ROUNDS: u32 = 6;

/// The most unfinished tasks for which the FIFO is one ring allocated up front (24 bytes a
/// place: 1.5 MiB at this size); larger pools use a list of blocks allocated as it grows.
#[cfg(not(all(test, loom)))]
const RING_MAX: u64 = 1 << 16;

/// The accepted tasks in push order: lock-free, except under loom, where a locked `VecDeque`
/// stands in so the models see every step.
///
/// A pool's default size holds so few unfinished tasks (`max + max / 2 + 128`) that they fit
/// a ring allocated once: a growing list of blocks would allocate on the submitter's thread
/// and free on a worker's, and contend on malloc's arena locks for every block.
#[cfg(not(all(test, loom)))]
enum Fifo {
    Ring(crossbeam_queue::ArrayQueue<Task>),
    Blocks(crossbeam_queue::SegQueue<Task>),
}

#[cfg(not(all(test, loom)))]
impl Fifo {
    fn new(limit: u64) -> Self {
        // A ring never overflows: `queued <= limit` (invariant 1), and the lane counts a task
        // before its push and uncounts it before its pop.
        match usize::try_from(limit) {
            Ok(places) if limit <= RING_MAX => {
                Self::Ring(crossbeam_queue::ArrayQueue::new(places.max(1)))
            }
            _ => Self::Blocks(crossbeam_queue::SegQueue::new()),
        }
    }

    fn push(&self, task: Task) {
        match self {
            Self::Ring(ring) => {
                if ring.push(task).is_err() {
                    unreachable!("the lane counted more queued tasks than the pool's limit");
                }
            }
            Self::Blocks(blocks) => blocks.push(task),
        }
    }

    fn pop(&self) -> Option<Task> {
        match self {
            Self::Ring(ring) => ring.pop(),
            Self::Blocks(blocks) => blocks.pop(),
        }
    }
}

#[cfg(all(test, loom))]
struct Fifo {
    queue: Mutex<VecDeque<Task>>,
}

#[cfg(all(test, loom))]
impl Fifo {
    fn new(_limit: u64) -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
        }
    }

    fn push(&self, task: Task) {
        lock(&self.queue).push_back(task);
    }

    fn pop(&self) -> Option<Task> {
        lock(&self.queue).pop_front()
    }
}
