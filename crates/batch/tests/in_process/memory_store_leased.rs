//! The runner suite over the in-memory store with leased claims: every test also runs the
//! runner's heartbeat (a held fetch outlives many leases and must never be fetched twice).

use std::time::Duration;

use proptest::prelude::Strategy;

use crate::suite;

fn leased() -> lockgate_batch::store::MemoryStore {
    lockgate_batch::store::MemoryStore::with_lease(Duration::from_millis(300))
}

crate::runner_suite!(leased);
crate::model_suite!(leased);
