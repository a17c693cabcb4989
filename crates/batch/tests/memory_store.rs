//! The runner suite over the in-memory store.

mod suite;

use proptest::prelude::Strategy;

runner_suite!(lockgate_batch::store::MemoryStore::new);
model_suite!(lockgate_batch::store::MemoryStore::new);
