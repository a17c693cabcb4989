//! loom models of the admission table: concurrent admit / join / leave / finish / expire, each
//! followed (as in the pool) by its after-the-lock action, here counting deliveries and
//! launches. Every model checks at the end that each mailbox got at most one outcome, exactly
//! one if the table let go of it, that each launch came out exactly once, and that the table
//! is empty.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::slab::Slab;
use crate::table::{Admission, JobId, Refusal, Table};

/// A mailbox that counts the outcomes it received.
#[derive(Debug, Clone, Default)]
struct Mailbox(Arc<AtomicUsize>);

impl Mailbox {
    fn received(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A launch that counts how often it came out of the table (run or dropped).
#[derive(Debug, Clone, Default)]
struct Launch(Arc<AtomicUsize>);

impl Launch {
    fn take(self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn taken(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

type ModelTable = Table<u8, u8, u8, Mailbox, Launch>;

fn deliver(mailboxes: Slab<Mailbox>) {
    for mailbox in mailboxes {
        mailbox.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A joiner leaving races the job's end: its mailbox is either taken back (never delivered)
/// or delivered exactly once, never both, never neither.
#[test]
fn loom_leave_races_finish() {
    loom::model(|| {
        let table = Arc::new(ModelTable::new(1, 1));
        let starter_box = Mailbox::default();
        let launch = Launch::default();
        let Admission::Started { waiter: starter } =
            table.admit(1, 10, |_| starter_box.clone(), || (0, launch.clone()))
        else {
            panic!("a free slot starts the job");
        };
        // Started: the caller holds the closure and launches it itself.
        launch.clone().take();

        let joiner_box = Mailbox::default();
        let joiner = {
            let table = Arc::clone(&table);
            let joiner_box = joiner_box.clone();
            thread::spawn(move || {
                // May find the job ended already: then there is nothing to leave.
                let Ok((waiter, deadline)) = table.join(&1, joiner_box) else {
                    return None;
                };
                assert_eq!(deadline, None);
                let left = table.leave(waiter);
                assert!(left.abandoned.is_none(), "a running job is never abandoned");
                Some(left.mailbox.is_some())
            })
        };
        let finisher = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let finished = table.finish(starter.job).expect("the job runs");
                assert!(finished.next.is_none());
                deliver(finished.waiters);
            })
        };
        let took_back = joiner.join().unwrap();
        finisher.join().unwrap();

        assert_eq!(starter_box.received(), 1);
        match took_back {
            None => assert_eq!(joiner_box.received(), 0, "never registered"),
            Some(true) => assert_eq!(joiner_box.received(), 0, "taken back: not delivered"),
            Some(false) => assert_eq!(joiner_box.received(), 1, "let go: delivered once"),
        }
        assert_eq!(launch.taken(), 1);
        assert!(table.is_empty());
    });
}

/// The last waiter of a queued job leaving races the slot freeing up and the deadline firing:
/// the queued job's launch comes out exactly once (abandoned, started or expired), and its
/// waiter's mailbox is taken back or delivered exactly once.
#[test]
fn loom_queued_job_leave_races_promotion_and_expiry() {
    loom::model(|| {
        let table = Arc::new(ModelTable::new(1, 1));
        let first_launch = Launch::default();
        let Admission::Started { waiter: first } =
            table.admit(1, 10, |_| Mailbox::default(), || (0, first_launch.clone()))
        else {
            panic!("a free slot starts the job");
        };
        first_launch.clone().take();
        let queued_box = Mailbox::default();
        let queued_launch = Launch::default();
        let Admission::Queued {
            waiter: queued,
            deadline,
        } = table.admit(2, 20, |_| queued_box.clone(), || (7, queued_launch.clone()))
        else {
            panic!("a full slot queues the job");
        };
        assert_eq!(deadline, 7);

        let leaver = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let left = table.leave(queued);
                if let Some(launch) = left.abandoned {
                    launch.take();
                }
                left.mailbox.is_some()
            })
        };
        let finisher = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let finished = table.finish(first.job).expect("the first job runs");
                deliver(finished.waiters);
                // The promoted job "runs" and ends at once, as a job task would.
                if let Some((next, launch)) = finished.next {
                    launch.take();
                    let ended = table.finish(next).expect("the promoted job runs");
                    deliver(ended.waiters);
                }
            })
        };
        let expirer = {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                if let Some(expired) = table.expire(queued.job) {
                    deliver(expired.waiters);
                    expired.launch.take();
                }
            })
        };
        let took_back = leaver.join().unwrap();
        finisher.join().unwrap();
        expirer.join().unwrap();

        assert_eq!(
            queued_launch.taken(),
            1,
            "started, abandoned or expired: once"
        );
        assert_eq!(queued_box.received(), usize::from(!took_back));
        assert_eq!(first_launch.taken(), 1);
        assert!(table.is_empty());
        assert_eq!((table.running(), table.queued()), (0, 0));
    });
}

/// Two callers asking for the same key at once share one job, while one of them also asks
/// for another key: exactly one job per key starts, and no caller ever owns two (the table's
/// invariant 5, checked under the lock at every transition).
#[test]
fn loom_concurrent_admissions_share_one_job_per_key() {
    loom::model(|| {
        let table = Arc::new(ModelTable::new(2, 0));
        let request = |key: u8, caller: u8| {
            let table = Arc::clone(&table);
            thread::spawn(move || {
                let admission = table.admit(
                    key,
                    caller,
                    |_| Mailbox::default(),
                    || (0, Launch::default()),
                );
                assert!(table.running() <= 2, "slot limit");
                match admission {
                    Admission::Started { waiter } => Some((key, waiter.job)),
                    Admission::Joined { .. } => None,
                    Admission::Queued { .. } => panic!("the queue holds nothing"),
                    Admission::Refused(reason) => {
                        // alice owns the job of her other key.
                        assert_eq!((caller, reason), (10, Refusal::CallerBusy));
                        None
                    }
                }
            })
        };
        let alice = request(1, 10);
        let bob = request(1, 20);
        let alice_again = request(2, 10);
        let started: Vec<(u8, JobId)> = [alice, bob, alice_again]
            .into_iter()
            .filter_map(|thread| thread.join().unwrap())
            .collect();
        let jobs_for = |key: u8| started.iter().filter(|(k, _)| *k == key).count();
        assert_eq!(jobs_for(1), 1, "alice and bob share one job");
        assert!(jobs_for(2) <= 1);
        for (_, job) in started {
            let finished = table.finish(job).expect("started jobs run");
            assert!(finished.next.is_none());
            deliver(finished.waiters);
        }
        assert!(table.is_empty());
    });
}
