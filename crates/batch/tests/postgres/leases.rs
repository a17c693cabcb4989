//! Leases and fencing on the PostgreSQL store: two replicas (two stores over one schema, each
//! with its own pool), one of which stalls past its lease without heartbeats.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{CallerStore, ClaimEnd, Timestamp, WorkerStore};
use lockgate_batch::store::{Completion, NewJob, PostgresStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, TargetState};

use crate::pg;

/// Two stores over one fresh schema, as two replicas would open it.
fn replicas() -> (PostgresStore, PostgresStore) {
    let options = pg::options().lease_ttl(TTL);
    let first = pg::open(options.clone());
    let second = pg::open(options);
    (first, second)
}

fn job(caller: &str, targets: &[&str], now: Timestamp) -> NewJob {
    NewJob::new(
        Caller::new(caller),
        targets
            .iter()
            .map(|t| serde_json::to_string(t).unwrap())
            .collect(),
        now,
        100,
    )
}

fn done(output: &str) -> TargetState {
    TargetState::Done {
        output_json: serde_json::to_string(output).unwrap(),
    }
}

/// The lease every test here uses: claims lapse in real time, on the server's clock.
const TTL: Duration = Duration::from_millis(400);

/// An hour: how far the replicas' clocks disagree in these tests.
const HOUR: Duration = Duration::from_secs(3600);

/// Waits (in real time, on the store's own schedule) until `store` claims something.
async fn claim_when_due(store: &PostgresStore) -> lockgate_batch::store::Claim {
    for _ in 0..200 {
        let now = Timestamp::from(SystemTime::now());
        if let Some(claim) = store.claim(now).await.unwrap() {
            return claim;
        }
        let wake = store.next_wakeup(now).await.unwrap().expect("a wake-up");
        tokio::time::sleep(wake.saturating_since(now).max(Duration::from_millis(5))).await;
    }
    panic!("no claim became due");
}

/// A replica that stalls past its lease (no heartbeat) loses the claim: the next claim anywhere
/// is a rescue with a newer token, and every late call under the old token is refused. The
/// replicas' clocks disagree by an hour each way, which changes nothing: the server's clock
/// judges leases.
#[tokio::test]
async fn a_stalled_claim_is_rescued_and_its_late_write_refused() {
    if !pg::available() {
        return;
    }
    let (stalled, rescuer) = replicas();
    let t0 = Timestamp::from(SystemTime::now());
    let ahead = t0.saturating_add(HOUR);
    let ann = Caller::new("ann");
    let id = stalled
        .submit(job("ann", &["a1", "a2"], t0))
        .await
        .unwrap()
        .id;
    let old = stalled.claim(t0).await.unwrap().expect("a claim");
    assert!(!old.rescued);
    // A replica whose clock runs an hour ahead finds nothing to claim within the lease, and
    // is told to look again by the lease's end on its own clock.
    assert!(rescuer.claim(ahead).await.unwrap().is_none());
    let wake = rescuer
        .next_wakeup(ahead)
        .await
        .unwrap()
        .expect("a wake-up");
    assert!(wake > ahead, "the lease has not lapsed");
    assert!(
        wake <= ahead.saturating_add(TTL),
        "wakes by the lease's end"
    );
    // Once the server's clock passes the lease: a rescue, with a newer fencing token.
    let new = claim_when_due(&rescuer).await;
    assert!(new.rescued, "the claim reports the rescue");
    assert_eq!((new.job, new.index), (old.job, old.index));
    assert!(new.token > old.token);
    // The stalled replica wakes up: renew, retry, release and store are all refused.
    let after = Timestamp::from(SystemTime::now());
    assert!(!stalled.renew(&old, after).await.unwrap());
    let released = stalled.finish(&old, ClaimEnd::Released, after, false).await;
    assert_eq!(released.unwrap().completion, Completion::Stale);
    let retry = ClaimEnd::RetryLater {
        busy_since: after,
        at: after,
    };
    assert!(
        stalled
            .finish(&old, retry, after, false)
            .await
            .unwrap()
            .completion
            == Completion::Stale
    );
    let late = stalled
        .finish(&old, ClaimEnd::Stored(done("late")), after, false)
        .await
        .unwrap()
        .completion;
    assert_eq!(late, Completion::Stale);
    let stored = rescuer
        .finish(&new, ClaimEnd::Stored(done("rescued")), after, false)
        .await
        .unwrap()
        .completion;
    assert!(matches!(stored, Completion::Stored { ended: None, .. }));
    let snapshot = rescuer.status(id, &ann).await.unwrap().unwrap();
    assert_eq!(snapshot.targets[0].state, done("rescued"));
    assert_eq!(snapshot.targets[1].state, TargetState::Pending);
}

