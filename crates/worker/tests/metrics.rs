//! `PoolMetrics`: a known workload held at known points by gated tasks, then the Prometheus
//! text: every name, label set and value exact.
//!
//! Each test registers its metrics with its own recorder (`with_local_recorder`), so the
//! tests of this binary share no global state and run in any order.

use std::collections::BTreeMap;
use std::sync::mpsc;

use lockgate_worker::{JoinError, Pool, PoolMetrics};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

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

/// Records, scrapes, and checks that the scrape holds exactly `expected` (name to value, each
/// with the label `pool="t"`).
fn assert_scrape(metrics: &PoolMetrics, scrape: &PrometheusHandle, expected: &[(&str, f64)]) {
    metrics.record();
    let text = scrape.render();
    let want: BTreeMap<String, f64> = expected
        .iter()
        .map(|(name, value)| (format!(r#"{name}{{pool="t"}}"#), *value))
        .collect();
    assert_eq!(samples(&text), want, "in:\n{text}");
}

/// A task that says it started, then waits for its gate.
fn gated(started: &mpsc::Sender<()>) -> (mpsc::Sender<()>, impl FnOnce() + Send + 'static) {
    let (release, gate) = mpsc::channel::<()>();
    let started = started.clone();
    let task = move || {
        started.send(()).unwrap();
        // A dropped sender also releases: a failing test never hangs a worker.
        let _ = gate.recv();
    };
    (release, task)
}

#[test]
fn a_known_workload_scrapes_to_exact_gauges_and_counts() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    // min 1, max 2, one buffer place: capacity 2 / 2 + 1 = 2.
    let pool = Pool::builder(1, 2).submit_buffer(1).build().unwrap();
    let metrics = metrics::with_local_recorder(&recorder, || {
        PoolMetrics::with_labels(&pool, &[("pool", "t")])
    });

    // Two gated tasks take both workers (the second one starts the second thread); two more
    // fill the waiting places, and a fifth finds the pool full.
    let (started_tx, started) = mpsc::channel();
    let (release_a, a) = gated(&started_tx);
    let (release_b, b) = gated(&started_tx);
    pool.submit(move || {
        a();
        panic!("a submitted task fails");
    })
    .unwrap();
    pool.submit(b).unwrap();
    started.recv().unwrap();
    started.recv().unwrap();
    let spawned = pool.spawn(|| -> u32 { panic!("a spawned task fails") });
    pool.submit(|| ()).unwrap();
    assert!(pool.try_submit(|| ()).unwrap_err().is_full());
    let busy = [
        ("lockgate_worker_workers", 2.0),
        ("lockgate_worker_idle", 0.0),
        ("lockgate_worker_queued", 2.0),
        ("lockgate_worker_running", 2.0),
        ("lockgate_worker_blocked_submitters", 0.0),
        ("lockgate_worker_capacity", 2.0),
        ("lockgate_worker_min_workers", 1.0),
        ("lockgate_worker_max_workers", 2.0),
        ("lockgate_worker_tasks_completed_total", 0.0),
        ("lockgate_worker_tasks_panicked_total", 0.0),
        // Both threads took a task, so both have run.
        ("lockgate_worker_threads_started_total", 2.0),
        ("lockgate_worker_threads_exited_total", 0.0),
        ("lockgate_worker_threads_died_total", 0.0),
        ("lockgate_worker_thread_spawn_failures_total", 0.0),
    ];
    assert_scrape(&metrics, &scrape, &busy);

    release_a.send(()).unwrap();
    release_b.send(()).unwrap();
    assert!(matches!(spawned.join(), Err(JoinError::Panicked(_))));
    pool.close().unwrap();
    let closed = [
        ("lockgate_worker_workers", 0.0),
        ("lockgate_worker_idle", 0.0),
        ("lockgate_worker_queued", 0.0),
        ("lockgate_worker_running", 0.0),
        ("lockgate_worker_blocked_submitters", 0.0),
        ("lockgate_worker_capacity", 2.0),
        ("lockgate_worker_min_workers", 1.0),
        ("lockgate_worker_max_workers", 2.0),
        ("lockgate_worker_tasks_completed_total", 4.0),
        // One submitted, one spawned: both counted, though the pool caught only the first.
        ("lockgate_worker_tasks_panicked_total", 2.0),
        ("lockgate_worker_threads_started_total", 2.0),
        ("lockgate_worker_threads_exited_total", 2.0),
        ("lockgate_worker_threads_died_total", 0.0),
        ("lockgate_worker_thread_spawn_failures_total", 0.0),
    ];
    assert_scrape(&metrics, &scrape, &closed);

    // Dropping the pool leaves the counts readable; nothing moves any more.
    drop(pool);
    assert_scrape(&metrics, &scrape, &closed);
}

#[test]
fn descriptions_and_types_are_registered_once_per_metric() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    let pool = Pool::new(0, 1).unwrap();
    let metrics = metrics::with_local_recorder(&recorder, || PoolMetrics::new(&pool));
    metrics.record();
    let text = scrape.render();
    for (name, kind) in [
        ("lockgate_worker_workers", "gauge"),
        ("lockgate_worker_tasks_completed_total", "counter"),
        ("lockgate_worker_threads_died_total", "counter"),
    ] {
        assert_eq!(
            text.matches(&format!("# TYPE {name} {kind}\n")).count(),
            1,
            "{name} in:\n{text}"
        );
        assert_eq!(
            text.matches(&format!("# HELP {name} ")).count(),
            1,
            "{name}"
        );
    }
    assert!(
        text.contains("lockgate_worker_max_workers 1\n"),
        "no labels: {text}"
    );
}
