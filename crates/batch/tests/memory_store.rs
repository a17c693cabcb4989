//! The runner suite over the in-memory store.

mod suite;

runner_suite!(batch::MemoryStore::new);
