//! The admission gate behind [`AdmissionLayer`](crate::AdmissionLayer): at most `slots`
//! requests inside the inner service at once, at most `queue_limit` waiting in FIFO order,
//! each for at most `wait`. The pool's rule 3 alone: no keys, no callers, no sharing.
//!
//! <!-- stamp: crates/pdfpool/src/admission/gate.rs f03c36efdaaa1b20 -->
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
//! Checked by `check` (under `debug_assertions`) at the end of every transition made under
//! the lock.
//!
//! 1. `inside` counts the live [`Slot`]s plus the slots on their way to a queued request
//!    (sent or about to be sent to its mailbox), and is at most `slots`: the limit is the
//!    point of the layer.
//! 2. `queue` holds the waiting requests, oldest first (tickets increase), at most
//!    `queue_limit` of them: first come, first served, and bounded.
//! 3. If the queue is not empty, `inside == slots`: no request waits while a slot is free.
//!    Hence a slot that frees goes straight to the queue's head, under the lock, and a new
//!    request can never overtake a waiting one.
//! 4. The word's `QUEUED` bit is set exactly when the queue is not empty.
//!
//! # The lock, the word, and the fast entries
//!
//! `inside` and the `QUEUED` bit share one atomic word; the lock guards `queue` and
//! `next_ticket`. The rule lives in the locked paths, [`enter_locked`](Gate::enter_locked)
//! and [`release_locked`](Gate::release_locked), which read and change the word under the
//! lock. In front of each sits a fast entry (the seam is `fast.rs`): the uncontended request (a
//! slot is free, nobody waits) enters and leaves with one compare-and-swap each and never
//! takes the lock, as tower's `ConcurrencyLimit` takes a permit with one atomic operation; the
//! lock's two round trips per request were what kept a locked gate behind it
//! (docs/benchmarks.md, `layer_per_request`). Each fast entry does what its locked path does
//! in that case, or nothing; the reference build (`--cfg lockgate_reference`) turns both off.
//!
//! - Without `QUEUED`, the word changes only by `+1` while below `slots` (a request goes in)
//!   and `-1` (a slot frees with nobody waiting): compare-and-swaps by the fast entries, or
//!   the same steps under the lock.
//! - `QUEUED` is set and cleared only under the lock: set by a request that is about to
//!   queue, by one compare-and-swap from exactly `slots` (so it can only be set while every
//!   slot is taken, invariant 3), and cleared by whoever empties the queue (a hand-over to the
//!   last waiter, or the last waiter leaving), while `inside == slots` still.
//! - While `QUEUED` is set nothing changes `inside`, and both fast entries fall back:
//!   entering requests see the bit and queue (under the lock), and a dropped slot sees it and
//!   passes itself to the queue's head under the lock (`inside` unchanged), or, if the last
//!   waiter left before it got the lock, frees itself there (the bit is clear by then and only
//!   a lock holder could set it again).
//!
//! So the race that matters, a slot dropping while a request decides to queue, is decided by
//! the one word: either the drop's `-1` lands first and the request's compare-and-swap from
//! `slots` fails (it takes the freed slot instead), or the bit lands first and the drop hands
//! its slot to the queue, after the request is in it (the drop waits for the lock the request
//! holds). The loom models (`tests/loom_gate.rs`) race the fast entries against the locked
//! paths.
//!
//! Only bookkeeping runs under the lock (and the allocation of a queued request's mailbox):
//! handing a slot on (a oneshot send, which wakes the waiter) and dropping a removed mailbox
//! (which wakes it too) happen after the lock is released. A slot sent to a request that went
//! away comes back as the `Err` of the send (or is dropped with the channel) and, being a
//! [`Slot`], passes itself on to the next in line when dropped: a slot is never lost.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::BusyCause;
use crate::fast::{Fast, REFERENCE};
use crate::sync::{Arc, AtomicUsize, Mutex, Ordering};

/// The shared state of one layer: every service it made, and every clone of those, goes
/// through the same gate.
#[derive(Debug)]
pub(crate) struct Gate {
    slots: usize,
    queue_limit: usize,
    wait: Duration,
    /// `inside` in the low bits, and [`QUEUED`].
    word: AtomicUsize,
    state: Mutex<State>,
}

/// The word's bit saying that requests wait in the queue (the top bit: [`Gate::new`] keeps
/// `slots` below it).
const QUEUED: usize = 1 << (usize::BITS - 1);

