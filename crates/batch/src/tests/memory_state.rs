//! The in-memory store's state machine, call by call: the rotation, fencing, leases,
//! cancel and eviction; idempotency keys, summaries, job lists and the counts each call
//! reports.

use std::time::Duration;

use crate::error::SubmitError;
use crate::hooks::TargetOutcome;
use crate::job::{Caller, Counts, JobId, JobStatus, TargetState};
use crate::store::memory::State;
use crate::store::{CancelOutcome, Completion, NewJob};
use crate::summary::Progress;
use crate::time::Timestamp;

fn at(ms: u64) -> Timestamp {
    Timestamp::from_micros(ms * 1000)
}

fn submit(state: &mut State, caller: &str, targets: usize) -> JobId {
    state
        .submit(NewJob::new(
            Caller::new(caller),
            (0..targets).map(|i| format!("\"{caller}{i}\"")).collect(),
            at(0),
            100,
        ))
        .unwrap()
        .id
}

fn done(text: &str) -> TargetState {
    TargetState::Done {
        output_json: text.to_owned(),
    }
}

#[test]
fn rotation_alternates_and_skips_jobs_in_flight() {
    let mut s = State::default();
    let a = submit(&mut s, "a", 2);
    let b = submit(&mut s, "b", 2);
    let c = submit(&mut s, "c", 1);
    let first = s.claim(at(0), None).unwrap();
    let second = s.claim(at(0), None).unwrap();
    let third = s.claim(at(0), None).unwrap();
    assert_eq!([first.job, second.job, third.job], [a, b, c]);
    assert!(
        s.claim(at(0), None).is_none(),
        "every job has a target in flight"
    );
    assert!(matches!(
        s.complete(&second, done("1"), at(1)),
        Completion::Stored { ended: None, .. }
    ));
    let next = s.claim(at(1), None).unwrap();
    assert_eq!((next.job, next.index), (b, 1), "b is the only ready job");
    assert!(s.claim(at(1), None).is_none());
}

#[test]
fn busy_job_waits_for_its_retry_time() {
    let mut s = State::default();
    let a = submit(&mut s, "a", 1);
    let claim = s.claim(at(0), None).unwrap();
    assert!(s.retry_later(&claim, at(0), at(10)));
    assert_eq!(s.next_wakeup(), Some(at(10)));
    assert!(s.claim(at(9), None).is_none());
    let again = s.claim(at(10), None).unwrap();
    assert_eq!((again.job, again.busy_since), (a, Some(at(0))));
    assert_eq!(s.next_wakeup(), None);
}

#[test]
fn stale_tokens_store_nothing() {
    let mut s = State::default();
    let a = submit(&mut s, "a", 2);
    let claim = s.claim(at(0), None).unwrap();
    assert_eq!(s.recover(), 1, "recovery frees the claim of a dead process");
    let fresh = s.claim(at(1), None).unwrap();
    assert_eq!((fresh.job, fresh.index), (a, 0));
    assert!(fresh.token > claim.token);
    assert_eq!(s.complete(&claim, done("old"), at(2)), Completion::Stale);
    assert!(!s.retry_later(&claim, at(2), at(3)));
    assert!(!s.release(&claim));
    assert!(!s.renew(&claim, at(2), None));
    assert!(matches!(
        s.complete(&fresh, done("new"), at(2)),
        Completion::Stored { .. }
    ));
    let job = s.status(a, &Caller::new("a")).unwrap();
    assert_eq!(job.targets[0].state, done("new"));
}

#[test]
fn lapsed_lease_is_rescued_and_renewal_keeps_it() {
    let mut s = State::default();
    let lease = Some(Duration::from_millis(100));
    let a = submit(&mut s, "a", 1);
    let claim = s.claim(at(0), lease).unwrap();
    assert!(s.renew(&claim, at(90), lease), "renewed before it lapsed");
    assert!(s.claim(at(150), lease).is_none(), "renewed until 190 ms");
    let rescue = s.claim(at(190), lease).unwrap();
    assert_eq!((rescue.job, s.rescued()), (a, 1));
    assert!(!s.renew(&claim, at(191), lease), "the old holder lost it");
    assert_eq!(s.complete(&claim, done("late"), at(192)), Completion::Stale);
    let stored = s.complete(&rescue, done("1"), at(193));
    assert!(matches!(stored, Completion::Stored { ended: Some(_), .. }));
}

