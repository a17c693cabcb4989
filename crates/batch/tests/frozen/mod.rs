//! [`Frozen`]: any store, each call one atomic step in the test's virtual time.
//!
//! A store that answers from elsewhere (SQLite from its connection's thread, PostgreSQL from
//! the server) leaves the test's runtime with nothing to run while a call is out. On tokio's
//! paused clock that moves time to the next timer: a retry or a heartbeat would fire in the
//! middle of a store call, and the suite's exact orders and timings would not hold. `Frozen`
//! runs each call on a runtime of its own and blocks the test's thread until it answers, so
//! the clock stands still and no other task runs meanwhile, as with the in-memory store.
//! Its `changed` never resolves: one runner sees its own changes. The SQLite and PostgreSQL
//! test binaries run the suite over it.

use std::sync::Arc;

use lockgate_batch::store::{CallerStore, Store, WorkerStore};

/// A store whose every call blocks its caller's thread until done.
pub struct Frozen<S> {
    store: Arc<S>,
    runtime: OwnRuntime,
}

/// A runtime that may be dropped anywhere (it shuts down in the background).
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl<S: Store> Frozen<S> {
    pub fn new(store: S) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        Self {
            store: Arc::new(store),
            runtime: OwnRuntime(Some(runtime)),
        }
    }
}

/// Every call but `changed` goes through `around`, which runs it to the end on the own
/// runtime (from a scoped thread, since the test's thread may be inside its own runtime)
/// before the test's thread goes on.
impl<S: Store> Frozen<S> {
    /// Runs one store call on the frozen runtime, blocking this thread until it answers.
    fn around<F>(&self, call: F) -> std::future::Ready<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.runtime.0.as_ref().expect("runtime");
        let output = std::thread::scope(|scope| {
            scope
                .spawn(|| runtime.block_on(call))
                .join()
                .expect("store call panicked")
        });
        std::future::ready(output)
    }
}

impl<S: Store> WorkerStore for Frozen<S> {
    forward!(store: lease_ttl);
    forward!(store via around: recover claim renew finish next_wakeup evict_oldest);

    fn changed(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}

impl<S: Store> CallerStore for Frozen<S> {
    forward!(store: events);
    forward!(store via around: submit status summary jobs touch cancel);
    forward!(store via around: jobs_page job targets_page);
}