/// A renewed claim is never taken, even by a replica whose clock runs an hour ahead:
/// renewing moves the lease on by the server's clock.
#[tokio::test]
async fn a_renewed_claim_is_kept() {
    if !pg::available() {
        return;
    }
    let (holder, other) = replicas();
    let t0 = Timestamp::from(SystemTime::now());
    holder.submit(job("bob", &["b1"], t0)).await.unwrap();
    let claim = holder.claim(t0).await.unwrap().unwrap();
    // Renewing every quarter lease, the holder keeps the claim past three leases.
    let renewed_at = std::time::Instant::now();
    while renewed_at.elapsed() < TTL * 3 {
        tokio::time::sleep(TTL / 4).await;
        let now = Timestamp::from(SystemTime::now());
        assert!(holder.renew(&claim, now).await.unwrap());
        let skewed = now.saturating_add(HOUR);
        assert!(other.claim(skewed).await.unwrap().is_none(), "never taken");
    }
    let now = Timestamp::from(SystemTime::now());
    let stored = holder
        .finish(&claim, ClaimEnd::Stored(done("b1")), now, false)
        .await
        .unwrap()
        .completion;
    assert!(matches!(stored, Completion::Stored { ended: Some(_), .. }));
}

/// A lapsed claim on a job cancelled meanwhile has nothing to rescue: an idle replica's
/// `next_wakeup` drops it, and the job becomes evictable.
#[tokio::test]
async fn a_lapsed_claim_on_a_cancelled_job_is_swept() {
    if !pg::available() {
        return;
    }
    let (stalled, other) = replicas();
    let t0 = Timestamp::from(SystemTime::now());
    let dan = Caller::new("dan");
    let id = stalled.submit(job("dan", &["d1"], t0)).await.unwrap().id;
    let old = stalled.claim(t0).await.unwrap().unwrap();
    other.cancel(id, &dan, t0).await.unwrap();
    // Held: not evictable.
    assert_eq!(other.evict_oldest(0).await.unwrap().jobs, 0);
    // Past the lease on the server's clock, an idle replica's wake-up sweeps the claim.
    let mut swept = false;
    for _ in 0..200 {
        let now = Timestamp::from(SystemTime::now());
        let wake = other.next_wakeup(now).await.unwrap();
        if other.evict_oldest(0).await.unwrap().jobs == 1 {
            swept = true;
            break;
        }
        let wait = wake.map_or(TTL, |at| at.saturating_since(now));
        tokio::time::sleep(wait.max(Duration::from_millis(5))).await;
    }
    assert!(swept, "the job was evicted once its claim lapsed");
    let now = Timestamp::from(SystemTime::now());
    assert_eq!(
        stalled
            .finish(&old, ClaimEnd::Stored(done("late")), now, false)
            .await
            .unwrap()
            .completion,
        Completion::Stale
    );
}

#[derive(Default)]
struct CountRescues(AtomicUsize);

