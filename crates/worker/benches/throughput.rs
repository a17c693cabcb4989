//! Throughput: a batch of tasks submitted from 1 or 4 threads, timed until the last one
//! finished, for `worker::Pool` and its peers side by side in one run: the `threadpool`
//! crate, `rusty_pool`, `rayon::ThreadPool::spawn` and `tokio::task::spawn_blocking`.
//!
//! Every pool gets 4 threads. Two workloads: empty tasks (1M per batch; the pool's own
//! overhead) and ~1 µs tasks (100k per batch). `BENCH_SCALE=small` divides the counts by 10.
//! Completion is a countdown latch every task decrements, the same for every peer.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};

const THREADS: usize = 4;

/// Counts tasks down and wakes the waiter when the last one finishes.
struct Latch {
    remaining: AtomicUsize,
    done: Mutex<bool>,
    finished: Condvar,
}

impl Latch {
    fn new(count: usize) -> Arc<Self> {
        Arc::new(Self {
            remaining: AtomicUsize::new(count),
            done: Mutex::new(false),
            finished: Condvar::new(),
        })
    }

    fn count_down(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.done.lock().unwrap() = true;
            self.finished.notify_all();
        }
    }

    fn wait(&self) {
        let done = self.done.lock().unwrap();
        drop(self.finished.wait_while(done, |done| !*done).unwrap());
    }
}

/// A pool under test, as a handle each submitting thread gets its own copy of.
trait Submit: Send + 'static {
    fn submit(&self, task: impl FnOnce() + Send + 'static);
}

impl Submit for Arc<worker::Pool> {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        worker::Pool::submit(self, task).unwrap_or_else(|_| unreachable!("the pool stays open"));
    }
}

impl Submit for threadpool::ThreadPool {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        self.execute(task);
    }
}

impl Submit for rusty_pool::ThreadPool {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        self.execute(task);
    }
}

impl Submit for Arc<rayon::ThreadPool> {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        self.spawn(task);
    }
}

impl Submit for tokio::runtime::Handle {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        drop(self.spawn_blocking(task));
    }
}

#[derive(Clone, Copy)]
enum Work {
    Empty,
    Micro,
}

/// Busy work of about a microsecond.
fn one_micro() {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(1) {
        std::hint::spin_loop();
    }
}

/// Submits `tasks` tasks from `submitters` threads and waits until all finished.
fn batch<P: Submit + Clone>(pool: &P, tasks: usize, submitters: usize, work: Work) {
    let latch = Latch::new(tasks);
    std::thread::scope(|scope| {
        for part in 0..submitters {
            let (pool, latch) = (pool.clone(), Arc::clone(&latch));
            let share = tasks / submitters + usize::from(part < tasks % submitters);
            scope.spawn(move || {
                for _ in 0..share {
                    let latch = Arc::clone(&latch);
                    pool.submit(move || {
                        if let Work::Micro = work {
                            one_micro();
                        }
                        black_box(());
                        latch.count_down();
                    });
                }
            });
        }
    });
    latch.wait();
}

fn scale(count: usize) -> usize {
    if std::env::var("BENCH_SCALE").is_ok_and(|s| s == "small") {
        count / 10
    } else {
        count
    }
}

fn throughput(c: &mut Criterion) {
    let ours = Arc::new(worker::Pool::builder(THREADS, THREADS).build().unwrap());
    let ours_big_buffer = Arc::new(
        worker::Pool::builder(THREADS, THREADS)
            .submit_buffer(1 << 20)
            .build()
            .unwrap(),
    );
    let threadpool = threadpool::ThreadPool::new(THREADS);
    let rusty = rusty_pool::ThreadPool::new(THREADS, THREADS, Duration::from_secs(60));
    let rayon = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .build()
            .unwrap(),
    );
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(THREADS)
        .build()
        .unwrap();
    let tokio_handle = tokio.handle().clone();

    for (work, label, tasks) in [
        (Work::Empty, "empty", scale(1_000_000)),
        (Work::Micro, "1us", scale(100_000)),
    ] {
        for submitters in [1, 4] {
            let mut group = c.benchmark_group(format!("{label}_x{tasks}_from_{submitters}"));
            group.throughput(Throughput::Elements(tasks as u64));
            group.sample_size(10);
            let id = |name: &str| BenchmarkId::from_parameter(name);
            group.bench_function(id("worker"), |b| {
                b.iter(|| batch(&ours, tasks, submitters, work))
            });
            group.bench_function(id("worker_buffer_1M"), |b| {
                b.iter(|| batch(&ours_big_buffer, tasks, submitters, work))
            });
            group.bench_function(id("threadpool"), |b| {
                b.iter(|| batch(&threadpool, tasks, submitters, work))
            });
            group.bench_function(id("rusty_pool"), |b| {
                b.iter(|| batch(&rusty, tasks, submitters, work))
            });
            group.bench_function(id("rayon_spawn"), |b| {
                b.iter(|| batch(&rayon, tasks, submitters, work))
            });
            group.bench_function(id("tokio_spawn_blocking"), |b| {
                b.iter(|| batch(&tokio_handle, tasks, submitters, work))
            });
            group.finish();
        }
    }
    ours.close().unwrap();
    ours_big_buffer.close().unwrap();
}

mod harness {
    // criterion's macros generate undocumented items.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::throughput);
}

criterion_main!(harness::benches);
