//! Pages of jobs and of one job's targets (`lockgate_batch::page`) over every store: paging
//! to the end sees every row once, in order, with and without a filter; a key is a place,
//! not a count (a job submitted between two pages shifts nothing); scopes hold; a limit is
//! clamped.

use lockgate_batch::page::{JobListing, JobsQuery, MAX_PAGE, Scope, TargetKind, TargetsQuery};
use lockgate_batch::store::Store;
use lockgate_batch::{Caller, Job, JobId, JobStatus, Runner, StatusError};

use super::harness::{Plan, Target, oks, targets};
use super::{caller, config, start};

/// Every job `scope` covers (in `status`, if named), read `limit` at a time to the end: the
/// ids in page order, each page checked to hold at most `limit` rows and to hand out the key
/// of its last row exactly when a row follows.
async fn every_job(
    runner: &Runner<Target, String>,
    scope: &Scope,
    status: Option<JobStatus>,
    limit: usize,
) -> Vec<JobListing> {
    let mut seen = Vec::new();
    let mut query = JobsQuery::new().limit(limit);
    if let Some(status) = status {
        query = query.status(status);
    }
    loop {
        let page = runner.jobs_page(scope, &query).await.unwrap();
        assert!(page.jobs.len() <= limit, "{page:?}");
        seen.extend(page.jobs.iter().cloned());
        match page.next {
            Some(next) => {
                assert_eq!(Some(next), page.jobs.last().map(|j| j.summary.id));
                query = query.before(next);
            }
            None => return seen,
        }
    }
}

/// Every target of job `id` (in `state`, if named), read `limit` at a time to the end: their
/// indexes, each page checked as in [`every_job`] and against the job's snapshot.
async fn every_target(
    runner: &Runner<Target, String>,
    scope: &Scope,
    id: JobId,
    state: Option<TargetKind>,
    limit: usize,
    snapshot: &Job,
) -> Vec<usize> {
    let mut seen = Vec::new();
    let mut query = TargetsQuery::new().limit(limit);
    if let Some(state) = state {
        query = query.state(state);
    }
    loop {
        let page = runner.targets_page(scope, id, &query).await.unwrap();
        assert_eq!(page.job.summary.id, id);
        assert!(page.targets.len() <= limit, "{page:?}");
        for target in &page.targets {
            assert_eq!(
                target.entry, snapshot.targets[target.index],
                "the snapshot's"
            );
            seen.push(target.index);
        }
        match page.next {
            Some(next) => {
                assert_eq!(Some(next), page.targets.last().map(|t| t.index));
                query = query.after(next);
            }
            None => return seen,
        }
    }
}

fn ids(jobs: &[JobListing]) -> Vec<JobId> {
    jobs.iter().map(|job| job.summary.id).collect()
}

pub async fn paging_sees_every_job_and_target_once_in_order<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(2)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    // Ann's and Bob's jobs interleaved, each run to its end; Ann's partial or done.
    let mut anns = Vec::new();
    let mut bobs = Vec::new();
    for n in 0..7 {
        let plans = if n % 3 == 0 {
            vec![Plan::Ok, Plan::Fail]
        } else {
            vec![Plan::Ok]
        };
        let key = format!("k{n}");
        let id = runner
            .submit_keyed(&ann, &key, &targets(&format!("a{n}"), &plans))
            .await
            .unwrap();
        runner.wait(&ann, id).await.unwrap();
        anns.push((id, key));
        if n % 2 == 0 {
            let id = runner
                .submit(&bob, &oks(&format!("b{n}"), 1))
                .await
                .unwrap();
            runner.wait(&bob, id).await.unwrap();
            bobs.push(id);
        }
    }
    let newest_first: Vec<JobId> = anns.iter().rev().map(|(id, _)| *id).collect();
    let mine = Scope::Caller(ann.clone());
    for limit in [1, 2, 3, 50] {
        let seen = every_job(&runner, &mine, None, limit).await;
        assert_eq!(ids(&seen), newest_first, "limit {limit}");
        for job in &seen {
            assert_eq!(job.caller, ann);
            let key = &anns.iter().find(|(id, _)| *id == job.summary.id).unwrap().1;
            assert_eq!(job.key.as_ref(), Some(key));
            let summary = runner.summary(&ann, job.summary.id).await.unwrap();
            assert_eq!(job.summary, summary);
        }
    }
    // A filter: the same as filtering the caller's job list.
    let listed = runner.jobs(&ann).await.unwrap();
    for status in [JobStatus::Partial, JobStatus::Done, JobStatus::Queued] {
        let mut expected: Vec<JobId> = listed
            .iter()
            .filter(|job| job.status == status)
            .map(|job| job.id)
            .collect();
        expected.reverse();
        let seen = every_job(&runner, &mine, Some(status), 2).await;
        assert_eq!(ids(&seen), expected, "{status}");
    }
    // Everyone's: both callers', newest first.
    let mut all: Vec<JobId> = anns.iter().map(|(id, _)| *id).chain(bobs).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    let everyone = every_job(&runner, &Scope::Everyone, None, 4).await;
    assert_eq!(ids(&everyone), all);

    // One job of 23 targets, every fourth failing: its targets page by page.
    let plans: Vec<Plan> = (0..23)
        .map(|i| if i % 4 == 1 { Plan::Fail } else { Plan::Ok })
        .collect();
    let big = runner.submit(&ann, &targets("t", &plans)).await.unwrap();
    let snapshot = runner.wait(&ann, big).await.unwrap();
    let failed: Vec<usize> = (0..23).filter(|i| i % 4 == 1).collect();
    let done: Vec<usize> = (0..23).filter(|i| i % 4 != 1).collect();
    for scope in [&mine, &Scope::Everyone] {
        for limit in [1, 5, 500] {
            let all = every_target(&runner, scope, big, None, limit, &snapshot).await;
            assert_eq!(all, (0..23).collect::<Vec<_>>(), "limit {limit}");
        }
        let only = |state| every_target(&runner, scope, big, Some(state), 2, &snapshot);
        assert_eq!(only(TargetKind::Failed).await, failed);
        assert_eq!(only(TargetKind::Done).await, done);
        assert_eq!(only(TargetKind::Pending).await, Vec::<usize>::new());
    }
    runner.close().await;
}

