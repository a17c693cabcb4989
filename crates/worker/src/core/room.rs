//! Async submitters waiting for room: their wakers, in the order they first waited, and the
//! core side of one async submit ([`RoomWait`]).
//!
//! A blocked thread waits on the `room` condvar; an async submit (`Pool::submit_async`,
//! `Pool::spawn_async`) cannot block its runtime's thread, so it leaves its task's waker
//! here, under the pool's lock ([`Waits::room_wakers`](super::state::Waits)), and returns
//! `Pending`. The protocol (steps 24 to 27 of the core's README, invariant 8 of
//! [`state`](super::state)):
//!
//! 1. **Register, then look again, in one critical section.** A poll that finds the pool full
//!    stores its waker, sets the lane's flags (with a waker waiting, `FINISH_FAST` is clear:
//!    every finish takes the lock) and looks for room once more before it unlocks. A finish
//!    made without the lock is a compare-and-swap on the lane's word that checks
//!    `FINISH_FAST`, so it is ordered wholly before the flag change (and the last look sees
//!    its room) or after it (and it was a locked finish).
//! 2. **Every locked finish wakes the oldest waiting waker** (`Shared::record_finish`), not
//!    only a batch of room as for blocked threads: an async waiter has no timer to look for
//!    less by itself. The waker is removed from the registry under the lock and woken after
//!    the lock is released (a waker runs the runtime's code). `close` wakes them all.
//! 3. **A waker is registered only while its future lives and waits.** The poll that
//!    accepts or is refused removes it; dropping the future removes it in `Drop`. A future
//!    dropped after its waker was woken (so it is no longer registered) may have been woken
//!    for room it now never takes: it passes the wake on to the oldest waiting waker, so a
//!    cancelled waiter never eats a wake-up meant for another.
//! 4. **Acceptance happens only inside a poll that returns `Ready(Ok)`.** A future dropped
//!    while `Pending` (or never polled) accepted nothing: its task is dropped with it,
//!    unrun.
//!
//! Fairness: waiters are woken oldest first, and a woken waiter that finds the room taken
//! (by a thread's submit, a `try_submit` or a new async submit: none of them queues behind
//! the waiters) waits again in its old place. So no waiter is passed over by another async
//! waiter, but the pool promises no order against other submitters, as between blocked
//! threads.

use std::collections::BTreeMap;
use std::task::{Context, Poll, Waker};

use super::fast::{self, Entry};
use super::{Rejected, Shared, Task};
use crate::sync::{Arc, lock};

/// The wakers of async submitters waiting for room, oldest first (guarded by the pool's
/// lock, like the rest of `State`).
#[derive(Debug, Default)]
pub(super) struct RoomWakers {
    /// The ticket the next first-time waiter gets.
    next: u64,
    /// Registered and not woken yet, by ticket: the first entry waited longest.
    waiting: BTreeMap<u64, Waker>,
}

/// How a waiter left the registry ([`RoomWakers::leave`]).
#[must_use]
pub(super) enum Left {
    /// It had never waited (or had left already).
    Never,
    /// Its waker was still registered: here it is, to drop after unlocking.
    Waiting(Waker),
    /// Its waker was woken (by a finish, a passed-on wake or `close`) and not registered
    /// again since.
    Woken,
}

impl RoomWakers {
    /// Wakers registered and not woken.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Registers the waker of the waiter with `ticket` (a first-time waiter gets a ticket;
    /// one woken before keeps its place); returns the waker it replaced, to drop after
    /// unlocking.
    pub(super) fn register(&mut self, ticket: &mut Ticket, waker: Waker) -> Option<Waker> {
        let id = *ticket.0.get_or_insert_with(|| {
            let id = self.next;
            self.next += 1;
            id
        });
        self.waiting.insert(id, waker)
    }

    /// Whether the waiter with `ticket` is registered with a waker that wakes the same task
    /// as `waker` (then a poll that finds no room has nothing to change).
    pub(super) fn registered_as(&self, ticket: &Ticket, waker: &Waker) -> bool {
        ticket
            .0
            .and_then(|id| self.waiting.get(&id))
            .is_some_and(|stored| stored.will_wake(waker))
    }

    /// Room was made: takes the oldest registered waker, to wake after unlocking.
    pub(super) fn wake_one(&mut self) -> RoomWake {
        RoomWake(self.waiting.pop_first().map(|(_, waker)| waker))
    }

    /// The pool is closing: takes every registered waker, to wake after unlocking.
    pub(super) fn wake_all(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.waiting).into_values().collect()
    }

    /// The waiter with `ticket` is done waiting (accepted, refused, or dropped).
    pub(super) fn leave(&mut self, ticket: &mut Ticket) -> Left {
        match ticket.0.take() {
            None => Left::Never,
            Some(id) => self.waiting.remove(&id).map_or(Left::Woken, Left::Waiting),
        }
    }
}

