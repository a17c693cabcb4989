//! Unit tests of the crate's internals; loom models under `cfg(loom)`.

#[cfg(not(loom))]
mod memory_state;
