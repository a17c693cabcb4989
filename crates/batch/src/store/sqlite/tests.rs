//! Fault tests that need the store's connection: a full disk.

use super::*;
use crate::job::JobStatus;

fn job(caller: &str, targets: &[&str]) -> NewJob {
    NewJob {
        caller: Caller::new(caller),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        now: Timestamp::from_micros(1),
        max_live_jobs: 100,
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

#[test]
fn a_full_disk_is_a_typed_error_and_loses_nothing_stored() {
    let store = SqliteStore::open_in_memory().unwrap();
    let first = block_on(store.submit(job("ann", &["\"a1\""]))).unwrap();
    let claim = block_on(store.claim(Timestamp::from_micros(2)))
        .unwrap()
        .unwrap();
    let done = TargetState::Done {
        output_json: "\"kept\"".into(),
    };
    block_on(store.complete(&claim, done.clone(), Timestamp::from_micros(3))).unwrap();

    // SQLite answers SQLITE_FULL once the file would outgrow max_page_count: the same code
    // path as a full disk.
    store.with_connection(|conn| {
        let pages: i64 = conn
            .pragma_query_value(None, "page_count", |row| row.get(0))
            .unwrap();
        conn.pragma_update(None, "max_page_count", pages).unwrap();
    });
    let huge = "x".repeat(64 * 1024);
    let err = block_on(store.submit(job("bob", &[&format!("\"{huge}\"")]))).unwrap_err();
    let SubmitError::Store(StoreError::Failed(source)) = err else {
        panic!("expected a failed store, got {err:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<SqliteError>(),
            Some(SqliteError::Full(_))
        ),
        "{source}"
    );

    let kept = block_on(store.status(first.id, &Caller::new("ann")))
        .unwrap()
        .unwrap();
    assert_eq!(kept.status, JobStatus::Done);
    assert_eq!(kept.targets.len(), 1);
    assert_eq!(kept.targets[0].target_json, "\"a1\"");
    assert_eq!(kept.targets[0].state, done);
    assert_eq!(block_on(store.live_jobs()).unwrap(), 0);
    assert_eq!(store.stored_bytes(), 4 + 6);
}

#[test]
fn stale_claims_store_nothing() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(store.submit(job("ann", &["1", "2"]))).unwrap();
    let claim = block_on(store.claim(Timestamp::from_micros(2)))
        .unwrap()
        .unwrap();
    assert_eq!(
        block_on(store.recover(Timestamp::from_micros(3))).unwrap(),
        1
    );
    let result = TargetState::Done {
        output_json: "1".into(),
    };
    let outcome = block_on(store.complete(&claim, result, Timestamp::from_micros(4))).unwrap();
    assert_eq!(outcome, Completion::Stale);
    assert!(!block_on(store.renew(&claim, Timestamp::from_micros(4))).unwrap());
    let again = block_on(store.claim(Timestamp::from_micros(5)))
        .unwrap()
        .unwrap();
    assert_eq!((again.index, again.token > claim.token), (0, true));
}