/// A waiter's place among the async waiters: none until its first `Pending` poll.
#[derive(Debug, Default)]
pub(crate) struct Ticket(Option<u64>);

/// A waker taken from the registry under the lock, to wake once it is released.
#[must_use = "wake it after unlocking"]
#[derive(Debug, Default)]
pub(super) struct RoomWake(Option<Waker>);

impl RoomWake {
    /// Whether there is a waker to wake (the caller then unlocks first).
    pub(super) fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// Wakes the waker, if any. Call with the pool's lock released.
    pub(super) fn wake(self) {
        if let Some(waker) = self.0 {
            waker.wake();
        }
    }
}

/// The core side of one async submit: the task until it is accepted or refused, and the
/// waiter's ticket. Dropping it while it waits removes its waker (and passes on a wake it
/// got and did not use, protocol step 3).
pub(crate) struct RoomWait<'a> {
    shared: &'a Arc<Shared>,
    task: Option<Task>,
    ticket: Ticket,
}

impl<'a> RoomWait<'a> {
    pub(crate) fn new(shared: &'a Arc<Shared>, task: Task) -> Self {
        Self {
            shared,
            task: Some(task),
            ticket: Ticket::default(),
        }
    }

    /// Accepts the task if there is room, else registers `cx`'s waker and looks once more
    /// (protocol step 1). `Ready(Err)` hands the task back (only `Rejected::Closed`).
    ///
    /// # Panics
    ///
    /// If polled again after it returned `Ready`.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Rejected>> {
        let shared = self.shared;
        let Some(task) = self.task.take() else {
            panic!("an async submit polled after it completed");
        };
        // The submit entry, as for a thread's submit; only for a waiter not registered
        // (else the locked path removes its registration).
        let task = if self.ticket.0.is_none() {
            match fast::submit(shared, task) {
                Entry::Done(()) => {
                    shared.changed_lock_free();
                    return Poll::Ready(Ok(()));
                }
                Entry::FallBack(task) => task,
            }
        } else {
            task
        };
        let mut cloned: Option<Waker> = None;
        let mut state = lock(&shared.state);
        loop {
            if state.closing {
                // `close` woke every waiter: nothing to pass on.
                let left = state.waits.room_wakers.leave(&mut self.ticket);
                shared.unlock_checked(state);
                drop(left);
                return Poll::Ready(Err(Rejected::Closed(task)));
            }
            if shared.lane.accept() {
                let left = state.waits.room_wakers.leave(&mut self.ticket);
                Shared::enqueue(shared, state, task);
                drop(left);
                return Poll::Ready(Ok(()));
            }
            if state
                .waits
                .room_wakers
                .registered_as(&self.ticket, cx.waker())
            {
                // Registered since a poll under an earlier lock, with `FINISH_FAST` clear
                // ever since: every finish after that comes through the lock and wakes.
                shared.unlock_checked(state);
                self.task = Some(task);
                return Poll::Pending;
            }
            let Some(waker) = cloned.take() else {
                // Clone the waker with the lock released (it runs the runtime's code), then
                // look at everything again.
                drop(state);
                cloned = Some(cx.waker().clone());
                state = lock(&shared.state);
                continue;
            };
            let replaced = state.waits.room_wakers.register(&mut self.ticket, waker);
            // From here every finish takes the lock and wakes a registered waker
            // (`FINISH_FAST` is clear): look once more for room freed before that.
            shared.sync_flags(&state);
            if shared.lane.accept() {
                let left = state.waits.room_wakers.leave(&mut self.ticket);
                Shared::enqueue(shared, state, task);
                drop((left, replaced));
                return Poll::Ready(Ok(()));
            }
            shared.unlock_checked(state);
            drop(replaced);
            self.task = Some(task);
            return Poll::Pending;
        }
    }
}

impl Drop for RoomWait<'_> {
    /// Removes the waiter's waker; a waiter woken for room it never took passes the wake on
    /// (protocol step 3). Its task, if it still has one, is dropped unrun: nothing was
    /// accepted.
    fn drop(&mut self) {
        if self.ticket.0.is_none() {
            return;
        }
        let shared = self.shared;
        let mut state = lock(&shared.state);
        let (left, pass_on) = match state.waits.room_wakers.leave(&mut self.ticket) {
            Left::Woken => (None, state.waits.room_wakers.wake_one()),
            Left::Waiting(waker) => (Some(waker), RoomWake::default()),
            Left::Never => (None, RoomWake::default()),
        };
        shared.unlock_checked(state);
        drop(left);
        pass_on.wake();
    }
}
