//! The runner suite over the SQLite store, on SQLite's in-memory database, each call frozen in
//! virtual time (see `suite::frozen`).

mod suite;

use proptest::prelude::Strategy;
use suite::frozen::Frozen;

fn store() -> Frozen<lockgate_batch::store::SqliteStore> {
    Frozen::new(lockgate_batch::store::SqliteStore::open_in_memory().expect("in-memory sqlite"))
}

runner_suite!(store);
model_suite!(store);
