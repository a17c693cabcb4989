//! Stress, two ways:
//!
//! - 8 threads submit many tasks (some panic) while the main thread closes the pool in the
//!   middle. At the end: every accepted task ran exactly once, every rejected one never ran,
//!   the counters are zero, and no worker thread outlives `close`.
//! - A pool with as many workers as CPUs and a small buffer, fed by 4 submitters while twice
//!   as many background threads as CPUs busy-loop (the loaded machine that starved the
//!   pool's spinning threads): after `join`, every task ran exactly once and every spawned
//!   handle holds its result; nothing is timed.
//!
//! Shrinks under `TEST_SCALE=small` (TSan, Miri gate steps) and under Miri itself.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Once};

use lockgate_worker::Pool;

const SUBMITTERS: usize = 8;
const PANIC_MESSAGE: &str = "stress panic";

fn total_tasks() -> usize {
    if cfg!(miri) {
        160
    } else if std::env::var("TEST_SCALE").is_ok_and(|scale| scale == "small") {
        4_000
    } else {
        100_000
    }
}

/// Worker threads alive right now, counted by a thread-local guard each task touches: the
/// guard's destructor runs when the thread ends, before `join` returns.
static LIVE_WORKER_THREADS: AtomicUsize = AtomicUsize::new(0);

struct LiveGuard;

impl LiveGuard {
    fn new() -> Self {
        LIVE_WORKER_THREADS.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        LIVE_WORKER_THREADS.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    static COUNTED: LiveGuard = LiveGuard::new();
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// xorshift64*, seeded per submitting thread: deterministic "random" panics.
fn next_random() -> u64 {
    RNG.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

fn quiet_stress_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&PANIC_MESSAGE) {
                default(info);
            }
        }));
    });
}

#[test]
fn many_submitters_random_panics_and_a_close_in_the_middle() {
    quiet_stress_panics();
    let total = total_tasks();
    let per_thread = total / SUBMITTERS;
    let pool = Arc::new(
        Pool::builder(2, 8)
            .submit_buffer(64)
            .thread_name("stress")
            .build()
            .unwrap(),
    );
    // The `/proc` count sees a worker that has run a task (so the check after close can
    // fail). Checked before the submitters start: reading `/proc` while threads come and
    // go may skip entries.
    pool.spawn(|| ()).join().unwrap();
    if let Some(alive) = named_threads_alive("stress-") {
        assert!(alive >= 1, "the /proc count sees the pool's workers");
    }
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let accepted_count = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(SUBMITTERS + 1));

    let submitters: Vec<_> = (0..SUBMITTERS)
        .map(|t| {
            let (pool, runs, accepted_count, start) = (
                pool.clone(),
                runs.clone(),
                accepted_count.clone(),
                start.clone(),
            );
            std::thread::spawn(move || {
                RNG.with(|state| state.set(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1)));
                start.wait();
                let mut accepted = Vec::new();
                for id in t * per_thread..(t + 1) * per_thread {
                    let panics = next_random().is_multiple_of(16);
                    let runs = runs.clone();
                    let task = move || {
                        COUNTED.with(|_| ());
                        runs[id].fetch_add(1, Ordering::SeqCst);
                        if panics {
                            std::panic::panic_any(PANIC_MESSAGE);
                        }
                    };
                    // Mix the three ways in; a full pool just means "try the blocking one".
                    let outcome = match next_random() % 4 {
                        0 => pool.try_submit(task).or_else(|err| {
                            if err.is_full() {
                                pool.submit(err.into_inner()).map_err(drop)
                            } else {
                                Err(())
                            }
                        }),
                        1 => pool
                            .submit_timeout(task, std::time::Duration::from_millis(1))
                            .or_else(|err| {
                                if err.is_timeout() {
                                    pool.submit(err.into_inner()).map_err(drop)
                                } else {
                                    Err(())
                                }
                            }),
                        _ => pool.submit(task).map_err(drop),
                    };
                    match outcome {
                        Ok(()) => {
                            accepted.push(id);
                            accepted_count.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(()) => break, // closed: everything after is rejected too
                    }
                }
                accepted
            })
        })
        .collect();

    start.wait();
    // Close in the middle: once about half of the tasks are in.
    while accepted_count.load(Ordering::SeqCst) < total / 2 {
        std::thread::yield_now();
    }
    pool.close().unwrap();
    assert_eq!(
        LIVE_WORKER_THREADS.load(Ordering::SeqCst),
        0,
        "a worker thread outlived close"
    );
    assert_eq!(
        (pool.workers(), pool.idle(), pool.running(), pool.queued()),
        (0, 0, 0, 0)
    );

    let mut accepted = vec![false; total];
    for submitter in submitters {
        for id in submitter.join().unwrap() {
            accepted[id] = true;
        }
    }
    let accepted_total = accepted.iter().filter(|a| **a).count();
    assert!(accepted_total >= total / 2);
    for (id, was_accepted) in accepted.iter().enumerate() {
        let ran = runs[id].load(Ordering::SeqCst);
        assert_eq!(
            ran,
            u8::from(*was_accepted),
            "task {id}: accepted {was_accepted}, ran {ran} times"
        );
    }
    assert_eq!(
        pool.completed(),
        accepted_total as u64 + 1,
        "the tasks and the probe"
    );
}

