//! The admission table: which jobs run, which wait in the queue, who waits for each job, and
//! which caller owns which job. Runtime-free: no clock, no task, no waker lives here.
//!
//! <!-- stamp: crates/pdfpool/src/table.rs 3d945468ac517be1 -->
//!
//! # States of a job
//!
//! ```text
//!             admit (slot free)                 finish
//!   (none) ───────────────────────────▶ Running ───────▶ (gone: key forgotten)
//!      │                                   ▲
//!      │ admit (slots full, queue          │ a slot frees and this job is
//!      │        not full, pool open)       │ first in the queue (FIFO)
//!      ▼                                   │
//!   Queued ────────────────────────────────┘
//!      │ expire (its deadline passed)  ──▶ (gone: waiters get Busy)
//!      │ leave of its last waiter      ──▶ (gone: its launch is dropped unrun)
//!      │ close                         ──▶ (gone: waiters get Closed)
//! ```
//!
//! A job is found by [`JobId`] (slab index + serial) through `jobs`, and by key or by owner
//! through the `index` (a scan of `jobs` for small tables, hash maps for large ones: see
//! `table/index.rs`). Its waiters (everyone awaiting its outcome, the starter included) sit
//! in a slab in the job, each addressed by a [`WaiterId`]. The table stores two opaque values per job: the
//! launch `L` of a queued job (what the pool calls to start it) and each waiter's mailbox `W`.
//! Besides the jobs and their index, the table keeps the FIFO `queue` of queued ids and the
//! `running` count.
//!
//! # Transitions
//!
//! Each is one lock acquisition and hands back what it removed, acted on after the unlock:
//!
//! | call | from | to | hands back |
//! | --- | --- | --- | --- |
//! | `admit` | none / any | Running, Queued, or a new waiter on the job in flight | nothing: its `mailbox` closure runs only if the request waits and its `queue` closure (deadline + launch) only if the job is queued; on `Started` the caller spawns the closure it still holds |
//! | `join` | Running / Queued | one more waiter | the mailbox, if nothing is in flight for the key |
//! | `leave` | any | one waiter fewer; a Queued job left with none is removed | the waiter's mailbox; the abandoned launch |
//! | `finish` | Running | removed; the queue head becomes Running | every mailbox; the next job's launch |
//! | `expire` | Queued | removed | every mailbox (owed `Busy`); the launch |
//! | `close` | every Queued | removed; `closed = true` | every mailbox (owed `Closed`); the launches |
//!
//! # Invariants
//!
//! Checked by `check` (under `debug_assertions`) at the end of every transition.
//!
//! 1. `running` equals the number of `Running` jobs and is at most `slots`: the slot limit is
//!    the point of the pool (memory on a small box).
//! 2. `queue` holds exactly the ids of the `Queued` jobs, oldest first, at most `queue_limit`
//!    of them: admission is first come first served and the queue is bounded.
//! 3. If the queue is not empty, `running == slots`: no job waits while a slot is free.
//! 4. No two live jobs share a key, and the index finds each live job by its key and finds
//!    nothing for any other key: identical requests share a job; a key with no live job is
//!    forgotten (no cache).
//! 5. No two live jobs share an owner, and the index finds each live job by its owner and
//!    nothing for any other caller: one job in flight per caller.
//! 6. A `Queued` job has at least one waiter: a queued job nobody waits for is abandoned at
//!    once, giving back its queue place and freeing its owner. A `Running` job may have none
//!    (it outlives its callers).
//! 7. `closed` implies the queue is empty: `close` empties it and nothing is queued after.
//! 8. A mailbox is either in its job's waiter slab or has been handed out of the table, never
//!    both: it gets at most one outcome, and a [`WaiterId`] that no longer resolves means the
//!    outcome is on its way (or delivered).
//! 9. `starter_waits` implies waiter slot 0 holds the starter's mailbox: `waiting(key)` counts
//!    the sharers besides the request that started the job, so the starter must be told apart
//!    even after it left and a joiner reused its slot.
//!
//! # The lock
//!
//! One [`Mutex`] guards the whole state; there is no other lock here, hence no lock order.
//! Nothing but table bookkeeping runs under it: no user closure, no waker, no `Drop` of a
//! job's closure, future or outcome (keys and caller ids are compared, hashed, cloned and
//! dropped under it, as inside any map). Every transition that removes values (mailboxes to
//! deliver to, a launch to start or to drop) returns them, and the caller acts on them **after** the lock is released: delivers
//! the outcome, spawns the job, drops the unused closure. Between the release and that action
//! the table already shows the new state (counters exact), and invariant 8 keeps the handed-out
//! values from being reached twice: a waiter dropped in that gap finds its [`WaiterId`] no
//! longer resolves (`leave` hands back nothing), and its outcome goes to a receiver that is
//! gone.
//!
//! # The only home of the pool's rules
//!
//! Rules 1 to 3, the wait limit and close are decided here, under the lock, and nowhere else:
//! no fast entry (`fast.rs`) stands in front of the table, so every request, refusals
//! included, takes this lock. The one fast entry of the pool, the starter's task mailbox
//! (`wait.rs`), is a mailbox `W` like any other to the table and changes only how the outcome
//! travels after the unlock. The index's scan-or-maps switch is a data-structure choice
//! (`table/index.rs`); the reference build always takes the maps.

