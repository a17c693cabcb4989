//! `catch_panic` next to `futures::FutureExt`: both traits in scope, no ambiguity (E0034),
//! and each crate's adapter does its own job.

use futures_util::FutureExt as _;
use lockgate_panicguard::FutureExt as _;

#[test]
fn catch_panic_resolves_with_futures_future_ext_in_scope() {
    let ours = async { panic!("caught by panicguard") }.catch_panic();
    let caught = futures_util::future::FutureExt::now_or_never(ours).expect("ready at once");
    assert_eq!(caught.unwrap_err().message(), "caught by panicguard");
    // futures' adapter is still there, named through its trait: with both traits in scope the
    // bare `.catch_unwind()` is ambiguous as long as panicguard's deprecated alias exists.
    let theirs = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async { 3 }));
    assert_eq!(theirs.now_or_never().map(Result::ok), Some(Some(3)));
}
