//! Leases and fencing on the PostgreSQL store: two replicas (two stores over one schema, each
//! with its own pool), one of which stalls past its lease without heartbeats.

mod pg;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use batch::hooks::Hooks;
use batch::store::{Completion, NewJob, PostgresStore};
use batch::store::{Store, Timestamp};
use batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, TargetState};

const TTL: Duration = Duration::from_secs(2);

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

/// A replica that stalls past its lease (no heartbeat) loses the claim: the next claim anywhere
/// is a rescue with a newer token, and every late call under the old token is refused.
#[tokio::test]
async fn a_stalled_claim_is_rescued_and_its_late_write_refused() {
    if !pg::available() {
        return;
    }
    let (stalled, rescuer) = replicas();
    let t0 = Timestamp::from(SystemTime::now());
    let ann = Caller::new("ann");
    let id = stalled
        .submit(job("ann", &["a1", "a2"], t0))
        .await
        .unwrap()
        .id;
    let old = stalled.claim(t0).await.unwrap().expect("a claim");
    assert!(!old.rescued);
    // Within the lease, the other replica finds nothing to claim, and is told when to look.
    let within = t0.saturating_add(TTL / 2);
    assert!(rescuer.claim(within).await.unwrap().is_none());
    let wake = rescuer.next_wakeup().await.unwrap().expect("a wake-up");
    assert!(wake <= t0.saturating_add(TTL), "wakes by the lease's end");
    // Past the lease: a rescue, with a newer fencing token.
    let after = t0.saturating_add(TTL * 2);
    let new = rescuer
        .claim(after)
        .await
        .unwrap()
        .expect("the lapsed claim");
    assert!(new.rescued, "the claim reports the rescue");
    assert_eq!((new.job, new.index), (old.job, old.index));
    assert!(new.token > old.token);
    // The stalled replica wakes up: renew, retry, release and store are all refused.
    assert!(!stalled.renew(&old, after).await.unwrap());
    assert!(!stalled.release(&old, after).await.unwrap());
    assert!(
        !stalled
            .retry_later(&old, after, after, after)
            .await
            .unwrap()
    );
    let late = stalled.complete(&old, done("late"), after).await.unwrap();
    assert_eq!(late, Completion::Stale);
    let stored = rescuer
        .complete(&new, done("rescued"), after)
        .await
        .unwrap();
    assert!(matches!(stored, Completion::Stored { ended: None, .. }));
    let snapshot = rescuer.status(id, &ann).await.unwrap().unwrap();
    assert_eq!(snapshot.targets[0].state, done("rescued"));
    assert_eq!(snapshot.targets[1].state, TargetState::Pending);
}

/// A renewed claim is never taken: renewing moves the lease on.
#[tokio::test]
async fn a_renewed_claim_is_kept() {
    if !pg::available() {
        return;
    }
    let (holder, other) = replicas();
    let t0 = Timestamp::from(SystemTime::now());
    holder.submit(job("bob", &["b1"], t0)).await.unwrap();
    let claim = holder.claim(t0).await.unwrap().unwrap();
    // Renewing every half lease, the holder keeps the claim far past the first lease.
    let mut now = t0;
    for _ in 0..6 {
        now = now.saturating_add(TTL / 2);
        assert!(holder.renew(&claim, now).await.unwrap());
        assert!(other.claim(now).await.unwrap().is_none(), "never taken");
    }
    let stored = holder.complete(&claim, done("b1"), now).await.unwrap();
    assert!(matches!(stored, Completion::Stored { ended: Some(_), .. }));
}

#[derive(Default)]
struct CountRescues(AtomicUsize);

impl Hooks for CountRescues {
    fn rescued(&self, _: &batch::hooks::RescueEvent) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A runner finds a claim another replica let lapse, fetches the target again and reports
/// the rescue through its hooks; the stalled replica's late write changes nothing.
#[tokio::test(start_paused = true)]
async fn a_runner_rescues_a_lapsed_claim_and_reports_it() {
    if !pg::available() {
        return;
    }
    let (stalled, rescuer) = replicas();
    // On the paused clock, virtual time jumps while a call awaits the server, and the store's
    // connect timeouts would fire at once: every store call runs on a runtime of its own.
    let stalled = pg::Frozen::new(stalled);
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
    let runner = Runner::new(config, pg::Frozen::new(rescuer), fetch)
        .await
        .unwrap();
    // The runner's workers wait (in virtual time) for the lease to lapse, then take over.
    let mut job = runner.status(&cid, id).await.unwrap();
    for _ in 0..10_000 {
        if !job.status.is_live() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        job = runner.status(&cid, id).await.unwrap();
    }
    assert_eq!(job.status, JobStatus::Done);
    assert_eq!(
        hooks.0.load(Ordering::SeqCst),
        1,
        "one rescue, reported once"
    );
    let late = stalled
        .complete(&old, done("late"), Timestamp::from(SystemTime::now()))
        .await
        .unwrap();
    assert_eq!(late, Completion::Stale);
    let job = runner.status(&cid, id).await.unwrap();
    assert_eq!(job.targets[0].state, done("got c1"));
    runner.close().await;
}
