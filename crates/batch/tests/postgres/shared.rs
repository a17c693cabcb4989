//! Several replicas over one PostgreSQL database, on a real clock: `LISTEN/NOTIFY` wake-ups,
//! three runners draining twenty jobs together under the one-runner rules, and the events one
//! store hears of changes made through another.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{
    BoxFuture, CallerStore, Claim, ClaimEnd, Completion, Finished, NewJob, PostgresOptions,
    PostgresStore, StoreEvent, Submitted, Timestamp, WorkerStore,
};
use lockgate_batch::{
    Caller, Config, Counts, FetchContext, FetchError, JobId, JobStatus, Progress, Runner,
    StoreError, SubmitError, TargetOutcome, TargetState,
};
use tokio::sync::{Notify, broadcast};

use crate::pg;
use crate::suite::harness::small;

/// Generous bounds for a shared 2-core machine; reaching one means a lost wake-up or target.
const PATIENCE: Duration = Duration::from_secs(120);

/// An idle runner whose fallback poll is an hour away starts a job another replica submits:
/// only the `NOTIFY` can have woken it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_wakes_an_idle_replica() {
    if !pg::available() {
        return;
    }
    let options = pg::options()
        .poll_interval(Duration::from_secs(3600))
        .lease_ttl(Duration::from_secs(30));
    let submitter = pg::open(options.clone());
    let store = pg::open(options);
    let fetched = Arc::new(Notify::new());
    let fetch = {
        let fetched = Arc::clone(&fetched);
        move |_ctx: FetchContext, target: String| {
            let (fetched, target) = (Arc::clone(&fetched), target.clone());
            async move {
                fetched.notify_one();
                Ok::<_, FetchError>(target)
            }
        }
    };
    let runner = Runner::new(Config::default().workers(2), store, fetch)
        .await
        .unwrap();
    let job = NewJob::new(
        Caller::new("ann"),
        vec!["\"a1\"".into()],
        Timestamp::from(SystemTime::now()),
        10,
    );
    submitter.submit(job).await.unwrap();
    tokio::time::timeout(PATIENCE, fetched.notified())
        .await
        .expect("the NOTIFY woke an idle worker long before its hourly poll");
    runner.close().await;
}

/// What the replicas did, in the order this process saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// A claim of a job, with its fencing token: tokens are drawn right after the claim
    /// locks its job, so their order is the order in which claims took their jobs, as
    /// closely as one statement can (a server process descheduled between the lock and the
    /// draw lets other claims draw first).
    Claimed { job: u64, token: u64 },
    /// A target of the job was stored under the claim with this token, and the job goes on.
    Stored { job: u64, token: u64 },
    /// The job was submitted: ready from now on, as after a store.
    Submitted(u64),
}

/// A replica's store that logs claims and stored targets into one shared log.
struct Logged {
    store: PostgresStore,
    log: Arc<Mutex<Vec<Event>>>,
}

/// Only `submit`, `claim` and `finish` change; the rest forwards to the PostgreSQL store.
impl WorkerStore for Logged {
    forward!(store: lease_ttl recover renew next_wakeup changed evict_oldest);

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        let claim = self.store.claim(now).await?;
        if let Some(claim) = &claim {
            self.log.lock().unwrap().push(Event::Claimed {
                job: claim.job.get(),
                token: claim.token,
            });
        }
        Ok(claim)
    }

    /// Logs the store, then the claim it made: the claim's statement ran after the store's.
    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        let finished = self.store.finish(claim, end, now, take_next).await?;
        self.stored(claim, finished.completion);
        if let Some(next) = &finished.next {
            self.log.lock().unwrap().push(Event::Claimed {
                job: next.job.get(),
                token: next.token,
            });
        }
        Ok(finished)
    }
}

impl CallerStore for Logged {
    forward!(store: status summary jobs touch cancel events);
    forward!(store: jobs_page job targets_page);

