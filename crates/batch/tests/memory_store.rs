//! The runner suite over the in-memory store.

mod suite;

use proptest::prelude::Strategy;

runner_suite!(batch::store::MemoryStore::new);
model_suite!(batch::store::MemoryStore::new);
