//! The runner suite over the PostgreSQL store, each test on a fresh schema of the gate's
//! throwaway cluster (skipped, saying why, without one).

mod pg;
mod suite;

use proptest::prelude::Strategy;

runner_suite!(guarded pg::available, pg::frozen);
// A quarter of the in-process stores' cases: each case creates a schema and runs its calls
// over the network, and the gate's time is shared.
model_suite!(guarded pg::available, cases 32, pg::frozen);
