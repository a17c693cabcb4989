//! The seam between the fast entries and the locked state machines.
//!
//! pdfpool's rules live in two locked state machines and nowhere else: the admission table
//! (`table.rs`, one mutex) and the layer's gate (`admission/gate.rs`, its lock and its word).
//! A *fast entry* is a shortcut in front of one of them. It either did exactly what the locked
//! path would have done and says [`Fast::Done`], or did nothing and says [`Fast::FallBack`];
//! its one caller, beside the locked path, then takes that path. So a fast entry holds no rule
//! of its own: each carries a comment saying why what it does is what the locked path does.
//!
//! | fast entry | its caller | what it does | the locked path instead |
//! | --- | --- | --- | --- |
//! | `Gate::enter_fast` | `Gate::enter` | takes a free slot with one compare-and-swap while nobody waits | `Gate::enter_locked` |
//! | `Gate::release_fast` | `Gate::release` | frees a slot with one compare-and-swap while nobody waits | `Gate::release_locked` |
//! | `wait::task_mailbox` | `Pool::run` (its mailbox closure, then its `Started` arm) | the request that starts its job at once takes the outcome from the job's task | a oneshot channel, as every other waiter has |
//!
//! The table's index (`table/index.rs`: a scan of the live jobs, or two hash maps) is not an
//! entry but a data-structure choice; both representations answer identically (its proptest).
//!
//! # The reference build
//!
//! `--cfg lockgate_reference`, a test-only build, makes [`REFERENCE`] true: every fast entry
//! falls back at once, and the index always uses its maps. The pool and the layer then run on
//! the locked state machines alone, and the proptest models and stress tests, which pass in
//! both builds, compare each fast entry with the path it stands for:
//!
//! ```text
//! RUSTFLAGS="--cfg lockgate_reference" cargo test -p lockgate-pdfpool --all-features --target-dir target/reference
//! ```
//!
//! The loom models of the fast entries (`tests/loom_gate.rs`) run in the normal build, where
//! the entries race the locked paths.

/// Whether this is the reference build: every fast entry falls back, the index uses maps.
pub(crate) const REFERENCE: bool = cfg!(lockgate_reference);

/// What a fast entry did.
#[must_use = "a fast entry that fell back leaves the work to the locked path"]
#[derive(Debug)]
pub(crate) enum Fast<T> {
    /// Exactly what the locked path would have done, with its result.
    Done(T),
    /// Nothing: the caller takes the locked path.
    FallBack,
}