impl Hooks for CountRescues {
    fn rescued(&self, _: &lockgate_batch::hooks::RescueEvent) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A runner finds a claim another replica let lapse, fetches the target again and reports
/// the rescue through its hooks; the stalled replica's late write changes nothing.
#[tokio::test]
async fn a_runner_rescues_a_lapsed_claim_and_reports_it() {
    if !pg::available() {
        return;
    }
    let (stalled, rescuer) = replicas();
    let now = Timestamp::from(SystemTime::now());
    let cid = Caller::new("cid");
    let id = stalled
        .submit(job("cid", &["c1", "c2"], now))
        .await
        .unwrap()
        .id;
    let old = stalled.claim(now).await.unwrap().unwrap();
    let hooks = Arc::new(CountRescues::default());
    let fetch = |_ctx: FetchContext, target: String| {
        let target = target.clone();
        async move { Ok::<_, FetchError>(format!("got {target}")) }
    };
    let config = Config::default().workers(2).hooks(hooks.clone());
    let runner = Runner::new(config, rescuer, fetch).await.unwrap();
    // The runner's workers wait for the lease to lapse on the server, then take over.
    let job = tokio::time::timeout(Duration::from_secs(60), runner.wait(&cid, id))
        .await
        .expect("the job ends")
        .unwrap();
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(
        hooks.0.load(Ordering::SeqCst),
        1,
        "one rescue, reported once"
    );
    let late = stalled
        .finish(
            &old,
            ClaimEnd::Stored(done("late")),
            Timestamp::from(SystemTime::now()),
            false,
        )
        .await
        .unwrap()
        .completion;
    assert_eq!(late, Completion::Stale);
    let job = runner.status(&cid, id).await.unwrap();
    assert_eq!(job.targets[0].state, done("got c1"));
    runner.close().await;
}

/// A claim a server crash undid (here: its row put back by hand, as recovery without the
/// claim's commit leaves it) is *lost*: its holder's store is refused, and because no rescue
/// took it over and its target is still owed, the answer is `Lost`, which the runner reports
/// as a rescue. The same claim again, after the target was claimed and stored afresh, is
/// still lost (the second fetch happened); a store retried after it had stored (an answer a
/// dropped connection lost) is answered as that store again.
#[tokio::test]
async fn a_claim_undone_behind_its_holder_is_lost_not_stale() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema();
    let options = PostgresStore::options()
        .schema(schema.as_str())
        .lease_ttl(TTL);
    let store = pg::open(options);
    let t0 = Timestamp::from(SystemTime::now());
    store.submit(job("ann", &["a1", "a2"], t0)).await.unwrap();
    let undone = store.claim(t0).await.unwrap().expect("a claim");

    // The crash's recovery: the job as it was before the claim.
    let url = pg::url().unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let sql = format!(
        "UPDATE \"{schema}\".jobs SET in_flight = NULL, lease_until = NULL, status = 'queued'"
    );
    client.execute(&sql, &[]).await.unwrap();

    let lost = store
        .finish(&undone, ClaimEnd::Stored(done("first")), t0, false)
        .await
        .unwrap();
    assert_eq!(lost.completion, Completion::Lost);
    let retry = ClaimEnd::RetryLater {
        busy_since: t0,
        at: t0,
    };
    let busy = store.finish(&undone, retry, t0, false).await.unwrap();
    assert_eq!(busy.completion, Completion::Lost);
    // A release follows no fetch: no second fetch to count.
    let released = store.finish(&undone, ClaimEnd::Released, t0, false).await;
    assert_eq!(released.unwrap().completion, Completion::Stale);

    // The target claimed afresh (not a rescue: nothing says it was claimed) and stored.
    let again = store.claim(t0).await.unwrap().expect("claimed again");
    assert!(!again.rescued);
    assert_eq!((again.job, again.index), (undone.job, undone.index));
    let stored = store
        .finish(&again, ClaimEnd::Stored(done("second")), t0, false)
        .await
        .unwrap();
    assert!(matches!(stored.completion, Completion::Stored { .. }));
    let late = store
        .finish(&undone, ClaimEnd::Stored(done("first")), t0, false)
        .await
        .unwrap();
    assert_eq!(
        late.completion,
        Completion::Lost,
        "the second fetch happened"
    );
    // The store of `again`, tried again (as after an answer lost with its connection): this
    // very claim stored it, so the store is answered again, not refused, and nothing changes.
    let retried = store
        .finish(&again, ClaimEnd::Stored(done("second")), t0, false)
        .await
        .unwrap();
    assert_eq!(
        retried.completion, stored.completion,
        "the same store, answered again"
    );
}