mod index;

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::Hash;

use self::index::{Found, Index};
use crate::slab::Slab;
use crate::sync::Mutex;

/// Names one job: its slot in the job slab and a serial that is never reused, so a stale id
/// (of a job that ended, its slot since reused) never matches a newer job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct JobId {
    index: usize,
    serial: u64,
}

/// Names one waiter of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaiterId {
    pub(crate) job: JobId,
    slot: usize,
}

/// Why `admit` turned a request away at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Rule 2: the caller owns a job for another key.
    CallerBusy,
    /// Rule 3: every slot is taken and the queue is full.
    Busy,
    /// The table is closed to new jobs.
    Closed,
}

/// Which request a new waiter is, as `admit` tells its `mailbox` closure: the request that
/// starts a job at once can take the outcome straight from the job's task, so the pool gives
/// it no channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NewWaiter {
    /// The request starts the job now: the admission will be `Started`.
    StartsNow,
    /// The request joins a job in flight, or its job is queued.
    Waits,
}

/// What `admit` decided. Nothing of the request's closure is kept unless the job was
/// queued, so a join, a refusal or an immediate start allocates no launch.
#[derive(Debug)]
pub(crate) enum Admission<D> {
    /// Rule 1: a job for the key was in flight; the mailbox waits on it. `deadline` is the
    /// job's if it is still queued.
    Joined {
        waiter: WaiterId,
        deadline: Option<D>,
    },
    /// Rule 3: a slot was free; the job is `Running` and the caller must start it now (the
    /// table holds no launch for it).
    Started { waiter: WaiterId },
    /// Rule 3: the job waits in the queue until `deadline`, with its launch.
    Queued { waiter: WaiterId, deadline: D },
    /// Rule 2, rule 3 or close: nothing was recorded.
    Refused(Refusal),
}

/// A job taken out of the table before it ran (expired, abandoned or closed): its waiters are
/// owed an outcome and its launch must be dropped, both after the lock is released.
#[derive(Debug)]
pub(crate) struct Dropped<W, L> {
    pub(crate) waiters: Slab<W>,
    pub(crate) launch: L,
}

/// A job that ended: its waiters are owed its outcome, and the queued job that took its slot
/// (if any) must be launched, both after the lock is released.
#[derive(Debug)]
pub(crate) struct Finished<W, L> {
    pub(crate) waiters: Slab<W>,
    pub(crate) next: Option<(JobId, L)>,
    /// The table is closed and no job runs any more: nothing will ever run again.
    pub(crate) closed_and_idle: bool,
}

/// What a waiter that gave up leaves behind, to be dropped after the lock is released.
#[derive(Debug)]
pub(crate) struct Left<W, L> {
    /// Its own mailbox, if the job still held it (`None`: the outcome is on its way).
    pub(crate) mailbox: Option<W>,
    /// The launch of a queued job this waiter was the last one of: it will never run.
    pub(crate) abandoned: Option<L>,
}

#[derive(Debug)]
enum Phase<D, L> {
    /// Boxed: only queued jobs pay for it, and a running job's `Job` stays small enough to be
    /// copied inline into and out of the slab (measured: a `memmove` call per admission and
    /// per finish otherwise).
    Queued(Box<Queued<D, L>>),
    Running,
}

#[derive(Debug)]
struct Queued<D, L> {
    deadline: D,
    launch: L,
}

#[derive(Debug)]
struct Job<K, C, D, W, L> {
    serial: u64,
    key: K,
    owner: C,
    phase: Phase<D, L>,
    waiters: Slab<W>,
    /// Whether the request that started the job still waits: its mailbox is then the one in
    /// slot [`STARTER_SLOT`], which a joiner may reuse once the starter left.
    starter_waits: bool,
}

/// The waiter slot of a job's starter: the first insert into the job's fresh slab.
const STARTER_SLOT: usize = 0;

