//! `MetricsHooks` behind a Prometheus recorder: a small extraction workload (jobs shared,
//! queued, refused, one panicking and one waiting past the limit), then the text a
//! `/metrics` endpoint would serve. The clock is paused, so it runs at once and the durations
//! are exact.
//!
//! Run with `cargo run -p lockgate-pdfpool --example pdfpool_metrics --features metrics`.

use std::time::Duration;

use lockgate_pdfpool::{MetricsHooks, Pool};
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::time::sleep;

/// Stands in for a child process that extracts a PDF's text.
async fn extract(path: &'static str, takes: Duration) -> String {
    sleep(takes).await;
    assert!(path != "broken.pdf", "extractor crashed on {path}");
    format!("<text of {path}>")
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The exporter, without its HTTP listener: a web service serves `scrape.render()` itself.
    // Buckets make the durations Prometheus histograms (summaries otherwise).
    let recorder = PrometheusBuilder::new()
        .set_buckets(&[0.1, 0.5, 1.0, 5.0, 30.0])?
        .build_recorder();
    let scrape = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    // The panicking job's report, kept to one line.
    std::panic::set_hook(Box::new(|info| eprintln!("(a job panicked: {info})")));

    // After the recorder: the hooks register their metrics with it.
    let hooks = MetricsHooks::with_labels(&[("pool", "extract")]);
    let pool: Pool<&str, &str, String> = Pool::with_hooks(2, 1, Duration::from_secs(2), hooks);
    let submissions: [(&str, &str, u64); 8] = [
        ("alice", "a.pdf", 3),     // starts (slot 1), runs 3 s
        ("bob", "a.pdf", 3),       // shares alice's job
        ("carol", "b.pdf", 1),     // starts (slot 2), runs 1 s
        ("dave", "c.pdf", 1),      // queued, starts after 1 s when b.pdf is done
        ("erin", "d.pdf", 1),      // refused: no slot, queue full
        ("alice", "e.pdf", 1),     // refused: alice's a.pdf is in flight
        ("gina", "broken.pdf", 1), // queued after c.pdf started; starts at 2 s, panics
        ("hank", "slow.pdf", 1),   // refused at once: the queue place is taken
    ];
    let mut requests = Vec::new();
    for (index, (user, path, secs)) in submissions.into_iter().enumerate() {
        if index == 6 {
            // b.pdf ends at 1 s and c.pdf takes its slot; the queue place is free again.
            sleep(Duration::from_millis(1_500)).await;
        }
        let pool = pool.clone();
        let takes = Duration::from_secs(secs);
        requests.push(tokio::spawn(async move {
            pool.run(path, user, move || extract(path, takes)).await
        }));
        tokio::task::yield_now().await;
    }
    for request in requests {
        let _outcome = request.await?;
    }
    // One more that waits past the 2 s limit behind two long jobs.
    let (long_a, long_b) = (pool.clone(), pool.clone());
    let first = tokio::spawn(async move {
        long_a
            .run("f.pdf", "fay", || extract("f.pdf", Duration::from_secs(5)))
            .await
    });
    let second = tokio::spawn(async move {
        long_b
            .run("g.pdf", "gus", || extract("g.pdf", Duration::from_secs(5)))
            .await
    });
    tokio::task::yield_now().await;
    let late = pool
        .run("h.pdf", "hal", || extract("h.pdf", Duration::ZERO))
        .await;
    println!("hal got: {}", late.unwrap_err());
    first.await??;
    second.await??;
    pool.shutdown().await;

    print!("{}", scrape.render());
    Ok(())
}
