//! A fresh, private PostgreSQL schema per store, in the database the gate started: shared by
//! every test binary that reaches PostgreSQL.
//!
//! `cargo xtask gate` starts a throwaway cluster and exports its URL as
//! `BATCH_TEST_POSTGRES_URL`. Without it, every PostgreSQL test prints why it skipped and
//! returns. Each store gets its own schema (`t_<pid>_<start time>_<n>`), so tests run in
//! parallel, in one process or in several, without seeing each other's jobs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use lockgate_batch::store::{PostgresOptions, PostgresStore};

/// The variable holding the test database's URL.
pub const URL_VAR: &str = "BATCH_TEST_POSTGRES_URL";

/// The test database's URL, if the environment has one.
pub fn url() -> Option<String> {
    std::env::var(URL_VAR).ok().filter(|url| !url.is_empty())
}

/// Whether the PostgreSQL tests can run; prints why not.
pub fn available() -> bool {
    let found = url().is_some();
    if !found {
        println!(
            "SKIPPED: postgres: {URL_VAR} is not set; `cargo xtask gate` sets it when the \
             PostgreSQL server binaries are installed (Debian: apt-get install postgresql)"
        );
    }
    found
}

/// A schema name no other store in any test process uses: the process id alone repeats
/// (nextest runs each test in a process of its own, and pids wrap at 32768 on a busy
/// machine), so the start time of the process is in it too.
pub fn fresh_schema() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    let started = STARTED.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros()
    });
    format!(
        "t_{}_{:x}_{}",
        std::process::id(),
        started % (1 << 48),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Options for tests: a fresh schema, and a lease short enough that the longer suite tests
/// run the runner's heartbeat against the database. The server judges leases by its own
/// clock, in real time, while the suite runs on tokio's paused clock: the lease is long
/// enough that a busy machine never stalls a heartbeat past it.
pub fn options() -> PostgresOptions {
    PostgresStore::options()
        .schema(fresh_schema())
        .lease_ttl(Duration::from_secs(5))
        .poll_interval(Duration::from_secs(1))
        .pool_size(8)
}

/// Migrates `options`' schema on a runtime of its own (callable with or without one around),
/// then opens the store lazily.
pub fn open(options: PostgresOptions) -> PostgresStore {
    let url = url().expect("the PostgreSQL tests need BATCH_TEST_POSTGRES_URL");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(options.migrate(&url))
            })
            .join()
            .unwrap()
    })
    .expect("migrate the test schema");
    options.open_lazy(&url).expect("open the test store")
}
