//! The example `btree_store` (`examples/btree_store/`), a store written from the contract's
//! docs alone, through the kit exactly as a third party's tests would call it.

#[path = "../../examples/btree_store/store.rs"]
mod store;

use lockgate_batch::spec::{Rules, conformance};

/// Owned by one process: no lease, and `recover` frees every claim. The kit's 1,000
/// sequences (`PROPTEST_CASES` overrides them, as the gate's sanitizer and Miri steps do).
#[test]
fn the_btree_store_example_keeps_the_contract() {
    match conformance(Rules::owned(), store::BTreeStore::new) {
        Ok(report) => println!("{report}"),
        Err(failure) => panic!("{failure}"),
    }
}
