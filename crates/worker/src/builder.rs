//! [`Builder`]: the settings of a [`Pool`], checked when it is built.

use std::time::Duration;

use crate::core::{Config, Shared};
use crate::{BuildError, Pool};

/// The default [`Builder::submit_buffer`].
pub const DEFAULT_SUBMIT_BUFFER: usize = 128;

/// Settings for a [`Pool`]; made by [`Pool::builder`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let pool = worker::Pool::builder(2, 8)
///     .submit_buffer(1024)
///     .thread_name("w")
///     .keep_alive(Duration::from_secs(30))
///     .build()?;
/// assert_eq!(pool.capacity(), 8 / 2 + 1024);
/// # Ok::<(), worker::BuildError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    min: usize,
    max: usize,
    submit_buffer: usize,
    thread_name: String,
    keep_alive: Option<Duration>,
}

impl Builder {
    pub(crate) fn new(min: usize, max: usize) -> Self {
        Self {
            min,
            max,
            submit_buffer: DEFAULT_SUBMIT_BUFFER,
            thread_name: String::from("worker"),
            keep_alive: None,
        }
    }

    /// The ingress buffer's capacity (default [`DEFAULT_SUBMIT_BUFFER`], 128); `0` means
    /// unbuffered. With all `max` workers busy, exactly `max / 2 + n` further tasks are
    /// accepted without blocking (rule 2).
    pub fn submit_buffer(mut self, n: usize) -> Self {
        self.submit_buffer = n;
        self
    }

    /// The prefix of worker thread names: workers are named `"{name}-{index}"`, the index
    /// counting every worker the pool ever started. Default `"worker"`.
    ///
    /// # Panics
    ///
    /// If `name` contains a NUL byte, which no OS thread name can hold (a caller bug, caught
    /// here rather than at the first thread spawn).
    #[track_caller]
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        assert!(
            !name.contains('\0'),
            "a thread name cannot contain a NUL byte"
        );
        self.thread_name = name;
        self
    }

    /// Lets a worker that has been idle for `idle` exit while more than `min` workers exist
    /// (beyond rule 3, which has no timeout). The clock restarts whenever the worker is woken
    /// without work, so the idle time before exit is at least `idle`. Default: no timeout.
    pub fn keep_alive(mut self, idle: Duration) -> Self {
        self.keep_alive = Some(idle);
        self
    }

    /// Checks the settings and starts the pool with `min` workers.
    ///
    /// # Errors
    ///
    /// - [`BuildError::ZeroMax`] when `max == 0`.
    /// - [`BuildError::MinAboveMax`] when `min > max`.
    ///
    /// A worker thread the OS refuses to start is logged, not an error (rule 1): the pool
    /// starts with fewer workers and grows again on demand.
    pub fn build(self) -> Result<Pool, BuildError> {
        if self.max == 0 {
            return Err(BuildError::ZeroMax);
        }
        if self.min > self.max {
            return Err(BuildError::MinAboveMax {
                min: self.min,
                max: self.max,
            });
        }
        let config = Config {
            min: self.min,
            max: self.max,
            capacity: (self.max / 2).saturating_add(self.submit_buffer),
            keep_alive: self.keep_alive,
            thread_name: self.thread_name,
        };
        Ok(Pool::from_shared(Shared::start(config)))
    }
}
