//! Why a request got no value.

use panicguard::Panic;

/// Why [`Pool::run`](crate::Pool::run) or [`Pool::join`](crate::Pool::join) returned no value.
///
/// Cloned to every sharer of a job, so it is cheap to clone (a [`Panic`] is a reference count).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pool is full: every slot was taken and the queue was full, or the job waited in the
    /// queue longer than the pool's `wait` limit. Nothing ran; try again later.
    #[error("the pool is busy; retry later")]
    Busy,
    /// This caller already has a job in flight (running or queued) for another key. Nothing
    /// ran; wait for that job first.
    #[error("this caller already has a job in flight for another key")]
    CallerBusy,
    /// The job panicked; every sharer gets the same panic. The slot and the caller are free.
    #[error("the job {0}")]
    Panicked(Panic),
    /// The pool was closed: [`close`](crate::Pool::close) refused this new job, or dropped the
    /// queued job this request waited on. Also returned if the job's task was dropped without
    /// finishing (its Tokio runtime shut down).
    #[error("the pool is closed")]
    Closed,
}