    fn submit(&self, job: NewJob) -> BoxFuture<'_, Result<Submitted, SubmitError>> {
        Box::pin(async move {
            let submitted = self.store.submit(job).await?;
            if !submitted.existing {
                self.log
                    .lock()
                    .unwrap()
                    .push(Event::Submitted(submitted.id.get()));
            }
            Ok(submitted)
        })
    }
}

impl Logged {
    /// Logs a stored target whose job goes on (one that ended leaves nothing to wait for).
    fn stored(&self, claim: &Claim, completion: Completion) {
        if let Completion::Stored { ended: None, .. } = completion {
            self.log.lock().unwrap().push(Event::Stored {
                job: claim.job.get(),
                token: claim.token,
            });
        }
    }
}

/// One fetch as the recording fetch saw it: which target, and its start and end on one
/// counter shared by all replicas.
#[derive(Debug, Clone, Copy)]
struct Fetched {
    job: usize,
    index: usize,
    start: u64,
    end: u64,
}

/// Counts stored targets and ended jobs over every replica; wakes the test at the end.
#[derive(Default)]
struct Counting {
    stored: AtomicUsize,
    ended: AtomicUsize,
    all_ended: Notify,
    jobs: usize,
}

impl Hooks for Counting {
    fn target(&self, _: &lockgate_batch::hooks::TargetEvent) {
        self.stored.fetch_add(1, Ordering::SeqCst);
    }
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let _status = event.status;
        if self.ended.fetch_add(1, Ordering::SeqCst) + 1 == self.jobs {
            self.all_ended.notify_one();
        }
    }
}

