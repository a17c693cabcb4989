//! `cargo run -p lockgate-worker --example pool`: the pool growing on demand, the capacity rule, a
//! panicking task that costs nothing, and a draining `close`, with the counters printed.

use std::error::Error;
use std::sync::{Arc, Condvar, Mutex};

use lockgate_worker::{JoinError, Pool};

/// A door the demo's "slow" tasks wait at, so the counters can be shown mid-flight.
#[derive(Default)]
struct Door {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Door {
    fn wait(&self) {
        let open = self.open.lock().unwrap();
        drop(self.opened.wait_while(open, |open| !*open).unwrap());
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

fn show(step: &str, pool: &Pool) {
    println!(
        "{step:<38} workers={} idle={} running={} queued={} completed={}",
        pool.workers(),
        pool.idle(),
        pool.running(),
        pool.queued(),
        pool.completed()
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt().with_target(false).init();

    let pool = Pool::builder(1, 4)
        .submit_buffer(2)
        .thread_name("demo")
        .build()?;
    println!(
        "min=1 max=4 submit_buffer=2 -> {} waiting places",
        pool.capacity()
    );
    show("built", &pool);

    // Growth: every task that finds no idle worker starts one, up to max.
    let door = Arc::new(Door::default());
    for n in 1..=4 {
        let door = Arc::clone(&door);
        pool.submit(move || door.wait())?;
        show(&format!("submitted slow task {n}"), &pool);
    }

    // Capacity: with all 4 workers busy, exactly 4/2 + 2 more tasks are accepted.
    for n in 1..=pool.capacity() {
        pool.try_submit(move || println!("  queued task {n} ran"))?;
    }
    show("filled every waiting place", &pool);
    let full = pool.try_submit(|| println!("  the handed-back task ran inline"));
    match full {
        Err(err) if err.is_full() => {
            println!("try_submit on a full pool: {err}; running it here instead");
            (err.into_inner())();
        }
        other => println!("unexpected: {other:?}"),
    }

    // Four workers take the queued tasks in accept order; their lines below appear in
    // whatever order the workers get to print them.
    door.open();

    // A panic: caught, logged by tracing, returned to `join`; the worker goes on. Rust's
    // panic hook prints the panic where it happens; say first that it is on purpose, and let
    // the hook print one line instead of a backtrace that looks like a crash.
    println!("next: a task that panics on purpose (the pool catches it and goes on)");
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| eprintln!("(deliberate) {info}")));
    let failed = pool.spawn(|| -> u32 { panic!("demo task failed") });
    match failed.join() {
        Err(JoinError::Panicked(panic)) => println!("join gave the panic: {}", panic.message()),
        other => println!("unexpected: {other:?}"),
    }
    std::panic::set_hook(default_hook);
    println!(
        "the pool still works: 6 * 7 = {}",
        pool.spawn(|| 6 * 7).join()?
    );
    show("after the panic", &pool);

    // Close: stop intake, drain, join every worker thread.
    pool.close()?;
    show("closed", &pool);
    let rejected = pool.try_submit(|| ());
    println!("submitting after close: {}", rejected.unwrap_err());
    Ok(())
}
