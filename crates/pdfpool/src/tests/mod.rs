//! Models of the admission table. loom models run only under `--cfg loom`
//! (`RUSTFLAGS="--cfg loom -C debug-assertions"`), the plain unit tests only without it.

#[cfg(loom)]
mod loom_table;
