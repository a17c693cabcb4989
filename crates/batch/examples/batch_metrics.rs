//! Runs a small batch with `MetricsHooks` and prints what a Prometheus scrape would read.
//!
//! Run: `cargo run -p lockgate-batch --example batch_metrics --features metrics`.
//!
//! A service would serve `handle.render()` on its `/metrics` route; this example installs the
//! recorder without an HTTP listener and prints the text once the jobs have ended.

use std::sync::Arc;
use std::time::Duration;

use lockgate_batch::hooks::MetricsHooks;
use lockgate_batch::store::MemoryStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};
use metrics_exporter_prometheus::PrometheusBuilder;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Buckets make the durations Prometheus histograms (without them they render as summaries).
    let recorder = PrometheusBuilder::new()
        .set_buckets(&[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0])?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)?;

    // Built after the recorder is installed: it registers its handles there.
    let hooks = Arc::new(MetricsHooks::with_labels(&[("runner", "pages")]));
    let store = Arc::new(MemoryStore::new());
    let fetch = |_ctx: FetchContext, page: u32| async move {
        tokio::time::sleep(Duration::from_millis(u64::from(page) * 3)).await;
        if page.is_multiple_of(5) {
            return Err(FetchError::target_with_hint(
                "page not found",
                "check the number",
            ));
        }
        Ok::<_, FetchError>(format!("text of page {page}"))
    };
    let config = Config::default().workers(2).hooks(hooks.clone());
    let runner = Runner::new(config, Arc::clone(&store), fetch).await?;

    let (ann, bob, cy) = (Caller::new("ann"), Caller::new("bob"), Caller::new("cy"));
    let a = runner.submit(&ann, &(1..=8).collect::<Vec<u32>>()).await?;
    let b = runner.submit(&bob, &[5, 10]).await?;
    let c = runner.submit(&cy, &[11, 12, 13]).await?;
    runner.cancel(&cy, c).await?;
    for (caller, id) in [(&ann, a), (&bob, b)] {
        let job = runner.wait(caller, id).await?;
        eprintln!("job {id} of {}: {}", caller, job.status);
    }
    runner.close().await;
    // The runner's `depth` calls may arrive out of order when changes overlap; the store's
    // own count makes the gauge exact before a scrape.
    hooks.record_live_jobs(store.live_jobs());

    print!("{}", handle.render());
    Ok(())
}
