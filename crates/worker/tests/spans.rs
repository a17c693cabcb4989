//! With a subscriber listening, each task runs in a `worker.task` span whose parent is the
//! span current where it was submitted, on whichever worker thread runs it; a refused task
//! still comes back as the caller's own closure. (One test: the subscriber is the process's
//! global default, as a worker thread does not see a test thread's own.)

use std::io::Write;
use std::sync::{Arc, Mutex};

use lockgate_worker::{Pool, TrySubmitError};

/// A writer into a shared buffer, for the fmt subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_task_runs_in_a_worker_task_span_under_its_submitters_span() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let pool = Pool::builder(1, 1).submit_buffer(0).build().unwrap();
    let request = tracing::info_span!("request", id = 7);
    let spawned = request.in_scope(|| pool.spawn(|| tracing::info!(n = 1, "in a spawned task")));
    spawned.join().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    request.in_scope(|| {
        pool.submit(move || {
            tracing::info!(n = 2, "in a submitted task");
            done.send(()).unwrap();
        })
        .unwrap();
    });
    finished.recv().unwrap();
    pool.spawn(|| tracing::info!(n = 3, "outside any request"))
        .join()
        .unwrap();

    // A full pool refuses the next task and hands back the caller's own closure.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (entered, inside) = std::sync::mpsc::channel::<()>();
    pool.submit(move || {
        entered.send(()).unwrap();
        held.recv().unwrap();
    })
    .unwrap();
    inside.recv().unwrap();
    let mut queued = Vec::new();
    let refused = loop {
        // The queue takes what the capacity allows; then the pool refuses.
        match request.in_scope(|| pool.try_spawn(|| 40 + 2)) {
            Ok(handle) => queued.push(handle),
            Err(TrySubmitError::Full(task)) => break task,
            Err(other) => panic!("{other:?}"),
        }
        assert!(queued.len() < 10, "the pool never filled");
    };
    assert_eq!(refused(), 42, "the caller's own closure came back");
    release.send(()).unwrap();
    for handle in queued {
        assert_eq!(handle.join().unwrap(), 42);
    }
    pool.close().unwrap();

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for line in [
        "request{id=7}:worker.task: in a spawned task n=1",
        "request{id=7}:worker.task: in a submitted task n=2",
        "worker.task: outside any request n=3",
    ] {
        assert!(text.contains(line), "no line {line:?} in:\n{text}");
    }
    assert!(
        !text.contains("}:worker.task: outside any request"),
        "a task submitted outside a span has no parent:\n{text}"
    );
}