/// Three runners (three pools) over one database, 20 jobs of 50 targets submitted across them.
///
/// Checked: every job's targets are fetched one at a time and in order, wherever they run;
/// every target is stored exactly once (one target hook per target over all replicas, and its
/// result in the job); and the rotation is fair across replicas.
///
/// The fairness bound (`Store`'s docs): once a job is ready, every other job is claimed at
/// most once per claiming process before it (each replica's cursor passes it once), plus
/// once by a claim already under way when the job became ready: four here. The check
/// counts, for each submitted job and each stored target, the claims by token after every
/// claim logged before the submit or store and before the job's next claim (so a job never
/// started is caught too); a claim minted before the store committed may be logged after it
/// (each job has at most one such claim, being serial), so the check allows five. A wait can
/// count more without a rotation bug: the job's next claim draws its token after locking the
/// job, and if its server process loses the CPU in between, other claims that skipped the
/// locked job draw tokens first. So two waits may exceed five, each through fewer claims than
/// half a job's targets. With one cursor per replica, 12 runs on a busy 2-core machine had
/// at most 2 of the 1,000 waits over three and none over five.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_runners_share_twenty_jobs_fairly_and_store_each_target_once() {
    if !pg::available() {
        return;
    }
    let (jobs, per_job) = if small() { (6, 10) } else { (20, 50) };
    let options = pg::options().lease_ttl(Duration::from_secs(30));
    let log: Arc<Mutex<Vec<Event>>> = Arc::default();
    let fetched: Arc<Mutex<Vec<Fetched>>> = Arc::default();
    let clock = Arc::new(AtomicU64::new(0));
    let hooks = Arc::new(Counting {
        jobs,
        ..Counting::default()
    });
    let mut runners = Vec::new();
    for _ in 0..3 {
        let store = Logged {
            store: pg::open(options.clone()),
            log: Arc::clone(&log),
        };
        let fetch = {
            let (fetched, clock) = (Arc::clone(&fetched), Arc::clone(&clock));
            move |_ctx: FetchContext, target: (usize, usize)| {
                let (fetched, clock, (job, index)) =
                    (Arc::clone(&fetched), Arc::clone(&clock), target);
                async move {
                    let start = clock.fetch_add(1, Ordering::SeqCst);
                    // Let other tasks run mid-fetch, so an overlap would show.
                    tokio::task::yield_now().await;
                    let end = clock.fetch_add(1, Ordering::SeqCst);
                    fetched.lock().unwrap().push(Fetched {
                        job,
                        index,
                        start,
                        end,
                    });
                    Ok::<_, FetchError>(format!("{job}-{index}"))
                }
            }
        };
        let config = Config::default().workers(2).hooks(hooks.clone());
        runners.push(Runner::new(config, store, fetch).await.unwrap());
    }
    let mut ids = Vec::new();
    for job in 0..jobs {
        let caller = Caller::new(format!("caller{job}"));
        let targets: Vec<(usize, usize)> = (0..per_job).map(|index| (job, index)).collect();
        let id = runners[job % 3].submit(&caller, &targets).await.unwrap();
        ids.push((id, caller));
    }
    tokio::time::timeout(PATIENCE, hooks.all_ended.notified())
        .await
        .expect("every job ended");

    // Every target stored exactly once, with its own result, whichever replica asks. A job's
    // end can be reported before another replica's target hook for an earlier target of it
    // has run (that replica stored it, then another claimed and stored the rest): wait for
    // the hooks, then check there are no more than that.
    let all_stored = async {
        while hooks.stored.load(Ordering::SeqCst) < jobs * per_job {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, all_stored)
        .await
        .expect("every target hook ran");
    assert_eq!(hooks.stored.load(Ordering::SeqCst), jobs * per_job);
    for (job, (id, caller)) in ids.iter().enumerate() {
        let snapshot = runners[(job + 1) % 3].status(caller, *id).await.unwrap();
        assert_eq!(snapshot.status, JobStatus::Done);
        for (index, target) in snapshot.targets.iter().enumerate() {
            let expected = format!("{job}-{index}");
            assert_eq!(target.state.output::<String>().unwrap().unwrap(), expected);
        }
    }
    // Per job: serial and in order, each target fetched once (no lease lapsed).
    let fetched = fetched.lock().unwrap().clone();
    assert_eq!(fetched.len(), jobs * per_job);
    let mut by_job: HashMap<usize, Vec<Fetched>> = HashMap::new();
    for f in fetched {
        by_job.entry(f.job).or_default().push(f);
    }
    for (job, mut list) in by_job {
        list.sort_by_key(|f| f.start);
        let order: Vec<usize> = list.iter().map(|f| f.index).collect();
        assert_eq!(
            order,
            (0..per_job).collect::<Vec<_>>(),
            "job {job} in order"
        );
        for pair in list.windows(2) {
            assert!(
                pair[0].end < pair[1].start,
                "job {job} overlapped: {pair:?}"
            );
        }
    }
    // Fairness: between a job's submit or stored target and its next claim, in claim order,
    // no other job is claimed more than once per runner plus once (the store's bound for
    // concurrent claims), plus once more for the log itself: a claim logged after the store
    // may have been minted before it committed.
    let log = log.lock().unwrap().clone();
    let mut claims: Vec<(u64, u64)> = Vec::new(); // (token, job)
    let mut stores: Vec<(u64, u64, u64)> = Vec::new(); // (tokens logged before it, job, token)
    let mut logged_up_to = 0;
    for event in &log {
        match *event {
            Event::Claimed { job, token } => {
                claims.push((token, job));
                logged_up_to = logged_up_to.max(token);
            }
            Event::Stored { job, token } => stores.push((logged_up_to, job, token)),
            // Every token is above 0: the wait ends at the job's first claim.
            Event::Submitted(job) => stores.push((logged_up_to, job, 0)),
        }
    }
    claims.sort_unstable();
    let mut waits: Vec<usize> = Vec::new(); // per wait, the most claims of one other job
    for (after, waiting, stored) in stores {
        // The job's next claim, by token; another replica may have taken it (and logged it)
        // before this store was logged, and then the job waited for nothing.
        let Some(&(next, _)) = claims
            .iter()
            .find(|&&(token, job)| job == waiting && token > stored)
        else {
            continue;
        };
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for &(_, job) in claims
            .iter()
            .filter(|&&(token, _)| token > after && token < next)
        {
            *counts.entry(job).or_default() += 1;
        }
        waits.push(counts.into_values().max().unwrap_or(0));
    }
    let bound = runners.len() + 2;
    let worst = waits.iter().copied().max().unwrap_or(0);
    let over = waits.iter().filter(|&&n| n > bound).count();
    println!(
        "fairness: at most {worst} claims of one job while another waited; {over} of {} waits over {bound}",
        waits.len()
    );
    assert!(
        over <= 2,
        "{over} waits went through more than {bound} claims of another job (worst {worst})"
    );
    assert!(
        worst < per_job / 2,
        "a job waited through {worst} claims of another"
    );
    for runner in &runners {
        runner.close().await;
    }
}

