//! A fresh, private PostgreSQL schema per store, in the database the gate started.
//!
//! `cargo xtask gate` starts a throwaway cluster and exports its URL as
//! `BATCH_TEST_POSTGRES_URL`. Without it, every PostgreSQL test prints why it skipped and
//! returns. Each store gets its own schema (`t_<pid>_<start time>_<n>`), so tests run in parallel, in
//! separate processes, without seeing each other's jobs.

#![allow(dead_code)]

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

/// Whether a test may open sockets: not under ThreadSanitizer, which reports a known false
/// positive in tokio's I/O driver (tokio issue #7299; docs/gate.md). The tests that need the
/// server skip there anyway (the sanitizer run gets no URL); this covers those that talk to a
/// local listener of their own.
pub fn sockets_allowed() -> bool {
    let tsan = std::env::var_os("TSAN_OPTIONS").is_some();
    if tsan {
        println!("SKIPPED: postgres: socket I/O under ThreadSanitizer (tokio issue #7299)");
    }
    !tsan
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

/// A store over a fresh schema with the test options.
pub fn store() -> PostgresStore {
    open(options())
}

/// Each call one atomic step in the test's virtual time: the wrapper every store answering
/// from elsewhere shares (`tests/suite/frozen.rs`). Its `changed` never resolves, so
/// `LISTEN/NOTIFY` is tested on a real clock with the store itself.
// A test binary with both `pg` and `suite` compiles the file twice, as two unrelated types;
// each is used only through its own module, so the copies never meet.
#[allow(clippy::duplicate_mod)]
#[path = "../suite/frozen.rs"]
mod frozen;
pub use frozen::Frozen;

/// A frozen store over a fresh schema with the test options.
pub fn frozen() -> Frozen<PostgresStore> {
    Frozen::new(store())
}

/// `TEST_SCALE=small` (TSan, Miri) shrinks loops.
pub fn small() -> bool {
    std::env::var("TEST_SCALE").is_ok_and(|v| v == "small")
}

/// A generous bound for a shared 2-core machine; reaching it means a lost wake-up or target.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Hooks that send every job's terminal status to the test.
pub struct EndedJobs(pub tokio::sync::mpsc::UnboundedSender<lockgate_batch::JobStatus>);

impl lockgate_batch::hooks::Hooks for EndedJobs {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

/// The variable naming the PEM file of the CA that signed the test cluster's certificate.
pub const CA_VAR: &str = "BATCH_TEST_POSTGRES_CA";

/// The test cluster's CA certificate (PEM), if the cluster speaks TLS; prints why not.
pub fn ca() -> Option<Vec<u8>> {
    let Some(path) = std::env::var_os(CA_VAR).filter(|path| !path.is_empty()) else {
        println!(
            "SKIPPED: postgres TLS: {CA_VAR} is not set; `cargo xtask gate` sets it when \
             `openssl` could make the test cluster a certificate"
        );
        return None;
    };
    Some(std::fs::read(&path).unwrap_or_else(|err| panic!("read {path:?}: {err}")))
}

/// A CA certificate that signed nothing the test cluster presents.
pub const UNRELATED_CA: &[u8] = include_bytes!("unrelated-ca.pem");

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