#[test]
fn cancel_keeps_the_claim_out_and_never_overwrites_cancelled() {
    let mut s = State::default();
    let ann = Caller::new("a");
    let a = submit(&mut s, "a", 3);
    let claim = s.claim(at(0), None).unwrap();
    let CancelOutcome::Cancelled(ended) = s.cancel(a, &ann, at(5)) else {
        panic!("a live job cancels");
    };
    assert_eq!((ended.status, ended.live_jobs), (JobStatus::Cancelled, 0));
    assert_eq!(s.cancel(a, &ann, at(6)), CancelOutcome::Terminal);
    assert_eq!(
        s.evict_oldest(0).jobs,
        0,
        "a job with a claim out is never evicted"
    );
    let stored = s.complete(&claim, done("1"), at(7));
    assert!(matches!(stored, Completion::Stored { ended: None, .. }));
    assert!(s.claim(at(8), None).is_none(), "no further target starts");
    let job = s.status(a, &ann).unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);
    assert_eq!(job.counts().pending, 2);
    assert_eq!(s.evict_oldest(0).jobs, 1, "now it may go");
}

#[test]
fn submit_limits_are_atomic_with_the_live_count() {
    let mut s = State::default();
    let job = |caller: &str, max| NewJob::new(Caller::new(caller), vec!["1".into()], at(0), max);
    let a = s.submit(job("a", 2)).unwrap().id;
    assert!(matches!(
        s.submit(job("a", 2)),
        Err(SubmitError::CallerBusy { live }) if live == a
    ));
    s.submit(job("b", 2)).unwrap();
    assert!(matches!(s.submit(job("c", 2)), Err(SubmitError::Full)));
    assert_eq!(s.live_jobs(), 2);
}

#[test]
fn eviction_is_least_recently_touched_first_and_exact_in_bytes() {
    let mut s = State::default();
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        let id = submit(&mut s, name, 1); // target JSON: "\"a0\"" = 4 bytes
        let claim = s.claim(at(0), None).unwrap();
        s.complete(&claim, done("12345"), at(1)); // 5 bytes
        ids.push(id);
    }
    assert_eq!(s.stored_bytes(), 27);
    assert!(s.touch(ids[0], &Caller::new("a")));
    assert!(!s.touch(ids[1], &Caller::new("a")), "another caller's job");
    assert_eq!(s.evict_oldest(27).jobs, 0, "at the budget is fine");
    let evicted = s.evict_oldest(26);
    assert_eq!((evicted.jobs, evicted.bytes), (1, 9));
    assert!(
        s.status(ids[1], &Caller::new("b")).is_none(),
        "b was touched least recently"
    );
    assert_eq!(s.evict_oldest(0).jobs, 2);
    assert_eq!(s.stored_bytes(), 0);
}

#[test]
fn live_jobs_are_never_evicted() {
    let mut s = State::default();
    submit(&mut s, "a", 3);
    assert_eq!(s.evict_oldest(0), crate::store::Evicted::default());
    assert_eq!(s.live_jobs(), 1);
}

fn failed(text: &str) -> TargetState {
    TargetState::Failed {
        error: text.to_owned(),
        hint: None,
    }
}

fn counts(pending: usize, done: usize, failed: usize) -> Counts {
    Counts {
        pending,
        done,
        failed,
    }
}

fn keyed(caller: &str, key: &str, targets: usize, max_live_jobs: usize) -> NewJob {
    NewJob::new(
        Caller::new(caller),
        (0..targets).map(|i| format!("\"{caller}{i}\"")).collect(),
        at(0),
        max_live_jobs,
    )
    .with_key(key)
}

#[test]
fn a_key_returns_the_callers_stored_job_before_any_refusal() {
    let mut s = State::default();
    let first = s.submit(keyed("a", "k1", 2, 1)).unwrap();
    assert!(!first.existing);
    // Same caller and key: the same job, though the store is full and the caller busy.
    let again = s.submit(keyed("a", "k1", 5, 1)).unwrap();
    assert_eq!(
        (again.id, again.existing, again.live_jobs),
        (first.id, true, 1)
    );
    assert_eq!(
        s.summary(first.id, &Caller::new("a")).unwrap().counts,
        counts(2, 0, 0),
        "the second submit's targets are ignored"
    );
    // Another key is a new job: refused as usual.
    assert!(matches!(
        s.submit(keyed("a", "k2", 1, 10)),
        Err(SubmitError::CallerBusy { live }) if live == first.id
    ));
    // Another caller's key is its own.
    let b = s.submit(keyed("b", "k1", 1, 10)).unwrap();
    assert!(!b.existing && b.id != first.id);
}