/// The server drops every connection of the store mid-job (`pg_terminate_backend`, as an
/// administrator or a failover would): the runner reconnects and loses nothing, each target
/// fetched and stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_dropped_by_the_server_are_reopened_and_nothing_is_lost() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let store = pg::open(
        pg::options()
            .schema(schema.as_str())
            .lease_ttl(Duration::from_secs(30)),
    );
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let admin = Arc::new(admin);
    let terminated = Arc::new(AtomicUsize::new(0));
    let fetched: Arc<Mutex<Vec<u64>>> = Arc::default();
    let fetch = {
        let (admin, terminated, fetched) = (admin.clone(), terminated.clone(), fetched.clone());
        let app = format!("batch {schema}");
        move |_ctx: FetchContext, target: u64| {
            let (admin, terminated, fetched, app, target) = (
                admin.clone(),
                terminated.clone(),
                fetched.clone(),
                app.clone(),
                target,
            );
            async move {
                fetched.lock().unwrap().push(target);
                if target % 4 == 2 {
                    let rows = admin
                        .query(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                             WHERE application_name = $1",
                            &[&app],
                        )
                        .await
                        .unwrap();
                    terminated.fetch_add(rows.len(), Ordering::SeqCst);
                }
                Ok::<_, FetchError>(target * 10)
            }
        }
    };
    let hooks = Arc::new(Counting {
        jobs: 1,
        ..Counting::default()
    });
    let config = Config::default()
        .workers(1)
        .retry(Duration::from_millis(50), Duration::from_secs(10))
        .hooks(hooks.clone());
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let ann = Caller::new("ann");
    let targets: Vec<u64> = (0..12).collect();
    let id = runner.submit(&ann, &targets).await.unwrap();
    tokio::time::timeout(PATIENCE, hooks.all_ended.notified())
        .await
        .expect("the job ended");
    assert!(
        terminated.load(Ordering::SeqCst) >= 3,
        "the server really dropped the store's connections"
    );
    let job = runner.status(&ann, id).await.unwrap();
    assert_eq!(job.status, JobStatus::Done);
    for (index, target) in job.targets.iter().enumerate() {
        assert_eq!(
            target.state.output::<u64>().unwrap().unwrap(),
            index as u64 * 10
        );
    }
    assert_eq!(
        *fetched.lock().unwrap(),
        targets,
        "each target fetched once, in order"
    );
    assert_eq!(hooks.stored.load(Ordering::SeqCst), targets.len());
    runner.close().await;
}

/// The next event on `events` that is not `Missed` (a listener says `Missed` every poll
/// interval, and after a reconnect), within [`PATIENCE`] in all.
async fn next_progress(events: &mut broadcast::Receiver<StoreEvent>) -> (JobId, Progress) {
    let next = async {
        loop {
            let event = events
                .recv()
                .await
                .expect("no lag: the test reads every event");
            if let StoreEvent::Progress { job, progress } = event {
                return (job, progress);
            }
        }
    };
    tokio::time::timeout(PATIENCE, next)
        .await
        .expect("an event long before the patience runs out")
}

/// Waits until `events` says its listener listens (the `Missed` every `LISTEN` sends).
async fn listening(events: &mut broadcast::Receiver<StoreEvent>) {
    let event = tokio::time::timeout(PATIENCE, events.recv())
        .await
        .expect("the listener listens long before the patience runs out")
        .unwrap();
    assert_eq!(event, StoreEvent::Missed);
}

