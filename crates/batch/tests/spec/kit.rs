//! The kit itself: a store that breaks what its rules promise fails, and the failure shows
//! a minimal sequence, what ran of it, and both answers.

use lockgate_batch::spec::{Conformance, Rules};
use lockgate_batch::store::MemoryStore;

/// The in-memory store frees every claim on `recover`; run under rules that say it leaves
/// them to their leases, it breaks them as soon as a claim is out at a recover, which a
/// sequence of a submit, a claim and a recover shows (the drain's release, or a next
/// claim, then disagrees).
#[test]
fn a_broken_promise_fails_with_a_minimal_sequence_and_both_answers() {
    let failure = Conformance::new(MemoryStore::new)
        .name("memory under shared rules")
        .rules(Rules::shared())
        .cases(64)
        // Shrinking is a search: a fixed seed makes the sequence it finds the same each run.
        .seed(2)
        .run()
        .expect_err("the memory store frees claims on recover, which shared rules forbid");
    println!("{failure}");
    let sequence = failure.sequence();
    assert!(sequence.len() <= 4, "not shrunk: {failure}");
    assert!(sequence.iter().any(|op| op == "Recover"), "{failure}");
    assert!(failure.what().contains("disagrees"), "{failure}");
    let (reference, store) = (failure.reference_answer(), failure.store_answer());
    assert!(reference.is_some() && reference != store, "{failure}");
    assert!(!failure.trace().is_empty(), "{failure}");
    let text = failure.to_string();
    assert!(text.starts_with("memory under shared rules: "), "{text}");
    assert_eq!(format!("{failure:?}"), text, "Debug shows the same report");
}
