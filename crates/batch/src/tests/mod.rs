//! Unit tests of the crate's internals; loom models under `cfg(loom)`.

#[cfg(loom)]
mod loom_inflight;
#[cfg(loom)]
mod loom_memory_store;
#[cfg(loom)]
mod loom_wake;
#[cfg(loom)]
mod loom_watch;
#[cfg(not(loom))]
mod memory_state;
