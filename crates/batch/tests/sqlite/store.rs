//! The runner suite over the SQLite store, on SQLite's in-memory database, each call frozen in
//! virtual time (see `Frozen`).

use lockgate_batch::store::SqliteStore;
use proptest::prelude::Strategy;

use crate::frozen::Frozen;
use crate::suite;

fn store() -> Frozen<SqliteStore> {
    Frozen::new(SqliteStore::open_in_memory().expect("in-memory sqlite"))
}

crate::runner_suite!(store);
crate::model_suite!(store);
