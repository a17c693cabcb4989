//! The runner suite over the in-memory store with leased claims: every test also runs the
//! runner's heartbeat (a held fetch outlives many leases and must never be fetched twice).

mod suite;

use std::time::Duration;

use proptest::prelude::Strategy;

fn leased() -> lockgate_batch::store::MemoryStore {
    lockgate_batch::store::MemoryStore::with_lease(Duration::from_millis(300))
}

runner_suite!(leased);
model_suite!(leased);
