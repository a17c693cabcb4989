//! Why a request got no value.

use std::time::Duration;

use lockgate_panicguard::Panic;

/// Why [`Pool::run`](crate::Pool::run) or [`Pool::join`](crate::Pool::join) returned no value.
///
/// Cloned to every sharer of a job, so it is cheap to clone (a [`Panic`] is a reference count).
///
/// # Examples
///
/// A service answers the two causes of `Busy` alike (503 with a `Retry-After`) but counts
/// them apart:
///
/// ```
/// use std::time::Duration;
///
/// use lockgate_pdfpool::{BusyCause, Error};
///
/// fn status(error: &Error) -> (u16, Option<u64>) {
///     match error {
///         Error::Busy { .. } => (503, error.retry_after_secs()),
///         Error::CallerBusy => (429, None),
///         _ => (500, None),
///     }
/// }
///
/// let refused = Error::Busy { cause: BusyCause::QueueFull, retry_after: Duration::from_secs(10) };
/// assert_eq!(status(&refused), (503, Some(10)));
/// assert!(matches!(refused, Error::Busy { cause: BusyCause::QueueFull, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pool is full: every slot was taken and the queue was full
    /// ([`BusyCause::QueueFull`], refused at once), or the job waited in the queue longer than
    /// the pool's `wait` limit ([`BusyCause::WaitExpired`]). Nothing ran; try again later.
    ///
    /// `Error::Busy { .. }` matches both causes.
    #[error("the pool is busy ({cause}); retry later")]
    Busy {
        /// Which of the two it was.
        cause: BusyCause,
        /// When a retry may find room: the pool's wait limit (see [`Error::retry_after`]).
        retry_after: Duration,
    },
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

/// Why a request got [`Error::Busy`]. A service answers both alike and counts them apart: many
/// `QueueFull` mean more requests than the pool takes in, many `WaitExpired` mean jobs too long
/// for the wait limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum BusyCause {
    /// Refused at once: every slot was taken and `queue` jobs already waited.
    #[error("queue full")]
    QueueFull,
    /// The job waited `wait` in the queue without a slot freeing; it never ran, and every
    /// request waiting on it got this.
    #[error("waited past the limit")]
    WaitExpired,
}

impl Error {
    /// A hint for when to retry (an HTTP `Retry-After`): `Some` for [`Error::Busy`], `None`
    /// otherwise (a retry would fail the same way, or needs something else first).
    ///
    /// For `Busy` it is the pool's wait limit: by then every job that was queued has left the
    /// queue (started or expired), so the queue has moved. It is a hint, not a promise: other
    /// requests may take the room first.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use lockgate_pdfpool::{BusyCause, Error};
    ///
    /// let expired = Error::Busy { cause: BusyCause::WaitExpired, retry_after: Duration::from_secs(5) };
    /// assert_eq!(expired.retry_after(), Some(Duration::from_secs(5)));
    /// assert_eq!(Error::CallerBusy.retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Busy { retry_after, .. } => Some(*retry_after),
            Self::CallerBusy | Self::Panicked(_) | Self::Closed => None,
        }
    }

    /// [`retry_after`](Self::retry_after) in whole seconds, rounded up and at least 1: the
    /// value of an HTTP `Retry-After` header. `Some` for [`Error::Busy`], `None` otherwise.
    ///
    /// The same rounding as the layer's `Rejected::retry_after_secs` (feature `tower`): a hint
    /// of 2.5 s is 3, never 2 (`as_secs()` would round it down, and a 0.5 s hint to 0, which
    /// tells a client to retry at once).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use lockgate_pdfpool::{BusyCause, Error};
    ///
    /// let busy = |secs: f64| Error::Busy {
    ///     cause: BusyCause::QueueFull,
    ///     retry_after: Duration::from_secs_f64(secs),
    /// };
    /// assert_eq!(busy(2.5).retry_after_secs(), Some(3));
    /// assert_eq!(busy(10.0).retry_after_secs(), Some(10));
    /// assert_eq!(busy(0.0).retry_after_secs(), Some(1));
    /// assert_eq!(Error::Closed.retry_after_secs(), None);
    /// ```
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after().map(retry_after_secs)
    }
}

/// `hint` in whole seconds, rounded up and at least 1: an HTTP `Retry-After` value. The one
/// rounding of [`Error::retry_after_secs`] and of the layer's `Rejected::retry_after_secs`.
pub(crate) fn retry_after_secs(hint: Duration) -> u64 {
    let secs = hint.as_secs() + u64::from(hint.subsec_nanos() > 0);
    secs.max(1)
}
