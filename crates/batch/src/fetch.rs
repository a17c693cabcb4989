//! The user's fetch function and its errors.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use crate::error::BoxError;
use crate::job::Caller;

/// How one fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The target was only busy: try it again after `retry_wait`. A target busy for longer
    /// than `retry_for` is stored failed with this error's text.
    #[error("target busy, retried for too long")]
    RetryLater,
    /// A failure to show the caller: stored as the target's error and hint.
    #[error("{msg}")]
    Target {
        /// What went wrong.
        msg: String,
        /// What the caller might do about it.
        hint: Option<String>,
    },
    /// Any other failure: stored with its text and no hint.
    #[error(transparent)]
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
}

/// Fetches one target for one caller.
///
/// Implemented for every closure `Fn(CancellationToken, &Caller, &T) -> impl Future<Output =
/// Result<O, FetchError>>`; such a closure's future cannot borrow its arguments, so clone what
/// it needs first. Implement the trait by hand for a future that borrows them.
///
/// The token is cancelled when the runner closes: return soon after (any result; one that is
/// an error is not stored, and the target stays pending). With a store that grants leases it
/// is also cancelled when this fetch's lease is lost. It is a child of the runner's own token:
/// cancelling it from inside a fetch stops neither the runner nor other fetches.
///
/// A panic in `fetch` or in its future is caught: the target is stored failed with the error
/// `internal error`, and the panic's message goes to `tracing` only.
pub trait Fetch<T, O>: Send + Sync + 'static {
    /// Fetches `target` for `caller`.
    fn fetch(
        &self,
        cancel: CancellationToken,
        caller: &Caller,
        target: &T,
    ) -> impl Future<Output = Result<O, FetchError>> + Send;
}

impl<T, O, F, Fut> Fetch<T, O> for F
where
    F: Fn(CancellationToken, &Caller, &T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, FetchError>> + Send,
{
    fn fetch(
        &self,
        cancel: CancellationToken,
        caller: &Caller,
        target: &T,
    ) -> impl Future<Output = Result<O, FetchError>> + Send {
        self(cancel, caller, target)
    }
}
