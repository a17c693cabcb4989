//! Contention: 64 callers hammer a pool of 2 slots and a queue of 4, each request a distinct
//! key (no sharing) and a job of two yields. Measured: the time for every caller to make
//! `ROUNDS` requests; printed after the run: admissions per second and the `Busy` rate.
//!
//! Peer in the same run: the same admission limits built from a bare `tokio::sync::Semaphore`
//! (2 permits) and an atomic counter refusing beyond 2 + 4 in flight, with `tokio::spawn` per
//! job: no sharing, no per-caller rule, no wait limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use tokio::sync::Semaphore;

const CALLERS: u64 = 64;
const ROUNDS: u64 = 50;
const SLOTS: usize = 2;
const QUEUE: usize = 4;

async fn job() -> u64 {
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    1
}

#[derive(Default)]
struct Counts {
    admitted: AtomicUsize,
    busy: AtomicUsize,
}

async fn pdfpool_round(counts: Arc<Counts>) {
    let pool: lockgate_pdfpool::Pool<u64, u64, u64> =
        lockgate_pdfpool::Pool::new(SLOTS, QUEUE, Duration::from_secs(10));
    let mut callers = Vec::new();
    for caller in 0..CALLERS {
        let (pool, counts) = (pool.clone(), Arc::clone(&counts));
        callers.push(tokio::spawn(async move {
            for round in 0..ROUNDS {
                match pool.run(caller * ROUNDS + round, caller, job).await {
                    Ok(_) => counts.admitted.fetch_add(1, Ordering::Relaxed),
                    Err(lockgate_pdfpool::Error::Busy { .. }) => {
                        counts.busy.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(other) => panic!("unexpected {other:?}"),
                };
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
}

async fn semaphore_round(counts: Arc<Counts>) {
    let permits = Arc::new(Semaphore::new(SLOTS));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let (permits, in_flight, counts) = (
            Arc::clone(&permits),
            Arc::clone(&in_flight),
            Arc::clone(&counts),
        );
        callers.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                if in_flight.fetch_add(1, Ordering::AcqRel) >= SLOTS + QUEUE {
                    in_flight.fetch_sub(1, Ordering::AcqRel);
                    counts.busy.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let permit = Arc::clone(&permits).acquire_owned().await.unwrap();
                let value = tokio::spawn(async move {
                    let _permit = permit;
                    job().await
                })
                .await
                .unwrap();
                in_flight.fetch_sub(1, Ordering::AcqRel);
                std::hint::black_box(value);
                counts.admitted.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
}

fn contention(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("contention_64_callers_2_slots_queue_4");
    group.sample_size(10);
    type Round = fn(Arc<Counts>) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;
    let peers: [(&str, Round); 2] = [
        ("pdfpool", |counts| Box::pin(pdfpool_round(counts))),
        ("semaphore_and_counter", |counts| {
            Box::pin(semaphore_round(counts))
        }),
    ];
    let mut summaries = Vec::new();
    for (name, round) in peers {
        let counts = Arc::new(Counts::default());
        let mut busy_time = Duration::ZERO;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    runtime.block_on(round(Arc::clone(&counts)));
                }
                let took = start.elapsed();
                busy_time += took;
                took
            });
        });
        let admitted = counts.admitted.load(Ordering::Relaxed);
        let busy = counts.busy.load(Ordering::Relaxed);
        summaries.push(format!(
            "{name}: {:.0} admissions/s, Busy rate {:.1}% ({admitted} admitted, {busy} busy)",
            admitted as f64 / busy_time.as_secs_f64(),
            100.0 * busy as f64 / (admitted + busy).max(1) as f64,
        ));
    }
    group.finish();
    for summary in summaries {
        println!("{summary}");
    }
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
        targets = super::contention
    }
}

criterion::criterion_main!(group::benches);
