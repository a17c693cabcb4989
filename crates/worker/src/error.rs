//! The pool's error types. Every error that rejects a task carries the task back.

use std::fmt;

use lockgate_panicguard::Panic;

/// Why [`Pool::new`](crate::Pool::new) or [`Builder::build`](crate::Builder::build) refused
/// its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// `max` was 0: a pool needs at least one worker to run anything.
    #[error("a pool needs `max` of at least 1")]
    ZeroMax,
    /// `min` was greater than `max`.
    #[error("`min` ({min}) must not exceed `max` ({max})")]
    MinAboveMax {
        /// The `min` asked for.
        min: usize,
        /// The `max` asked for.
        max: usize,
    },
    /// `max` was above [`MAX_WORKERS`](crate::MAX_WORKERS): more threads than one pool
    /// runs (each worker is an OS thread with its own stack).
    #[error("`max` ({max}) is above the largest pool size ({limit})")]
    TooManyWorkers {
        /// The `max` asked for.
        max: usize,
        /// [`MAX_WORKERS`](crate::MAX_WORKERS).
        limit: usize,
    },
    /// `max + max / 2 + submit_buffer`, the most unfinished tasks the pool may hold (rule 2),
    /// is above [`MAX_UNFINISHED`](crate::MAX_UNFINISHED).
    #[error("`submit_buffer` ({submit_buffer}) is too large: at most {largest} with `max` = {max}")]
    SubmitBufferTooLarge {
        /// The `submit_buffer` asked for.
        submit_buffer: usize,
        /// The `max` asked for.
        max: usize,
        /// The largest `submit_buffer` this `max` allows.
        largest: usize,
    },
}

/// [`Pool::submit`](crate::Pool::submit) was refused because the pool is closing; the task
/// is handed back unrun.
#[derive(thiserror::Error)]
#[error("the pool is closed")]
pub struct SubmitError<T>(pub T);

impl<T> SubmitError<T> {
    /// The task that was not accepted.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SubmitError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubmitError(..)")
    }
}

/// [`Pool::try_submit`](crate::Pool::try_submit) did not accept the task; it is handed back.
#[derive(thiserror::Error)]
pub enum TrySubmitError<T> {
    /// The pool holds as many unfinished tasks as the capacity rule allows.
    #[error("the pool is full")]
    Full(T),
    /// The pool is closing.
    #[error("the pool is closed")]
    Closed(T),
}

impl<T> TrySubmitError<T> {
    /// The task that was not accepted.
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(task) | Self::Closed(task) => task,
        }
    }

    /// True for [`TrySubmitError::Full`].
    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full(_))
    }

    /// True for [`TrySubmitError::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed(_))
    }
}

impl<T> fmt::Debug for TrySubmitError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

/// [`Pool::submit_timeout`](crate::Pool::submit_timeout) did not accept the task; it is
/// handed back.
#[derive(thiserror::Error)]
pub enum SubmitTimeoutError<T> {
    /// The pool stayed full for the whole timeout.
    #[error("the pool stayed full until the timeout")]
    Timeout(T),
    /// The pool is closing.
    #[error("the pool is closed")]
    Closed(T),
}

impl<T> SubmitTimeoutError<T> {
    /// The task that was not accepted.
    pub fn into_inner(self) -> T {
        match self {
            Self::Timeout(task) | Self::Closed(task) => task,
        }
    }

    /// True for [`SubmitTimeoutError::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// True for [`SubmitTimeoutError::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed(_))
    }
}

impl<T> fmt::Debug for SubmitTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(_) => f.write_str("Timeout(..)"),
            Self::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

/// Why [`Pool::close`](crate::Pool::close) could not wait for the pool to drain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CloseError {
    /// `close` was called from inside one of the pool's own tasks. Waiting there would wait
    /// for the calling task itself, a deadlock; the pool has still begun closing (it rejects
    /// new tasks, drains the queue and its workers exit), but nothing waited for that.
    #[error("close called from inside one of the pool's own tasks; it cannot wait for itself")]
    FromWorker,
}

/// Why [`Pool::join`](crate::Pool::join) or [`Pool::join_timeout`](crate::Pool::join_timeout)
/// returned before every accepted task had run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolJoinError {
    /// Called from inside one of the pool's own tasks: waiting there would wait for the
    /// calling task itself, a deadlock. Nothing else happened (the pool is not closed).
    #[error("join called from inside one of the pool's own tasks; it cannot wait for itself")]
    FromWorker,
    /// `join_timeout` only: accepted tasks were still queued or running at the timeout.
    #[error("accepted tasks were still queued or running at the timeout")]
    Timeout,
}

/// Why [`TaskHandle::join`](crate::TaskHandle::join) has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// The task panicked; the panic's message is kept.
    #[error("the task panicked: {}", .0.message())]
    Panicked(Panic),
    /// The pool was closing when [`Pool::spawn`](crate::Pool::spawn) was called, so the
    /// task was never accepted (and never ran).
    #[error("the pool was closed before the task was accepted")]
    Closed,
}

/// Why [`TaskHandle::join_timeout`](crate::TaskHandle::join_timeout) has no value.
#[derive(thiserror::Error)]
pub enum JoinTimeoutError<T> {
    /// The task had not finished at the timeout; the handle comes back, to wait again or to
    /// drop (the task runs on either way).
    #[error("the task had not finished at the timeout")]
    Timeout(crate::TaskHandle<T>),
    /// The task finished without a value, as [`TaskHandle::join`](crate::TaskHandle::join)
    /// reports it.
    #[error(transparent)]
    Join(JoinError),
}

impl<T> JoinTimeoutError<T> {
    /// True for [`JoinTimeoutError::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// The handle of a task that had not finished, for [`JoinTimeoutError::Timeout`].
    pub fn into_handle(self) -> Option<crate::TaskHandle<T>> {
        match self {
            Self::Timeout(handle) => Some(handle),
            Self::Join(_) => None,
        }
    }
}

impl<T> From<JoinError> for JoinTimeoutError<T> {
    fn from(error: JoinError) -> Self {
        Self::Join(error)
    }
}

impl<T> fmt::Debug for JoinTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(handle) => f.debug_tuple("Timeout").field(handle).finish(),
            Self::Join(error) => f.debug_tuple("Join").field(error).finish(),
        }
    }
}
