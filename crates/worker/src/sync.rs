//! The one place that names the synchronisation primitives, so a loom model sees every lock,
//! condvar, atomic, spawn and thread-local the pool uses.
//!
//! Under `cfg(all(test, loom))` everything comes from loom; otherwise from std. [`lock`] and
//! the condvar helpers ignore poisoning: the pool restores its invariants before every unlock
//! and never runs a task under the lock, so a poisoned mutex only means "some thread panicked
//! elsewhere", and turning that into a second panic here would help nobody.

#[cfg(all(test, loom))]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
    pub(crate) use loom::thread;
    pub(crate) use loom::thread_local;
}

#[cfg(not(all(test, loom)))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    pub(crate) use std::thread;
    pub(crate) use std::thread_local;
}

#[allow(unused_imports)] // each build uses a different subset (loom models vs std).
pub(crate) use imp::{
    Arc, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, thread, thread_local,
};

use std::time::Duration;

/// Locks `mutex`, ignoring poisoning.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar`, ignoring poisoning.
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar` for at most `timeout`, ignoring poisoning; `true` when it timed out.
///
/// Under loom the wait never times out (loom does not model time), so models drive every
/// exit through a notification instead.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, bool) {
    let (guard, result) = condvar
        .wait_timeout(guard, timeout)
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (guard, result.timed_out())
}
