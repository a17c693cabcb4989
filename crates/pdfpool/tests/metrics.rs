//! `MetricsHooks`: a known workload on the paused clock, then the Prometheus text: every
//! name, label set and value exact (histograms by their `_count` and `_sum`).
//!
//! Each test registers its hooks with its own recorder (`with_local_recorder`), so the tests
//! of this binary share no global state and run in any order.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{TestPool, gated, never, secs, settle, spawn_run};
use lockgate_pdfpool::{Error, Hooks, MetricsHooks};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::time::advance;

const WAIT: Duration = Duration::from_secs(10);

/// A pool of one slot and one queue place reporting to a fresh recorder, labelled `pool="t"`.
fn metered_pool<H: Hooks>(inner: H) -> (TestPool, PrometheusHandle) {
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    let hooks = metrics::with_local_recorder(&recorder, || {
        MetricsHooks::with_labels(&[("pool", "t")]).wrap(inner)
    });
    (TestPool::with_hooks(1, 1, WAIT, hooks), scrape)
}

/// The samples of a Prometheus text: `name{labels}` to value, comments left out.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample line has a value");
            (
                series.to_owned(),
                value.parse().expect("a sample value is a number"),
            )
        })
        .collect()
}

/// The value of `series` (`name{labels}`), which must be in the scrape.
/// The scrape `got` (of `text`) has each `expected` series at its value, and no other series
/// but the histograms' quantiles.
fn assert_exactly(got: &BTreeMap<String, f64>, expected: &[(&str, f64)], text: &str) {
    for &(series, want) in expected {
        assert_eq!(value(got, series), want, "{series} in:\n{text}");
    }
    let reported: Vec<&str> = got
        .keys()
        .filter(|series| !series.contains("quantile="))
        .map(String::as_str)
        .collect();
    let mut listed: Vec<&str> = expected.iter().map(|(series, _)| *series).collect();
    listed.sort_unstable();
    assert_eq!(reported, listed, "in:\n{text}");
}

