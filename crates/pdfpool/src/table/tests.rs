//! Unit tests of the admission table, runtime-free (these run under Miri).

use super::*;

/// A table with `&str` keys and callers, `u32` deadlines, and mailboxes/launches that are
/// plain tags so the tests can see which one came back.
type TestTable = Table<&'static str, &'static str, u32, &'static str, &'static str>;

/// Every test runs on both indexes: the scan of a small table's jobs, and the maps of a large
/// table (forced here at the same size).
fn tables(slots: usize, queue_limit: usize) -> [TestTable; 2] {
    [
        TestTable::new(slots, queue_limit),
        TestTable::with_maps(slots, queue_limit),
    ]
}

fn started(admission: Admission<u32>) -> WaiterId {
    match admission {
        Admission::Started { waiter, .. } => waiter,
        other => panic!("expected Started, got {other:?}"),
    }
}

fn queued(admission: Admission<u32>) -> (WaiterId, u32) {
    match admission {
        Admission::Queued { waiter, deadline } => (waiter, deadline),
        other => panic!("expected Queued, got {other:?}"),
    }
}

fn refused(admission: Admission<u32>) -> Refusal {
    match admission {
        Admission::Refused(reason) => reason,
        other => panic!("expected Refused, got {other:?}"),
    }
}

