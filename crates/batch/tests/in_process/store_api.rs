//! The store API a service builds on, checked the same way over every store: the in-memory
//! store (with and without leases), SQLite on a file, and PostgreSQL (skipped, saying why,
//! without the gate's server).
//!
//! Each check is one `async fn` over any [`Store`]; `store_api!` runs every check over one
//! store constructor. The checks: an idempotency key returns the same job (`existing`),
//! `CallerBusy` names the live job, `summary` counts follow claim, complete, cancel and
//! eviction, `jobs` lists a caller's jobs in submit order, `Claim::started`,
//! `Completion::Stored`'s progress and `Ended`'s counts.

use std::time::Duration;

use lockgate_batch::store::{CancelOutcome, Completion, NewJob};
use lockgate_batch::store::{ClaimEnd, Store, Timestamp};
use lockgate_batch::{
    Caller, Counts, JobId, JobStatus, Progress, SubmitError, TargetOutcome, TargetState,
};

fn at(ms: u64) -> Timestamp {
    Timestamp::from_micros(1_000_000 + ms * 1000)
}

fn counts(pending: usize, done: usize, failed: usize) -> Counts {
    Counts::new(pending, done, failed)
}

fn job(caller: &str, targets: usize) -> NewJob {
    NewJob::new(
        Caller::new(caller),
        (0..targets).map(|i| format!("\"{caller}{i}\"")).collect(),
        at(0),
        10,
    )
}

fn done(text: &str) -> TargetState {
    TargetState::Done {
        output_json: format!("\"{text}\""),
    }
}

fn failed(text: &str) -> TargetState {
    TargetState::Failed {
        error: text.to_owned(),
        hint: None,
    }
}

async fn summary_of(store: &impl Store, id: JobId, caller: &str) -> (JobStatus, Counts) {
    let summary = store
        .summary(id, &Caller::new(caller))
        .await
        .unwrap()
        .expect("the job is stored");
    assert_eq!(summary.id, id);
    (summary.status, summary.counts)
}

/// A keyed submit returns the caller's stored job (ignoring the new targets) before any
/// refusal; another key is refused as usual, naming the live job; keys are per caller.
async fn keys_return_the_same_job(store: impl Store) {
    let first = store.submit(job("ann", 2).with_key("k1")).await.unwrap();
    assert!(!first.existing);
    let mut full = job("ann", 5).with_key("k1");
    full.max_live_jobs = 1;
    let again = store.submit(full).await.unwrap();
    assert_eq!(
        (again.id, again.existing, again.live_jobs),
        (first.id, true, 1)
    );
    assert_eq!(
        summary_of(&store, first.id, "ann").await,
        (JobStatus::Queued, counts(2, 0, 0)),
        "the repeated submit's targets are ignored"
    );
    let refused = store.submit(job("ann", 1).with_key("k2")).await;
    assert!(
        matches!(refused, Err(SubmitError::CallerBusy { live }) if live == first.id),
        "{refused:?}"
    );
    let bob = store.submit(job("bob", 1).with_key("k1")).await.unwrap();
    assert!(!bob.existing && bob.id != first.id, "keys are per caller");
    // After the job ended, the key still finds it; after eviction, it is free again.
    store
        .cancel(first.id, &Caller::new("ann"), at(1))
        .await
        .unwrap();
    let ended = store.submit(job("ann", 1).with_key("k1")).await.unwrap();
    assert_eq!((ended.id, ended.existing), (first.id, true));
    assert_eq!(store.evict_oldest(0).await.unwrap().jobs, 1);
    let fresh = store.submit(job("ann", 1).with_key("k1")).await.unwrap();
    assert!(!fresh.existing && fresh.id != first.id, "the key was freed");
}

