//! Running a job in its own task, so it outlives the caller that started it (rule 4), and
//! turning its end (value, panic, or a task dropped unfinished) into the table's `finish`.
//!
//! The task runs in the job's `tracing` span (`pdfpool.job`), opened when the job starts (a
//! queued job's when a slot frees for it, often in another job's task) as a child of the span
//! of the request that started or queued the job, and closed with the job's `outcome`
//! recorded. The task is tracked by the pool's `TaskTracker` so that `shutdown` can wait for
//! it.

use std::future::Future;
use std::hash::Hash;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use lockgate_panicguard::Panic;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tracing::Instrument;

use crate::error::Error;
use crate::shared::{Launch, Outcome, Shared};
use crate::sync::Arc;
use crate::table::JobId;
use crate::wait::deliver;

/// The job's span, opened as the job starts: a child of `request` (the span of the request
/// that started or queued it), with how long it waited in the queue since `queued_at` (0 for a
/// job started at once; the clock is read only if the span is enabled). Its `outcome` is
/// recorded when the job ends (`finished`, `panicked` or `dropped`).
pub(crate) fn span(request: &tracing::Span, queued_at: Option<Instant>) -> tracing::Span {
    tracing::info_span!(
        parent: request,
        "pdfpool.job",
        queue_wait_ms = queued_at.map_or(0, |at| {
            u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX)
        }),
        outcome = tracing::field::Empty,
    )
}

/// Wraps the user's closure, queued at `queued_at` by the request whose span is `request`,
/// into the launch the table holds until a slot frees: starting it opens the job's span and
/// spawns the job in it.
pub(crate) fn launch<K, C, V, F, Fut>(
    queued_at: Instant,
    request: tracing::Span,
    job: F,
) -> Launch<K, C, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = V> + Send + 'static,
{
    Launch {
        queued_at,
        // A queued job's waiters all have channels, so its task's output goes unread.
        start: Box::new(move |shared, job_id| {
            let span = span(&request, Some(queued_at));
            drop(request);
            drop(spawn(shared, job_id, job, span));
        }),
    }
}

/// Spawns the job's task on the current Tokio runtime, in `span`, tracked for `shutdown`.
/// Without a runtime, the job ends at once with `Closed` (the finisher inside the dropped task
/// sees to it).
pub(crate) fn spawn<K, C, V, F, Fut>(
    shared: Arc<Shared<K, C, V>>,
    job_id: JobId,
    job: F,
    span: tracing::Span,
) -> Option<JoinHandle<Option<Outcome<V>>>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = V> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        // No subscriber wants the span: spawn the task bare. `Instrumented` around a disabled
        // span does nothing but make every job's task bigger (measured: a fifth of the cost
        // of an uncontended `run`).
        Ok(runtime) if span.is_disabled() => {
            Some(runtime.spawn(task(finisher::<_, _, _, false>(shared, job_id), job)))
        }
        Ok(runtime) => {
            let task = task(finisher::<_, _, _, true>(shared, job_id), job);
            Some(runtime.spawn(task.instrument(span)))
        }
        Err(_) => {
            tracing::error!("a pooled job was started outside a Tokio runtime: Closed");
            drop(task(finisher::<_, _, _, false>(shared, job_id), job));
            None
        }
    }
}

/// The finisher of the job `job_id`, tracked for `shutdown`, timed if hooks are installed.
fn finisher<K, C, V, const IN_SPAN: bool>(
    shared: Arc<Shared<K, C, V>>,
    job_id: JobId,
) -> Finisher<K, C, V, IN_SPAN>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    Finisher {
        started_at: shared.hooks.any().then(Instant::now),
        _tracked: shared.tasks.token(),
        shared: Some(shared),
        job_id,
    }
}

/// The job's task: runs `job` under `panicguard`, then `finisher` ends it.
///
/// Not an `async fn`: it would move its arguments into locals of the future, storing the
/// finisher twice (see below).
#[allow(clippy::manual_async_fn)]
fn task<K, C, V, F, Fut, const IN_SPAN: bool>(
    finisher: Finisher<K, C, V, IN_SPAN>,
    job: F,
) -> impl Future<Output = Option<Outcome<V>>> + Send + 'static
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = V> + Send + 'static,
{
    // `finisher` is used as captured, not rebound: a rebinding stores it twice in the task's
    // future (128 bytes instead of 80), and tokio moves that future into the task's cell.
    async move {
        let outcome = run_caught(job).await.map_err(|panic| {
            tracing::warn!(panic = panic.message(), "a pooled job panicked");
            Error::Panicked(panic)
        });
        finisher.finish(outcome)
    }
}