fn mailboxes(waiters: Slab<&'static str>) -> Vec<&'static str> {
    waiters.into_iter().collect()
}

#[test]
fn starts_while_slots_are_free_then_queues_then_refuses() {
    for table in tables(1, 1) {
        started(table.admit("a", "alice", |_| "m1", || (10, "la")));
        assert_eq!(table.running(), 1);
        let (_, deadline) = queued(table.admit("b", "bob", |_| "m2", || (10, "lb")));
        assert_eq!(deadline, 10);
        assert_eq!(table.queued(), 1);
        assert_eq!(
            refused(table.admit("c", "carol", |_| "m3", || (10, "lc"))),
            Refusal::Busy
        );
        assert_eq!((table.running(), table.queued()), (1, 1));
    }
}

#[test]
fn the_mailbox_is_told_whether_its_request_starts_the_job_now() {
    for table in tables(1, 1) {
        let told = std::cell::RefCell::new(Vec::new());
        let mailbox = |tag| {
            let told = &told;
            move |new_waiter| {
                told.borrow_mut().push(new_waiter);
                tag
            }
        };
        started(table.admit("a", "alice", mailbox("m1"), || (0, "la")));
        queued(table.admit("b", "bob", mailbox("m2"), || (0, "lb")));
        let joined = table.admit("a", "carol", mailbox("m3"), || (0, "unused"));
        assert!(matches!(joined, Admission::Joined { .. }), "{joined:?}");
        refused(table.admit("c", "dave", mailbox("m4"), || (0, "lc")));
        assert_eq!(
            told.into_inner(),
            [NewWaiter::StartsNow, NewWaiter::Waits, NewWaiter::Waits],
            "a refusal makes no mailbox"
        );
    }
}

#[test]
fn same_key_joins_even_for_a_busy_caller_and_takes_no_place() {
    for table in tables(2, 0) {
        let first = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        started(table.admit("b", "bob", |_| "m2", || (0, "lb")));
        // bob owns "b", yet joins "a": joining takes no slot, no queue place, no caller check.
        match table.admit("a", "bob", |_| "m3", || (0, "unused")) {
            Admission::Joined { waiter, deadline } => {
                assert_eq!(waiter.job, first.job);
                assert_eq!(deadline, None, "a running job has no deadline");
            }
            other => panic!("expected Joined, got {other:?}"),
        }
        assert_eq!(table.waiting(&"a"), 1, "bob; alice started the job");
        assert_eq!((table.running(), table.queued()), (2, 0));
    }
}

#[test]
fn caller_with_a_job_for_another_key_is_refused() {
    for table in tables(2, 2) {
        started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        assert_eq!(
            refused(table.admit("b", "alice", |_| "m2", || (0, "lb"))),
            Refusal::CallerBusy
        );
        assert_eq!(table.running(), 1);
    }
}

#[test]
fn joining_a_queued_job_shares_its_deadline() {
    for table in tables(1, 1) {
        started(table.admit("a", "alice", |_| "m1", || (5, "la")));
        let (queued_waiter, deadline) = queued(table.admit("b", "bob", |_| "m2", || (5, "lb")));
        let (joiner, joined_deadline) = table.join(&"b", "m3").expect("b is in flight");
        assert_eq!(joiner.job, queued_waiter.job);
        assert_eq!(joined_deadline, Some(deadline));
        assert_eq!(table.join(&"zzz", "m4"), Err("m4"));
    }
}

#[test]
fn finish_frees_slot_and_caller_and_starts_the_oldest_queued_job() {
    for table in tables(1, 2) {
        let a = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        let (b, _) = queued(table.admit("b", "bob", |_| "m2", || (0, "lb")));
        queued(table.admit("c", "carol", |_| "m3", || (0, "lc")));
        let finished = table.finish(a.job).expect("a is running");
        assert_eq!(mailboxes(finished.waiters), vec!["m1"]);
        assert_eq!(finished.next, Some((b.job, "lb")), "FIFO: b before c");
        assert!(!table.is_caller_busy(&"alice"));
        assert_eq!((table.running(), table.queued()), (1, 1));
        // No cache: "a" is forgotten, the next request starts a new job... once a slot frees.
        let next = table.finish(b.job).expect("b is running");
        assert_eq!(next.next.map(|(_, launch)| launch), Some("lc"));
        assert_eq!(table.waiting(&"a"), 0);
    }
}

#[test]
fn last_waiter_leaving_a_queued_job_abandons_it() {
    for table in tables(1, 1) {
        started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        let (starter, _) = queued(table.admit("b", "bob", |_| "m2", || (0, "lb")));
        let (joiner, _) = table.join(&"b", "m3").unwrap();
        let left = table.leave(starter);
        assert_eq!((left.mailbox, left.abandoned), (Some("m2"), None));
        assert_eq!(
            table.queued(),
            1,
            "one waiter is left: the job keeps its place"
        );
        assert!(table.is_caller_busy(&"bob"), "the owner stays busy");
        let left = table.leave(joiner);
        assert_eq!((left.mailbox, left.abandoned), (Some("m3"), Some("lb")));
        assert_eq!(table.queued(), 0);
        assert!(!table.is_caller_busy(&"bob"));
    }
}

#[test]
fn last_waiter_leaving_a_running_job_keeps_it_running() {
    for table in tables(1, 1) {
        let a = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        let left = table.leave(a);
        assert_eq!((left.mailbox, left.abandoned), (Some("m1"), None));
        assert_eq!((table.running(), table.waiting(&"a")), (1, 0));
        assert!(table.is_caller_busy(&"alice"));
        let finished = table.finish(a.job).unwrap();
        assert!(finished.waiters.is_empty());
        assert!(table.is_empty());
    }
}

#[test]
fn leave_after_the_job_ended_finds_nothing() {
    for table in tables(1, 1) {
        let a = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        table.finish(a.job).unwrap();
        // A new job for the same key reuses the slab slot; the old id must not reach it.
        let again = started(table.admit("a", "alice", |_| "m2", || (0, "la2")));
        assert_eq!(again.job.index, a.job.index);
        let left = table.leave(a);
        assert_eq!((left.mailbox, left.abandoned), (None, None));
        assert_eq!(
            table.waiting(&"a"),
            0,
            "the new job's starter still waits, uncounted"
        );
        assert_eq!(
            table.leave(again).mailbox,
            Some("m2"),
            "and is still registered"
        );
    }
}

#[test]
fn expire_takes_a_queued_job_out_and_ignores_others() {
    for table in tables(1, 1) {
        let a = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        let (b, _) = queued(table.admit("b", "bob", |_| "m2", || (0, "lb")));
        table.join(&"b", "m3").unwrap();
        assert!(table.expire(a.job).is_none(), "a running job never expires");
        let dropped = table.expire(b.job).expect("b is queued");
        assert_eq!(mailboxes(dropped.waiters), vec!["m2", "m3"]);
        assert_eq!(dropped.launch, "lb");
        assert!(table.expire(b.job).is_none(), "expires once");
        assert!(!table.is_caller_busy(&"bob"));
        assert_eq!(table.queued(), 0);
        let left = table.leave(b);
        assert_eq!((left.mailbox, left.abandoned), (None, None));
    }
}

#[test]
fn close_drops_queued_jobs_keeps_running_ones_and_refuses_new_ones() {
    for table in tables(1, 2) {
        let a = started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        queued(table.admit("b", "bob", |_| "m2", || (0, "lb")));
        queued(table.admit("c", "carol", |_| "m3", || (0, "lc")));
        let dropped = table.close();
        let launches: Vec<&str> = dropped.iter().map(|d| d.launch).collect();
        assert_eq!(launches, vec!["lb", "lc"]);
        assert!(table.is_closed());
        assert_eq!((table.running(), table.queued()), (1, 0));
        assert_eq!(
            refused(table.admit("d", "dave", |_| "m4", || (0, "ld"))),
            Refusal::Closed
        );
        // Joining the running job is not new work: still allowed.
        assert!(matches!(
            table.admit("a", "erin", |_| "m5", || (0, "le")),
            Admission::Joined { .. }
        ));
        let finished = table.finish(a.job).unwrap();
        assert_eq!(mailboxes(finished.waiters), vec!["m1", "m5"]);
        assert!(finished.next.is_none());
        assert!(table.is_empty());
    }
}

#[test]
fn zero_queue_refuses_as_soon_as_slots_are_full() {
    for table in tables(1, 0) {
        started(table.admit("a", "alice", |_| "m1", || (0, "la")));
        assert_eq!(
            refused(table.admit("b", "bob", |_| "m2", || (0, "lb"))),
            Refusal::Busy
        );
    }
}

#[test]
fn waiting_leaves_out_the_starter_even_after_a_joiner_took_its_slot() {
    for table in tables(1, 0) {
        let starter = started(table.admit("a", "alice", |_| "m-alice", || (0, "la")));
        assert_eq!(table.waiting("a"), 0, "the starter alone");
        let (bob, _) = table.join("a", "m-bob").unwrap();
        assert_eq!(table.waiting("a"), 1);
        assert_eq!(table.leave(starter).mailbox, Some("m-alice"));
        assert_eq!(table.waiting("a"), 1, "bob still shares the job");
        // carol gets the starter's freed slot: she is a sharer, not a starter.
        let (carol, _) = table.join("a", "m-carol").unwrap();
        assert_eq!(carol.slot, STARTER_SLOT);
        assert_eq!(table.waiting("a"), 2);
        assert_eq!(table.leave(carol).mailbox, Some("m-carol"));
        assert_eq!(table.leave(bob).mailbox, Some("m-bob"));
        assert_eq!(table.waiting("a"), 0);
        assert_eq!(table.waiting("nothing in flight"), 0);
    }
}