#[derive(Debug)]
struct State<K, C, D, W, L> {
    slots: usize,
    queue_limit: usize,
    closed: bool,
    running: usize,
    next_serial: u64,
    jobs: Slab<Job<K, C, D, W, L>>,
    /// Finds a live job by key and by owner.
    index: Index<K, C, JobId>,
    queue: VecDeque<JobId>,
}

/// The admission table. `K` keys jobs, `C` names callers, `D` is a deadline, `W` a waiter's
/// mailbox and `L` the launch of a job; the table never looks inside `D`, `W` or `L`.
#[derive(Debug)]
pub(crate) struct Table<K, C, D, W, L> {
    state: Mutex<State<K, C, D, W, L>>,
}

impl<K, C, D, W, L> Table<K, C, D, W, L>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
    D: Copy,
{
    /// A table with `slots` running jobs at most and `queue_limit` queued ones.
    pub(crate) fn new(slots: usize, queue_limit: usize) -> Self {
        Self {
            state: Mutex::new(State {
                slots,
                queue_limit,
                closed: false,
                running: 0,
                next_serial: 0,
                jobs: Slab::default(),
                index: Index::new(slots.saturating_add(queue_limit)),
                queue: VecDeque::new(),
            }),
        }
    }

    /// A table that finds jobs through hash maps whatever its size, so that the unit tests
    /// cover both indexes.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn with_maps(slots: usize, queue_limit: usize) -> Self {
        let table = Self::new(slots, queue_limit);
        table.state.lock().index = Index::maps();
        table
    }

    /// Applies rules 1 to 3 (and close) to a request for `key` by `caller`.
    ///
    /// `mailbox` is called, under the lock, only if the request waits for a job (joined,
    /// started or queued), and is told which of these ([`NewWaiter`]); `queue` only if the
    /// job is queued, to take the deadline and the launch. Neither runs user code: they
    /// allocate and move values.
    pub(crate) fn admit(
        &self,
        key: K,
        caller: C,
        mailbox: impl FnOnce(NewWaiter) -> W,
        queue: impl FnOnce() -> (D, L),
    ) -> Admission<D> {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let admission = match state.index.find(state.live(), &key, &caller) {
            // Rule 1: join the job in flight for this key.
            Found::Key(job_id) => {
                let job = state.job_mut(job_id);
                let slot = job.waiters.insert(mailbox(NewWaiter::Waits));
                let deadline = match &job.phase {
                    Phase::Queued(queued) => Some(queued.deadline),
                    Phase::Running => None,
                };
                Admission::Joined {
                    waiter: WaiterId { job: job_id, slot },
                    deadline,
                }
            }
            _ if state.closed => return Admission::Refused(Refusal::Closed),
            // Rule 2: the caller's job is for another key (rule 1 caught this key).
            Found::CallerBusy => return Admission::Refused(Refusal::CallerBusy),
            Found::Neither => {
                let start = state.running < state.slots;
                if !start && state.queue.len() >= state.queue_limit {
                    // Rule 3: no slot and no queue place.
                    return Admission::Refused(Refusal::Busy);
                }
                let serial = state.next_serial;
                state.next_serial += 1;
                let (phase, deadline, new_waiter) = if start {
                    state.running += 1;
                    (Phase::Running, None, NewWaiter::StartsNow)
                } else {
                    let (deadline, launch) = queue();
                    (
                        Phase::Queued(Box::new(Queued { deadline, launch })),
                        Some(deadline),
                        NewWaiter::Waits,
                    )
                };
                let mut waiters = Slab::default();
                let slot = waiters.insert(mailbox(new_waiter));
                debug_assert_eq!(slot, STARTER_SLOT);
                let index = state.jobs.insert(Job {
                    serial,
                    key,
                    owner: caller,
                    phase,
                    waiters,
                    starter_waits: true,
                });
                let job_id = JobId { index, serial };
                let job = state.jobs.get(index).expect("just inserted");
                state.index.insert(&job.key, &job.owner, job_id);
                let waiter = WaiterId { job: job_id, slot };
                match deadline {
                    None => Admission::Started { waiter },
                    Some(deadline) => {
                        state.queue.push_back(job_id);
                        Admission::Queued { waiter, deadline }
                    }
                }
            }
        };
        state.check();
        admission
    }

    /// Rule 1 alone: registers `mailbox` on the job in flight for `key`, returning the job's
    /// deadline if it is still queued; gives the mailbox back if no job is in flight.
    pub(crate) fn join<Q>(&self, key: &Q, mailbox: W) -> Result<(WaiterId, Option<D>), W>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut state = self.state.lock();
        let Some(job_id) = state.index.by_key(state.live(), key) else {
            return Err(mailbox);
        };
        let job = state.job_mut(job_id);
        let slot = job.waiters.insert(mailbox);
        let deadline = match &job.phase {
            Phase::Queued(queued) => Some(queued.deadline),
            Phase::Running => None,
        };
        state.check();
        Ok((WaiterId { job: job_id, slot }, deadline))
    }

    /// A waiter gives up. If it was the last waiter of a queued job, the job is abandoned: its
    /// queue place and its owner are freed and its launch comes back unrun.
    pub(crate) fn leave(&self, waiter: WaiterId) -> Left<W, L> {
        let mut state = self.state.lock();
        let state = &mut *state;
        let Some(job) = state.live_job_mut(waiter.job) else {
            // The job ended or expired: this waiter's outcome is on its way (invariant 8).
            return Left {
                mailbox: None,
                abandoned: None,
            };
        };
        let mailbox = job.waiters.remove(waiter.slot);
        if waiter.slot == STARTER_SLOT && mailbox.is_some() {
            // A joiner only gets slot 0 after the starter left, and then this is already false.
            job.starter_waits = false;
        }
        let abandon = job.waiters.is_empty() && matches!(job.phase, Phase::Queued(_));
        let abandoned = if abandon {
            let dropped = state.remove_queued(waiter.job);
            debug_assert!(dropped.waiters.is_empty());
            Some(dropped.launch)
        } else {
            None
        };
        state.check();
        Left { mailbox, abandoned }
    }

    /// The job `job_id` ended (its outcome is known to the caller). Frees its slot and its
    /// owner, forgets its key, and starts the oldest queued job if there is one.
    ///
    /// Returns `None` if `job_id` is not a running job (a bug in the caller; asserted in
    /// debug builds).
    pub(crate) fn finish(&self, job_id: JobId) -> Option<Finished<W, L>> {
        let mut state = self.state.lock();
        let state = &mut *state;
        let running = state
            .live_job_mut(job_id)
            .is_some_and(|job| matches!(job.phase, Phase::Running));
        debug_assert!(running, "finish of a job that is not running");
        if !running {
            return None;
        }
        let job = state.remove_job(job_id);
        state.running -= 1;
        let next = state.queue.pop_front().map(|next_id| {
            let next = state.job_mut(next_id);
            let Phase::Queued(queued) = std::mem::replace(&mut next.phase, Phase::Running) else {
                unreachable!("the queue holds queued jobs only (invariant 2)");
            };
            state.running += 1;
            (next_id, queued.launch)
        });
        state.check();
        Some(Finished {
            waiters: job.waiters,
            next,
            closed_and_idle: state.closed && state.running == 0,
        })
    }

    /// The deadline of the queued job `job_id` passed: takes it out of the table (its waiters
    /// are owed `Busy`). `None` if it is no longer queued (started, ended or gone).
    pub(crate) fn expire(&self, job_id: JobId) -> Option<Dropped<W, L>> {
        let mut state = self.state.lock();
        let queued = state
            .live_job_mut(job_id)
            .is_some_and(|job| matches!(job.phase, Phase::Queued(_)));
        if !queued {
            return None;
        }
        let dropped = state.remove_queued(job_id);
        state.check();
        Some(dropped)
    }

    /// Refuses new jobs from now on and takes every queued job out (their waiters are owed
    /// `Closed`). Running jobs stay and finish as usual.
    pub(crate) fn close(&self) -> Vec<Dropped<W, L>> {
        let mut state = self.state.lock();
        state.closed = true;
        let queued: Vec<JobId> = state.queue.iter().copied().collect();
        let dropped = queued
            .into_iter()
            .map(|job_id| state.remove_queued(job_id))
            .collect();
        state.check();
        dropped
    }

    /// How many jobs are running.
    pub(crate) fn running(&self) -> usize {
        self.state.lock().running
    }

    /// How many jobs wait in the queue.
    pub(crate) fn queued(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// How many waiters the job in flight for `key` has besides its starter (0 if no job for
    /// `key` is in flight).
    pub(crate) fn waiting<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let state = self.state.lock();
        state.index.by_key(state.live(), key).map_or(0, |job_id| {
            let job = state.job(job_id);
            job.waiters.len() - usize::from(job.starter_waits)
        })
    }

    /// Whether `close` was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Whether `caller` owns a job in flight.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_caller_busy(&self, caller: &C) -> bool {
        let state = self.state.lock();
        state.index.by_owner(state.live(), caller).is_some()
    }

    /// Whether the table holds nothing at all (no job, key, caller or queue entry; `check`
    /// keeps the index in step with the jobs).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        let state = self.state.lock();
        state.jobs.is_empty() && state.queue.is_empty() && state.running == 0
    }
}

