//! The runner suite over the in-memory store.

mod suite;

use proptest::prelude::Strategy;

runner_suite!(batch::MemoryStore::new);
model_suite!(batch::MemoryStore::new);
