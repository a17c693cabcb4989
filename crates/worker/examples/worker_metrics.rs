//! `PoolMetrics` behind a Prometheus recorder: a small workload (a burst that grows the pool,
//! one panicking task), then the text a `/metrics` endpoint would serve, recorded just before
//! the scrape as a service's handler would.
//!
//! Run with `cargo run -p lockgate-worker --example worker_metrics --features metrics`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lockgate_worker::{Pool, PoolMetrics};
use metrics_exporter_prometheus::PrometheusBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The exporter, without its HTTP listener: a web service serves `scrape.render()` itself.
    let recorder = PrometheusBuilder::new().build_recorder();
    let scrape = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    // The panicking task's report, kept to one line.
    std::panic::set_hook(Box::new(|info| eprintln!("(a task panicked: {info})")));

    let pool = Pool::builder(1, 4).thread_name("render").build()?;
    // After the recorder: registers its metrics with it.
    let metrics = PoolMetrics::with_labels(&pool, &[("pool", "render")]);

    let sum = Arc::new(AtomicU64::new(0));
    for n in 1..=1_000 {
        let sum = Arc::clone(&sum);
        pool.submit(move || {
            sum.fetch_add(n, Ordering::Relaxed);
        })?;
    }
    let failed = pool.spawn(|| -> u64 { panic!("bad page") });
    assert!(failed.join().is_err());
    pool.join()?;
    println!("sum = {}", sum.load(Ordering::Relaxed));

    // What a `/metrics` handler does: record, then render.
    metrics.record();
    print!("{}", scrape.render());
    pool.close()?;
    Ok(())
}
