//! A runner killed with SIGKILL mid-job, and a new runner over the same SQLite file that
//! finishes it: every target is stored exactly once, with the right output, and only the
//! target in flight at the kill is fetched twice.
//!
//! The child is this test binary itself, running the ignored test `child_runs_until_killed`
//! through the crash harness (`crash_harness`), which SQLite and PostgreSQL share.

use std::path::PathBuf;

use lockgate_batch::store::SqliteStore;

use crate::crash_harness::{self, Plan};
use crate::scratch::Scratch;

const DB_ENV: &str = "BATCH_CRASH_TEST_DB";
/// 40 targets; the child stores 15 and is killed while fetching the 16th.
const PLAN: Plan = Plan {
    targets: 40,
    stored_before_kill: 15,
};

#[test]
#[ignore = "the child process of crash_mid_job_resumes_on_restart; runs only when it starts it"]
fn child_runs_until_killed() {
    let db = PathBuf::from(std::env::var_os(DB_ENV).expect("started by the crash test"));
    crash_harness::child(async { SqliteStore::open(db).unwrap() }, PLAN.targets);
}

#[test]
fn crash_mid_job_resumes_on_restart() {
    let dir = Scratch::new("crash", "mid-job");
    let db = dir.db();
    let child = crash_harness::spawn(
        concat!(module_path!(), "::child_runs_until_killed"),
        DB_ENV,
        &db,
    );
    let id = crash_harness::run_child_and_kill(child, PLAN);
    crash_harness::resume(async { SqliteStore::open(&db).unwrap() }, id, PLAN);
}
