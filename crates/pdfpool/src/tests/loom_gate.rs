//! loom models of the admission gate (`admission/gate.rs`): a slot that frees races a waiter
//! that gives up, and a new request races a slot that frees. Every model ends with the gate
//! empty: no slot is ever lost or counted twice, and the bounds hold throughout (the gate's
//! own `check` runs after every transition).
//!
//! The handover channel is tokio's oneshot, whose atomics loom does not see: the models explore
//! the interleavings of the gate's lock, and a waiter looks at its mailbox without blocking.

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
