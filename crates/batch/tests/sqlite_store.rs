//! The runner suite over the SQLite store, on SQLite's in-memory database.

mod suite;

use proptest::prelude::Strategy;

fn store() -> batch::store::SqliteStore {
    batch::store::SqliteStore::open_in_memory().expect("in-memory sqlite")
}

runner_suite!(store);
model_suite!(store);