impl<K, C, D, W, L> State<K, C, D, W, L>
where
    K: Hash + Eq + Clone,
    C: Hash + Eq + Clone,
{
    /// Every live job as the index sees it: its id, key and owner.
    fn live(&self) -> impl Iterator<Item = (JobId, &K, &C)> {
        self.jobs.iter_indexed().map(|(index, job)| {
            let job_id = JobId {
                index,
                serial: job.serial,
            };
            (job_id, &job.key, &job.owner)
        })
    }

    /// The live job `job_id`, if its slot still holds that very job.
    fn live_job_mut(&mut self, job_id: JobId) -> Option<&mut Job<K, C, D, W, L>> {
        self.jobs
            .get_mut(job_id.index)
            .filter(|job| job.serial == job_id.serial)
    }

    /// The job behind an id taken from the index or `queue` (always live, invariants 2, 4, 5).
    fn job(&self, job_id: JobId) -> &Job<K, C, D, W, L> {
        let job = self.jobs.get(job_id.index).expect("indexed job is live");
        debug_assert_eq!(job.serial, job_id.serial);
        job
    }

    fn job_mut(&mut self, job_id: JobId) -> &mut Job<K, C, D, W, L> {
        let job = self
            .jobs
            .get_mut(job_id.index)
            .expect("indexed job is live");
        debug_assert_eq!(job.serial, job_id.serial);
        job
    }

    /// Takes a live job out of `jobs` and the index (not out of `queue`, not out of `running`:
    /// the caller adjusts the one that applies).
    fn remove_job(&mut self, job_id: JobId) -> Job<K, C, D, W, L> {
        let job = self.jobs.remove(job_id.index).expect("removed job is live");
        debug_assert_eq!(job.serial, job_id.serial);
        self.index.remove(&job.key, &job.owner, job_id);
        job
    }

    /// Takes a queued job out of the table entirely.
    fn remove_queued(&mut self, job_id: JobId) -> Dropped<W, L> {
        let position = self.queue.iter().position(|&queued| queued == job_id);
        debug_assert!(position.is_some(), "queued job missing from the queue");
        if let Some(position) = position {
            self.queue.remove(position);
        }
        let job = self.remove_job(job_id);
        let Phase::Queued(queued) = job.phase else {
            unreachable!("remove_queued of a running job");
        };
        Dropped {
            waiters: job.waiters,
            launch: queued.launch,
        }
    }

    /// Asserts the invariants of the module docs (debug builds only; O(jobs)).
    fn check(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        let running = self
            .jobs
            .iter()
            .filter(|job| matches!(job.phase, Phase::Running))
            .count();
        assert_eq!(running, self.running, "invariant 1: running count");
        assert!(self.running <= self.slots, "invariant 1: slot limit");
        let queued = self.jobs.len() - running;
        assert_eq!(
            queued,
            self.queue.len(),
            "invariant 2: queue holds the queued"
        );
        assert!(self.queue.len() <= self.queue_limit, "invariant 2: bound");
        for &job_id in &self.queue {
            let job = self.job(job_id);
            assert!(matches!(job.phase, Phase::Queued(_)), "invariant 2");
            assert!(!job.waiters.is_empty(), "invariant 6: queued job unwaited");
        }
        let serials: Vec<u64> = self.queue.iter().map(|id| id.serial).collect();
        assert!(serials.is_sorted(), "invariant 2: queue is FIFO");
        assert!(
            self.queue.is_empty() || self.running == self.slots,
            "invariant 3: a job waits while a slot is free"
        );
        self.index.check(self.live());
        for (index, job) in self.jobs.iter_indexed() {
            let job_id = JobId {
                index,
                serial: job.serial,
            };
            let by_key = self.index.by_key(self.live(), &job.key);
            assert_eq!(by_key, Some(job_id), "invariant 4: one job per key");
            let by_owner = self.index.by_owner(self.live(), &job.owner);
            assert_eq!(by_owner, Some(job_id), "invariant 5: one job per owner");
            assert!(
                !job.starter_waits || job.waiters.get(STARTER_SLOT).is_some(),
                "invariant 9: a waiting starter holds slot 0"
            );
        }
        assert!(!self.closed || self.queue.is_empty(), "invariant 7");
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
