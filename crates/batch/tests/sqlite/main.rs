//! The SQLite store's integration tests (feature `sqlite`), one module a topic: the runner
//! suite over it, faults of its file, one owner per file across processes, and a runner
//! killed mid-job. The tests that need a second process re-run this binary as a child.

#[macro_use]
#[path = "../forward/mod.rs"]
mod forward;

#[path = "../crash_harness/mod.rs"]
mod crash_harness;
#[path = "../frozen/mod.rs"]
mod frozen;
#[path = "../scratch/mod.rs"]
mod scratch;
#[path = "../suite/mod.rs"]
mod suite;

mod crash;
mod faults;
mod owner;
mod store;
