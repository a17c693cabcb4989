//! Models of the admission table and of the layer's gate. loom models run only under `--cfg loom`
//! (`RUSTFLAGS="--cfg loom -C debug-assertions"`), the plain unit tests only without it.

#[cfg(all(loom, not(feature = "tower")))]
mod loom_gate;
#[cfg(loom)]
mod loom_table;
