//! The runner suite over the PostgreSQL store, each test on a fresh schema of the gate's
//! throwaway cluster (skipped, saying why, without one).

use lockgate_batch::store::PostgresStore;
use proptest::prelude::Strategy;

use crate::frozen::Frozen;
use crate::{pg, suite};

/// A store over a fresh schema with the test options, each call one atomic step in the test's
/// virtual time (see `Frozen`). Its `changed` never resolves, so `LISTEN/NOTIFY` is tested on
/// a real clock with the store itself.
fn frozen() -> Frozen<PostgresStore> {
    Frozen::new(pg::open(pg::options()))
}

crate::runner_suite!(guarded pg::available, frozen);
// A quarter of the in-process stores' cases: each case creates a schema and runs its calls
// over the network, and the gate's time is shared.
crate::model_suite!(guarded pg::available, cases 32, frozen);
