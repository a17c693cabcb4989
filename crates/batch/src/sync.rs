//! The one place that names the lock the in-memory store shares between threads, and the
//! atomic word of the in-flight count (`inflight.rs`).
//!
//! Under `cfg(all(test, loom))` these are loom's types, so a model sees every lock and atomic;
//! otherwise std's. `lock()` ignores poisoning: the store restores its invariants before every
//! unlock and never runs user code under its lock, so a panic elsewhere must not turn into a
//! second panic at the next `lock()` (the shape of tokio's std adapter).

#[cfg(all(test, loom))]
pub(crate) use loom::sync::MutexGuard;
#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::MutexGuard;
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(all(test, loom))]
use loom::sync::Mutex as Inner;
#[cfg(not(all(test, loom)))]
use std::sync::Mutex as Inner;

/// A mutex whose `lock` returns the guard even after a panic poisoned it.
#[derive(Debug)]
pub(crate) struct Mutex<T>(Inner<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Inner::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
