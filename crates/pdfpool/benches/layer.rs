//! `AdmissionLayer` against tower's `ConcurrencyLimit`, per request, uncontended: each
//! request is `ready().await` then `call(..).await` on a trivial inner service, on a
//! current-thread runtime, so what is measured is the layer's own cost (admission, the
//! response future, leaving). Both limit to the same number of slots; the peer has no queue
//! bound and no wait limit. A bare inner service is the floor.
//!
//! Run with `cargo bench -p lockgate-pdfpool --features tower --bench layer`.

use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use lockgate_pdfpool::AdmissionLayer;
use tower::limit::ConcurrencyLimitLayer;
use tower::{Layer, Service, ServiceExt, service_fn};

const SLOTS: usize = 4;

async fn inner(request: u64) -> Result<u64, Infallible> {
    Ok(request + 1)
}

/// One request through `service`, the way a server drives a tower service.
async fn one<S>(service: &mut S, request: u64) -> u64
where
    S: Service<u64, Response = u64>,
    S::Error: std::fmt::Debug,
{
    let ready = service.ready().await.unwrap();
    black_box(ready.call(black_box(request)).await.unwrap())
}

/// Times `iters` requests through `service`, back to back.
fn timed<S>(runtime: &tokio::runtime::Runtime, service: &mut S, iters: u64) -> Duration
where
    S: Service<u64, Response = u64>,
    S::Error: std::fmt::Debug,
{
    runtime.block_on(async {
        let start = Instant::now();
        for request in 0..iters {
            one(service, request).await;
        }
        start.elapsed()
    })
}

fn layer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("layer_per_request");

    let mut admission =
        AdmissionLayer::new(SLOTS, 16, Duration::from_secs(10)).layer(service_fn(inner));
    group.bench_function("pdfpool_admission_layer", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut admission, iters));
    });

    let mut limit = ConcurrencyLimitLayer::new(SLOTS).layer(service_fn(inner));
    group.bench_function("tower_concurrency_limit", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut limit, iters));
    });

    let mut bare = service_fn(inner);
    group.bench_function("bare_service_floor", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut bare, iters));
    });
    group.finish();
}

/// criterion's generated group function has no doc comment, hence the allow.
mod group {
    #![allow(missing_docs)]
    use std::time::Duration;

    criterion::criterion_group! {
        name = benches;
        // Short by default: the machine is shared.
        config = criterion::Criterion::default()
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        targets = super::layer
    }
}

criterion::criterion_main!(group::benches);
