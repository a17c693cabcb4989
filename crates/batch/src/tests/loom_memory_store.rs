//! loom: two workers and a cancel race on the in-memory store's one lock. Each job must stay
//! serial (at most one claim out), every transition keeps the state machine's invariants
//! (checked inside each call in debug builds), and the final statuses follow the rules.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use crate::job::{Caller, JobId, JobStatus, TargetState};
use crate::store::memory::State;
use crate::store::{CancelOutcome, MemoryStore, NewJob};
use crate::time::Timestamp;

const NOW: Timestamp = Timestamp::from_micros(1);

fn submit(store: &MemoryStore, caller: &str, targets: usize) -> JobId {
    store
        .with(|s| {
            s.submit(NewJob::new(
                Caller::new(caller),
                vec!["0".to_owned(); targets],
                NOW,
                10,
            ))
        })
        .unwrap()
        .id
}

/// Claims and completes up to `rounds` targets, checking that no job has two claims out.
fn work(store: &MemoryStore, out: &[AtomicUsize; 2], rounds: usize) {
    for _ in 0..rounds {
        let Some(claim) = store.with(|s| s.claim(NOW, None)) else {
            continue;
        };
        let slot = &out[claim.job.get() as usize - 1];
        assert_eq!(
            slot.fetch_add(1, Ordering::SeqCst),
            0,
            "two claims out for one job"
        );
        slot.fetch_sub(1, Ordering::SeqCst);
        let done = TargetState::Done {
            output_json: "1".into(),
        };
        store.with(|s| s.complete(&claim, done, NOW));
    }
}

fn drain(store: &MemoryStore) {
    while let Some(claim) = store.with(|s| s.claim(NOW, None)) {
        let done = TargetState::Done {
            output_json: "1".into(),
        };
        store.with(|s| s.complete(&claim, done, NOW));
    }
}

#[test]
fn loom_two_workers_and_a_cancel() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    builder.check(|| {
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let store = Arc::new(MemoryStore::new());
        let out = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let a = submit(&store, "ann", 2);
        let b = submit(&store, "bob", 1);
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (store, out) = (Arc::clone(&store), Arc::clone(&out));
                thread::spawn(move || work(&store, &out, 2))
            })
            .collect();
        let cancelled = store.with(|s| s.cancel(a, &Caller::new("ann"), NOW));
        for worker in workers {
            worker.join().unwrap();
        }
        drain(&store);
        let job_a = store
            .with(|s: &mut State| s.status(a, &Caller::new("ann")))
            .unwrap();
        let job_b = store
            .with(|s: &mut State| s.status(b, &Caller::new("bob")))
            .unwrap();
        assert_eq!(job_b.status, JobStatus::Done);
        match cancelled {
            CancelOutcome::Cancelled(_) => {
                assert_eq!(job_a.status, JobStatus::Cancelled);
                let stored = job_a.counts().done;
                assert!(
                    job_a.targets[stored..]
                        .iter()
                        .all(|t| t.state == TargetState::Pending),
                    "stored targets form a prefix"
                );
            }
            CancelOutcome::Terminal => assert_eq!(job_a.status, JobStatus::Done),
            CancelOutcome::NotFound => panic!("the job exists"),
        }
        assert_eq!(store.with(|s| s.live_jobs()), 0);
    });
    // The model explored many interleavings, not one.
    assert!(RUNS.load(std::sync::atomic::Ordering::Relaxed) > 10);
}
