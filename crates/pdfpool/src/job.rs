//! Running a job in its own task, so it outlives the caller that started it (rule 4), and
//! turning its end (value, panic, or a task dropped unfinished) into the table's `finish`.

use std::future::Future;
use std::hash::Hash;

use std::pin::pin;
use std::task::Poll;

use panicguard::Panic;

use crate::Error;
use crate::pool::{Launch, Outcome, Shared};
use crate::sync::Arc;
use crate::table::JobId;
use crate::wait::deliver;

/// Wraps the user's closure into the table's opaque launch. Calling the launch spawns the job;
/// dropping it unrun (joined, refused, expired, abandoned, closed) drops the closure unrun.
pub(crate) fn launch<K, C, V, F, Fut>(job: F) -> Launch<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = V> + Send + 'static,
{
    Box::new(move |shared, job_id| spawn(shared, job_id, job))
}

/// Spawns the job's task on the current Tokio runtime. Without one, the job ends at once with
/// `Closed` (the finisher inside the dropped task sees to it).
pub(crate) fn spawn<K, C, V, F, Fut>(shared: Arc<Shared<K, C, V>>, job_id: JobId, job: F)
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = V> + Send + 'static,
{
    let finisher = Finisher {
        shared: Some(shared),
        job_id,
    };
    let task = async move {
        let finisher = finisher;
        let outcome = run_caught(job).await.map_err(|panic| {
            tracing::warn!(panic = panic.message(), "a pooled job panicked");
            Error::Panicked(panic)
        });
        finisher.finish(outcome);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn(task)),
        Err(_) => {
            tracing::error!("a pooled job was started outside a Tokio runtime: Closed");
            drop(task);
        }
    }
}

/// Calls `job` and runs its future to the end, turning a panic in the call or in any poll
/// into `Err(Panic)` with `panicguard::catch`.
///
/// This is `panicguard::CatchUnwind` without its box: the future is pinned inside the job's
/// task itself (`pin!`, no `unsafe`), saving an allocation per job. As there, a future that
/// panicked is dropped at once, and a second panic from its drop is swallowed.
async fn run_caught<F, Fut>(job: F) -> Result<Fut::Output, Panic>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let running = panicguard::catch(job)?;
    let mut running = pin!(Some(running));
    std::future::poll_fn(|cx| {
        let Some(future) = running.as_mut().as_pin_mut() else {
            unreachable!("polled again after the job's future ended");
        };
        match panicguard::catch(|| future.poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => {
                let _second = panicguard::catch(|| running.as_mut().set(None));
                Poll::Ready(Err(panic))
            }
        }
    })
    .await
}

/// Ends the job exactly once: with its outcome, or with `Closed` if the task is dropped first
/// (the runtime shut down): a job whose task is gone must not hold its slot forever.
struct Finisher<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    shared: Option<Arc<Shared<K, C, V>>>,
    job_id: JobId,
}

impl<K, C, V> Finisher<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    fn finish(mut self, outcome: Outcome<V>) {
        if let Some(shared) = self.shared.take() {
            finish(&shared, self.job_id, outcome);
        }
    }
}

impl<K, C, V> Drop for Finisher<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            finish(&shared, self.job_id, Err(Error::Closed));
        }
    }
}

/// Frees the job's slot, launches the queued job that takes it, then fans the outcome out.
fn finish<K, C, V>(shared: &Arc<Shared<K, C, V>>, job_id: JobId, outcome: Outcome<V>)
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    let Some(finished) = shared.table.finish(job_id) else {
        return;
    };
    if let Some((next_id, launch)) = finished.next {
        launch(Arc::clone(shared), next_id);
    }
    deliver(finished.waiters, outcome);
}
