//! The errors the runner's calls return.

use std::time::Duration;

/// Any error, boxed: what a store or a fetch wraps.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A [`Config`](crate::Config) that [`Runner::new`](crate::Runner::new) refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `workers` is zero (nothing would ever run) or above 1024.
    #[error("workers must be between 1 and {max}, not {workers}")]
    Workers {
        /// The value given.
        workers: usize,
        /// The largest accepted.
        max: usize,
    },
    /// `retry_wait` is zero: a busy target would be retried in a loop.
    #[error("retry_wait must be above zero")]
    RetryWait,
    /// `max_targets` is zero: every job would be refused.
    #[error("max_targets must be at least 1")]
    MaxTargets,
    /// `max_live_jobs` is zero: every job would be refused.
    #[error("max_live_jobs must be at least 1")]
    MaxLiveJobs,
    /// `retry_for` does not fit a timestamp.
    #[error("retry_for is too large: {0:?}")]
    RetryFor(Duration),
    /// `max_bytes` is zero: every job would be evicted the moment it ends, before anyone could
    /// read its results.
    #[error("max_bytes must be at least 1")]
    MaxBytes,
}

/// Why [`Runner::new`](crate::Runner::new) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NewError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store could not load its live jobs back.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a job was refused as submitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidJob {
    /// No targets.
    #[error("a job needs at least one target")]
    Empty,
    /// More targets than `max_targets`.
    #[error("{count} targets, at most {max} allowed")]
    TooManyTargets {
        /// Targets given.
        count: usize,
        /// `Config::max_targets`.
        max: usize,
    },
    /// An idempotency key that is empty or longer than 255 bytes.
    #[error("an idempotency key must be 1 to 255 bytes, not {len}")]
    Key {
        /// The key's length in bytes.
        len: usize,
    },
    /// A target failed to serialize to JSON.
    #[error("target {index} does not serialize: {message}")]
    Unserializable {
        /// Its index in the job.
        index: usize,
        /// serde_json's message.
        message: String,
    },
}

/// Why [`Runner::submit`](crate::Runner::submit) refused a job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The job itself is invalid.
    #[error(transparent)]
    Invalid(#[from] InvalidJob),
    /// `max_live_jobs` jobs are live already.
    #[error("too many live jobs")]
    Full,
    /// This caller has a live job already.
    #[error("this caller already has a live job ({live})")]
    CallerBusy {
        /// The caller's live job.
        live: crate::JobId,
    },
    /// The runner is closed.
    #[error("the runner is closed")]
    Closed,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why [`Runner::status`](crate::Runner::status) (or `counts`, `watch`, `wait`) has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusError {
    /// No job with this id belongs to this caller (it never existed, was evicted, or is
    /// another caller's: all three answer the same).
    #[error("no such job")]
    NotFound,
    /// The runner closed while [`wait`](crate::Runner::wait) waited (the job is still live;
    /// a runner over the same store finishes it).
    #[error("the runner closed before the job ended")]
    Closed,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A store's failure.
///
/// Its text says which kind; the store's own error is its [`source`](std::error::Error::source)
/// (downcast it to the store's error type), printed by any reporter that walks the chain
/// (`anyhow`'s `{:#}`, `tracing`'s error fields), so the two texts never repeat each other.
/// The errors that wrap it ([`SubmitError::Store`], [`StatusError::Store`],
/// [`NewError::Store`]) are transparent: they show it as it is.
///
/// The runner retries store calls that fail with [`Unavailable`](Self::Unavailable) (after
/// `retry_wait`, while open) and logs the others; a target whose result could not be stored
/// stays claimed and is never silently dropped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A transient failure: a lost connection, a locked database. Trying again may work.
    #[error("store unavailable")]
    Unavailable(#[source] BoxError),
    /// A lasting failure: a full disk, a corrupt file, a schema from a newer version.
    #[error("store failed")]
    Failed(#[source] BoxError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of an error's chain, top first.
    fn chain(err: &(dyn std::error::Error + 'static)) -> Vec<String> {
        let mut texts = vec![err.to_string()];
        let mut next = err.source();
        while let Some(cause) = next {
            texts.push(cause.to_string());
            next = cause.source();
        }
        texts
    }

    /// The API guidelines' rule: an error displays its source or returns it, never both, so a
    /// reporter that prints the chain prints each text once.
    #[test]
    fn a_chain_prints_each_text_once() {
        let disk = || -> BoxError { "disk full".into() };
        let errors: Vec<Box<dyn std::error::Error + 'static>> = vec![
            Box::new(StoreError::Failed(disk())),
            Box::new(SubmitError::Store(StoreError::Unavailable(disk()))),
            Box::new(StatusError::Store(StoreError::Failed(disk()))),
            Box::new(NewError::Store(StoreError::Failed(disk()))),
            Box::new(NewError::Config(ConfigError::RetryWait)),
            Box::new(SubmitError::Invalid(InvalidJob::Empty)),
        ];
        for err in errors {
            let texts = chain(&*err);
            for (i, text) in texts.iter().enumerate() {
                for later in &texts[i + 1..] {
                    assert!(
                        !text.contains(later.as_str()),
                        "{text:?} repeats its source {later:?} (chain {texts:?})"
                    );
                }
            }
        }
        let store = StoreError::Failed(disk());
        assert_eq!(chain(&store), ["store failed", "disk full"]);
    }
}