/// Calls `job` and runs its future to the end, turning a panic in the call or in any poll
/// into `Err(Panic)` with `panicguard::catch`.
///
/// This is `panicguard::CatchPanic` without its box: the future is pinned inside the job's
/// task itself (`pin!`, no `unsafe`), saving an allocation per job. As there, a future that
/// panicked is dropped at once, and a second panic from its drop is swallowed.
async fn run_caught<F, Fut>(job: F) -> Result<Fut::Output, Panic>
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let running = lockgate_panicguard::catch(job)?;
    let mut running = pin!(Some(running));
    std::future::poll_fn(|cx| {
        let Some(future) = running.as_mut().as_pin_mut() else {
            unreachable!("polled again after the job's future ended");
        };
        match lockgate_panicguard::catch(|| future.poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => {
                let _second = lockgate_panicguard::catch(|| running.as_mut().set(None));
                Poll::Ready(Err(panic))
            }
        }
    })
    .await
}

/// How a job ended, for the hooks and the span.
#[derive(Clone, Copy)]
enum End {
    Finished,
    Panicked,
    Dropped,
}

impl End {
    /// The span's `outcome`, as the metrics name it.
    fn name(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::Panicked => "panicked",
            Self::Dropped => "dropped",
        }
    }
}

/// Ends the job exactly once: with its outcome, or with `Closed` if the task is dropped first
/// (the runtime shut down): a job whose task is gone must not hold its slot forever.
///
/// `IN_SPAN`: whether the task runs in the job's span (enabled). Then that span is the current
/// one wherever the finisher runs, in the task's last poll or in its drop (`Instrumented`
/// enters its span to drop the future), and gets the outcome. A type parameter, not a field
/// or a clone of the span: the finisher is part of every job's task, and either would grow it.
struct Finisher<K, C, V, const IN_SPAN: bool>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    shared: Option<Arc<Shared<K, C, V>>>,
    job_id: JobId,
    /// When the job started; taken only if hooks are installed (they get the job's time).
    started_at: Option<Instant>,
    /// What `shutdown` waits for. A field, so it is dropped after `drop` has finished the
    /// job: `shutdown` never returns before the job's outcome is delivered.
    _tracked: TaskTrackerToken,
}

impl<K, C, V, const IN_SPAN: bool> Finisher<K, C, V, IN_SPAN>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    /// Ends the job; the outcome comes back if the request that started it awaits the task.
    fn finish(mut self, outcome: Outcome<V>) -> Option<Outcome<V>> {
        let end = match &outcome {
            Err(Error::Panicked(_)) => End::Panicked,
            _ => End::Finished,
        };
        let shared = self.shared.take()?;
        self.record(end);
        finish(&shared, self.job_id, outcome, end, self.started_at)
    }

    /// Records the job's outcome on its span, the current one (see `IN_SPAN`).
    fn record(&self, end: End) {
        if IN_SPAN {
            tracing::Span::current().record("outcome", end.name());
        }
    }
}

impl<K, C, V, const IN_SPAN: bool> Drop for Finisher<K, C, V, IN_SPAN>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            // A starter awaiting this task gets `Closed` from its `JoinHandle` instead.
            let outcome = Err(Error::Closed);
            self.record(End::Dropped);
            let _unread = finish(&shared, self.job_id, outcome, End::Dropped, self.started_at);
        }
    }
}

/// Frees the job's slot, reports its end to the hooks, launches the queued job that takes the
/// slot, fans the outcome out, and wakes `shutdown` if that was the last job of a closed pool.
/// The outcome comes back if the request that started the job awaits its task.
fn finish<K, C, V>(
    shared: &Arc<Shared<K, C, V>>,
    job_id: JobId,
    outcome: Outcome<V>,
    end: End,
    started_at: Option<Instant>,
) -> Option<Outcome<V>>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + 'static,
{
    let finished = shared.table.finish(job_id)?;
    shared.hooks.call(|hooks| {
        let job_time = started_at.map_or(Duration::ZERO, |at| Instant::now() - at);
        match end {
            End::Finished => hooks.finished(job_time),
            End::Panicked => hooks.panicked(job_time),
            End::Dropped => hooks.dropped(job_time),
        }
    });
    if let Some((next_id, launch)) = finished.next {
        launch.start(Arc::clone(shared), next_id);
    }
    let for_the_starter = deliver(finished.waiters, outcome);
    if finished.closed_and_idle {
        shared.idle.notify_waiters();
    }
    for_the_starter
}
