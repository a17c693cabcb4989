//! The runner's configuration and its validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;
use crate::hooks::{Hooks, NoHooks};

/// How a [`Runner`](crate::Runner) works; checked by [`Runner::new`](crate::Runner::new).
///
/// A builder: start from [`Config::default`] and change what you need with the setters
/// below (each documents its setting); the `Debug` output shows every value.
///
/// ```
/// use std::time::Duration;
///
/// let config = lockgate_batch::Config::default()
///     .workers(8)
///     .retry(Duration::from_millis(500), Duration::from_secs(60));
/// # let _ = config;
/// ```
///
/// [`Runner::new`](crate::Runner::new) checks every setting and refuses a bad one with
/// [`NewError::Config`](crate::NewError::Config).
#[derive(Clone)]
pub struct Config {
    pub(crate) workers: usize,
    pub(crate) retry_wait: Duration,
    pub(crate) retry_for: Duration,
    pub(crate) max_bytes: u64,
    pub(crate) max_targets: usize,
    pub(crate) max_live_jobs: usize,
    pub(crate) hooks: Arc<dyn Hooks>,
}

impl Default for Config {
    /// 4 workers, a busy target retried every second for up to 5 minutes, 64 MiB of results,
    /// 10,000 targets per job, 1,000 live jobs, no hooks.
    fn default() -> Self {
        Self {
            workers: 4,
            retry_wait: Duration::from_secs(1),
            retry_for: Duration::from_secs(300),
            max_bytes: 64 << 20,
            max_targets: 10_000,
            max_live_jobs: 1_000,
            hooks: Arc::new(NoHooks),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("workers", &self.workers)
            .field("retry_wait", &self.retry_wait)
            .field("retry_for", &self.retry_for)
            .field("max_bytes", &self.max_bytes)
            .field("max_targets", &self.max_targets)
            .field("max_live_jobs", &self.max_live_jobs)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The most workers a runner accepts.
    const MAX_WORKERS: usize = 1024;

    /// Worker tasks: how many targets may be fetched at once (1..=1024).
    /// Each worker also stores its last result while it claims and fetches the next, so up
    /// to twice this many targets may be in flight (claimed, not yet stored). Default 4.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// A busy target waits `wait` before it is tried again (above zero; default 1 s), and
    /// is stored failed once it has kept coming back busy for longer than `give_up_after`
    /// (default 5 minutes).
    pub fn retry(mut self, wait: Duration, give_up_after: Duration) -> Self {
        self.retry_wait = wait;
        self.retry_for = give_up_after;
        self
    }

    /// The store's budget: after each stored target, finished jobs are evicted, least
    /// recently touched first, until the stored bytes are at or below this (at least 1;
    /// default 64 MiB). Live jobs are never evicted, so the store may hold more while they
    /// run; a job whose targets and results alone exceed the budget is evicted as soon as it
    /// ends (logged with `tracing::warn!`): size the budget above your largest job.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The most targets one job may have (at least 1; default 10,000).
    pub fn max_targets(mut self, max_targets: usize) -> Self {
        self.max_targets = max_targets;
        self
    }

    /// The most live jobs at once (at least 1; default 1,000).
    pub fn max_live_jobs(mut self, max_live_jobs: usize) -> Self {
        self.max_live_jobs = max_live_jobs;
        self
    }

    /// Metrics callbacks (default: none).
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    ///
    /// The first invalid field, as a [`ConfigError`].
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.workers == 0 || self.workers > Self::MAX_WORKERS {
            return Err(ConfigError::Workers {
                workers: self.workers,
                max: Self::MAX_WORKERS,
            });
        }
        if self.retry_wait.is_zero() {
            return Err(ConfigError::RetryWait);
        }
        // Timestamps are u64 microseconds; a century is far inside.
        const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
        if self.retry_for > CENTURY || self.retry_wait > CENTURY {
            return Err(ConfigError::RetryFor(self.retry_for.max(self.retry_wait)));
        }
        if self.max_targets == 0 {
            return Err(ConfigError::MaxTargets);
        }
        if self.max_live_jobs == 0 {
            return Err(ConfigError::MaxLiveJobs);
        }
        if self.max_bytes == 0 {
            return Err(ConfigError::MaxBytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
    }

    #[test]
    fn each_bad_field_has_its_error() {
        let bad = [
            (
                Config::default().workers(0),
                ConfigError::Workers {
                    workers: 0,
                    max: Config::MAX_WORKERS,
                },
            ),
            (
                Config::default().workers(Config::MAX_WORKERS + 1),
                ConfigError::Workers {
                    workers: Config::MAX_WORKERS + 1,
                    max: Config::MAX_WORKERS,
                },
            ),
            (
                Config::default().retry(Duration::ZERO, Duration::ZERO),
                ConfigError::RetryWait,
            ),
            (Config::default().max_targets(0), ConfigError::MaxTargets),
            (Config::default().max_live_jobs(0), ConfigError::MaxLiveJobs),
            (Config::default().max_bytes(0), ConfigError::MaxBytes),
            (
                Config::default().retry(Duration::from_secs(1), Duration::MAX),
                ConfigError::RetryFor(Duration::MAX),
            ),
        ];
        for (config, error) in bad {
            assert_eq!(config.validate(), Err(error));
        }
    }
}
