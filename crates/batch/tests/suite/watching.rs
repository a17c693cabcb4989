//! `wait`, `watch`, `counts`, `jobs` and `submit_keyed` over every store.

use std::time::Duration;

use lockgate_batch::store::Store;
use lockgate_batch::{
    Counts, InvalidJob, JobStatus, Progress, StatusError, SubmitError, TargetOutcome,
};

use super::harness::{Plan, oks, targets};
use super::{caller, config, start};

pub async fn wait_returns_the_final_job<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(2)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let a = runner
        .submit(&ann, &targets("a", &[Plan::Sleep(5), Plan::Fail, Plan::Ok]))
        .await
        .unwrap();
    let job = runner.wait(&ann, a).await.unwrap();
    assert_eq!(job.status, JobStatus::Partial);
    assert_eq!(job.counts(), Counts::new(0, 2, 1));
    let output: String = job.targets[0].output().unwrap().unwrap();
    assert_eq!(output, "got a1");
    // An ended job answers at once; another caller's job and an unknown id are not found.
    assert_eq!(runner.wait(&ann, a).await.unwrap(), job);
    assert!(matches!(
        runner.wait(&bob, a).await,
        Err(StatusError::NotFound)
    ));
    assert!(matches!(
        runner
            .wait(&ann, lockgate_batch::JobId::new(a.get() + 100))
            .await,
        Err(StatusError::NotFound)
    ));
    runner.close().await;
}

/// A progress as the order test compares it: status, stored targets, last target.
type Step = (JobStatus, usize, Option<(usize, TargetOutcome)>);

pub async fn watch_sees_each_step_in_order<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let id = runner
        .submit(
            &ann,
            &targets("a", &[Plan::Sleep(10), Plan::Sleep(10), Plan::Sleep(10)]),
        )
        .await
        .unwrap();
    let mut watch = runner.watch(&ann, id).await.unwrap();
    let first = watch.progress();
    assert_eq!(first.counts.total(), 3);
    let mut seen = vec![first];
    while let Some(progress) = watch.changed().await {
        seen.push(progress);
    }
    // Every step once, in order: queued (or running, if the start came first), the start,
    // each stored target with its index and outcome, and the end with the last one. (Each
    // fetch sleeps, so the watcher runs between steps; steps with no await between them
    // would merge into the latest.)
    let steps: Vec<Step> = seen
        .iter()
        .map(|p| (p.status, p.counts.stored(), p.last))
        .collect();
    let tail = [
        (JobStatus::Running, 0, None),
        (JobStatus::Running, 1, Some((0, TargetOutcome::Done))),
        (JobStatus::Running, 2, Some((1, TargetOutcome::Done))),
        (JobStatus::Done, 3, Some((2, TargetOutcome::Done))),
    ];
    match steps.first() {
        Some((JobStatus::Queued, 0, None)) => assert_eq!(steps[1..], tail),
        _ => assert_eq!(steps, tail),
    }
    // The watch has ended; its last progress stays readable.
    assert_eq!(watch.changed().await, None);
    assert_eq!(watch.progress().status, JobStatus::Done);
    let summary = runner.summary(&ann, id).await.unwrap();
    assert_eq!(
        (watch.progress().status, watch.progress().counts),
        (summary.status, summary.counts)
    );
    runner.close().await;
}

pub async fn cancel_ends_wait_and_watch<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let id = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok]))
        .await
        .unwrap();
    super::started(&recorder, "a1").await;
    let mut watch = runner.watch(&ann, id).await.unwrap();
    let (job, cancelled) = tokio::join!(runner.wait(&ann, id), async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        runner.cancel(&ann, id).await.unwrap()
    });
    assert!(cancelled);
    assert_eq!(job.unwrap().status, JobStatus::Cancelled);
    let last: Option<Progress> = watch.changed().await;
    assert_eq!(last.map(|p| p.status), Some(JobStatus::Cancelled));
    assert_eq!(watch.changed().await, None);
    recorder.release.add_permits(1);
    runner.close().await;
}

pub async fn close_ends_a_wait_on_a_live_job<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let id = runner
        .submit(&ann, &targets("a", &[Plan::Ok, Plan::Hold, Plan::Ok]))
        .await
        .unwrap();
    super::started(&recorder, "a2").await;
    let (waited, ()) = tokio::join!(runner.wait(&ann, id), async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        runner.close().await;
    });
    assert!(matches!(waited, Err(StatusError::Closed)), "{waited:?}");
}