#[derive(Debug)]
struct State {
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
    /// `slots` above `isize::MAX` count as `isize::MAX`: the count shares its word with
    /// [`QUEUED`], and no machine has that many requests in flight.
    pub(crate) fn new(slots: usize, queue_limit: usize, wait: Duration) -> Self {
        Self {
            slots: slots.min(QUEUED - 1),
            queue_limit,
            wait,
            word: AtomicUsize::new(0),
            state: Mutex::new(State {
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
        self.word.load(Ordering::Acquire) & !QUEUED
    }

    /// How many requests wait in the queue now.
    pub(crate) fn queued(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Lets a request in, queues it, or refuses it: the fast entry, else the locked path.
    /// (Associated functions, not methods: loom's `Arc` cannot be a receiver.)
    pub(crate) fn enter(gate: &Arc<Self>) -> Entry {
        match Self::enter_fast(gate) {
            Fast::Done(slot) => Entry::Inside(slot),
            Fast::FallBack => Self::enter_locked(gate),
        }
    }

    /// Fast entry (see `fast.rs`): takes a free slot, without the lock, if nobody waits.
    ///
    /// Equivalent to [`enter_locked`](Self::enter_locked), which, finding the word without
    /// [`QUEUED`] and below `slots`, makes the same `+1` and lets the request in: the lock
    /// guards only the queue and the bit, the bit clear means the queue is empty
    /// (invariant 4), so no waiting request is overtaken, and a bit set meanwhile fails the
    /// compare-and-swap. With the bit set or every slot taken it does nothing.
    fn enter_fast(gate: &Arc<Self>) -> Fast<Slot> {
        if REFERENCE {
            return Fast::FallBack;
        }
        let mut word = gate.word.load(Ordering::Acquire);
        while word & QUEUED == 0 && word < gate.slots {
            match gate.word.compare_exchange_weak(
                word,
                word + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Fast::Done(Slot {
                        gate: Arc::clone(gate),
                    });
                }
                Err(now) => word = now,
            }
        }
        Fast::FallBack
    }

    /// The locked path of [`enter`](Self::enter): the rule (a free slot and nobody waiting:
    /// in; else a queue place: queue; else refuse), under the lock.
    fn enter_locked(gate: &Arc<Self>) -> Entry {
        let mut state = gate.state.lock();
        // Under the lock `QUEUED` cannot change: either it is set (others wait: queue behind
        // them), or it is set here from exactly `slots`, or a slot is free (freed meanwhile, or
        // in the reference build simply free) and is taken here.
        let mut word = gate.word.load(Ordering::Acquire);
        while word & QUEUED == 0 {
            let (to, took) = if word < gate.slots {
                (word + 1, true)
            } else if state.queue.len() < gate.queue_limit {
                (word | QUEUED, false)
            } else {
                break; // queue_limit is 0: every slot taken means full
            };
            match gate
                .word
                .compare_exchange(word, to, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if took => {
                    state.check(gate);
                    drop(state);
                    return Entry::Inside(Slot {
                        gate: Arc::clone(gate),
                    });
                }
                Ok(_) => break,
                Err(now) => word = now,
            }
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

    /// A slot frees: the fast entry, else the locked path.
    fn release(gate: &Arc<Self>) {
        match gate.release_fast() {
            Fast::Done(()) => {}
            Fast::FallBack => Self::release_locked(gate),
        }
    }

    /// Fast entry (see `fast.rs`): frees a slot, without the lock, if nobody waits.
    ///
    /// Equivalent to [`release_locked`](Self::release_locked), which, finding the queue empty
    /// (so the bit clear, invariant 4), makes the same `-1`: with nobody to hand the slot to,
    /// freeing it is all the rule asks, and a bit set meanwhile (a request queued: the slot is
    /// owed to it) fails the compare-and-swap. With the bit set it does nothing.
    fn release_fast(&self) -> Fast<()> {
        if REFERENCE {
            return Fast::FallBack;
        }
        let mut word = self.word.load(Ordering::Acquire);
        while word & QUEUED == 0 {
            match self.word.compare_exchange_weak(
                word,
                word - 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Fast::Done(()),
                Err(now) => word = now,
            }
        }
        Fast::FallBack
    }

    /// The locked path of [`release`](Self::release): the slot passes to the queue's head
    /// (`inside` unchanged), or, with nobody waiting, frees (`inside` drops by one).
    fn release_locked(gate: &Arc<Self>) {
        let mut state = gate.state.lock();
        let Some(next) = state.queue.pop_front() else {
            // Nobody waits (the last waiter may have left since the fast entry saw the bit):
            // the slot simply frees (no one can set the bit while this lock is held).
            gate.word.fetch_sub(1, Ordering::AcqRel);
            state.check(gate);
            return;
        };
        if state.queue.is_empty() {
            gate.word.fetch_and(!QUEUED, Ordering::AcqRel);
        }
        state.check(gate);
        drop(state);
        let slot = Slot {
            gate: Arc::clone(gate),
        };
        // A request that went away meanwhile hands the slot back; dropping it passes the slot
        // on to the next in line.
        drop(next.mailbox.send(slot));
    }

    /// Takes the queued request `ticket` out of the queue. `false` if it is no longer there:
    /// its slot has been handed to it.
    fn leave(&self, ticket: u64) -> bool {
        let mut state = self.state.lock();
        let position = state.queue.iter().position(|w| w.ticket == ticket);
        let removed = position.and_then(|position| state.queue.remove(position));
        if removed.is_some() && state.queue.is_empty() {
            self.word.fetch_and(!QUEUED, Ordering::AcqRel);
        }
        state.check(self);
        drop(state);
        // Dropping the unused mailbox wakes its receiver: done here, after the unlock.
        removed.is_some()
    }
}

impl State {
    /// Asserts the invariants of the module docs (debug builds only), under the lock: the
    /// bit and, while it is set, `inside` cannot change meanwhile.
    fn check(&self, gate: &Gate) {
        if !cfg!(debug_assertions) {
            return;
        }
        let word = gate.word.load(Ordering::Acquire);
        let inside = word & !QUEUED;
        assert!(inside <= gate.slots, "invariant 1: slot limit");
        assert!(self.queue.len() <= gate.queue_limit, "invariant 2: bound");
        assert!(
            self.queue.iter().map(|w| w.ticket).is_sorted(),
            "invariant 2: FIFO"
        );
        assert_eq!(
            word & QUEUED != 0,
            !self.queue.is_empty(),
            "invariant 4: the QUEUED bit"
        );
        assert!(
            self.queue.is_empty() || inside == gate.slots,
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
