//! loom models of the admission gate (`admission/gate.rs`): a slot that frees races a waiter
//! that gives up, a new request races a slot that frees, and two new requests race it (the
//! lock-free fast path against the `QUEUED` bit). Every model ends with the gate
//! empty: no slot is ever lost or counted twice, and the bounds hold throughout (the gate's
//! own `check` runs after every transition).
//!
//! The handover channel is tokio's oneshot, whose atomics loom does not see: the models explore
//! the interleavings of the gate's lock and its word, and a waiter looks at its mailbox
//! without blocking.

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;

use crate::gate::{Entry, Gate, Queued, Slot};

fn gate(slots: usize, queue: usize) -> Arc<Gate> {
    Arc::new(Gate::new(slots, queue, Duration::from_secs(1)))
}

fn inside(entry: Entry) -> Slot {
    match entry {
        Entry::Inside(slot) => slot,
        other => panic!("expected Inside, got {other:?}"),
    }
}

fn queued(entry: Entry) -> Queued {
    match entry {
        Entry::Queued(queued) => queued,
        other => panic!("expected Queued, got {other:?}"),
    }
}

/// The holder of the only slot leaves while the only waiter gives up: the slot either reaches
/// the waiter (and dies with it) or is freed; either way the gate ends empty.
#[test]
fn loom_release_races_a_waiter_leaving() {
    loom::model(|| {
        let gate = gate(1, 1);
        let holder = inside(Gate::enter(&gate));
        let waiter = queued(Gate::enter(&gate));
        let releaser = thread::spawn(move || drop(holder));
        let leaver = thread::spawn(move || drop(waiter));
        releaser.join().unwrap();
        leaver.join().unwrap();
        assert_eq!((gate.inside(), gate.queued()), (0, 0));
    });
}

/// A new request arrives while the slot frees: it goes in, or queues and is handed the slot;
/// never both, never neither.
#[test]
fn loom_enter_races_release() {
    loom::model(|| {
        let gate = gate(1, 1);
        let holder = inside(Gate::enter(&gate));
        let releaser = thread::spawn(move || drop(holder));
        let entry = Gate::enter(&gate);
        releaser.join().unwrap();
        let slot = match entry {
            Entry::Inside(slot) => slot,
            Entry::Queued(mut waiter) => waiter
                .try_granted()
                .expect("the freed slot went to the only waiter"),
            Entry::Full => panic!("a queue place was free"),
        };
        assert_eq!((gate.inside(), gate.queued()), (1, 0));
        drop(slot);
        assert_eq!((gate.inside(), gate.queued()), (0, 0));
    });
}

/// Two waiters, the slot frees and the first waiter gives up at the same time: the slot ends
/// with the second waiter (first come, first served, and passed on past a waiter that left).
#[test]
fn loom_a_slot_passes_over_a_waiter_that_left() {
    loom::model(|| {
        let gate = gate(1, 2);
        let holder = inside(Gate::enter(&gate));
        let first = queued(Gate::enter(&gate));
        let mut second = queued(Gate::enter(&gate));
        let releaser = thread::spawn(move || drop(holder));
        let leaver = thread::spawn(move || drop(first));
        releaser.join().unwrap();
        leaver.join().unwrap();
        let slot = second
            .try_granted()
            .expect("the slot reached the second waiter");
        assert_eq!((gate.inside(), gate.queued()), (1, 0));
        drop(slot);
        assert_eq!((gate.inside(), gate.queued()), (0, 0));
    });
}

/// Two new requests arrive while the only slot frees: whatever the order, at most one of them
/// holds the slot at a time, a waiter is handed the slot only once it is free, and the gate
/// ends empty.
#[test]
fn loom_two_requests_race_release() {
    loom::model(|| {
        let gate = gate(1, 1);
        let holder = inside(Gate::enter(&gate));
        let releaser = thread::spawn(move || drop(holder));
        let other = {
            let gate = Arc::clone(&gate);
            thread::spawn(move || Gate::enter(&gate))
        };
        let mine = Gate::enter(&gate);
        releaser.join().unwrap();
        let theirs = other.join().unwrap();
        let mut held = Vec::new();
        let mut waiting = Vec::new();
        for entry in [mine, theirs] {
            match entry {
                Entry::Inside(slot) => held.push(slot),
                Entry::Queued(waiter) => waiting.push(waiter),
                Entry::Full => {}
            }
        }
        for waiter in &mut waiting {
            if let Some(slot) = waiter.try_granted() {
                held.push(slot);
            }
        }
        assert_eq!(
            held.len(),
            1,
            "the freed slot is held by exactly one request"
        );
        assert_eq!(gate.inside(), 1);
        drop(held);
        // A waiter still queued is handed the slot now; dropping it frees the slot.
        drop(waiting);
        assert_eq!((gate.inside(), gate.queued()), (0, 0));
    });
}