/// `wait` and `watch` called after `close` on a job that is still live answer `Closed` at
/// once (nothing would report the job's changes any more); on an ended job they answer as
/// before. Before, both waited forever: `close` had emptied the watchers, and a watch
/// registered afterwards was never published to nor ended.
pub async fn wait_and_watch_after_close_answer_at_once<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let done = runner
        .submit(&bob, &targets("b", &[Plan::Ok]))
        .await
        .unwrap();
    runner.wait(&bob, done).await.unwrap();
    let live = runner
        .submit(&ann, &targets("a", &[Plan::Hold, Plan::Ok]))
        .await
        .unwrap();
    super::started(&recorder, "a1").await;
    runner.close().await;
    let waited = runner.wait(&ann, live).await;
    assert!(matches!(waited, Err(StatusError::Closed)), "{waited:?}");
    let watched = runner.watch(&ann, live).await;
    assert!(
        matches!(watched, Err(StatusError::Closed)),
        "{:?}",
        watched.err()
    );
    assert_eq!(
        runner.wait(&bob, done).await.unwrap().status,
        JobStatus::Done
    );
    let ended = runner.watch(&bob, done).await.unwrap();
    assert_eq!(ended.progress().status, JobStatus::Done);
}

pub async fn counts_and_jobs_without_reading_targets<S: Store>(make: impl Fn() -> S) {
    let (runner, _, _) = start(make(), config(1)).await;
    let (ann, bob) = (caller("ann"), caller("bob"));
    let first = runner
        .submit(&ann, &targets("a", &[Plan::Ok, Plan::Fail]))
        .await
        .unwrap();
    assert_eq!(
        runner.summary(&ann, first).await.unwrap().counts.total(),
        2,
        "counted from the submit on"
    );
    runner.wait(&ann, first).await.unwrap();
    assert_eq!(
        runner.summary(&ann, first).await.unwrap().counts,
        Counts::new(0, 1, 1)
    );
    let second = runner.submit(&ann, &oks("b", 3)).await.unwrap();
    let job = runner.wait(&ann, second).await.unwrap();
    assert_eq!(
        runner.summary(&ann, second).await.unwrap().counts,
        job.counts()
    );
    let listed: Vec<_> = runner
        .jobs(&ann)
        .await
        .unwrap()
        .iter()
        .map(|s| (s.id, s.status, s.counts))
        .collect();
    assert_eq!(
        listed,
        [
            (first, JobStatus::Partial, Counts::new(0, 1, 1)),
            (second, JobStatus::Done, Counts::new(0, 3, 0)),
        ]
    );
    assert!(runner.jobs(&bob).await.unwrap().is_empty());
    assert!(matches!(
        runner.summary(&bob, first).await,
        Err(StatusError::NotFound)
    ));
    runner.close().await;
}

pub async fn a_key_submits_once<S: Store>(make: impl Fn() -> S) {
    let (runner, recorder, _) = start(make(), config(1)).await;
    let ann = caller("ann");
    let id = runner
        .submit_keyed(&ann, "order-17", &targets("a", &[Plan::Hold]))
        .await
        .unwrap();
    // The same key again: the same job, even while it is live (no CallerBusy).
    let again = runner
        .submit_keyed(&ann, "order-17", &oks("ignored", 5))
        .await
        .unwrap();
    assert_eq!(again, id);
    // Another job while it is live: refused, naming the live one.
    let busy = runner.submit(&ann, &oks("b", 1)).await;
    assert!(
        matches!(busy, Err(SubmitError::CallerBusy { live }) if live == id),
        "{busy:?}"
    );
    super::started(&recorder, "a1").await;
    recorder.release.add_permits(1);
    let job = runner.wait(&ann, id).await.unwrap();
    assert_eq!(job.targets.len(), 1, "the repeat's targets were ignored");
    // After the end: still the same job for that key; a new key is a new job.
    assert_eq!(
        runner
            .submit_keyed(&ann, "order-17", &oks("c", 1))
            .await
            .unwrap(),
        id
    );
    let other = runner
        .submit_keyed(&ann, "order-18", &oks("d", 1))
        .await
        .unwrap();
    assert_ne!(other, id);
    runner.wait(&ann, other).await.unwrap();
    assert_eq!(runner.jobs(&ann).await.unwrap().len(), 2);
    // Another caller's key space is its own.
    let bob = caller("bob");
    let bobs = runner
        .submit_keyed(&bob, "order-17", &oks("e", 1))
        .await
        .unwrap();
    assert_ne!(bobs, id);
    runner.wait(&bob, bobs).await.unwrap();
    for key in [String::new(), "k".repeat(256)] {
        assert!(matches!(
            runner.submit_keyed(&ann, &key, &oks("f", 1)).await,
            Err(SubmitError::Invalid(InvalidJob::Key { .. }))
        ));
    }
    assert_eq!(recorder.log(), ["a1", "d1", "e1"]);
    runner.close().await;
}