#[test]
fn a_key_holds_after_the_job_ended_until_it_is_evicted() {
    let mut s = State::default();
    let first = s.submit(keyed("a", "k", 1, 10)).unwrap();
    let claim = s.claim(at(0), None).unwrap();
    s.complete(&claim, done("1"), at(1));
    let again = s.submit(keyed("a", "k", 1, 10)).unwrap();
    assert_eq!(
        (again.id, again.existing, again.live_jobs),
        (first.id, true, 0)
    );
    assert_eq!(s.evict_oldest(0).jobs, 1);
    let fresh = s.submit(keyed("a", "k", 1, 10)).unwrap();
    assert!(!fresh.existing && fresh.id != first.id, "the key was freed");
}

#[test]
fn claims_say_whether_they_started_their_job() {
    let mut s = State::default();
    submit(&mut s, "a", 2);
    let first = s.claim(at(0), None).unwrap();
    assert!(first.started);
    assert!(s.release(&first));
    let again = s.claim(at(1), None).unwrap();
    assert!(!again.started, "the job was running already");
}

#[test]
fn completions_report_progress_and_endings_their_counts() {
    let mut s = State::default();
    let a = submit(&mut s, "a", 2);
    let ann = Caller::new("a");
    let claim = s.claim(at(0), None).unwrap();
    let Completion::Stored {
        progress, ended, ..
    } = s.complete(&claim, failed("x"), at(1))
    else {
        panic!("stored")
    };
    assert_eq!(ended, None);
    assert_eq!(
        progress,
        Progress::new(
            JobStatus::Running,
            counts(1, 0, 1),
            Some((0, TargetOutcome::Failed))
        )
    );
    let claim = s.claim(at(1), None).unwrap();
    let Completion::Stored {
        progress, ended, ..
    } = s.complete(&claim, done("1"), at(2))
    else {
        panic!("stored")
    };
    assert_eq!(
        progress,
        Progress::new(
            JobStatus::Partial,
            counts(0, 1, 1),
            Some((1, TargetOutcome::Done))
        )
    );
    let ended = ended.expect("the last target ends the job");
    assert_eq!(
        (ended.job, ended.status, ended.counts),
        (a, JobStatus::Partial, counts(0, 1, 1))
    );
    let summary = s.summary(a, &ann).unwrap();
    assert_eq!(
        (summary.id, summary.status, summary.counts),
        (a, JobStatus::Partial, counts(0, 1, 1))
    );
    assert_eq!(summary.updated, at(2).to_system_time());
}

#[test]
fn counts_after_a_cancel_with_a_target_in_flight() {
    let mut s = State::default();
    let a = submit(&mut s, "a", 3);
    let ann = Caller::new("a");
    let claim = s.claim(at(0), None).unwrap();
    let CancelOutcome::Cancelled(ended) = s.cancel(a, &ann, at(1)) else {
        panic!("cancelled")
    };
    assert_eq!((ended.job, ended.counts), (a, counts(3, 0, 0)));
    // The in-flight target is still stored; the job stays cancelled.
    let Completion::Stored {
        progress, ended, ..
    } = s.complete(&claim, done("1"), at(2))
    else {
        panic!("stored")
    };
    assert_eq!(ended, None);
    assert_eq!(
        (progress.status, progress.counts),
        (JobStatus::Cancelled, counts(2, 1, 0))
    );
    let summary = s.summary(a, &ann).unwrap();
    assert_eq!(
        (summary.status, summary.counts),
        (JobStatus::Cancelled, counts(2, 1, 0))
    );
}

#[test]
fn summaries_and_job_lists_are_per_caller_in_submit_order_until_eviction() {
    let mut s = State::default();
    let ann = Caller::new("a");
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = submit(&mut s, "a", 1);
        let claim = s.claim(at(0), None).unwrap();
        s.complete(&claim, done("1"), at(1));
        ids.push(id);
    }
    let b = submit(&mut s, "b", 2);
    let listed: Vec<JobId> = s.jobs_of(&ann).iter().map(|j| j.id).collect();
    assert_eq!(listed, ids);
    assert!(s.jobs_of(&ann).iter().all(|j| j.counts == counts(0, 1, 0)));
    assert_eq!(s.jobs_of(&Caller::new("b"))[0].id, b);
    assert_eq!(s.summary(b, &ann), None, "another caller's job");
    assert!(s.jobs_of(&Caller::new("nobody")).is_empty());
    assert_eq!(s.evict_oldest(0).jobs, 3);
    assert_eq!(s.summary(ids[0], &ann), None, "evicted");
    assert!(s.jobs_of(&ann).is_empty());
    assert_eq!(s.jobs_of(&Caller::new("b")).len(), 1, "live jobs stay");
}
