//! The runner suite over the PostgreSQL store, each test on a fresh schema of the gate's
//! throwaway cluster (skipped, saying why, without one).

mod pg;
mod suite;

use proptest::prelude::Strategy;

runner_suite!(guarded pg::available, pg::frozen);
model_suite!(guarded pg::available, pg::frozen);
