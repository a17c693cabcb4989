//! Every store call has a deadline (`PostgresOptions::call_timeout`), shown through a proxy
//! (`proxy.rs`) between the store and the cluster: a frozen path fails calls within the
//! deadline and the runner resumes when it thaws, with every target stored exactly once; a
//! slow and then reset path changes nothing either; and a replica cut off past its lease
//! loses its target to another, whose result is the one stored.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockgate_batch::hooks::{Hooks, RescueEvent, TargetEvent};
use lockgate_batch::store::{PostgresOptions, PostgresStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};
use lockgate_batch::{StatusError, StoreError};
use tokio::sync::{Notify, Semaphore};

use crate::proxy::Proxy;
use crate::{PATIENCE, pg};

/// The deadline the tests give each call: short, so that a frozen path shows in seconds.
const CALL_TIMEOUT: Duration = Duration::from_millis(800);

/// Counts what the runner reports.
#[derive(Default)]
struct Counted {
    stored: AtomicUsize,
    rescued: AtomicUsize,
    store_errors: AtomicUsize,
    changed: Notify,
}

impl Hooks for Counted {
    fn target(&self, _: &TargetEvent) {
        self.stored.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
    fn rescued(&self, _: &RescueEvent) {
        self.rescued.fetch_add(1, Ordering::SeqCst);
    }
    fn store_error(&self, _: &StoreError) {
        self.store_errors.fetch_add(1, Ordering::SeqCst);
    }
}

impl Counted {
    async fn stored_at_least(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.stored.load(Ordering::SeqCst) >= n {
                return;
            }
            changed.await;
        }
    }
}

/// Options over `schema` for a store behind the proxy: every timeout short.
fn short(schema: &str) -> PostgresOptions {
    PostgresStore::options()
        .schema(schema)
        .call_timeout(CALL_TIMEOUT)
        .connect_timeout(CALL_TIMEOUT)
        .pool_wait_timeout(CALL_TIMEOUT)
        .lease_ttl(Duration::from_secs(2))
        .poll_interval(Duration::from_millis(500))
        .pool_size(4)
}

/// A fetch that counts its calls per target and answers `target * 3`.
fn counting_fetch(
    fetched: &Arc<Mutex<BTreeMap<u32, usize>>>,
) -> impl Fn(FetchContext, u32) -> std::future::Ready<Result<u32, FetchError>> + Send + Sync + 'static
{
    let fetched = Arc::clone(fetched);
    move |_ctx, target| {
        *fetched.lock().unwrap().entry(target).or_default() += 1;
        std::future::ready(Ok(target * 3))
    }
}

/// `runner.wait`, asked again while it answers `Unavailable`: a caller's call over a
/// connection the path just dropped fails (it is the caller's to retry; the runner retries
/// only its own).
async fn wait_retrying(
    runner: &Runner<u32, u32>,
    caller: &Caller,
    id: lockgate_batch::JobId,
) -> lockgate_batch::Job {
    let started = Instant::now();
    loop {
        match runner.wait(caller, id).await {
            Err(StatusError::Store(StoreError::Unavailable(_))) => {
                assert!(started.elapsed() < PATIENCE, "the store stays unavailable");
                tokio::time::sleep(CALL_TIMEOUT / 4).await;
            }
            answer => return answer.unwrap(),
        }
    }
}

/// A runner over a fresh schema, behind a proxy, storing one job of `targets` instant
/// targets with 2 workers; what it reports is counted.
struct ProxiedRun {
    proxy: Proxy,
    runner: Runner<u32, u32>,
    caller: Caller,
    id: lockgate_batch::JobId,
    targets: u32,
    counted: Arc<Counted>,
    fetched: Arc<Mutex<BTreeMap<u32, usize>>>,
}

impl ProxiedRun {
    /// Starts the run (`before_submit` runs first, on the proxy); `None` without a server.
    async fn start(
        targets: u32,
        options: impl FnOnce(PostgresOptions) -> PostgresOptions,
        before_submit: impl FnOnce(&Proxy),
    ) -> Option<Self> {
        let url = pg::url()?;
        let (proxy, via_proxy) = Proxy::for_url(&url).await;
        let schema = pg::fresh_schema();
        // Migrated straight to the server: the proxy is for the run.
        drop(pg::open(PostgresStore::options().schema(schema.as_str())));
        let store = options(short(&schema)).open_lazy(&via_proxy).unwrap();
        let counted = Arc::new(Counted::default());
        let fetched = Arc::new(Mutex::new(BTreeMap::new()));
        let config = Config::default().workers(2).hooks(counted.clone());
        let runner = Runner::new(config, store, counting_fetch(&fetched))
            .await
            .unwrap();
        let caller = Caller::new("proxied");
        before_submit(&proxy);
        let all: Vec<u32> = (0..targets).collect();
        let id = runner.submit(&caller, &all).await.unwrap();
        Some(Self {
            proxy,
            runner,
            caller,
            id,
            targets,
            counted,
            fetched,
        })
    }