fn counts(pending: usize, done: usize, failed: usize) -> Counts {
    Counts::new(pending, done, failed)
}

/// Two stores over one schema: each change made through one arrives on the other's events,
/// in commit order, with the job's status and counts right after it (a stored target's with
/// the storing process's notifier, within the progress interval).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_store_is_an_event_on_the_other() {
    if !pg::available() {
        return;
    }
    let options = pg::options();
    let (one, other) = (pg::open(options.clone()), pg::open(options));
    let mut events = other.events().expect("a shared store has events");
    listening(&mut events).await;
    let ann = Caller::new("ann");
    let now = Timestamp::from(SystemTime::now());
    let targets = vec!["1".into(), "2".into(), "3".into()];
    let id = one
        .submit(NewJob::new(ann.clone(), targets, now, 10))
        .await
        .unwrap()
        .id;
    assert_eq!(
        next_progress(&mut events).await,
        (id, Progress::new(JobStatus::Queued, counts(3, 0, 0), None))
    );
    let claim = one.claim(now).await.unwrap().expect("the job is ready");
    assert!(claim.started);
    assert_eq!(
        next_progress(&mut events).await,
        (id, Progress::new(JobStatus::Running, counts(3, 0, 0), None))
    );
    let output = TargetState::Done {
        output_json: "1".into(),
    };
    let Completion::Stored { progress, .. } = one
        .finish(&claim, ClaimEnd::Stored(output), now, false)
        .await
        .unwrap()
        .completion
    else {
        panic!("stored");
    };
    let stored = Progress::new(
        JobStatus::Running,
        counts(2, 1, 0),
        Some((0, TargetOutcome::Done)),
    );
    assert_eq!(progress, stored);
    // The store's note goes out after its commit, within the progress interval.
    assert_eq!(next_progress(&mut events).await, (id, stored));
    let next = one
        .claim(now)
        .await
        .unwrap()
        .expect("the job's next target");
    assert_eq!((next.index, next.started), (1, false));
    let output = TargetState::Done {
        output_json: "2".into(),
    };
    one.finish(&next, ClaimEnd::Stored(output), now, false)
        .await
        .unwrap();
    one.cancel(id, &ann, now).await.unwrap(); // no claim out
    // The cancel's note is sent inside its transaction; the second store's note may come
    // before it or after (its interval), never instead of it.
    let second = Progress::new(
        JobStatus::Running,
        counts(1, 2, 0),
        Some((1, TargetOutcome::Done)),
    );
    let cancelled = Progress::new(JobStatus::Cancelled, counts(1, 2, 0), None);
    let mut seen = next_progress(&mut events).await;
    if seen == (id, second) {
        seen = next_progress(&mut events).await;
    }
    assert_eq!(seen, (id, cancelled));
}

/// Two stores over `options`' schema, the second listening; through the first, a job of two
/// targets whose first is claimed and stored. Returns both stores, the second's events, the
/// job and its progress after that store.
async fn first_target_stored(
    options: PostgresOptions,
) -> (
    PostgresStore,
    PostgresStore,
    broadcast::Receiver<StoreEvent>,
    JobId,
    Progress,
) {
    let (one, two) = (pg::open(options.clone()), pg::open(options));
    let mut events = two.events().expect("a shared store has events");
    listening(&mut events).await;
    let now = Timestamp::from(SystemTime::now());
    let job = NewJob::new(Caller::new("ann"), vec!["1".into(), "2".into()], now, 10);
    let id = one.submit(job).await.unwrap().id;
    let claim = one.claim(now).await.unwrap().expect("the job is ready");
    let output = TargetState::Done {
        output_json: "1".into(),
    };
    one.finish(&claim, ClaimEnd::Stored(output), now, false)
        .await
        .unwrap();
    let stored = Progress::new(
        JobStatus::Running,
        counts(1, 1, 0),
        Some((0, TargetOutcome::Done)),
    );
    (one, two, events, id, stored)
}

