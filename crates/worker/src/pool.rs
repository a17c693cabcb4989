//! [`Pool`]: the public facade over the core state machine.

use std::time::{Duration, Instant};

use crate::core::{Ran, Rejected, RoomWait, Runnable, Shared, Task, Wait};
use crate::handle::ResultSender;
use crate::sync::Arc;
use crate::task_span::{self, RunNow};
use crate::{
    BuildError, Builder, CloseError, JoinError, PoolJoinError, SpawnAsync, SubmitAsync,
    SubmitError, SubmitTimeoutError, TaskHandle, TrySubmitError,
};

/// An elastic pool of OS threads running `FnOnce() + Send + 'static` tasks.
///
/// `min` workers start at once; the pool grows to `max` on demand and shrinks by the exit
/// rule. See the crate docs for its rules, each with an example. Share a pool between
/// threads with `Arc<Pool>` or by reference (it is `Send + Sync`); dropping it closes it.
///
/// # Guarantees
///
/// - **Exactly once.** Every accepted task runs exactly once, also when it or another task
///   panics, when the OS refuses a thread, and when the pool closes: `close` (and `Drop`)
///   returns only after all of them ran. A rejected task is handed back unrun.
/// - **Exact capacity.** At most `max + max/2 + submit_buffer` accepted tasks are unfinished
///   at any time ([`Pool::capacity`] counts the waiting places beyond the workers). With all
///   `max` workers busy, exactly [`Pool::capacity`] further tasks are accepted without
///   blocking.
/// - **FIFO start.** Tasks start in the order they were accepted (the order they entered the
///   pool's one FIFO; of two submits that overlap in time, either may come first).
/// - **No thread outlives `close`.** Every worker thread has been joined when `close`
///   returns `Ok`.
/// - **Dropping blocks.** Dropping the pool closes it like [`Pool::close`]: the dropping
///   thread waits until every accepted task has run, however long that takes. In async
///   code, do not drop a pool (or its last `Arc`) on a runtime thread: that thread would
///   stop serving every other future meanwhile. Close it where blocking is fine instead,
///   for example in `tokio::task::spawn_blocking(move || pool.close())`, and await that
///   (example below); [`Pool::join`] likewise blocks, and a [`TaskHandle`] can be awaited.
/// - **Async submits wait without blocking.** [`Pool::submit_async`] and
///   [`Pool::spawn_async`] wait for room as futures; waiting ones are woken oldest first,
///   one per finished task, and a dropped one accepted nothing.
/// - **Not promised:** fairness between blocked submitters (whoever the OS wakes first gets
///   the room), between them and async submitters, or which worker runs a task.
///
/// Cost: a submit to a busy pool (every worker running, `max` workers, room left) takes no
/// lock, only a compare-and-swap and a push; a worker going from one task to the next takes
/// none either, unless a [`Pool::join`] waits or a blocked submitter is owed a batch of room.
/// The lock is taken to claim an idle worker or start one, when the pool is full, and when a
/// worker goes idle. A condvar notification is sent only when a sleeping idle worker is
/// claimed, when a batch of room frees for a blocked submitter, and to joiners and closers.
///
/// # Examples
///
/// In async code, await the tasks' handles, and close the pool on a blocking thread rather
/// than dropping it on a runtime thread:
///
/// ```
/// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build()?;
/// let answer = runtime.block_on(async {
///     let pool = lockgate_worker::Pool::new(1, 2)?;
///     let answer = pool.spawn(|| 6 * 7).await?; // the runtime thread is free meanwhile
///     // Not `drop(pool)` here: that would block this runtime thread until every task ran.
///     tokio::task::spawn_blocking(move || pool.close()).await??;
///     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(answer)
/// })?;
/// assert_eq!(answer, 42);
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    pub(crate) fn from_shared(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    #[cfg(any(test, feature = "metrics"))]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A pool of `min..=max` workers with the default settings (see [`Builder`]).
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroMax`] when `max == 0`; [`BuildError::MinAboveMax`] when `min > max`;
    /// [`BuildError::TooManyWorkers`] when `max >` [`MAX_WORKERS`](crate::MAX_WORKERS) (see
    /// [`Builder::build`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockgate_worker::{BuildError, Pool};
    ///
    /// let pool = Pool::new(2, 8)?;
    /// assert_eq!(pool.workers(), 2);
    /// assert_eq!(Pool::new(0, 0).unwrap_err(), BuildError::ZeroMax);
    /// assert_eq!(Pool::new(3, 2).unwrap_err(), BuildError::MinAboveMax { min: 3, max: 2 });
    /// let too_many = Pool::new(usize::MAX, usize::MAX).unwrap_err();
    /// assert!(matches!(too_many, BuildError::TooManyWorkers { .. }));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn new(min: usize, max: usize) -> Result<Self, BuildError> {
        Builder::new(min, max).build()
    }

    /// Settings for a pool of `min..=max` workers.
    pub fn builder(min: usize, max: usize) -> Builder {
        Builder::new(min, max)
    }

    /// Submits a task, blocking while the pool is full (from async code, use
    /// [`Pool::submit_async`], which waits without blocking).
    ///
    /// A blocked submit is woken once a batch of places is free (see "Rule 2" in the crate
    /// docs), and wakes by itself after a millisecond at most to look for less room than
    /// that, so room that exists reaches it within about a millisecond even when no further
    /// task finishes.
    ///
    /// # Errors
    ///
    /// [`SubmitError`] with the task when the pool is closing (also if it begins closing
    /// while this call waits for room).
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::new(1, 4)?;
    /// pool.submit(|| println!("hello from a worker"))?;
    /// pool.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit<F>(&self, task: F) -> Result<(), SubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        Shared::submit(&self.shared, task_span::boxed(task), Wait::Forever).map_err(|rejected| {
            match rejected {
                Rejected::Closed(task) => SubmitError(hand_back(task)),
                Rejected::Full(_) | Rejected::Timeout(_) => {
                    unreachable!("a submit that waits forever is only rejected as closed")
                }
            }
        })
    }

    /// Submits a task if there is room now; never blocks.
    ///
    /// # Errors
    ///
    /// - [`TrySubmitError::Full`] with the task when the capacity rule is at its limit.
    /// - [`TrySubmitError::Closed`] with the task when the pool is closing.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::builder(1, 1).submit_buffer(0).build()?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// pool.submit(move || gate.recv().unwrap())?; // the one worker is busy
    /// let rejected = pool.try_submit(|| ()).unwrap_err(); // 1/2 + 0 = no waiting place
    /// assert!(rejected.is_full());
    /// release.send(())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_submit<F>(&self, task: F) -> Result<(), TrySubmitError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        Shared::submit(&self.shared, task_span::boxed(task), Wait::No).map_err(|rejected| {
            match rejected {
                Rejected::Full(task) => TrySubmitError::Full(hand_back(task)),
                Rejected::Closed(task) => TrySubmitError::Closed(hand_back(task)),
                Rejected::Timeout(_) => unreachable!("try_submit never waits"),
            }
        })
    }

    /// Submits a task, waiting at most `timeout` for room.
    ///
    /// # Errors
    ///
    /// - [`SubmitTimeoutError::Timeout`] with the task when the pool stayed full.
    /// - [`SubmitTimeoutError::Closed`] with the task when the pool is closing.
    pub fn submit_timeout<F>(&self, task: F, timeout: Duration) -> Result<(), SubmitTimeoutError<F>>
    where
        F: FnOnce() + Send + 'static,
    {
        // A timeout too large for `Instant` waits like `submit`.
        let wait = Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until);
        Shared::submit(&self.shared, task_span::boxed(task), wait).map_err(
            |rejected| match rejected {
                Rejected::Timeout(task) | Rejected::Full(task) => {
                    SubmitTimeoutError::Timeout(hand_back(task))
                }
                Rejected::Closed(task) => SubmitTimeoutError::Closed(hand_back(task)),
            },
        )
    }

    /// Submits a task that returns a value, blocking while the pool is full like
    /// [`Pool::submit`]; [`TaskHandle::join`] gives the value or the task's panic. From
    /// async code, use [`Pool::spawn_async`], which waits without blocking.
    ///
    /// If the pool is closing the task is dropped unrun and `join` returns
    /// [`JoinError::Closed`].
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::new(1, 2)?;
    /// let ok = pool.spawn(|| 1 + 1);
    /// let boom = pool.spawn(|| -> u8 { panic!("no answer") });
    /// assert_eq!(ok.join()?, 2);
    /// assert_eq!(boom.join().unwrap_err().to_string(), "the task panicked: no answer");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn<F, T>(&self, task: F) -> TaskHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (job, handle) = SpawnJob::new(task);
        match Shared::submit(&self.shared, task_span::boxed(job), Wait::Forever) {
            Ok(()) => handle,
            // Only when closing (`submit` waits for room). The rejected job (and the sender
            // in it) is dropped; a fresh handle says why.
            Err(_rejected) => TaskHandle::closed(),
        }
    }

    /// Spawns a task that returns a value if there is room now, like [`Pool::try_submit`];
    /// never blocks. [`TaskHandle::join`] (or awaiting the handle) gives the value or the
    /// task's panic.
    ///
    /// # Errors
    ///
    /// - [`TrySubmitError::Full`] with the task when the capacity rule is at its limit.
    /// - [`TrySubmitError::Closed`] with the task when the pool is closing.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::builder(1, 1).submit_buffer(0).build()?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// let busy = pool.try_spawn(move || gate.recv().unwrap())?; // the one worker is busy
    /// let full = pool.try_spawn(|| 6 * 7).unwrap_err(); // 1/2 + 0 = no waiting place
    /// assert!(full.is_full());
    /// let task = full.into_inner(); // ours again: run it, retry it, or drop it
    /// assert_eq!(task(), 42);
    /// release.send(())?;
    /// busy.join()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_spawn<F, T>(&self, task: F) -> Result<TaskHandle<T>, TrySubmitError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (job, handle) = SpawnJob::new(task);
        match Shared::submit(&self.shared, task_span::boxed(job), Wait::No) {
            Ok(()) => Ok(handle),
            Err(Rejected::Full(job)) => Err(TrySubmitError::Full(SpawnJob::hand_back(job))),
            Err(Rejected::Closed(job)) => Err(TrySubmitError::Closed(SpawnJob::hand_back(job))),
            Err(Rejected::Timeout(_)) => unreachable!("try_spawn never waits"),
        }
    }

    /// Spawns a task that returns a value, waiting at most `timeout` for room, like
    /// [`Pool::submit_timeout`]. [`TaskHandle::join`] (or awaiting the handle) gives the
    /// value or the task's panic.
    ///
    /// # Errors
    ///
    /// - [`SubmitTimeoutError::Timeout`] with the task when the pool stayed full.
    /// - [`SubmitTimeoutError::Closed`] with the task when the pool is closing.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let pool = lockgate_worker::Pool::builder(1, 1).submit_buffer(0).build()?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// let busy = pool.spawn(move || gate.recv().unwrap());
    /// let late = pool.spawn_timeout(|| 1, Duration::from_millis(10)).unwrap_err();
    /// assert!(late.is_timeout());
    /// release.send(())?;
    /// busy.join()?;
    /// let answer = pool.spawn_timeout(late.into_inner(), Duration::from_secs(60))?;
    /// assert_eq!(answer.join()?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_timeout<F, T>(
        &self,
        task: F,
        timeout: Duration,
    ) -> Result<TaskHandle<T>, SubmitTimeoutError<F>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        // A timeout too large for `Instant` waits like `spawn`.
        let wait = Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Forever, Wait::Until);
        let (job, handle) = SpawnJob::new(task);
        match Shared::submit(&self.shared, task_span::boxed(job), wait) {
            Ok(()) => Ok(handle),
            Err(Rejected::Timeout(job) | Rejected::Full(job)) => {
                Err(SubmitTimeoutError::Timeout(SpawnJob::hand_back(job)))
            }
            Err(Rejected::Closed(job)) => Err(SubmitTimeoutError::Closed(SpawnJob::hand_back(job))),
        }
    }

    /// Submits a task from async code: the future waits for room without blocking the
    /// thread that polls it, and completes once the task is accepted (not run).
    ///
    /// It accepts at once when there is room, like [`Pool::try_submit`]; on a full pool it
    /// leaves the polling task's waker with the pool, and a finishing task wakes it (every
    /// finish wakes the waiter that waited longest, so room less than the batch a blocked
    /// [`Pool::submit`] waits for reaches it too). It needs no particular runtime.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes (in `select!`, or by a timeout)
    /// accepts nothing, and drops the task unrun. A dropped future leaves no waker behind,
    /// and if it was woken for room it never took, it passes that wake-up on to the next
    /// waiter.
    ///
    /// # Errors
    ///
    /// The future gives [`SubmitError`] with the task when the pool is closing (also if it
    /// begins closing while the future waits).
    ///
    /// # Panics
    ///
    /// The future panics if polled again after it completed.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::builder(1, 2).submit_buffer(0).build()?;
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// runtime.block_on(async {
    ///     for n in 0..40 {
    ///         // Waits while the pool is full; the runtime's thread runs other tasks then.
    ///         pool.submit_async(move || println!("task {n}")).await?;
    ///     }
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn submit_async<F>(&self, task: F) -> SubmitAsync<'_, F>
    where
        F: FnOnce() + Send + 'static,
    {
        SubmitAsync::new(RoomWait::new(&self.shared, task_span::boxed(task)))
    }

    /// Spawns a task that returns a value, from async code: the future waits for room like
    /// [`Pool::submit_async`], without blocking the polling thread, and gives the task's
    /// [`TaskHandle`] once it is accepted; await the handle for the value.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Pool::submit_async`]: dropped before it completes, the future
    /// accepted nothing and the task is dropped unrun. (Dropping the handle it gave, by
    /// contrast, never cancels the accepted task.)
    ///
    /// # Errors
    ///
    /// The future gives [`SubmitError`] with the task when the pool is closing.
    ///
    /// # Panics
    ///
    /// The future panics if polled again after it completed.
    ///
    /// # Examples
    ///
    /// ```
    /// let pool = lockgate_worker::Pool::builder(1, 2).submit_buffer(0).build()?;
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let sum = runtime.block_on(async {
    ///     let mut handles = Vec::new();
    ///     for n in 1..=10u64 {
    ///         handles.push(pool.spawn_async(move || n * n).await?); // accepted
    ///     }
    ///     let mut sum = 0;
    ///     for handle in handles {
    ///         sum += handle.await?; // finished
    ///     }
    ///     Ok::<_, Box<dyn std::error::Error>>(sum)
    /// })?;
    /// assert_eq!(sum, 385);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_async<F, T>(&self, task: F) -> SpawnAsync<'_, F, T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (job, handle) = SpawnJob::new(task);
        SpawnAsync::new(RoomWait::new(&self.shared, task_span::boxed(job)), handle)
    }

    /// Stops intake, waits until every accepted task (queued ones included) has run, and
    /// joins every worker thread. Idempotent and callable from several threads at once:
    /// each call returns once the pool is drained. `Drop` does the same.
    ///
    /// Tasks submitted after `close` began, including by running tasks, are rejected with
    /// `Closed` and handed back.
    ///
    /// # Errors
    ///
    /// [`CloseError::FromWorker`] when called from inside one of this pool's own tasks:
    /// waiting there would wait for the caller itself. Intake is stopped all the same, and
    /// the pool drains in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = lockgate_worker::Pool::new(0, 2)?;
    /// let ran = Arc::new(AtomicUsize::new(0));
    /// for _ in 0..10 {
    ///     let ran = Arc::clone(&ran);
    ///     pool.submit(move || { ran.fetch_add(1, Ordering::Relaxed); })?;
    /// }
    /// pool.close()?;
    /// assert_eq!(ran.load(Ordering::Relaxed), 10); // every accepted task ran
    /// assert_eq!(pool.workers(), 0);
    /// assert!(pool.try_submit(|| ()).unwrap_err().is_closed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) -> Result<(), CloseError> {
        if self.shared.on_own_worker() {
            self.shared.begin_close();
            return Err(CloseError::FromWorker);
        }
        self.shared.close();
        Ok(())
    }

    /// Waits until every accepted task has run, without closing: the pool stays open and
    /// keeps its workers (the `join` of the `threadpool` crate).
    ///
    /// # Guarantees
    ///
    /// - When it returns `Ok`, every task accepted before the call has finished, and there
    ///   was a moment, after the call, when no accepted task was queued or running.
    /// - Tasks accepted while it waits count too: it returns at the first moment the pool
    ///   has run out of accepted work, so submitters that never let the pool go empty keep
    ///   it waiting (bound that with [`Pool::join_timeout`], or stop them first).
    /// - Several threads may join at once; each returns at the first empty moment after its
    ///   own call (joiners waiting together return together).
    /// - Tasks that are queued with no worker to take them (the OS refused every thread)
    ///   are run by the joining thread, as [`Pool::close`] does.
    ///
    /// # Errors
    ///
    /// [`PoolJoinError::FromWorker`] when called from inside one of this pool's own tasks:
    /// that task is itself accepted and unfinished, so the wait could never end. The pool is
    /// left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// let pool = lockgate_worker::Pool::new(0, 2)?;
    /// let ran = Arc::new(AtomicUsize::new(0));
    /// for round in 1..=3 {
    ///     for _ in 0..10 {
    ///         let ran = Arc::clone(&ran);
    ///         pool.submit(move || { ran.fetch_add(1, Ordering::Relaxed); })?;
    ///     }
    ///     pool.join()?; // a batch is done; the pool stays open for the next one
    ///     assert_eq!(ran.load(Ordering::Relaxed), 10 * round);
    /// }
    /// pool.close()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join(&self) -> Result<(), PoolJoinError> {
        if self.shared.on_own_worker() {
            return Err(PoolJoinError::FromWorker);
        }
        self.shared.join(None);
        Ok(())
    }

    /// Like [`Pool::join`], waiting at most `timeout`.
    ///
    /// # Guarantees
    ///
    /// Those of [`Pool::join`] when it returns `Ok`. On [`PoolJoinError::Timeout`] nothing
    /// changed: the tasks go on running, and a later `join` waits for them again.
    ///
    /// # Errors
    ///
    /// - [`PoolJoinError::Timeout`] when accepted tasks were still queued or running at the
    ///   timeout.
    /// - [`PoolJoinError::FromWorker`] when called from inside one of this pool's own tasks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockgate_worker::PoolJoinError;
    ///
    /// let pool = lockgate_worker::Pool::new(1, 1)?;
    /// let (release, gate) = std::sync::mpsc::channel::<()>();
    /// pool.submit(move || gate.recv().unwrap())?;
    /// assert_eq!(pool.join_timeout(Duration::from_millis(10)), Err(PoolJoinError::Timeout));
    /// release.send(())?;
    /// pool.join_timeout(Duration::from_secs(60))?;
    /// assert_eq!(pool.completed(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn join_timeout(&self, timeout: Duration) -> Result<(), PoolJoinError> {
        if self.shared.on_own_worker() {
            return Err(PoolJoinError::FromWorker);
        }
        // A timeout too large for `Instant` waits like `join`.
        let deadline = Instant::now().checked_add(timeout);
        if self.shared.join(deadline) {
            Ok(())
        } else {
            Err(PoolJoinError::Timeout)
        }
    }

    /// Live workers, including ones being started.
    pub fn workers(&self) -> usize {
        self.shared.counters().workers
    }

    /// Workers waiting for a task (not counting ones already claimed for a queued task).
    pub fn idle(&self) -> usize {
        self.shared.counters().idle
    }

    /// Accepted tasks that have not started.
    pub fn queued(&self) -> usize {
        self.shared.counters().queued
    }

    /// Tasks running now.
    pub fn running(&self) -> usize {
        self.shared.counters().running
    }

    /// Tasks finished since the pool started, panicked ones included.
    pub fn completed(&self) -> u64 {
        self.shared.counters().finished
    }

    /// The waiting places beyond the workers: `max / 2 + submit_buffer` (rule 2).
    pub fn capacity(&self) -> usize {
        self.shared.config().capacity
    }

    /// The `min` this pool was built with.
    pub fn min(&self) -> usize {
        self.shared.config().min
    }

    /// The `max` this pool was built with.
    pub fn max(&self) -> usize {
        self.shared.config().max
    }
}