pub async fn a_page_key_is_a_place_not_a_count<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let mut submitted = Vec::new();
    for n in 0..5 {
        let id = runner
            .submit(&ann, &oks(&format!("a{n}"), 1))
            .await
            .unwrap();
        runner.wait(&ann, id).await.unwrap();
        submitted.push(id);
    }
    let mine = Scope::Caller(ann.clone());
    let first = runner
        .jobs_page(&mine, &JobsQuery::new().limit(2))
        .await
        .unwrap();
    assert_eq!(ids(&first.jobs), [submitted[4], submitted[3]]);
    // Two newer jobs arrive between the pages: the next page starts where the first ended,
    // as a key does (by row count it would repeat jobs 3 and 4).
    for n in 5..7 {
        let id = runner
            .submit(&ann, &oks(&format!("a{n}"), 1))
            .await
            .unwrap();
        runner.wait(&ann, id).await.unwrap();
    }
    let next = first.next.expect("more jobs follow");
    let rest = runner
        .jobs_page(&mine, &JobsQuery::new().before(next).limit(10))
        .await
        .unwrap();
    assert_eq!(ids(&rest.jobs), [submitted[2], submitted[1], submitted[0]]);
    assert_eq!(rest.next, None);
    // A key no page handed out bounds a page all the same.
    let above = JobId::new(submitted[2].get() + 1);
    let from = runner
        .jobs_page(&mine, &JobsQuery::new().before(above).limit(1))
        .await
        .unwrap();
    assert_eq!(
        (ids(&from.jobs), from.next),
        (vec![submitted[2]], Some(submitted[2]))
    );
    runner.close().await;
}

pub async fn pages_keep_to_their_scope<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let theirs = runner
        .submit_keyed(&bob, "bobs", &targets("b", &[Plan::Ok, Plan::Fail]))
        .await
        .unwrap();
    runner.wait(&bob, theirs).await.unwrap();
    let as_ann = Scope::Caller(ann.clone());
    assert!(matches!(
        runner.job(&as_ann, theirs).await,
        Err(StatusError::NotFound)
    ));
    assert!(matches!(
        runner
            .targets_page(&as_ann, theirs, &TargetsQuery::new())
            .await,
        Err(StatusError::NotFound)
    ));
    let anns = runner.jobs_page(&as_ann, &JobsQuery::new()).await.unwrap();
    assert!(anns.jobs.is_empty() && anns.next.is_none(), "{anns:?}");
    // An operator sees it, with whose it is and its key.
    let seen = runner.job(&Scope::Everyone, theirs).await.unwrap();
    assert_eq!(
        (seen.caller, seen.key.as_deref()),
        (Caller::new("bob"), Some("bobs"))
    );
    let page = runner
        .targets_page(&Scope::Everyone, theirs, &TargetsQuery::new())
        .await
        .unwrap();
    assert_eq!(page.targets.len(), 2);
    let everyone = runner
        .jobs_page(&Scope::Everyone, &JobsQuery::new())
        .await
        .unwrap();
    assert_eq!(ids(&everyone.jobs), [theirs]);
    // An id never minted is unknown to everyone.
    let ghost = JobId::new(theirs.get() + 1_000);
    assert!(matches!(
        runner.job(&Scope::Everyone, ghost).await,
        Err(StatusError::NotFound)
    ));
    runner.close().await;
}

pub async fn a_million_rows_asked_for_are_one_full_page<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    // Held at its first target, then cancelled: the rest stay pending.
    let mut plans = vec![Plan::Hold];
    plans.extend(std::iter::repeat_n(Plan::Ok, MAX_PAGE + 20));
    let id = runner.submit(&ann, &targets("a", &plans)).await.unwrap();
    super::started(&recorder, "a1").await;
    assert!(runner.cancel(&ann, id).await.unwrap());
    let mine = Scope::Caller(ann.clone());
    let page = runner
        .targets_page(&mine, id, &TargetsQuery::new().limit(1_000_000))
        .await
        .unwrap();
    assert_eq!(page.targets.len(), MAX_PAGE);
    assert_eq!(page.next, Some(MAX_PAGE - 1));
    let rest = runner
        .targets_page(
            &mine,
            id,
            &TargetsQuery::new().after(MAX_PAGE - 1).limit(1_000_000),
        )
        .await
        .unwrap();
    assert_eq!(rest.targets.len(), 21);
    assert_eq!(rest.next, None);
    // 0 is clamped to one row.
    let one = runner
        .targets_page(&mine, id, &TargetsQuery::new().limit(0))
        .await
        .unwrap();
    assert_eq!((one.targets.len(), one.next), (1, Some(0)));
    let jobs = runner
        .jobs_page(&mine, &JobsQuery::new().limit(1_000_000))
        .await
        .unwrap();
    assert_eq!((ids(&jobs.jobs), jobs.next), (vec![id], None));
    recorder.release.add_permits(1);
    runner.close().await;
}