/// The progress events on `events` up to and including `last`.
async fn progress_until(
    events: &mut broadcast::Receiver<StoreEvent>,
    last: (JobId, Progress),
) -> Vec<(JobId, Progress)> {
    let mut seen = Vec::new();
    while seen.last() != Some(&last) {
        seen.push(next_progress(events).await);
    }
    seen
}

/// A stored target's progress note goes out whether or not its store makes another call: the
/// notifier sends it, no claim has to carry it (a replica whose workers went idle once left
/// its last notes unsent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_targets_note_goes_out_without_another_call() {
    if !pg::available() {
        return;
    }
    let options = pg::options().schema(pg::fresh_schema().as_str());
    let (_one, _two, mut events, id, stored) = first_target_stored(options).await;
    let seen = progress_until(&mut events, (id, stored)).await;
    assert_eq!(
        seen.iter().map(|(_, p)| p.status).collect::<Vec<_>>(),
        [JobStatus::Queued, JobStatus::Running, JobStatus::Running],
        "submit, start, then the stored target: {seen:?}"
    );
}

/// Notes of stored targets go out at most once per `progress_interval`: within it, a running
/// job's newer counts wait (and its end, announced at once, supersedes them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notes_wait_for_the_progress_interval_but_the_end_does_not() {
    if !pg::available() {
        return;
    }
    let options = pg::options()
        .schema(pg::fresh_schema().as_str())
        .progress_interval(Duration::from_secs(3600));
    let (one, two) = (pg::open(options.clone()), pg::open(options));
    let mut events = two.events().expect("a shared store has events");
    listening(&mut events).await;
    let now = Timestamp::from(SystemTime::now());
    let targets = vec!["1".into(), "2".into(), "3".into()];
    let id = one
        .submit(NewJob::new(Caller::new("ann"), targets, now, 10))
        .await
        .unwrap()
        .id;
    for index in 0..3 {
        let claim = one
            .claim(now)
            .await
            .unwrap()
            .expect("the job's next target");
        assert_eq!(claim.index, index);
        let output = TargetState::Done {
            output_json: index.to_string(),
        };
        one.finish(&claim, ClaimEnd::Stored(output), now, false)
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    while seen
        .last()
        .is_none_or(|(_, p): &(JobId, Progress)| p.status.is_live())
    {
        seen.push(next_progress(&mut events).await);
    }
    let done = |n| Some((n, TargetOutcome::Done));
    assert_eq!(
        seen,
        [
            (id, Progress::new(JobStatus::Queued, counts(3, 0, 0), None)),
            // The start goes out at once; the stored targets' notes then wait for the hour,
            // and the end, at once again, replaces them (newest per job).
            (id, Progress::new(JobStatus::Running, counts(3, 0, 0), None)),
            (id, Progress::new(JobStatus::Done, counts(0, 3, 0), done(2))),
        ]
    );
}