    /// Waits until `n` targets are stored.
    async fn stored(&self, n: usize) {
        tokio::time::timeout(PATIENCE, self.counted.stored_at_least(n))
            .await
            .unwrap_or_else(|_| panic!("{n} targets stored"));
    }

    /// Waits for the job's end, then checks: every target stored once with its output, and
    /// every second fetch reported as a rescue. A rescue may also take over a claim that was
    /// never fetched (its answer was lost with its connection, so the runner never learned
    /// of it): rescues are at least the second fetches.
    async fn finish(self) {
        let (runner, caller, id) = (&self.runner, &self.caller, self.id);
        let ended = tokio::time::timeout(PATIENCE, wait_retrying(runner, caller, id))
            .await
            .expect("the job ends");
        assert_eq!(ended.status, JobStatus::Done);
        for (index, target) in ended.targets.iter().enumerate() {
            let output: u32 = target.state.output().expect("done").unwrap();
            assert_eq!(output, index as u32 * 3, "target {index}");
        }
        // A worker publishes a stored target's progress (which ends the wait) before its
        // hook runs: close, which waits for the workers, before counting what they reported.
        self.runner.close().await;
        assert_eq!(
            self.counted.stored.load(Ordering::SeqCst),
            self.targets as usize,
            "each target stored exactly once"
        );
        let fetched = self.fetched.lock().unwrap().clone();
        assert_eq!(fetched.len(), self.targets as usize, "every target fetched");
        let again: usize = fetched.values().map(|n| n - 1).sum();
        let rescued = self.counted.rescued.load(Ordering::SeqCst);
        assert!(
            rescued >= again,
            "every second fetch is a rescue: {rescued} rescues, {fetched:?}"
        );
    }
}

/// A path that stops forwarding mid-run (the server's kernel still answering, as under
/// SIGSTOP): a call fails with `Unavailable` within its deadline instead of hanging, the
/// runner's own calls fail and are retried, and once the path thaws the job finishes with
/// every target stored exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_path_fails_calls_within_the_deadline_and_the_runner_resumes() {
    let Some(run) = ProxiedRun::start(60, |o| o, |_| {}).await else {
        return;
    };
    run.stored(10).await;

    run.proxy.freeze();
    let asked = Instant::now();
    let answer = tokio::time::timeout(PATIENCE, run.runner.summary(&run.caller, run.id))
        .await
        .expect("a call to a frozen server answers: no hang");
    let waited = asked.elapsed();
    assert!(
        matches!(answer, Err(StatusError::Store(StoreError::Unavailable(_)))),
        "{answer:?}"
    );
    // The pool wait, a connection's set-up and the call itself are each bounded by the same
    // short timeout: the answer came from those bounds, not from a thaw.
    assert!(waited < PATIENCE / 2, "answered after {waited:?}");
    // The workers' calls fail the same way and are retried (each reported).
    while run.counted.store_errors.load(Ordering::SeqCst) == 0 {
        assert!(asked.elapsed() < PATIENCE, "no worker call failed");
        tokio::time::sleep(CALL_TIMEOUT).await;
    }
    assert!(run.counted.stored.load(Ordering::SeqCst) < run.targets as usize);

    run.proxy.thaw();
    run.finish().await;
}

/// A slow path (each chunk held back) and then every connection reset mid-run: calls are
/// retried on fresh connections and the job finishes with each target stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_then_reset_path_stores_each_target_once() {
    let slow = |proxy: &Proxy| proxy.delay(Duration::from_millis(20));
    let Some(run) = ProxiedRun::start(40, |o| o.call_timeout(Duration::from_secs(5)), slow).await
    else {
        return;
    };
    run.stored(5).await;
    run.proxy.thaw();
    run.stored(10).await;
    run.proxy.reset();
    run.finish().await;
}