/// Counts and statuses through a whole job: claims (the first starts it), stored targets
/// (each reporting its progress), the end (with its counts), and eviction.
async fn counts_follow_the_job(store: impl Store) {
    let id = store.submit(job("ann", 3)).await.unwrap().id;
    assert_eq!(
        summary_of(&store, id, "ann").await,
        (JobStatus::Queued, counts(3, 0, 0))
    );
    let results = [done("a"), failed("b"), done("c")];
    let expected = [
        (JobStatus::Running, counts(2, 1, 0), TargetOutcome::Done),
        (JobStatus::Running, counts(1, 1, 1), TargetOutcome::Failed),
        (JobStatus::Partial, counts(0, 2, 1), TargetOutcome::Done),
    ];
    for (index, (result, (status, after, outcome))) in results.into_iter().zip(expected).enumerate()
    {
        let now = at(10 * index as u64 + 10);
        let claim = store.claim(now).await.unwrap().expect("a ready target");
        assert_eq!((claim.job, claim.index), (id, index));
        assert_eq!(
            claim.started,
            index == 0,
            "only the first claim starts the job"
        );
        let Completion::Stored {
            progress, ended, ..
        } = store
            .finish(&claim, ClaimEnd::Stored(result), now, false)
            .await
            .unwrap()
            .completion
        else {
            panic!("the claim is current");
        };
        assert_eq!(
            progress,
            Progress::new(status, after, Some((index, outcome)))
        );
        assert_eq!(summary_of(&store, id, "ann").await, (status, after));
        match ended {
            None => assert!(index < 2, "only the last target ends the job"),
            Some(ended) => {
                assert_eq!(
                    (ended.job, ended.status, ended.counts, ended.live_jobs),
                    (id, JobStatus::Partial, after, 0)
                );
                assert_eq!(ended.after, Duration::from_millis(30));
            }
        }
    }
    let summary = store
        .summary(id, &Caller::new("ann"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (summary.created, summary.updated),
        (at(0).to_system_time(), at(30).to_system_time())
    );
    assert_eq!(
        store.summary(id, &Caller::new("bob")).await.unwrap(),
        None,
        "another caller's job is not found"
    );
    assert_eq!(store.evict_oldest(0).await.unwrap().jobs, 1);
    assert_eq!(store.summary(id, &Caller::new("ann")).await.unwrap(), None);
}

/// A cancel keeps the counts as they are (pending stays pending); the in-flight target is
/// still stored and counted, and the job stays cancelled.
async fn counts_after_a_cancel(store: impl Store) {
    let ann = Caller::new("ann");
    let id = store.submit(job("ann", 3)).await.unwrap().id;
    let claim = store.claim(at(1)).await.unwrap().unwrap();
    let CancelOutcome::Cancelled(ended) = store.cancel(id, &ann, at(2)).await.unwrap() else {
        panic!("the job was live");
    };
    assert_eq!(
        (ended.job, ended.status, ended.counts),
        (id, JobStatus::Cancelled, counts(3, 0, 0))
    );
    let Completion::Stored {
        progress, ended, ..
    } = store
        .finish(&claim, ClaimEnd::Stored(done("a")), at(3), false)
        .await
        .unwrap()
        .completion
    else {
        panic!("a cancelled job's claim still stores");
    };
    assert_eq!(ended, None, "the job ended at the cancel");
    assert_eq!(
        progress,
        Progress::new(
            JobStatus::Cancelled,
            counts(2, 1, 0),
            Some((0, TargetOutcome::Done))
        )
    );
    assert_eq!(
        summary_of(&store, id, "ann").await,
        (JobStatus::Cancelled, counts(2, 1, 0))
    );
    assert!(store.claim(at(4)).await.unwrap().is_none());
}

/// `jobs` lists every stored job of one caller, live or ended, in submit order, and nothing
/// evicted or another caller's.
async fn jobs_in_submit_order(store: impl Store) {
    let ann = Caller::new("ann");
    let mut ids = Vec::new();
    for round in 0..3 {
        let id = store.submit(job("ann", 1)).await.unwrap().id;
        store.submit(job(&format!("other{round}"), 1)).await.ok();
        if round < 2 {
            loop {
                let claim = store.claim(at(1)).await.unwrap().unwrap();
                let mine = claim.job == id;
                store
                    .finish(&claim, ClaimEnd::Stored(done("x")), at(1), false)
                    .await
                    .unwrap();
                if mine {
                    break;
                }
            }
        }
        ids.push(id);
    }
    let listed = store.jobs(&ann).await.unwrap();
    let seen: Vec<_> = listed.iter().map(|j| (j.id, j.status, j.counts)).collect();
    assert_eq!(
        seen,
        [
            (ids[0], JobStatus::Done, counts(0, 1, 0)),
            (ids[1], JobStatus::Done, counts(0, 1, 0)),
            (ids[2], JobStatus::Queued, counts(1, 0, 0)),
        ]
    );
    for summary in &listed {
        assert_eq!(
            store.summary(summary.id, &ann).await.unwrap().as_ref(),
            Some(summary)
        );
    }
    assert!(store.jobs(&Caller::new("nobody")).await.unwrap().is_empty());
    // Ann's two ended jobs, and every other caller's ended one, go; the live one stays.
    store.touch(ids[1], &ann, at(2)).await.unwrap();
    while store.evict_oldest(0).await.unwrap().jobs > 0 {}
    let left: Vec<_> = store
        .jobs(&ann)
        .await
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(left, [ids[2]]);
}

/// Runs every check over the stores `$make` returns: `super::$make()` gives `Some((store, guard))`
/// (the guard keeps what the store needs, such as its folder), or `None` to skip.
macro_rules! store_api {
    ($name:ident, $make:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn keys_return_the_same_job() {
                let Some((store, _guard)) = super::$make("keys") else {
                    return;
                };
                super::keys_return_the_same_job(store).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn counts_follow_the_job() {
                let Some((store, _guard)) = super::$make("counts") else {
                    return;
                };
                super::counts_follow_the_job(store).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn counts_after_a_cancel() {
                let Some((store, _guard)) = super::$make("cancel") else {
                    return;
                };
                super::counts_after_a_cancel(store).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn jobs_in_submit_order() {
                let Some((store, _guard)) = super::$make("jobs") else {
                    return;
                };
                super::jobs_in_submit_order(store).await;
            }
        }
    };
}

fn memory(_: &str) -> Option<(lockgate_batch::store::MemoryStore, ())> {
    Some((lockgate_batch::store::MemoryStore::new(), ()))
}

fn memory_leased(_: &str) -> Option<(lockgate_batch::store::MemoryStore, ())> {
    Some((
        lockgate_batch::store::MemoryStore::with_lease(Duration::from_secs(30)),
        (),
    ))
}

/// A SQLite file in a scratch folder of the test's own, removed after the test.
#[cfg(feature = "sqlite")]
fn sqlite(name: &str) -> Option<(lockgate_batch::store::SqliteStore, crate::scratch::Scratch)> {
    let dir = crate::scratch::Scratch::new("store-api", name);
    let store =
        lockgate_batch::store::SqliteStore::open(dir.db()).expect("open the scratch database");
    Some((store, dir))
}

/// A fresh schema of the gate's server, or a skip.
#[cfg(feature = "postgres")]
fn postgres(_: &str) -> Option<(lockgate_batch::store::PostgresStore, ())> {
    crate::pg::available().then(|| (crate::pg::open(crate::pg::options()), ()))
}

store_api!(memory_store, memory);
store_api!(memory_store_leased, memory_leased);
#[cfg(feature = "sqlite")]
store_api!(sqlite_store, sqlite);
#[cfg(feature = "postgres")]
store_api!(postgres_store, postgres);
