//! [`Builder`]: the settings of a [`Pool`], checked when it is built.

use std::time::Duration;

use crate::core::{Config, Shared};
use crate::{BuildError, Pool};

/// The default [`Builder::submit_buffer`].
pub const DEFAULT_SUBMIT_BUFFER: usize = 128;

/// The largest `max` a pool accepts ([`BuildError::TooManyWorkers`] above it).
///
/// Every worker is an OS thread with its own stack (2 MiB of address space by default), and
/// a pool this large is already far past the point where more threads add throughput on any
/// machine; a larger `max` is far more likely a unit mix-up than a plan.
pub const MAX_WORKERS: usize = 1024;

/// The most unfinished tasks a pool may hold, `max + max / 2 + submit_buffer`
/// ([`BuildError::SubmitBufferTooLarge`] above it): 2³⁶ − 1 (about 68 billion) on 64-bit
/// targets, `usize::MAX` on 32-bit ones.
///
/// The pool counts accepted tasks in 36 bits of one atomic word, beside the running tasks
/// and its flags, so a submit to a busy pool is one compare-and-swap. Far more boxed tasks
/// than any machine's memory holds fit below it.
pub const MAX_UNFINISHED: usize = if (usize::MAX as u64) < crate::core::MAX_UNFINISHED {
    usize::MAX
} else {
    crate::core::MAX_UNFINISHED as usize
};

/// Settings for a [`Pool`]; made by [`Pool::builder`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let pool = lockgate_worker::Pool::builder(2, 8)
///     .submit_buffer(1024)
///     .thread_name("w")
///     .keep_alive(Duration::from_secs(30))
///     .build()?;
/// assert_eq!(pool.capacity(), 8 / 2 + 1024);
/// # Ok::<(), lockgate_worker::BuildError>(())
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
    /// - [`BuildError::TooManyWorkers`] when `max > MAX_WORKERS`.
    /// - [`BuildError::SubmitBufferTooLarge`] when `max + max / 2 + submit_buffer` is above
    ///   [`MAX_UNFINISHED`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate_worker::{BuildError, MAX_UNFINISHED, MAX_WORKERS, Pool};
    ///
    /// assert_eq!(
    ///     Pool::builder(0, MAX_WORKERS + 1).build().unwrap_err(),
    ///     BuildError::TooManyWorkers { max: MAX_WORKERS + 1, limit: MAX_WORKERS },
    /// );
    /// let too_large = Pool::builder(1, 4).submit_buffer(usize::MAX).build().unwrap_err();
    /// let BuildError::SubmitBufferTooLarge { largest, .. } = too_large else { unreachable!() };
    /// assert_eq!(largest, MAX_UNFINISHED - 4 - 4 / 2); // `max + max/2 + submit_buffer` must fit
    /// # Ok::<(), BuildError>(())
    /// ```
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
        if self.max > MAX_WORKERS {
            return Err(BuildError::TooManyWorkers {
                max: self.max,
                limit: MAX_WORKERS,
            });
        }
        // With `max <= MAX_WORKERS` only the buffer can take the unfinished-task limit,
        // `max + capacity`, past what the core counts.
        let largest = MAX_UNFINISHED - self.max - self.max / 2;
        if self.submit_buffer > largest {
            return Err(BuildError::SubmitBufferTooLarge {
                submit_buffer: self.submit_buffer,
                max: self.max,
                largest,
            });
        }
        let config = Config {
            min: self.min,
            max: self.max,
            capacity: self.max / 2 + self.submit_buffer,
            keep_alive: self.keep_alive,
            thread_name: self.thread_name,
        };
        Ok(Pool::from_shared(Shared::start(config)))
    }
}