/// Threads of this process whose name starts with `prefix`, from `/proc` (Linux); `None`
/// where `/proc` cannot be read (Miri's isolation, other systems), leaving the thread-local
/// count as the check there.
fn named_threads_alive(prefix: &str) -> Option<usize> {
    if cfg!(miri) {
        return None;
    }
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(Result::ok)
            .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
            .filter(|name| name.starts_with(prefix))
            .count(),
    )
}

/// Background threads busy-looping until dropped.
struct BusyLoops {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
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

#[test]
fn busy_loops_beside_the_pool_cost_no_task() {
    quiet_stress_panics();
    const LOADED_SUBMITTERS: usize = 4;
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    // Under Miri every thread is interpreted: one busy loop still makes the workers share.
    let busy = if cfg!(miri) { 1 } else { 2 * cpus };
    let per_thread = total_tasks() / 2 / LOADED_SUBMITTERS;
    let total = per_thread * LOADED_SUBMITTERS;
    let pool = Arc::new(
        Pool::builder(cpus, cpus)
            .submit_buffer(8)
            .thread_name("loaded")
            .build()
            .unwrap(),
    );
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let loops = BusyLoops::start(busy);
    let submitters: Vec<_> = (0..LOADED_SUBMITTERS)
        .map(|t| {
            let (pool, runs) = (Arc::clone(&pool), Arc::clone(&runs));
            std::thread::spawn(move || {
                RNG.with(|state| state.set(0xD1B5_4A32_D192_ED03 ^ (t as u64 + 1)));
                let mut handles = Vec::new();
                for id in t * per_thread..(t + 1) * per_thread {
                    let panics = next_random().is_multiple_of(32);
                    let runs = Arc::clone(&runs);
                    let task = move || {
                        runs[id].fetch_add(1, Ordering::SeqCst);
                        if panics {
                            std::panic::panic_any(PANIC_MESSAGE);
                        }
                        id
                    };
                    // Every way in: the blocking one, the non-blocking one retried by the
                    // blocking one, a timed one, and `spawn` with a handle to check later.
                    match next_random() % 4 {
                        0 => pool
                            .submit(move || {
                                task();
                            })
                            .unwrap(),
                        1 => pool
                            .try_submit(move || {
                                task();
                            })
                            .or_else(|full| pool.submit(full.into_inner()).map_err(drop))
                            .unwrap(),
                        2 => pool
                            .submit_timeout(
                                move || {
                                    task();
                                },
                                std::time::Duration::from_micros(50),
                            )
                            .or_else(|late| pool.submit(late.into_inner()).map_err(drop))
                            .unwrap(),
                        _ => handles.push((id, panics, pool.spawn(task))),
                    }
                }
                handles
            })
        })
        .collect();
    let handles: Vec<_> = submitters
        .into_iter()
        .flat_map(|submitter| submitter.join().unwrap())
        .collect();
    pool.join().unwrap();
    // `join` returned: every accepted task ran, exactly once, with the load still on.
    for (id, ran) in runs.iter().enumerate() {
        assert_eq!(ran.load(Ordering::SeqCst), 1, "task {id}");
    }
    drop(loops);
    for (id, panicked, handle) in handles {
        assert!(handle.is_finished(), "task {id} ran before join returned");
        match handle.join() {
            Ok(value) => assert!(!panicked && value == id, "task {id}"),
            Err(lockgate_worker::JoinError::Panicked(panic)) => {
                assert!(panicked, "task {id}");
                assert_eq!(panic.message(), PANIC_MESSAGE);
            }
            Err(other) => panic!("task {id}: {other}"),
        }
    }
    assert_eq!(pool.completed(), total as u64);
    assert_eq!((pool.queued(), pool.running()), (0, 0));
    pool.close().unwrap();
}