impl Drop for Pool {
    /// Closes the pool like [`Pool::close`], so it **blocks** until every accepted task has
    /// run (see "Dropping blocks" under [`Pool`]'s guarantees, and its async example).
    /// Dropped from inside one of its own tasks (the last `Arc<Pool>` went away there), it
    /// only begins closing: the workers drain the queue and exit on their own, and their
    /// threads are detached rather than joined.
    fn drop(&mut self) {
        if self.close().is_err() {
            tracing::debug!("pool dropped inside its own task; it drains in the background");
        }
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counters = self.shared.counters();
        f.debug_struct("Pool")
            .field("min", &self.shared.config().min)
            .field("max", &self.shared.config().max)
            .field("capacity", &self.shared.config().capacity)
            .field("workers", &counters.workers)
            .field("idle", &counters.idle)
            .field("queued", &counters.queued)
            .field("running", &counters.running)
            .field("closing", &counters.closing)
            .finish()
    }
}

/// Recovers the caller's task from the box the core stored.
pub(crate) fn hand_back<F: 'static>(task: Task) -> F {
    match task.into_any().downcast::<F>() {
        Ok(task) => *task,
        Err(_) => unreachable!("the core hands back the box it was given"),
    }
}

/// A spawned task as the core stores it: the caller's closure and the sender of its handle,
/// kept apart (not captured in a closure) so a rejected spawn hands the closure back.
pub(crate) struct SpawnJob<F, T> {
    task: F,
    sender: ResultSender<T>,
}

impl<F, T> SpawnJob<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    /// The job and the handle its sender fills.
    fn new(task: F) -> (Self, TaskHandle<T>) {
        let (sender, handle) = TaskHandle::channel();
        (Self { task, sender }, handle)
    }

    /// The caller's closure from a rejected job. The sender goes with the rest of the job;
    /// the handle it would have filled was never given out.
    pub(crate) fn hand_back(job: Task) -> F {
        hand_back::<Self>(job).task
    }
}

/// The job catches its task's panic (to hand it to the `TaskHandle`) and reports it, so the
/// pool counts spawned tasks' panics like submitted ones'.
impl<F, T> Runnable for SpawnJob<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn run(self: Box<Self>) -> Ran {
        (*self).run_now()
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl<F, T> RunNow for SpawnJob<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn run_now(self) -> Ran {
        let Self { task, sender } = self;
        let result = lockgate_panicguard::catch(task).map_err(|panic| {
            tracing::error!(panic = panic.message(), "a spawned pool task panicked");
            JoinError::Panicked(panic)
        });
        let ran = if result.is_ok() {
            Ran::Returned
        } else {
            Ran::Panicked
        };
        sender.send(result);
        ran
    }
}
