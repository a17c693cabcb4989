//! Unit tests of the admission gate, without a runtime except where a deadline is awaited.

use super::*;

fn gate(slots: usize, queue_limit: usize) -> Arc<Gate> {
    Arc::new(Gate::new(slots, queue_limit, Duration::from_secs(10)))
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

#[test]
fn lets_in_then_queues_then_refuses() {
    let gate = gate(2, 1);
    let _a = inside(Gate::enter(&gate));
    let _b = inside(Gate::enter(&gate));
    let _c = queued(Gate::enter(&gate));
    assert!(matches!(Gate::enter(&gate), Entry::Full));
    assert_eq!((gate.inside(), gate.queued()), (2, 1));
}

#[test]
fn a_freed_slot_goes_to_the_oldest_waiter_at_once() {
    let gate = gate(1, 2);
    let a = inside(Gate::enter(&gate));
    let mut first = queued(Gate::enter(&gate));
    let mut second = queued(Gate::enter(&gate));
    drop(a);
    // The queue place is free the moment the slot passes, before the waiter runs.
    assert_eq!((gate.inside(), gate.queued()), (1, 1));
    let _third = queued(Gate::enter(&gate));
    let slot = first.grant.try_recv().expect("first in line gets the slot");
    first.in_queue = false;
    assert!(second.grant.try_recv().is_err(), "second still waits");
    drop(slot);
    let _slot = second.grant.try_recv().expect("then the second");
    second.in_queue = false;
    assert_eq!((gate.inside(), gate.queued()), (1, 1));
}

#[test]
fn a_waiter_that_leaves_gives_its_place_back() {
    let gate = gate(1, 1);
    let a = inside(Gate::enter(&gate));
    drop(queued(Gate::enter(&gate)));
    assert_eq!(gate.queued(), 0);
    let _b = queued(Gate::enter(&gate));
    drop(a);
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
}

#[test]
fn a_slot_sent_to_a_waiter_that_went_away_passes_on() {
    let gate = gate(1, 2);
    let a = inside(Gate::enter(&gate));
    let gone = queued(Gate::enter(&gate));
    let mut next = queued(Gate::enter(&gate));
    // `gone` leaves after its slot was sent but before it took it: the slot must reach `next`.
    drop(a);
    drop(gone);
    let slot = next.grant.try_recv().expect("the slot passed on");
    next.in_queue = false;
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
    drop(slot);
    assert_eq!((gate.inside(), gate.queued()), (0, 0));
}

#[test]
fn zero_queue_refuses_as_soon_as_every_slot_is_taken() {
    let gate = gate(1, 0);
    let a = inside(Gate::enter(&gate));
    assert!(matches!(Gate::enter(&gate), Entry::Full));
    drop(a);
    let _b = inside(Gate::enter(&gate));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_refuses_a_waiter_and_frees_its_place() {
    let gate = gate(1, 1);
    let _a = inside(Gate::enter(&gate));
    let started = Instant::now();
    let waited = queued(Gate::enter(&gate)).wait().await;
    assert_eq!(waited.unwrap_err(), BusyCause::WaitExpired);
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
}

/// A request that queues behind the last waiter leaving sees no stale "someone waits": the
/// next request after the queue empties goes in as soon as a slot frees, without the lock
/// handing it over (the `QUEUED` bit is cleared with the queue).
#[test]
fn the_queue_emptied_by_a_leaver_lets_the_next_request_straight_in() {
    let gate = gate(1, 1);
    let holder = inside(Gate::enter(&gate));
    let waiter = queued(Gate::enter(&gate));
    drop(waiter); // gives up: the queue is empty again, every slot still taken
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
    drop(holder);
    assert_eq!((gate.inside(), gate.queued()), (0, 0));
    let _next = inside(Gate::enter(&gate));
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
}

/// More slots than the word can count are capped, not wrapped into the `QUEUED` bit.
#[test]
fn slots_beyond_isize_max_are_capped() {
    let gate = gate(usize::MAX, 0);
    assert_eq!(gate.slots(), isize::MAX as usize);
    let _a = inside(Gate::enter(&gate));
    assert_eq!((gate.inside(), gate.queued()), (1, 0));
}