/// A listener whose connection the server ended reconnects and says `Missed`: its receivers
/// re-read what they watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnected_listener_reports_missed_events() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema();
    let store = pg::open(pg::options().schema(schema.as_str()));
    let mut events = store.events().expect("a shared store has events");
    listening(&mut events).await;
    let (client, connection) = tokio_postgres::connect(&pg::url().unwrap(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let ended: i64 = client
        .query_one(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1",
            &[&format!("LISTEN \"batch_{schema}\"")],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "this store's one listening connection");
    listening(&mut events).await;
}

/// A replica that serves API calls only: its workers never claim (every other call is the
/// store's own).
struct ApiOnly {
    store: PostgresStore,
}

impl WorkerStore for ApiOnly {
    forward!(store: lease_ttl recover renew finish next_wakeup changed evict_oldest);

    async fn claim(&self, _now: Timestamp) -> Result<Option<Claim>, StoreError> {
        Ok(None)
    }
}

impl CallerStore for ApiOnly {
    forward!(store: submit status summary jobs touch cancel events);
    forward!(store: jobs_page job targets_page);
}

/// A job that one replica runs is awaited and watched through another, which never claims:
/// everything the second one learns comes from the first one's `NOTIFY`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_run_by_one_replica_is_awaited_and_watched_through_another() {
    if !pg::available() {
        return;
    }
    let options = pg::options().lease_ttl(Duration::from_secs(30));
    let (worker_store, api_store) = (pg::open(options.clone()), pg::open(options));
    // The API replica learns only through its `LISTEN`: let it listen before anything happens
    // (a `NOTIFY` sent before would be lost, and only a later `Missed` would resync it).
    let mut api_events = api_store.events().expect("PostgreSQL has events");
    listening(&mut api_events).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let fetch = {
        let gate = Arc::clone(&gate);
        move |_ctx: FetchContext, n: u32| {
            let gate = Arc::clone(&gate);
            async move {
                gate.acquire().await.unwrap().forget();
                Ok::<_, FetchError>(n * 10)
            }
        }
    };
    let worker = Runner::new(Config::default().workers(2), worker_store, fetch)
        .await
        .unwrap();
    let never = |_ctx: FetchContext, _: u32| async { unreachable!("the API replica never claims") };
    let api = Runner::<u32, u32>::new(Config::default(), ApiOnly { store: api_store }, never)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = api.submit(&ann, &[1, 2, 3]).await.unwrap();
    let mut watch = api.watch(&ann, id).await.unwrap();
    let waited = tokio::spawn({
        let api = Arc::new(api);
        let (api2, ann) = (Arc::clone(&api), ann.clone());
        async move { (api2.wait(&ann, id).await, api) }
    });
    let mut stored = Vec::new();
    for step in 0..3 {
        gate.add_permits(1);
        // Each target is held until released, so each step reaches the watcher on its own.
        loop {
            let progress = tokio::time::timeout(PATIENCE, watch.changed())
                .await
                .expect("the other replica's NOTIFY arrives")
                .expect("the job is live until its last target");
            if progress.counts.stored() > step {
                stored.push((progress.counts.stored(), progress.last));
                break;
            }
        }
    }
    // Each step carries its target (a resync after a reconnected listener would carry none).
    for (step, (count, last)) in stored.iter().enumerate() {
        assert_eq!(*count, step + 1, "{stored:?}");
        assert!(
            matches!(last, Some((index, TargetOutcome::Done)) if *index == step) || last.is_none(),
            "{stored:?}"
        );
    }
    assert!(stored.iter().any(|(_, last)| last.is_some()), "{stored:?}");
    assert_eq!(watch.progress().status, JobStatus::Done);
    let (job, api) = tokio::time::timeout(PATIENCE, waited)
        .await
        .expect("wait ends with the job")
        .unwrap();
    let job = job.unwrap();
    assert_eq!(job.status, JobStatus::Done);
    let outputs: Vec<u32> = job
        .targets
        .iter()
        .map(|t| t.output().unwrap().unwrap())
        .collect();
    assert_eq!(outputs, [10, 20, 30]);
    assert_eq!(
        api.summary(&ann, id).await.unwrap().counts,
        Counts::new(0, 3, 0)
    );
    worker.close().await;
    api.close().await;
}

/// A store that is dropped sends the notes still waiting (here a stored target's, held back
/// by an hour's progress interval) in one last send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_store_sends_the_notes_still_waiting() {
    if !pg::available() {
        return;
    }
    let options = pg::options()
        .schema(pg::fresh_schema().as_str())
        .progress_interval(Duration::from_secs(3600));
    let (one, _two, mut events, id, stored) = first_target_stored(options).await;
    drop(one);
    let seen = progress_until(&mut events, (id, stored)).await;
    assert_eq!(
        seen.len(),
        3,
        "submit, start, then the stored target: {seen:?}"
    );
}