/// A replica cut off from the server (its path frozen) while its fetch runs, past its lease:
/// another replica rescues the target and stores its own result; when the path thaws, the
/// cut-off replica's store is refused by its fencing token, and exactly one result, the
/// rescuer's, is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_past_its_lease_loses_its_target_to_another() {
    let Some(url) = pg::url() else { return };
    let (proxy, via_proxy) = Proxy::for_url(&url).await;
    let schema = pg::fresh_schema();
    let lease = Duration::from_secs(1);
    drop(pg::open(PostgresStore::options().schema(schema.as_str())));

    // Replica A, behind the proxy: its fetch holds until the test lets it go, answering
    // "a" whatever its token says.
    let a_store = short(&schema)
        .lease_ttl(lease)
        .open_lazy(&via_proxy)
        .unwrap();
    let fetching = Arc::new(Notify::new());
    let release = Arc::new(Semaphore::new(0));
    let a_fetch = {
        let (fetching, release) = (Arc::clone(&fetching), Arc::clone(&release));
        move |_ctx: FetchContext, _target: u32| {
            let (fetching, release) = (Arc::clone(&fetching), Arc::clone(&release));
            async move {
                fetching.notify_one();
                release.acquire().await.unwrap().forget();
                Ok::<String, FetchError>("a".into())
            }
        }
    };
    let a_counted = Arc::new(Counted::default());
    let a = Runner::new(
        Config::default().workers(1).hooks(a_counted.clone()),
        a_store,
        a_fetch,
    )
    .await
    .unwrap();
    let caller = Caller::new("split");
    let id = a.submit(&caller, &[7u32]).await.unwrap();
    tokio::time::timeout(PATIENCE, fetching.notified())
        .await
        .expect("A fetches");

    // Cut A off; B, straight to the server, rescues once A's lease lapses.
    proxy.freeze();
    let b_store = pg::open(
        PostgresStore::options()
            .schema(schema.as_str())
            .lease_ttl(lease),
    );
    let b_counted = Arc::new(Counted::default());
    let b_fetch = |_ctx: FetchContext, _target: u32| async { Ok::<String, FetchError>("b".into()) };
    let b = Runner::new(
        Config::default().workers(1).hooks(b_counted.clone()),
        b_store,
        b_fetch,
    )
    .await
    .unwrap();
    let done = tokio::time::timeout(PATIENCE, b.wait(&caller, id))
        .await
        .expect("B finishes the job")
        .unwrap();
    assert_eq!(done.status, JobStatus::Done);
    assert_eq!(
        b_counted.rescued.load(Ordering::SeqCst),
        1,
        "B rescued A's target"
    );

    // A comes back and finishes its fetch: its store is refused.
    proxy.thaw();
    release.add_permits(1);
    tokio::time::timeout(PATIENCE, a.close())
        .await
        .expect("A's worker ends");
    assert_eq!(
        a_counted.stored.load(Ordering::SeqCst),
        0,
        "A stored nothing"
    );
    let job = b.status(&caller, id).await.unwrap();
    let output: String = job.targets[0].state.output().expect("done").unwrap();
    assert_eq!(output, "b", "the rescuer's result is the one stored");
    assert_eq!(b_counted.stored.load(Ordering::SeqCst), 1);
    b.close().await;
}

/// On a server that answers but is slow (here: the call waits on a row lock the test holds),
/// a call past its deadline is `Unavailable`, and the server stops the work too: the store's
/// backend no longer waits on the lock, though the test still holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_cancelled_on_the_server() {
    let Some(url) = pg::url() else { return };
    let schema = pg::fresh_schema();
    let store = pg::open(
        PostgresStore::options()
            .schema(schema.as_str())
            .call_timeout(Duration::from_millis(300)),
    );
    let now = lockgate_batch::store::Timestamp::from(std::time::SystemTime::now());
    let ann = Caller::new("ann");
    let job = lockgate_batch::store::NewJob::new(ann.clone(), vec!["1".into()], now, 10);
    let id = {
        use lockgate_batch::store::CallerStore;
        store.submit(job).await.unwrap().id
    };
    let (mut holder, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = holder.transaction().await.unwrap();
    let lock = format!("SELECT * FROM \"{schema}\".jobs WHERE id = $1 FOR UPDATE");
    tx.execute(&lock, &[&(id.get() as i64)]).await.unwrap();

    let cancelled = {
        use lockgate_batch::store::CallerStore;
        tokio::time::timeout(PATIENCE, store.cancel(id, &ann, now))
            .await
            .expect("the call ends at its deadline")
    };
    assert!(
        matches!(cancelled, Err(StoreError::Unavailable(_))),
        "{cancelled:?}"
    );
    // The server let go of the statement: no backend of the store waits on a lock.
    crate::lock_waiters_become(&url, &schema, 0).await;
    tx.rollback().await.unwrap();
}
