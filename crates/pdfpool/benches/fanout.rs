//! Fan-out: 10,000 sharers wait on one job; measured is the time from the job's end (taken
//! inside the job, just before it returns) to the wake-up of the last sharer. Peers in the same
//! run: `async_singleflight` (a watch channel per key) and, as a floor, a bare
//! `tokio::sync::watch` channel with 10,000 receivers and no single-flight logic at all, and a
//! second floor, `oneshot_floor`: 10,000 bare `tokio::sync::oneshot` channels carrying the
//! pool's result type, one per sharer, sent one after another (the shape of pdfpool's delivery
//! without its table, waiter bookkeeping or panic catching).
//!
//! A current-thread runtime: every sharer is parked before the job is released (a few yields
//! get them there deterministically), and wake-ups are not spread over the shared cores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

const SHARERS: usize = 10_000;

/// One fan-out round of a peer, returning the time from the job's end to the last wake-up.
type Round = fn() -> std::pin::Pin<Box<dyn Future<Output = Duration>>>;

/// The instant the job ended, written by the job.
type EndMark = Arc<Mutex<Option<Instant>>>;

/// Yields until `parked` sharers have reached their await point. Each sharer counts itself
/// just before it awaits; on a current-thread runtime it is parked once its poll returns,
/// which happens before this task runs again.
async fn park_everyone(parked: &AtomicUsize, sharers: usize) {
    while parked.load(Ordering::SeqCst) < sharers {
        tokio::task::yield_now().await;
    }
    tokio::task::yield_now().await;
}

/// Awaits every sharer and returns the last wake-up instant.
async fn last_wake(sharers: Vec<JoinHandle<Instant>>) -> Instant {
    let mut last = None;
    for sharer in sharers {
        let woke = sharer.await.unwrap();
        last = Some(last.map_or(woke, |l: Instant| l.max(woke)));
    }
    last.unwrap()
}

fn ended(mark: &EndMark) -> Instant {
    mark.lock().unwrap().expect("the job ended")
}

async fn pdfpool_round() -> Duration {
    let pool: lockgate_pdfpool::Pool<u64, u64, u64> =
        lockgate_pdfpool::Pool::new(2, 4, Duration::from_secs(60));
    let release = Arc::new(Semaphore::new(0));
    let mark = EndMark::default();
    let parked = Arc::new(AtomicUsize::new(0));
    let mut sharers = Vec::with_capacity(SHARERS);
    {
        let (pool, release, mark) = (pool.clone(), Arc::clone(&release), Arc::clone(&mark));
        let parked = Arc::clone(&parked);
        sharers.push(tokio::spawn(async move {
            let job = move || async move {
                let _permit = release.acquire().await.unwrap();
                *mark.lock().unwrap() = Some(Instant::now());
                7_u64
            };
            parked.fetch_add(1, Ordering::SeqCst);
            pool.run(0, 0, job).await.unwrap();
            Instant::now()
        }));
    }
    park_everyone(&parked, 1).await;
    for _ in 1..SHARERS {
        let (pool, parked) = (pool.clone(), Arc::clone(&parked));
        sharers.push(tokio::spawn(async move {
            parked.fetch_add(1, Ordering::SeqCst);
            pool.join(&0).await.unwrap().unwrap();
            Instant::now()
        }));
    }
    park_everyone(&parked, SHARERS).await;
    assert_eq!(
        pool.waiting(&0),
        SHARERS - 1,
        "every sharer but the starter"
    );
    release.add_permits(1);
    let last = last_wake(sharers).await;
    last - ended(&mark)
}

async fn singleflight_round() -> Duration {
    let group: Arc<async_singleflight::Group<u64, u64, ()>> =
        Arc::new(async_singleflight::Group::new());
    let release = Arc::new(Semaphore::new(0));
    let mark = EndMark::default();
    let parked = Arc::new(AtomicUsize::new(0));
    let mut sharers = Vec::with_capacity(SHARERS);
    for _ in 0..SHARERS {
        let (group, release, mark) = (Arc::clone(&group), Arc::clone(&release), Arc::clone(&mark));
        let parked = Arc::clone(&parked);
        sharers.push(tokio::spawn(async move {
            let job = async move {
                let _permit = release.acquire().await.unwrap();
                *mark.lock().unwrap() = Some(Instant::now());
                Ok(7_u64)
            };
            parked.fetch_add(1, Ordering::SeqCst);
            group.work(&0, job).await.unwrap();
            Instant::now()
        }));
    }
    park_everyone(&parked, SHARERS).await;
    release.add_permits(1);
    let last = last_wake(sharers).await;
    last - ended(&mark)
}

async fn watch_round() -> Duration {
    let (sender, receiver) = watch::channel(None::<u64>);
    let parked = Arc::new(AtomicUsize::new(0));
    let mut sharers = Vec::with_capacity(SHARERS);
    for _ in 0..SHARERS {
        let mut receiver = receiver.clone();
        let parked = Arc::clone(&parked);
        sharers.push(tokio::spawn(async move {
            parked.fetch_add(1, Ordering::SeqCst);
            let value = *receiver.wait_for(Option::is_some).await.unwrap();
            std::hint::black_box(value);
            Instant::now()
        }));
    }
    park_everyone(&parked, SHARERS).await;
    let end = Instant::now();
    sender.send_replace(Some(7));
    let last = last_wake(sharers).await;
    last - end
}

/// Ten thousand bare oneshot channels: what delivering to each sharer on its own costs.
async fn oneshot_round() -> Duration {
    let parked = Arc::new(AtomicUsize::new(0));
    let mut sharers = Vec::with_capacity(SHARERS);
    let mut senders = Vec::with_capacity(SHARERS);
    for _ in 0..SHARERS {
        let (tx, rx) = tokio::sync::oneshot::channel::<Result<u64, lockgate_pdfpool::Error>>();
        senders.push(tx);
        let parked = Arc::clone(&parked);
        sharers.push(tokio::spawn(async move {
            parked.fetch_add(1, Ordering::SeqCst);
            let value = rx.await.unwrap().unwrap();
            std::hint::black_box(value);
            Instant::now()
        }));
    }
    park_everyone(&parked, SHARERS).await;
    let end = Instant::now();
    for tx in senders {
        let _ = tx.send(Ok(7));
    }
    let last = last_wake(sharers).await;
    last - end
}

fn fanout(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("fanout_end_to_last_wake");
    group.sample_size(10);
    let peers: [(&str, Round); 4] = [
        ("oneshot_floor", || Box::pin(oneshot_round())),
        ("pdfpool", || Box::pin(pdfpool_round())),
        ("async_singleflight", || Box::pin(singleflight_round())),
        ("bare_watch_floor", || Box::pin(watch_round())),
    ];
    for (name, round) in peers {
        group.bench_function(BenchmarkId::new(name, SHARERS), |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += round().await;
                    }
                    total
                })
            });
        });
    }
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
        targets = super::fanout
    }
}

criterion::criterion_main!(group::benches);
