//! The runner suite over the in-memory store.

use proptest::prelude::Strategy;

use crate::suite;

crate::runner_suite!(lockgate_batch::store::MemoryStore::new);
crate::model_suite!(lockgate_batch::store::MemoryStore::new);
