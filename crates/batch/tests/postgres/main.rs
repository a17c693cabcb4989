//! The PostgreSQL store's integration tests (feature `postgres`; TLS with `postgres-tls`), one
//! module a topic. Every test that needs a server runs on a fresh schema of the gate's
//! throwaway cluster (`pg`) and skips, saying why, without one; the durable cluster's tests
//! skip without theirs (below).

#[macro_use]
#[path = "../forward/mod.rs"]
mod forward;

#[path = "../crash_harness/mod.rs"]
mod crash_harness;
#[path = "../frozen/mod.rs"]
mod frozen;
#[path = "../pg/mod.rs"]
mod pg;
#[path = "../suite/mod.rs"]
mod suite;

mod connections;
mod crash;
mod deadline;
mod durable;
mod leases;
mod proxy;
mod schema;
mod settings;
mod shared;
mod store;
#[cfg(feature = "postgres-tls")]
mod tls;

use std::time::Duration;

/// A generous bound for a shared 2-core machine; reaching it means a lost wake-up or target.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Waits, by asking the server over a connection of its own (on a condition, never a
/// duration), until exactly `count` backends of the store over `schema` wait on a lock.
pub async fn lock_waiters_become(url: &str, schema: &str, count: i64) {
    let (observer, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let waiting = "SELECT COUNT(*) FROM pg_stat_activity \
                   WHERE application_name = $1 AND wait_event_type = 'Lock'";
    let name = format!("batch {schema}");
    let reached = async {
        while observer
            .query_one(waiting, &[&name])
            .await
            .unwrap()
            .get::<_, i64>(0)
            != count
        {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(PATIENCE, reached)
        .await
        .unwrap_or_else(|_| panic!("{count} backend(s) of the store never waited on a lock"));
}

/// Hooks that send every job's terminal status to the test.
pub struct EndedJobs(pub tokio::sync::mpsc::UnboundedSender<lockgate_batch::JobStatus>);

impl lockgate_batch::hooks::Hooks for EndedJobs {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

/// The variable holding the durable cluster's URL (`fsync` and `synchronous_commit` on).
pub const DURABLE_URL_VAR: &str = "BATCH_TEST_POSTGRES_DURABLE_URL";
/// The variable naming a program that restarts the durable cluster with `-m immediate`.
pub const DURABLE_RESTART_VAR: &str = "BATCH_TEST_POSTGRES_DURABLE_RESTART";

/// The durable cluster's URL, if the gate started one; prints why not.
pub fn durable_url() -> Option<String> {
    let url = std::env::var(DURABLE_URL_VAR)
        .ok()
        .filter(|url| !url.is_empty());
    if url.is_none() {
        println!(
            "SKIPPED: postgres durable: {DURABLE_URL_VAR} is not set; `cargo xtask gate` sets \
             it when the PostgreSQL server binaries are installed"
        );
    }
    url
}

/// The program that restarts the durable cluster with `-m immediate` (the gate writes it).
pub fn durable_restart() -> Option<String> {
    std::env::var(DURABLE_RESTART_VAR)
        .ok()
        .filter(|path| !path.is_empty())
}
