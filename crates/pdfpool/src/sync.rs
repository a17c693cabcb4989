//! The one place that names the synchronisation primitives of shared state.
//!
//! Under `cfg(all(test, loom))` these are loom's, so a model sees every lock of the admission
//! table and every atomic of the layer's gate; otherwise they are std's. No other file names `std::sync` for shared state.

#[cfg(all(test, loom))]
use loom::sync as imp;
#[cfg(not(all(test, loom)))]
use std::sync as imp;

// The layer's gate (feature `tower`, or alone for its loom models) is the one user.
#[cfg(any(feature = "tower", all(test, loom)))]
pub(crate) use imp::atomic::{AtomicUsize, Ordering};
pub(crate) use imp::{Arc, MutexGuard};

/// A mutex whose [`lock`](Mutex::lock) ignores poisoning.
///
/// The admission table restores its invariants before every unlock and never runs a job's
/// closure, future or outcome under the lock, so a panic elsewhere cannot leave it
/// half-updated; turning one panic into a second one at the next `lock()` would only spread
/// the damage (tokio's std adapter does the same).
#[derive(Debug)]
pub(crate) struct Mutex<T>(imp::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(imp::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
