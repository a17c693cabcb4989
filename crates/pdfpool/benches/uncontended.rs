//! Uncontended `run` of a ready job against its floor: `tokio::spawn` of the same job behind a
//! bare `tokio::sync::Semaphore` permit (what a pool without sharing or caller rules costs).
//! Both spawn one task per request and wait for its output, on a current-thread runtime.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use tokio::sync::Semaphore;

fn uncontended(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("uncontended_run");

    let pool: lockgate_pdfpool::Pool<u64, u64, u64> =
        lockgate_pdfpool::Pool::new(2, 4, Duration::from_secs(10));
    group.bench_function("pdfpool_run", |b| {
        b.to_async(&runtime).iter(|| async {
            let value = pool
                .run(black_box(1), black_box(7), || async { 42_u64 })
                .await;
            black_box(value.unwrap())
        });
    });

    let semaphore = Arc::new(Semaphore::new(2));
    group.bench_function("spawn_plus_semaphore", |b| {
        b.to_async(&runtime).iter(|| async {
            let permit = Arc::clone(&semaphore).acquire_owned().await.unwrap();
            let value = tokio::spawn(async move {
                let _permit = permit;
                42_u64
            })
            .await;
            black_box(value.unwrap())
        });
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
        targets = super::uncontended
    }
}

criterion::criterion_main!(group::benches);
