//! The admission gate behind [`AdmissionLayer`](crate::AdmissionLayer): at most `slots`
//! requests inside the inner service at once, at most `queue_limit` waiting in FIFO order,
//! each for at most `wait`. The pool's rule 3 alone: no keys, no callers, no sharing.
//!
//! # States of a request
//!
//! ```text
//!   enter ── a slot is free ────────────────────────▶ Inside ── its Slot drops ──▶ (gone)
//!     │                                                  ▲
//!     │ every slot taken,                                │ a Slot drops while this request
//!     │ queue not full                                   │ heads the queue: the slot passes
//!     ▼                                                  │ to it (`inside` does not change)
//!   Queued ──────────────────────────────────────────────┘
//!     │ its deadline passed ──▶ (gone: WaitExpired)
//!     │ its request dropped ──▶ (gone: the queue place is free again)
//!
//!   enter with every slot taken and the queue full ──▶ refused at once: QueueFull
//! ```
//!
//! # Invariants
//!
//! Checked by `check` (under `debug_assertions`) at the end of every transition.
//!
//! 1. `inside` counts the live [`Slot`]s plus the slots on their way to a queued request
//!    (sent or about to be sent to its mailbox), and is at most `slots`: the limit is the
//!    point of the layer.
//! 2. `queue` holds the waiting requests, oldest first (tickets increase), at most
//!    `queue_limit` of them: first come, first served, and bounded.
//! 3. If the queue is not empty, `inside == slots`: no request waits while a slot is free.
//!    Hence a slot that frees goes straight to the queue's head, under the lock, and a new
//!    request can never overtake a waiting one.
//!
//! # The lock
//!
//! One [`Mutex`] guards `inside`, `queue` and `next_ticket`; there is no other lock. Only
//! bookkeeping runs under it (and the allocation of a queued request's mailbox): handing a
//! slot on (a oneshot send, which wakes the waiter) and dropping a removed mailbox (which wakes
//! it too) happen after the lock is released. A slot sent to a request that went away comes
//! back as the `Err` of the send (or is dropped with the channel) and, being a [`Slot`],
//! passes itself on to the next in line when dropped: a slot is never lost.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::BusyCause;
use crate::sync::{Arc, Mutex};

/// The shared state of one layer: every service it made, and every clone of those, goes
/// through the same gate.
#[derive(Debug)]
pub(crate) struct Gate {
    slots: usize,
    queue_limit: usize,
    wait: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    inside: usize,
    queue: VecDeque<Waiting>,
    next_ticket: u64,
}

/// A queued request as the gate holds it: its ticket, and where its slot is to be sent.
#[derive(Debug)]
struct Waiting {
    ticket: u64,
    mailbox: oneshot::Sender<Slot>,
}

/// What [`Gate::enter`] decided.
#[derive(Debug)]
pub(crate) enum Entry {
    /// A slot was free: the request may go in.
    Inside(Slot),
    /// The request waits in the queue; [`Queued::wait`] for its slot.
    Queued(Queued),
    /// Every slot is taken and the queue is full.
    Full,
}

/// One request's right to be inside the inner service. Dropping it passes the slot to the
/// oldest queued request, or frees it.
#[derive(Debug)]
pub(crate) struct Slot {
    gate: Arc<Gate>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        Gate::release(&self.gate);
    }
}

