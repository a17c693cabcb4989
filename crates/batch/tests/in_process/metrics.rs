//! `MetricsHooks` (feature `metrics`): a known workload on the in-memory store, then the
//! Prometheus text it renders, checked name by name, label set by label set, value by value.
//!
//! Each test builds its own recorder and registers the hooks' handles with it through
//! `metrics::with_local_recorder`: the handles keep reporting there from any thread, so the
//! tests share no global state and may run at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lockgate_batch::hooks::{Hooks, MetricsHooks, TargetEvent};
use lockgate_batch::store::{
    CallerStore, Claim, ClaimEnd, Finished, MemoryStore, Timestamp, WorkerStore,
};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner, StoreError};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use tokio::sync::{Notify, Semaphore};

/// A recorder whose histograms have buckets (rendered as Prometheus histograms, with
/// `_bucket`, `_sum` and `_count`), and its handle.
fn recorder() -> (PrometheusRecorder, PrometheusHandle) {
    let recorder = PrometheusBuilder::new()
        .set_buckets(&[0.1, 1.0, 10.0])
        .unwrap()
        .build_recorder();
    let handle = recorder.handle();
    (recorder, handle)
}

/// The rendered `lockgate_batch_*` samples, keyed `name{k="v",...}` with the labels sorted.
fn samples(handle: &PrometheusHandle) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in handle.render().lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let value: f64 = value.parse().expect("a number");
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut labels: Vec<&str> = labels.split(',').filter(|l| !l.is_empty()).collect();
        labels.sort_unstable();
        let key = if labels.is_empty() {
            name.to_owned()
        } else {
            format!("{name}{{{}}}", labels.join(","))
        };
        assert!(
            samples.insert(key, value).is_none(),
            "a series twice: {line}"
        );
    }
    samples
}

/// The memory store, failing its first `claim` (lastingly) and its first stored result
/// (transiently): two store errors of two kinds, both retried.
#[derive(Default)]
struct FailsTwice {
    inner: MemoryStore,
    failed: Mutex<(bool, bool)>,
}

impl WorkerStore for FailsTwice {
    forward!(inner: lease_ttl recover renew next_wakeup changed evict_oldest);

    async fn claim(&self, now: Timestamp) -> Result<Option<Claim>, StoreError> {
        if !std::mem::replace(&mut self.failed.lock().unwrap().0, true) {
            return Err(StoreError::Failed("disk full".into()));
        }
        self.inner.claim(now).await
    }

    async fn finish(
        &self,
        claim: &Claim,
        end: ClaimEnd,
        now: Timestamp,
        take_next: bool,
    ) -> Result<Finished, StoreError> {
        if matches!(end, ClaimEnd::Stored(_))
            && !std::mem::replace(&mut self.failed.lock().unwrap().1, true)
        {
            return Err(StoreError::Unavailable("connection lost".into()));
        }
        self.inner.finish(claim, end, now, take_next).await
    }
}

impl CallerStore for FailsTwice {
    forward!(inner: submit status summary jobs touch cancel events);
    forward!(inner: jobs_page job targets_page);
}

/// The user's own hooks, kept by `with_inner`: sums the bytes the runner reports.
#[derive(Default)]
struct SumBytes(AtomicU64);

impl Hooks for SumBytes {
    fn target(&self, event: &TargetEvent) {
        self.0.fetch_add(event.result_bytes, Ordering::Relaxed);
    }
}

const FETCH: Duration = Duration::from_millis(250);

/// Targets `ok/*` are done, `bad/*` failed, `busy/*` busy once then done, `slow/*` wait for a
/// permit of `gate` (and signal `started`); every fetch takes `FETCH` first.
fn fetch(
    gate: Arc<Semaphore>,
    started: Arc<Notify>,
) -> impl Fn(
    FetchContext,
    String,
) -> std::pin::Pin<Box<dyn Future<Output = Result<String, FetchError>> + Send>>
+ Send
+ Sync
+ 'static {
    let busy_once = Arc::new(Mutex::new(true));
    move |_ctx, target: String| {
        let (gate, started, busy_once) = (gate.clone(), started.clone(), busy_once.clone());
        Box::pin(async move {
            tokio::time::sleep(FETCH).await;
            if target.starts_with("bad/") {
                return Err(FetchError::target_with_hint(
                    "not found",
                    "check the address",
                ));
            }
            if target.starts_with("busy/")
                && std::mem::replace(&mut *busy_once.lock().unwrap(), false)
            {
                return Err(FetchError::retry_later("rate limited"));
            }
            if target.starts_with("slow/") {
                started.notify_one();
                let _permit = gate.acquire().await.unwrap();
            }
            Ok(format!("body of {target}"))
        })
    }
}

