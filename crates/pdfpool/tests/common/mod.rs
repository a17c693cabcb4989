//! Helpers shared by the integration tests: jobs the test finishes by hand, and settling a
//! current-thread runtime with a paused clock.

#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::oneshot;

/// A boxed job future.
pub type BoxJob<V> = Pin<Box<dyn Future<Output = V> + Send>>;

/// How a gated job ends.
pub enum End<V> {
    Value(V),
    Panic(&'static str),
}

/// The test's end of a job: counts calls of its closure and ends the job on command.
pub struct Gate<V> {
    end: Option<oneshot::Sender<End<V>>>,
    calls: Arc<AtomicUsize>,
}

impl<V: Send + 'static> Gate<V> {
    /// How many times the closure was called (0 or 1).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Ends the job with `value` (the job must have been started).
    pub fn finish(&mut self, value: V) {
        let sent = self
            .end
            .take()
            .expect("gate used once")
            .send(End::Value(value));
        assert!(sent.is_ok(), "the job is not running");
    }

    /// Makes the job panic with `message`.
    pub fn panic(&mut self, message: &'static str) {
        let sent = self
            .end
            .take()
            .expect("gate used once")
            .send(End::Panic(message));
        assert!(sent.is_ok(), "the job is not running");
    }
}

/// A job closure that waits for its gate, and the gate.
pub fn gated<V: Send + 'static>() -> (Gate<V>, impl FnOnce() -> BoxJob<V> + Send + 'static) {
    let (tx, rx) = oneshot::channel::<End<V>>();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let job = move || -> BoxJob<V> {
        counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match rx.await {
                Ok(End::Value(value)) => value,
                Ok(End::Panic(message)) => panic!("{message}"),
                Err(_) => std::future::pending().await,
            }
        })
    };
    (
        Gate {
            end: Some(tx),
            calls,
        },
        job,
    )
}

/// A job closure that must never be called.
pub fn never<V: Send + 'static>() -> impl FnOnce() -> BoxJob<V> + Send + 'static {
    || -> BoxJob<V> { panic!("this job's closure must never be called") }
}

/// Lets every ready task of a current-thread runtime run until nothing is left to do; the
/// paused clock does not move (this task never parks).
pub async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

/// The pool most tests use: string keys and callers, `String` values.
pub type TestPool = lockgate_pdfpool::Pool<&'static str, &'static str, String>;

/// Starts `pool.run(key, caller, job)` in its own task.
pub fn spawn_run<F, Fut>(
    pool: &TestPool,
    key: &'static str,
    caller: &'static str,
    job: F,
) -> tokio::task::JoinHandle<Result<String, lockgate_pdfpool::Error>>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    let pool = pool.clone();
    tokio::spawn(async move { pool.run(key, caller, job).await })
}

/// `n` seconds.
pub const fn secs(n: u64) -> std::time::Duration {
    std::time::Duration::from_secs(n)
}