impl Gate {
    /// A gate of `slots` slots and `queue_limit` queue places, waiting at most `wait`.
    pub(crate) fn new(slots: usize, queue_limit: usize, wait: Duration) -> Self {
        Self {
            slots,
            queue_limit,
            wait,
            state: Mutex::new(State {
                inside: 0,
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
        }
    }

    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    pub(crate) fn queue_limit(&self) -> usize {
        self.queue_limit
    }

    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// How many requests are inside now (slots taken).
    pub(crate) fn inside(&self) -> usize {
        self.state.lock().inside
    }

    /// How many requests wait in the queue now.
    pub(crate) fn queued(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Lets a request in, queues it, or refuses it: one lock acquisition.
    /// (An associated function, not a method: loom's `Arc` cannot be a receiver.)
    pub(crate) fn enter(gate: &Arc<Self>) -> Entry {
        let mut state = gate.state.lock();
        if state.inside < gate.slots {
            state.inside += 1;
            state.check(gate);
            drop(state);
            return Entry::Inside(Slot {
                gate: Arc::clone(gate),
            });
        }
        if state.queue.len() >= gate.queue_limit {
            return Entry::Full;
        }
        let (mailbox, grant) = oneshot::channel();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back(Waiting { ticket, mailbox });
        state.check(gate);
        drop(state);
        Entry::Queued(Queued {
            gate: Arc::clone(gate),
            ticket,
            deadline: Instant::now() + gate.wait,
            grant,
            in_queue: true,
        })
    }

    /// A slot frees: it passes to the queue's head, or `inside` drops by one.
    fn release(gate: &Arc<Self>) {
        let mut state = gate.state.lock();
        let next = state.queue.pop_front();
        if next.is_none() {
            state.inside -= 1;
        }
        state.check(gate);
        drop(state);
        if let Some(next) = next {
            let slot = Slot {
                gate: Arc::clone(gate),
            };
            // A request that went away meanwhile hands the slot back; dropping it passes the
            // slot on to the next in line.
            drop(next.mailbox.send(slot));
        }
    }

    /// Takes the queued request `ticket` out of the queue. `false` if it is no longer there:
    /// its slot has been handed to it.
    fn leave(&self, ticket: u64) -> bool {
        let mut state = self.state.lock();
        let position = state.queue.iter().position(|w| w.ticket == ticket);
        let removed = position.and_then(|position| state.queue.remove(position));
        state.check(self);
        drop(state);
        // Dropping the unused mailbox wakes its receiver: done here, after the unlock.
        removed.is_some()
    }
}

impl State {
    /// Asserts the invariants of the module docs (debug builds only).
    fn check(&self, gate: &Gate) {
        if !cfg!(debug_assertions) {
            return;
        }
        assert!(self.inside <= gate.slots, "invariant 1: slot limit");
        assert!(self.queue.len() <= gate.queue_limit, "invariant 2: bound");
        assert!(
            self.queue.iter().map(|w| w.ticket).is_sorted(),
            "invariant 2: FIFO"
        );
        assert!(
            self.queue.is_empty() || self.inside == gate.slots,
            "invariant 3: a request waits while a slot is free"
        );
    }
}

/// A request waiting in the queue. Dropping it gives its queue place back (or, if its slot was
/// already on its way, the slot passes on).
#[derive(Debug)]
pub(crate) struct Queued {
    gate: Arc<Gate>,
    ticket: u64,
    deadline: Instant,
    grant: oneshot::Receiver<Slot>,
    /// Whether the gate may still hold this request in its queue.
    in_queue: bool,
}

impl Queued {
    /// Waits for a slot until the deadline. A slot handed over at the deadline is taken: the
    /// limit bounds the wait in the queue, and the request is no longer in it.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future gives the queue place back (a new request queues at the back).
    pub(crate) async fn wait(mut self) -> Result<Slot, BusyCause> {
        tokio::select! {
            biased;
            granted = &mut self.grant => return Ok(self.granted(granted)),
            () = tokio::time::sleep_until(self.deadline) => {}
        }
        if self.gate.leave(self.ticket) {
            self.in_queue = false;
            return Err(BusyCause::WaitExpired);
        }
        let granted = (&mut self.grant).await;
        Ok(self.granted(granted))
    }

    /// The slot, if it has been handed over already (models poll instead of awaiting).
    #[cfg(all(test, loom))]
    pub(crate) fn try_granted(&mut self) -> Option<Slot> {
        let granted = self.grant.try_recv().ok()?;
        self.in_queue = false;
        Some(granted)
    }

    fn granted(&mut self, granted: Result<Slot, oneshot::error::RecvError>) -> Slot {
        self.in_queue = false;
        granted.expect("the gate sends a slot to every request it takes out of the queue")
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.in_queue {
            // Not in the queue any more: the slot is in (or on its way to) `grant`, and
            // dropping `grant` drops it, which passes it on.
            let _still_queued = self.gate.leave(self.ticket);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