fn strings(targets: &[&str]) -> Vec<String> {
    targets.iter().map(|t| (*t).to_owned()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_known_workload_renders_exact_metrics() {
    let (recorder, handle) = recorder();
    let bytes = Arc::new(SumBytes::default());
    let hooks = metrics::with_local_recorder(&recorder, || {
        MetricsHooks::with_labels(&[("runner", "test")]).with_inner(bytes.clone())
    });
    let (gate, started) = (Arc::new(Semaphore::new(0)), Arc::new(Notify::new()));
    let config = Config::default()
        .workers(2)
        .retry(Duration::from_millis(100), Duration::from_secs(60))
        .hooks(Arc::new(hooks));
    let runner = Runner::new(
        config,
        FailsTwice::default(),
        fetch(gate.clone(), started.clone()),
    )
    .await
    .unwrap();

    // Three jobs to their ends: partial (2 done, 1 failed), done (2 done, one of them busy
    // once), failed (1 failed).
    let (ann, bob, carl, dave) = (
        Caller::new("ann"),
        Caller::new("bob"),
        Caller::new("carl"),
        Caller::new("dave"),
    );
    let a = runner
        .submit(&ann, &strings(&["ok/1", "ok/2", "bad/3"]))
        .await
        .unwrap();
    let b = runner
        .submit(&bob, &strings(&["ok/4", "busy/5"]))
        .await
        .unwrap();
    let c = runner.submit(&carl, &strings(&["bad/6"])).await.unwrap();
    assert_eq!(
        runner.wait(&ann, a).await.unwrap().status,
        JobStatus::Partial
    );
    assert_eq!(runner.wait(&bob, b).await.unwrap().status, JobStatus::Done);
    assert_eq!(
        runner.wait(&carl, c).await.unwrap().status,
        JobStatus::Failed
    );

    // A fourth job, cancelled while its first target is in flight: the gauges show it.
    let d = runner
        .submit(&dave, &strings(&["slow/7", "ok/8"]))
        .await
        .unwrap();
    started.notified().await;
    let mid = samples(&handle);
    assert_eq!(
        mid["lockgate_batch_targets_in_flight{runner=\"test\"}"],
        1.0
    );
    assert_eq!(mid["lockgate_batch_live_jobs{runner=\"test\"}"], 1.0);
    assert!(runner.cancel(&dave, d).await.unwrap());
    gate.add_permits(1); // the target in flight finishes and is stored; `ok/8` never starts
    runner.close().await;

    let done = "outcome=\"done\",runner=\"test\"";
    let failed = "outcome=\"failed\",runner=\"test\"";
    let status = |s: &str| format!("runner=\"test\",status=\"{s}\"");
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    let mut put = |key: String, value: f64| assert!(expected.insert(key, value).is_none());
    put(format!("lockgate_batch_targets_total{{{done}}}"), 5.0);
    put(format!("lockgate_batch_targets_total{{{failed}}}"), 2.0);
    put(
        "lockgate_batch_result_bytes_total{runner=\"test\"}".into(),
        bytes.0.load(Ordering::Relaxed) as f64,
    );
    // Every fetch took `FETCH` (0.25 s): all in the bucket `le="1"`.
    for (outcome, count) in [(done, 5.0), (failed, 2.0)] {
        put(
            format!("lockgate_batch_fetch_duration_seconds_bucket{{le=\"0.1\",{outcome}}}"),
            0.0,
        );
        put(
            format!("lockgate_batch_fetch_duration_seconds_bucket{{le=\"1\",{outcome}}}"),
            count,
        );
        put(
            format!("lockgate_batch_fetch_duration_seconds_bucket{{le=\"10\",{outcome}}}"),
            count,
        );
        put(
            format!("lockgate_batch_fetch_duration_seconds_bucket{{le=\"+Inf\",{outcome}}}"),
            count,
        );
        put(
            format!("lockgate_batch_fetch_duration_seconds_sum{{{outcome}}}"),
            count * 0.25,
        );
        put(
            format!("lockgate_batch_fetch_duration_seconds_count{{{outcome}}}"),
            count,
        );
    }
    for s in ["done", "partial", "failed", "cancelled"] {
        put(format!("lockgate_batch_jobs_total{{{}}}", status(s)), 1.0);
        put(
            format!("lockgate_batch_job_duration_seconds_count{{{}}}", status(s)),
            1.0,
        );
    }
    put("lockgate_batch_rescued_total{runner=\"test\"}".into(), 0.0);
    put(
        "lockgate_batch_store_errors_total{kind=\"failed\",runner=\"test\"}".into(),
        1.0,
    );
    put(
        "lockgate_batch_store_errors_total{kind=\"unavailable\",runner=\"test\"}".into(),
        1.0,
    );
    put("lockgate_batch_live_jobs{runner=\"test\"}".into(), 0.0);
    put(
        "lockgate_batch_targets_in_flight{runner=\"test\"}".into(),
        0.0,
    );

    let rendered = samples(&handle);
    // Job durations depend on the rotation: their buckets and sums are checked for shape only.
    let checked: BTreeMap<String, f64> = rendered
        .iter()
        .filter(|(key, _)| {
            !(key.starts_with("lockgate_batch_job_duration_seconds_bucket")
                || key.starts_with("lockgate_batch_job_duration_seconds_sum"))
        })
        .map(|(key, value)| (key.clone(), *value))
        .collect();
    assert_eq!(checked, expected, "rendered:\n{}", handle.render());
    assert!(bytes.0.load(Ordering::Relaxed) > 0);
    for s in ["done", "partial", "failed", "cancelled"] {
        let sum = rendered[&format!("lockgate_batch_job_duration_seconds_sum{{{}}}", status(s))];
        assert!(
            sum >= 0.25,
            "{s}: a job lasts at least one fetch, not {sum}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_rescued_target_is_counted() {
    const TTL: Duration = Duration::from_millis(300);
    let (recorder, handle) = recorder();
    let hooks = metrics::with_local_recorder(&recorder, MetricsHooks::new);
    let store = Arc::new(MemoryStore::with_lease(TTL));
    let fetch = |_ctx: FetchContext, target: String| async move { Ok::<_, FetchError>(target) };
    let config = Config::default().workers(2).hooks(Arc::new(hooks));
    let runner = Runner::new(config, Arc::clone(&store), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &strings(&["orphan"])).await.unwrap();
    // Another replica claims the target before this runner's workers run, then dies; once its
    // lease lapses, a worker here takes the target over.
    let dead = WorkerStore::claim(&*store, Timestamp::from(SystemTime::now()))
        .await
        .unwrap();
    assert!(dead.is_some());
    assert_eq!(runner.wait(&ann, id).await.unwrap().status, JobStatus::Done);
    runner.close().await;
    let rendered = samples(&handle);
    assert_eq!(rendered["lockgate_batch_rescued_total"], 1.0);
    assert_eq!(
        rendered["lockgate_batch_targets_total{outcome=\"done\"}"],
        1.0
    );
    assert_eq!(rendered["lockgate_batch_jobs_total{status=\"done\"}"], 1.0);
}

/// A constant label may not take a key the metrics set themselves: it is left out, and the
/// metric keeps one `outcome`.
#[tokio::test(start_paused = true)]
async fn a_constant_label_with_a_taken_key_is_left_out() {
    let (recorder, handle) = recorder();
    let hooks = metrics::with_local_recorder(&recorder, || {
        MetricsHooks::with_labels(&[("outcome", "mine"), ("pool", "a")])
    });
    let fetch = |_ctx: FetchContext, n: u32| async move { Ok::<_, FetchError>(n) };
    let config = Config::default().hooks(Arc::new(hooks));
    let runner = Runner::new(config, MemoryStore::new(), fetch)
        .await
        .unwrap();
    let ann = Caller::new("ann");
    let id = runner.submit(&ann, &[1, 2]).await.unwrap();
    runner.wait(&ann, id).await.unwrap();
    runner.close().await;
    let rendered = samples(&handle);
    assert_eq!(
        rendered["lockgate_batch_targets_total{outcome=\"done\",pool=\"a\"}"],
        2.0
    );
    assert_eq!(rendered["lockgate_batch_rescued_total{pool=\"a\"}"], 0.0);
}

/// Many workers on a multi-threaded runtime: counts stay exact, and the in-flight gauge ends
/// at zero however the workers' changes interleaved (the runner reports them in order). The
/// live-jobs gauge is exact once set from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_and_in_flight_end_exact_under_many_workers() {
    const JOBS: usize = 50;
    const TARGETS: usize = 20;
    let (recorder, handle) = recorder();
    let hooks = Arc::new(metrics::with_local_recorder(&recorder, MetricsHooks::new));
    let store = Arc::new(MemoryStore::new());
    let fetch = |_ctx: FetchContext, n: usize| async move {
        tokio::task::yield_now().await;
        Ok::<_, FetchError>(n)
    };
    let config = Config::default().workers(8).hooks(hooks.clone());
    let runner = Runner::new(config, Arc::clone(&store), fetch)
        .await
        .unwrap();
    let targets: Vec<usize> = (0..TARGETS).collect();
    let mut jobs = Vec::new();
    for i in 0..JOBS {
        let caller = Caller::new(format!("c{i}"));
        let id = runner.submit(&caller, &targets).await.unwrap();
        jobs.push((caller, id));
    }
    for (caller, id) in &jobs {
        assert_eq!(
            runner.wait(caller, *id).await.unwrap().status,
            JobStatus::Done
        );
    }
    runner.close().await;
    hooks.record_live_jobs(store.live_jobs());
    let rendered = samples(&handle);
    let all = (JOBS * TARGETS) as f64;
    assert_eq!(
        rendered["lockgate_batch_targets_total{outcome=\"done\"}"],
        all
    );
    assert_eq!(
        rendered["lockgate_batch_fetch_duration_seconds_count{outcome=\"done\"}"],
        all
    );
    assert_eq!(
        rendered["lockgate_batch_jobs_total{status=\"done\"}"],
        JOBS as f64
    );
    assert_eq!(rendered["lockgate_batch_targets_in_flight"], 0.0);
    assert_eq!(rendered["lockgate_batch_live_jobs"], 0.0);
}
