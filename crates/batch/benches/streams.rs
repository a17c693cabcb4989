//! The cost of the dashboard's event streams to the runner: one job of 300,000 targets with
//! an instant fetch on the in-memory store (about half a second of work here: several of the
//! streams' 100 ms intervals, so the steady state counts more than the first wake-up of all
//! 1,000 streams at the job's start), run with no stream open, and with 1,000 SSE streams
//! open on that job (`GET {base}/api/jobs/{id}/events`), each read to its end by a client
//! task.
//!
//! Run: `cargo bench -p lockgate-batch --bench streams --features dashboard -- --warm-up-time 1
//! --measurement-time 5`. Each iteration times the job alone, from the release of its first
//! target to its end (opening the streams is set-up, outside the clock); both subjects report
//! targets/s. The goal (issue 38): the rate with 1,000 streams is at least 0.8× the rate with
//! none. `batch_runner_0_streams`, first alphabetically, is the reference of
//! `cargo xtask bench`'s ratios.
//!
//! The streams run with the dashboard's default `min_interval` (100 ms: after a send, a
//! stream takes no change for that long, so the workers' publishes wake nobody meanwhile);
//! `…_every_change` runs them with none, each stream taking every change it sees: the cost a
//! stream would have without the interval, for comparison.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, Throughput, criterion_main};
use http_body_util::BodyExt;
use lockgate_batch::dashboard::{DEFAULT_MIN_INTERVAL, Dashboard};
use lockgate_batch::store::MemoryStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};
use tokio::sync::Semaphore;
use tower::ServiceExt;

const TARGETS: usize = 300_000;

/// One timed run: a job of [`TARGETS`] whose first target waits for a gate, `streams` event
/// streams opened on it and read by client tasks, then the gate opens and the clock runs
/// until the job ends.
async fn run(streams: usize, min_interval: Duration) -> Duration {
    let gate = Arc::new(Semaphore::new(0));
    let fetch = {
        let gate = Arc::clone(&gate);
        move |ctx: FetchContext, n: u32| {
            let gate = Arc::clone(&gate);
            async move {
                if ctx.index() == 0 {
                    gate.acquire().await.expect("open").forget();
                }
                Ok::<u32, FetchError>(n.wrapping_mul(2))
            }
        }
    };
    let config = Config::default().workers(4).max_targets(TARGETS);
    let runner = Arc::new(
        Runner::new(config, MemoryStore::new(), fetch)
            .await
            .expect("a runner"),
    );
    let caller = Caller::new("bench");
    let targets: Vec<u32> = (0..TARGETS as u32).collect();
    let id = runner.submit(&caller, &targets).await.expect("a job");
    let board = Dashboard::new(Arc::clone(&runner), |_: &axum::http::request::Parts| {
        Some(Caller::new("bench"))
    })
    .min_interval(min_interval);
    let app = board.router();
    let mut clients = Vec::with_capacity(streams);
    for _ in 0..streams {
        let request = Request::get(format!("/api/jobs/{id}/events"))
            .body(Body::empty())
            .expect("a request");
        let response = app.clone().oneshot(request).await.expect("infallible");
        let mut body = response.into_body();
        // The first event is there before the clock starts: the stream is open and read.
        body.frame().await.expect("a first event").expect("a frame");
        clients.push(tokio::spawn(async move {
            let mut frames = 0_usize;
            while let Some(Ok(_)) = body.frame().await {
                frames += 1;
            }
            frames
        }));
    }
    let mut watch = runner.watch(&caller, id).await.expect("a watch");
    let start = Instant::now();
    gate.add_permits(1);
    while watch.progress().status.is_live() {
        watch.changed().await;
    }
    let elapsed = start.elapsed();
    for client in clients {
        std::hint::black_box(client.await.expect("a client"));
    }
    runner.close().await;
    assert_eq!(board.open_streams(), 0);
    elapsed
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("one_job_300k_targets_sse");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TARGETS as u64));
    let cases = [
        ("batch_runner_0_streams", 0, DEFAULT_MIN_INTERVAL),
        ("batch_runner_1000_streams", 1_000, DEFAULT_MIN_INTERVAL),
        (
            "batch_runner_1000_streams_every_change",
            1_000,
            Duration::ZERO,
        ),
    ];
    for (name, streams, interval) in cases {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| rt.block_on(run(streams, interval)))
                    .sum::<Duration>()
            });
        });
    }
    group.finish();
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
