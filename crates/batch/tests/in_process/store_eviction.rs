//! Eviction at exact byte budgets, the same on every store: whole ended jobs go, least recently
//! touched first, until the stored bytes are at or below the budget; a live job never goes.

use lockgate_batch::store::Timestamp;
use lockgate_batch::store::{ClaimEnd, Evicted, NewJob, Store};
use lockgate_batch::{Caller, JobId, TargetState};

/// Runs one store call to its end.
fn now<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn at(micros: u64) -> Timestamp {
    Timestamp::from_micros(micros)
}

/// Submits a one-target job for `caller` and, if `output` is given, stores it done.
/// Returns the id and the bytes the job holds.
fn job<S: Store>(store: &S, caller: &str, target: &str, output: Option<&str>) -> (JobId, u64) {
    let submitted = now(store.submit(NewJob::new(
        Caller::new(caller),
        vec![target.to_string()],
        at(1),
        10,
    )))
    .unwrap();
    let mut bytes = target.len() as u64;
    if let Some(output) = output {
        let claim = now(store.claim(at(2)))
            .unwrap()
            .expect("the new job is ready");
        assert_eq!(claim.job, submitted.id);
        let result = TargetState::Done {
            output_json: output.to_string(),
        };
        now(store.finish(&claim, ClaimEnd::Stored(result), at(3), false)).unwrap();
        bytes += output.len() as u64;
    }
    (submitted.id, bytes)
}

fn exists<S: Store>(store: &S, id: JobId, caller: &str) -> bool {
    now(store.status(id, &Caller::new(caller)))
        .unwrap()
        .is_some()
}

fn exact_budgets<S: Store>(store: S) {
    let (a, a_bytes) = job(&store, "a", "\"aa\"", Some("\"first\""));
    let (b, b_bytes) = job(&store, "b", "\"bbb\"", Some("\"second output\""));
    let (c, c_bytes) = job(&store, "c", "\"c\"", Some("\"3\""));
    let total = a_bytes + b_bytes + c_bytes;

    // At the budget: nothing goes.
    assert_eq!(now(store.evict_oldest(total)).unwrap(), Evicted::default());

    // Touching a makes b the least recently touched: one byte over the budget evicts b alone.
    assert!(now(store.touch(a, &Caller::new("a"), at(4))).unwrap());
    let evicted = now(store.evict_oldest(total - 1)).unwrap();
    assert_eq!(
        evicted,
        Evicted {
            jobs: 1,
            bytes: b_bytes,
            largest: b_bytes,
        }
    );
    assert!(!exists(&store, b, "b"));
    assert!(exists(&store, a, "a") && exists(&store, c, "c"));

    // A live job is never evicted, even when the budget is zero; ended ones go oldest first.
    let (live, _) = job(&store, "live", "\"a live job's target\"", None);
    let evicted = now(store.evict_oldest(0)).unwrap();
    assert_eq!(
        evicted,
        Evicted {
            jobs: 2,
            bytes: a_bytes + c_bytes,
            largest: a_bytes.max(c_bytes),
        }
    );
    assert!(exists(&store, live, "live"));
}

#[test]
fn memory_store_evicts_at_exact_budgets() {
    exact_budgets(lockgate_batch::store::MemoryStore::new());
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_store_evicts_at_exact_budgets() {
    let store = lockgate_batch::store::SqliteStore::open_in_memory().unwrap();
    exact_budgets(store);
}
