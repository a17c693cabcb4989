//! A released claim hands its turn back (`Store`'s docs, "The rotation"), store call by
//! store call: a claim that ends `Released` moves the cursor back to where its walk started
//! if no other claim moved it since, and moves nothing otherwise.

use lockgate_batch::store::{ClaimEnd, NewJob, Store, Timestamp};
use lockgate_batch::{Caller, JobId, TargetState};

fn at(ms: u64) -> Timestamp {
    Timestamp::from_micros(1_000_000 + ms * 1000)
}

/// Submits one job of `targets` targets per caller name, in order; their ids.
async fn submit<S: Store>(store: &S, names: &[&str], targets: usize) -> Vec<JobId> {
    let mut ids = Vec::new();
    for name in names {
        let targets = (0..targets).map(|i| format!("\"{name}{i}\"")).collect();
        let job = NewJob::new(Caller::new(*name), targets, at(0), 10);
        ids.push(store.submit(job).await.unwrap().id);
    }
    ids
}

/// The next claim; there must be one.
async fn claim<S: Store>(store: &S, now: Timestamp) -> lockgate_batch::store::Claim {
    store.claim(now).await.unwrap().expect("a ready target")
}

fn done() -> TargetState {
    TargetState::Done {
        output_json: "\"ok\"".to_owned(),
    }
}

/// `a` is claimed and released unfetched: the next claim takes `a` again, not `b`, since the
/// released claim served nothing; once `a`'s target is stored, `b` follows.
pub async fn a_released_claim_hands_its_turn_back<S: Store>(make: impl Fn() -> S) {
    let store = make();
    store.recover(at(0)).await.unwrap();
    let ids = submit(&store, &["ann", "bob"], 2).await;
    let first = claim(&store, at(1)).await;
    assert_eq!((first.job, first.index), (ids[0], 0));
    store
        .finish(&first, ClaimEnd::Released, at(2), false)
        .await
        .unwrap();
    let again = claim(&store, at(3)).await;
    assert_eq!(
        (again.job, again.index),
        (ids[0], 0),
        "the released claim handed its turn back: the same job again"
    );
    store
        .finish(&again, ClaimEnd::Stored(done()), at(4), false)
        .await
        .unwrap();
    let next = claim(&store, at(5)).await;
    assert_eq!((next.job, next.index), (ids[1], 0), "then the next job");
}

/// `a` then `b` are claimed, then `a`'s claim is released: `b`'s claim moved the cursor
/// since, so the release moves nothing and the next claim takes `c`, not `a` again.
pub async fn a_release_after_another_claim_moved_the_cursor_moves_nothing<S: Store>(
    make: impl Fn() -> S,
) {
    let store = make();
    store.recover(at(0)).await.unwrap();
    let ids = submit(&store, &["ann", "bob", "cy"], 2).await;
    let a = claim(&store, at(1)).await;
    let b = claim(&store, at(2)).await;
    assert_eq!((a.job, b.job), (ids[0], ids[1]));
    store
        .finish(&a, ClaimEnd::Released, at(3), false)
        .await
        .unwrap();
    let c = claim(&store, at(4)).await;
    assert_eq!(
        c.job, ids[2],
        "the cursor stays after `b`, whose claim moved it after `a`'s"
    );
    let after = claim(&store, at(5)).await;
    assert_eq!(after.job, ids[0], "`a` waits for the next lap");
}
