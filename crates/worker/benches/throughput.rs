//! Throughput: a batch of tasks submitted from 1 or 4 threads, timed until the last one
//! finished, for `lockgate_worker::Pool` and its peers side by side in one run: a plain bounded pool
//! (threads reading one `std::sync::mpsc::sync_channel`), the `threadpool` crate,
//! `rusty_pool`, `rayon::ThreadPool::spawn` and `tokio::task::spawn_blocking`.
//!
//! Every pool gets as many threads as the machine has CPUs (`available_parallelism()`), and
//! the plain pool's channel holds as many tasks as ours waits for (`max / 2 +
//! DEFAULT_SUBMIT_BUFFER`). `worker_buffer_1M` is our pool with a buffer larger than any
//! batch, so its `submit` never blocks. Two workloads: empty tasks (the pools' own overhead)
//! and ~1 µs tasks. Three loads, each a group prefix: `quiet`, and `busy{n}` with `n` =
//! 1 × and 2 × `available_parallelism()` background threads busy-looping, which the bench
//! starts before the group and stops after it. `BENCH_SCALE=small` divides the counts by
//! 10. Completion is a countdown latch every task decrements, the same for every peer. Each
//! group prints `/proc/loadavg` before it runs, so a reader can tell how quiet "quiet" was.
//!
//! A short run (the numbers in docs/worker.md):
//! `cargo bench -p lockgate-worker --bench throughput -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_main};

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

impl Submit for Arc<lockgate_worker::Pool> {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        lockgate_worker::Pool::submit(self, task)
            .unwrap_or_else(|_| unreachable!("the pool stays open"));
    }
}

/// The plain bounded pool: `threads` threads taking boxed tasks from one bounded channel
/// (the receiver behind a mutex, as the `threadpool` crate shares it).
struct PlainPool {
    sender: Option<SyncSender<Box<dyn FnOnce() + Send>>>,
    threads: Vec<JoinHandle<()>>,
}

impl PlainPool {
    fn new(threads: usize, capacity: usize) -> Self {
        let (sender, receiver) = sync_channel::<Box<dyn FnOnce() + Send>>(capacity);
        let receiver = Arc::new(Mutex::new(receiver));
        let threads = (0..threads)
            .map(|_| {
                let receiver = Arc::clone(&receiver);
                std::thread::spawn(move || {
                    loop {
                        // The guard is dropped before the task runs.
                        let next = receiver.lock().unwrap().recv();
                        match next {
                            Ok(task) => task(),
                            Err(_) => break, // every sender is gone
                        }
                    }
                })
            })
            .collect();
        Self {
            sender: Some(sender),
            threads,
        }
    }

    fn sender(&self) -> PlainSender {
        PlainSender(self.sender.clone().expect("open until dropped"))
    }
}

impl Drop for PlainPool {
    fn drop(&mut self) {
        self.sender = None;
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

#[derive(Clone)]
struct PlainSender(SyncSender<Box<dyn FnOnce() + Send>>);

impl Submit for PlainSender {
    fn submit(&self, task: impl FnOnce() + Send + 'static) {
        self.0
            .send(Box::new(task))
            .unwrap_or_else(|_| unreachable!("the pool stays open"));
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

/// Background threads that busy-loop until dropped: the "loaded machine" of a group.
struct BusyLoops {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BusyLoops {
    fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

fn scale(count: usize) -> usize {
    if std::env::var("BENCH_SCALE").is_ok_and(|s| s == "small") {
        count / 10
    } else {
        count
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| String::from("unknown"),
        |line| {
            line.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

fn throughput(c: &mut Criterion) {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let ours = Arc::new(lockgate_worker::Pool::new(cpus, cpus).unwrap());
    let ours_big_buffer = Arc::new(
        lockgate_worker::Pool::builder(cpus, cpus)
            .submit_buffer(1 << 20)
            .build()
            .unwrap(),
    );
    let plain = PlainPool::new(cpus, ours.capacity());
    let plain_sender = plain.sender();
    let threadpool = threadpool::ThreadPool::new(cpus);
    let rusty = rusty_pool::ThreadPool::new(cpus, cpus, Duration::from_secs(60));
    let rayon = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(cpus)
            .build()
            .unwrap(),
    );
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(cpus)
        .build()
        .unwrap();
    let tokio_handle = tokio.handle().clone();

    for (load, busy) in [("quiet", 0), ("busy1x", cpus), ("busy2x", 2 * cpus)] {
        for (work, label, tasks) in [
            (Work::Empty, "empty", scale(100_000)),
            (Work::Micro, "1us", scale(20_000)),
        ] {
            for submitters in [1, 4] {
                let name = format!("{load}/{label}_x{tasks}_from_{submitters}");
                eprintln!(
                    "{name}: {cpus} pool threads, {busy} busy loops, load average {}",
                    load_average()
                );
                let _busy = BusyLoops::start(busy);
                let mut group = c.benchmark_group(name);
                group.throughput(Throughput::Elements(tasks as u64));
                group.sample_size(10);
                group.sampling_mode(SamplingMode::Flat);
                let id = |name: &str| BenchmarkId::from_parameter(name);
                group.bench_function(id("worker"), |b| {
                    b.iter(|| batch(&ours, tasks, submitters, work))
                });
                group.bench_function(id("plain_bounded"), |b| {
                    b.iter(|| batch(&plain_sender, tasks, submitters, work))
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
    }
    ours.close().unwrap();
    ours_big_buffer.close().unwrap();
    drop(plain_sender);
    drop(plain);
}

mod harness {
    // criterion's macros generate undocumented items.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::throughput);
}

criterion_main!(harness::benches);
