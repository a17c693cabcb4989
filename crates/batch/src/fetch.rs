//! The user's fetch: the [`Fetch`] trait, what a fetch is told ([`FetchContext`]) and how it
//! fails ([`FetchError`]).
//!
//! A fetch gets its target by value (decoded from the store's JSON for this one attempt) and
//! an owned context, so its future borrows nothing and a closure needs no lifetime
//! annotations.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::BoxError;
use crate::job::{Caller, JobId};

/// What one fetch is told besides its target: whose job, which target, and when to stop.
///
/// Cloning is cheap (a reference count and a token). More may be added; the fields are
/// private so that adding one breaks nobody.
#[derive(Debug, Clone)]
pub struct FetchContext {
    job: JobId,
    index: usize,
    caller: Caller,
    cancel: CancellationToken,
}

impl FetchContext {
    pub(crate) fn new(job: JobId, index: usize, caller: Caller, cancel: CancellationToken) -> Self {
        Self {
            job,
            index,
            caller,
            cancel,
        }
    }

    /// The job this target belongs to.
    pub fn job(&self) -> JobId {
        self.job
    }

    /// The target's index in its job (0-based, in submit order).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Who submitted the job.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Resolves when the fetch should stop: the runner is closing, or (with a store that
    /// grants leases) this fetch's lease was lost. Return soon after, with any result: one
    /// that is an error is not stored and the target stays pending.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether [`cancelled`](Self::cancelled) has resolved.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// How one fetch failed.
///
/// `?` works inside a fetch: every error type (anything `Into<BoxError>`, `&str` and `String`
/// included) converts into [`FetchError::Other`]. For that blanket conversion `FetchError`
/// itself does not implement [`std::error::Error`] (as `anyhow::Error` does not); it is
/// [`Display`](fmt::Display) and [`Debug`].
#[non_exhaustive]
pub enum FetchError {
    /// The target was only busy: try it again later.
    ///
    /// `after` replaces the config's `retry_wait` for this one try (a server's
    /// `Retry-After`, say). A target busy for longer than `retry_for` is stored failed with
    /// `reason` as its error.
    RetryLater {
        /// Why it was busy: what the target is stored with if it stays busy too long.
        reason: String,
        /// How long to wait before the next try; `None` waits `retry_wait`.
        after: Option<Duration>,
    },
    /// A failure to show the caller: stored as the target's error and hint.
    Target {
        /// What went wrong.
        msg: String,
        /// What the caller might do about it.
        hint: Option<String>,
    },
    /// Any other failure: stored with its text and no hint.
    Other(BoxError),
}

impl FetchError {
    /// A [`FetchError::Target`] with no hint.
    pub fn target(msg: impl Into<String>) -> Self {
        Self::Target {
            msg: msg.into(),
            hint: None,
        }
    }

    /// A [`FetchError::Target`] with a hint.
    pub fn target_with_hint(msg: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::Target {
            msg: msg.into(),
            hint: Some(hint.into()),
        }
    }

    /// A [`FetchError::RetryLater`] after the config's `retry_wait`.
    pub fn retry_later(reason: impl Into<String>) -> Self {
        Self::RetryLater {
            reason: reason.into(),
            after: None,
        }
    }

    /// A [`FetchError::RetryLater`] after `after` (a server's `Retry-After`, say).
    pub fn retry_after(reason: impl Into<String>, after: Duration) -> Self {
        Self::RetryLater {
            reason: reason.into(),
            after: Some(after),
        }
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RetryLater { reason, .. } => f.write_str(reason),
            Self::Target { msg, .. } => f.write_str(msg),
            Self::Other(error) => error.fmt(f),
        }
    }
}

impl fmt::Debug for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RetryLater { reason, after } => f
                .debug_struct("RetryLater")
                .field("reason", reason)
                .field("after", after)
                .finish(),
            Self::Target { msg, hint } => f
                .debug_struct("Target")
                .field("msg", msg)
                .field("hint", hint)
                .finish(),
            Self::Other(error) => f.debug_tuple("Other").field(error).finish(),
        }
    }
}

/// `?` on any error inside a fetch: it becomes [`FetchError::Other`].
impl<E: Into<BoxError>> From<E> for FetchError {
    fn from(error: E) -> Self {
        Self::Other(error.into())
    }
}

/// Fetches one target.
///
/// Implemented for every closure `Fn(FetchContext, T) -> impl Future<Output = Result<O,
/// FetchError>>` (see [`fetch_fn`] to name the types once where a closure is defined apart
/// from its use); implement it by hand for a type that holds clients or configuration.
///
/// A panic in `fetch` or in its future is caught: the target is stored failed with the error
/// `internal error`, and the panic's message goes to `tracing` only.
///
/// # Examples
///
/// ```
/// use lockgate_batch::{Fetch, FetchContext, FetchError};
///
/// struct Lengths;
///
/// impl Fetch<String, usize> for Lengths {
///     async fn fetch(&self, ctx: FetchContext, target: String) -> Result<usize, FetchError> {
///         if ctx.is_cancelled() {
///             return Err(FetchError::retry_later("closing"));
///         }
///         Ok(target.len())
///     }
/// }
/// ```
pub trait Fetch<T, O>: Send + Sync + 'static {
    /// Fetches `target` for the job and caller in `ctx`.
    fn fetch(
        &self,
        ctx: FetchContext,
        target: T,
    ) -> impl Future<Output = Result<O, FetchError>> + Send;
}

impl<T, O, F, Fut> Fetch<T, O> for F
where
    F: Fn(FetchContext, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, FetchError>> + Send,
{
    fn fetch(
        &self,
        ctx: FetchContext,
        target: T,
    ) -> impl Future<Output = Result<O, FetchError>> + Send {
        self(ctx, target)
    }
}

/// Returns `f` unchanged, with the [`Fetch`] bounds spelled out, so that a closure defined
/// apart from [`Runner::new`](crate::Runner::new) gets its argument types inferred (as
/// `tower::service_fn` does for services).
///
/// # Examples
///
/// ```
/// use lockgate_batch::{FetchError, fetch_fn};
///
/// let fetch = fetch_fn(|ctx, url: String| async move {
///     let _job = ctx.job();
///     let body: u32 = url.len().try_into()?; // `?` on any error
///     Ok::<_, FetchError>(body)
/// });
/// # let _ = fetch;
/// ```
pub fn fetch_fn<T, O, F, Fut>(f: F) -> F
where
    F: Fn(FetchContext, T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, FetchError>> + Send,
{
    f
}