fn value(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no `{series}` in the scrape: {samples:#?}"))
}

#[tokio::test(start_paused = true)]
async fn a_known_workload_scrapes_to_exact_counts_waits_times_and_gauges() {
    let (pool, scrape) = metered_pool(());

    // Alice starts "a", Bob joins it, Carol queues "b", Dave finds the queue full, and
    // Alice's second key is refused while "a" runs.
    let (mut a, a_job) = gated();
    let alice = spawn_run(&pool, "a", "alice", a_job);
    settle().await;
    let bob = spawn_run(&pool, "a", "bob", never());
    let (mut b, b_job) = gated();
    let carol = spawn_run(&pool, "b", "carol", b_job);
    settle().await;
    assert!(matches!(
        pool.run("c", "dave", never()).await,
        Err(Error::Busy { .. })
    ));
    assert_eq!(
        pool.run("d", "alice", never()).await,
        Err(Error::CallerBusy)
    );
    let now = samples(&scrape.render());
    assert_eq!(
        value(&now, r#"lockgate_pdfpool_jobs_running{pool="t"}"#),
        1.0
    );
    assert_eq!(
        value(&now, r#"lockgate_pdfpool_jobs_queued{pool="t"}"#),
        1.0
    );

    // "a" runs 3 s and finishes; "b" waited those 3 s, starts, and panics after 2 s.
    advance(secs(3)).await;
    a.finish("a".into());
    settle().await;
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
    assert_eq!(bob.await.unwrap(), Ok("a".into()));
    advance(secs(2)).await;
    b.panic("boom");
    assert!(matches!(carol.await.unwrap(), Err(Error::Panicked(_))));

    // Frank's "f" runs while Erin's "e" waits past the limit and Gene's "g" is given up
    // after 1 s; "f" finishes after 11 s in all.
    let (mut f, f_job) = gated();
    let frank = spawn_run(&pool, "f", "frank", f_job);
    let erin = spawn_run(&pool, "e", "erin", never());
    settle().await;
    advance(WAIT).await;
    settle().await;
    assert!(matches!(erin.await.unwrap(), Err(Error::Busy { .. })));
    let gene = spawn_run(&pool, "g", "gene", never());
    settle().await;
    advance(secs(1)).await;
    gene.abort();
    settle().await;
    f.finish("f".into());
    assert_eq!(frank.await.unwrap(), Ok("f".into()));

    // After close, a new request is refused.
    pool.close();
    assert_eq!(pool.run("h", "hal", never()).await, Err(Error::Closed));

    let text = scrape.render();
    let got = samples(&text);
    let expected = [
        (
            r#"lockgate_pdfpool_requests_total{pool="t",admission="started"}"#,
            2.0,
        ),
        (
            r#"lockgate_pdfpool_requests_total{pool="t",admission="queued"}"#,
            3.0,
        ),
        (
            r#"lockgate_pdfpool_requests_total{pool="t",admission="joined"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_requests_total{pool="t",admission="refused"}"#,
            3.0,
        ),
        (
            r#"lockgate_pdfpool_requests_refused_total{pool="t",cause="queue_full"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_requests_refused_total{pool="t",cause="caller_busy"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_requests_refused_total{pool="t",cause="closed"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="finished"}"#,
            2.0,
        ),
        (
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="panicked"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="dropped"}"#,
            0.0,
        ),
        (
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="expired"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="abandoned"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_count{pool="t",exit="started"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_sum{pool="t",exit="started"}"#,
            3.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_count{pool="t",exit="expired"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_sum{pool="t",exit="expired"}"#,
            10.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_count{pool="t",exit="abandoned"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_queue_wait_seconds_sum{pool="t",exit="abandoned"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_count{pool="t",outcome="finished"}"#,
            2.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_sum{pool="t",outcome="finished"}"#,
            14.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_count{pool="t",outcome="panicked"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_sum{pool="t",outcome="panicked"}"#,
            2.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_count{pool="t",outcome="dropped"}"#,
            0.0,
        ),
        (
            r#"lockgate_pdfpool_job_duration_seconds_sum{pool="t",outcome="dropped"}"#,
            0.0,
        ),
        (r#"lockgate_pdfpool_jobs_running{pool="t"}"#, 0.0),
        (r#"lockgate_pdfpool_jobs_queued{pool="t"}"#, 0.0),
    ];
    // Nothing else was reported but the quantiles of the histograms above.
    assert_exactly(&got, &expected, &text);
    assert!(text.contains("# TYPE lockgate_pdfpool_requests_total counter"));
    assert!(text.contains("# TYPE lockgate_pdfpool_jobs_running gauge"));
    assert!(text.contains("# HELP lockgate_pdfpool_queue_wait_seconds How long queued jobs"));
}

/// The service's own hooks, wrapped: they see every event, and one that panics loses none of
/// the metrics recorded before it.
#[derive(Default)]
struct Inner {
    started: AtomicUsize,
    from_queue: AtomicUsize,
    refusals: Mutex<Vec<Error>>,
}

impl Hooks for Inner {
    fn started(&self, _queue_wait: Duration) {
        self.started.fetch_add(1, Ordering::SeqCst);
    }
    fn started_from_queue(&self, _queue_wait: Duration) {
        self.from_queue.fetch_add(1, Ordering::SeqCst);
    }
    fn refused(&self, why: &Error) {
        self.refusals.lock().unwrap().push(why.clone());
    }
    fn finished(&self, _job_time: Duration) {
        panic!("a wrapped hook that panics");
    }
}

#[tokio::test(start_paused = true)]
async fn wrapped_hooks_see_every_event_and_their_panics_lose_no_metric() {
    let inner = Arc::new(Inner::default());
    let (pool, scrape) = metered_pool(Arc::clone(&inner));
    let (mut a, a_job) = gated();
    let alice = spawn_run(&pool, "a", "alice", a_job);
    let (mut b, b_job) = gated();
    let bob = spawn_run(&pool, "b", "bob", b_job);
    settle().await;
    assert_eq!(
        pool.run("c", "carol", never())
            .await
            .unwrap_err()
            .retry_after(),
        Some(WAIT)
    );
    a.finish("a".into());
    settle().await;
    b.finish("b".into());
    assert_eq!(alice.await.unwrap(), Ok("a".into()));
    assert_eq!(bob.await.unwrap(), Ok("b".into()));

    assert_eq!(
        inner.started.load(Ordering::SeqCst),
        1,
        "started at once: alice"
    );
    assert_eq!(
        inner.from_queue.load(Ordering::SeqCst),
        1,
        "from the queue: bob"
    );
    assert_eq!(inner.refusals.lock().unwrap().len(), 1, "carol");
    let got = samples(&scrape.render());
    assert_eq!(
        value(
            &got,
            r#"lockgate_pdfpool_jobs_ended_total{pool="t",outcome="finished"}"#
        ),
        2.0,
        "the panicking `finished` of the wrapped hooks came after the metrics"
    );
    assert_eq!(
        value(&got, r#"lockgate_pdfpool_jobs_running{pool="t"}"#),
        0.0
    );
    assert_eq!(
        value(&got, r#"lockgate_pdfpool_jobs_queued{pool="t"}"#),
        0.0
    );
}

/// `MetricsHooks::layer` on an `AdmissionLayer`: a known workload on the paused clock scrapes
/// to exact counts, refusals by cause, queue waits and gauges under the layer's names.
#[cfg(feature = "tower")]
#[tokio::test(start_paused = true)]
async fn a_layer_workload_scrapes_to_exact_admissions_refusals_waits_and_gauges() {
    use lockgate_pdfpool::AdmissionLayer;
    use tokio::sync::Semaphore;
    use tower::{Layer, ServiceExt, service_fn};

    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    let hooks = metrics::with_local_recorder(&recorder, || {
        MetricsHooks::layer_with_labels(&[("layer", "t")])
    });
    let layer = AdmissionLayer::with_hooks(1, 1, WAIT, hooks);
    let release = Arc::new(Semaphore::new(0));
    let service = layer.layer(service_fn({
        let release = Arc::clone(&release);
        move |n: u32| {
            let release = Arc::clone(&release);
            async move {
                release.acquire().await.unwrap().forget();
                Ok::<_, std::convert::Infallible>(n)
            }
        }
    }));
    let send = |n| tokio::spawn(service.clone().oneshot(n));

    // The first goes in, the second queues, the third is refused at once.
    let first = send(1);
    settle().await;
    let second = send(2);
    settle().await;
    assert!(send(3).await.unwrap().is_err());
    let now = samples(&scrape.render());
    assert_eq!(
        value(&now, r#"lockgate_pdfpool_layer_requests_inside{layer="t"}"#),
        1.0
    );
    assert_eq!(
        value(&now, r#"lockgate_pdfpool_layer_requests_queued{layer="t"}"#),
        1.0
    );

    // After 2 s the first answers and the second goes in; a fourth waits past the limit, a
    // fifth goes away after 1 s; then the second answers.
    advance(secs(2)).await;
    release.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap(), 1);
    settle().await;
    let expires = send(4);
    settle().await;
    advance(WAIT).await;
    assert!(expires.await.unwrap().is_err());
    let leaves = send(5);
    settle().await;
    advance(secs(1)).await;
    leaves.abort();
    settle().await;
    release.add_permits(1);
    assert_eq!(second.await.unwrap().unwrap(), 2);

    let text = scrape.render();
    let got = samples(&text);
    let expected = [
        (
            r#"lockgate_pdfpool_layer_requests_total{layer="t",admission="admitted"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_requests_total{layer="t",admission="queued"}"#,
            3.0,
        ),
        (
            r#"lockgate_pdfpool_layer_requests_total{layer="t",admission="refused"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_requests_refused_total{layer="t",cause="queue_full"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_requests_refused_total{layer="t",cause="wait_expired"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_count{layer="t",exit="admitted"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_sum{layer="t",exit="admitted"}"#,
            2.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_count{layer="t",exit="expired"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_sum{layer="t",exit="expired"}"#,
            10.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_count{layer="t",exit="abandoned"}"#,
            1.0,
        ),
        (
            r#"lockgate_pdfpool_layer_queue_wait_seconds_sum{layer="t",exit="abandoned"}"#,
            1.0,
        ),
        (r#"lockgate_pdfpool_layer_requests_inside{layer="t"}"#, 0.0),
        (r#"lockgate_pdfpool_layer_requests_queued{layer="t"}"#, 0.0),
    ];
    // Nothing else was reported (none of the pool's names) but the histograms' quantiles.
    assert_exactly(&got, &expected, &text);
    assert!(text.contains("# TYPE lockgate_pdfpool_layer_requests_inside gauge"));
    assert!(text.contains("# HELP lockgate_pdfpool_layer_requests_refused_total Requests the"));
}