/// A listening store reports `Missed` again every poll interval, with no reconnect: the
/// notes of starts, stored targets and ends are sent after their commits and die with a
/// process that dies first, so no receiver may wait on one without a bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_store_reports_missed_every_poll_interval() {
    if !pg::available() {
        return;
    }
    let store = pg::open(pg::options().poll_interval(Duration::from_millis(50)));
    let mut events = store.events().expect("a shared store has events");
    listening(&mut events).await;
    for again in 0..2 {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("`Missed` again long before the patience runs out")
            .unwrap();
        assert_eq!(event, StoreEvent::Missed, "again #{again}");
    }
}

/// A job that ends without its end announced (its process died between the commit and the
/// note: here the row is ended by hand) is still awaited through another replica: the
/// periodic `Missed` makes that replica re-read what it watches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_ended_unannounced_is_still_awaited_through_another_replica() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema();
    let options = pg::options()
        .schema(schema.as_str())
        .poll_interval(Duration::from_millis(100));
    let api_store = pg::open(options);
    let mut events = api_store.events().expect("PostgreSQL has events");
    listening(&mut events).await;
    let never = |_ctx: FetchContext, _: u32| async { unreachable!("the API replica never claims") };
    let api = Runner::<u32, u32>::new(Config::default(), ApiOnly { store: api_store }, never)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = api.submit(&ann, &[1, 2]).await.unwrap();
    let waited = tokio::spawn({
        let api = Arc::new(api);
        let ann = ann.clone();
        async move { (api.wait(&ann, id).await, api) }
    });
    let (client, connection) = tokio_postgres::connect(&pg::url().unwrap(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let ended = client
        .execute(
            &format!("UPDATE \"{schema}\".jobs SET status = 'cancelled' WHERE id = $1"),
            &[&(id.get() as i64)],
        )
        .await
        .unwrap();
    assert_eq!(ended, 1, "the job's row, ended without a NOTIFY");
    let (job, api) = tokio::time::timeout(PATIENCE, waited)
        .await
        .expect("wait ends with the job, unannounced")
        .unwrap();
    assert_eq!(job.unwrap().status, JobStatus::Cancelled);
    api.close().await;
}

/// One claim's transaction held open mid-claim (after it picked and locked its job) does not
/// hold up another replica's claim: that one takes the next job and returns meanwhile. (With
/// the rotation's cursor row of schema version 2, every claim locked that row first, and the
/// second claim waited for the first to commit.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_held_open_does_not_hold_up_another_replicas_claim() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let options = pg::options().schema(schema.as_str());
    let (held, free) = (pg::open(options.clone()), pg::open(options));
    let now = Timestamp::from(SystemTime::now());
    for caller in ["held", "free"] {
        let job = NewJob::new(Caller::new(caller), vec!["\"t\"".into()], now, 10);
        held.submit(job).await.unwrap();
    }
    // A test-only trigger makes a claim of the job of caller `held` wait, inside its
    // transaction and after locking the job's row, until this session lets go of a lock.
    let (test, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    test.batch_execute(&format!(
        "SET search_path TO \"{schema}\";
         CREATE FUNCTION hold_claim() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END $$;
         CREATE TRIGGER hold_claim BEFORE UPDATE ON jobs FOR EACH ROW
             WHEN (NEW.caller = 'held' AND NEW.in_flight IS NOT NULL)
             EXECUTE FUNCTION hold_claim();
         SELECT pg_advisory_lock(4242);"
    ))
    .await
    .unwrap();
    let first = tokio::spawn(async move {
        let claim = held.claim(now).await;
        (held, claim)
    });
    // The first claim waits inside its transaction.
    crate::lock_waiters_become(&url, &schema, 1).await;
    // The other replica's claim returns, with the other job, while the first is held.
    let second = tokio::time::timeout(PATIENCE, free.claim(now))
        .await
        .expect("the second claim is not held up")
        .unwrap()
        .expect("the job nobody holds");
    assert_eq!(second.caller, Caller::new("free"));
    assert!(!first.is_finished(), "the first claim is still held");
    test.batch_execute("SELECT pg_advisory_unlock(4242)")
        .await
        .unwrap();
    let (_held, claim) = tokio::time::timeout(PATIENCE, first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claim.unwrap().unwrap().caller, Caller::new("held"));
}
