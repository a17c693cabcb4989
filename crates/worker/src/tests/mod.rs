//! Unit tests and loom models of the pool core. Loom models live in `loom_*.rs` (the gate's
//! filter) and build only under `--cfg loom`; everything else only without it.

#[cfg(all(loom, not(debug_assertions)))]
compile_error!("loom models check the invariants' debug_asserts: build with -C debug-assertions");

#[cfg(loom)]
mod loom_async_submit;
#[cfg(loom)]
mod loom_blocked_submit;
#[cfg(loom)]
mod loom_capacity_edge;
#[cfg(loom)]
mod loom_exit_policy;
#[cfg(loom)]
mod loom_handle;
#[cfg(loom)]
mod loom_join;
#[cfg(loom)]
mod loom_lane;
#[cfg(loom)]
mod loom_panic;
#[cfg(loom)]
mod loom_submit_close;
#[cfg(loom)]
mod loom_support;
#[cfg(loom)]
mod loom_two_sleepers;

#[cfg(not(loom))]
mod async_submit;
#[cfg(not(loom))]
mod capacity;
#[cfg(not(loom))]
mod close;
#[cfg(not(loom))]
mod growth;
#[cfg(not(loom))]
mod join;
#[cfg(not(loom))]
mod panics;
#[cfg(not(loom))]
mod spawn_failure;
#[cfg(not(loom))]
pub(crate) mod support;
