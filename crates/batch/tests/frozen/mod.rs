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

use lockgate_batch::store::StoreWrapper;
use lockgate_batch::store::{Claim, Completion, Store, Timestamp};
use lockgate_batch::{StoreError, TargetState};

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
impl<S: Store> StoreWrapper for Frozen<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.store
    }

    fn around<F>(&self, call: F) -> impl Future<Output = F::Output> + Send
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

    fn changed(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }

    // `Frozen` changes no call, so the inner store's combined call is its own.
    fn complete_and_claim(
        &self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> impl Future<Output = Result<(Completion, Option<Claim>), StoreError>> + Send {
        self.around(S::complete_and_claim(&self.store, claim, result, now))
    }

    fn claims_with_complete(&self) -> bool {
        S::claims_with_complete(&self.store)
    }
}
