//! Bad settings and unusable servers: every bad option, URL and schema name is a
//! `PostgresError::Config` before anything connects (and nothing is created in the database);
//! a server that accepts the TCP connection and never answers is `Unavailable` within the
//! connect timeout, for `connect` and for `open_lazy` followed by `Runner::new`; a schema
//! named after a reserved word works.

use std::time::Duration;

use lockgate_batch::store::CallerStore;
use lockgate_batch::store::{PostgresError, PostgresOptions, PostgresStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, NewError, Runner, StoreError};

use crate::{EndedJobs, PATIENCE, pg};

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

/// Every option out of its documented bounds, with its name.
fn bad_options() -> Vec<(&'static str, PostgresOptions)> {
    let o = PostgresStore::options;
    let long = Duration::from_secs(10 * 24 * 3600);
    vec![
        ("pool_size 0", o().pool_size(0)),
        ("pool_size 1025", o().pool_size(1025)),
        ("pool_size 1 << 40", o().pool_size(1 << 40)),
        ("pool_size usize::MAX", o().pool_size(usize::MAX)),
        ("lease_ttl 0", o().lease_ttl(Duration::ZERO)),
        ("lease_ttl 1 ms", o().lease_ttl(Duration::from_millis(1))),
        ("lease_ttl 10 days", o().lease_ttl(long)),
        ("lease_ttl MAX", o().lease_ttl(Duration::MAX)),
        ("poll_interval 0", o().poll_interval(Duration::ZERO)),
        ("poll_interval MAX", o().poll_interval(Duration::MAX)),
        (
            "progress_interval 1 h 1 ms",
            o().progress_interval(Duration::from_millis(3_600_001)),
        ),
        (
            "progress_interval MAX",
            o().progress_interval(Duration::MAX),
        ),
        ("connect_timeout 0", o().connect_timeout(Duration::ZERO)),
        ("connect_timeout MAX", o().connect_timeout(Duration::MAX)),
        ("tcp_keepalive 0", o().tcp_keepalive(Duration::ZERO)),
        (
            "tcp_keepalive 500 ms",
            o().tcp_keepalive(Duration::from_millis(500)),
        ),
        ("tcp_keepalive MAX", o().tcp_keepalive(Duration::MAX)),
        ("pool_wait_timeout 0", o().pool_wait_timeout(Duration::ZERO)),
        (
            "pool_wait_timeout MAX",
            o().pool_wait_timeout(Duration::MAX),
        ),
        ("call_timeout 0", o().call_timeout(Duration::ZERO)),
        ("call_timeout MAX", o().call_timeout(Duration::MAX)),
    ]
}

const BAD_SCHEMAS: &[&str] = &[
    "",
    "Batch",
    "1batch",
    "batch-jobs",
    "bätch",
    "Robert'); DROP TABLE jobs;--",
    "with\"quote",
    "a_name_that_is_longer_than_forty_characters_",
];

const BAD_URLS: &[&str] = &[
    "",
    "   ",
    "not a url =",
    "postgres://",
    "postgresql:///db",
    "postgres://host:notaport/db",
    "postgres://host/db?sslmode=verify-everything",
    "postgres://host/db?connect_timeout=soon",
];

fn is_config(result: Result<PostgresStore, PostgresError>) -> bool {
    matches!(result, Err(PostgresError::Config(_)))
}

/// Whether `schema` exists in the test database.
async fn schema_exists(url: &str, schema: &str) -> bool {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = $1",
            &[&schema],
        )
        .await
        .unwrap();
    row.get::<_, i64>(0) > 0
}

/// Needs no server: each fails before connecting, with the setting named.
#[tokio::test]
async fn every_bad_setting_is_a_config_error() {
    for (name, options) in bad_options() {
        let refused = options.open_lazy("postgres://nobody@127.0.0.1/none");
        match refused {
            Err(PostgresError::Config(why)) => {
                let setting = name.split(' ').next().unwrap();
                assert!(why.contains(setting), "{name}: {why}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    for schema in BAD_SCHEMAS {
        let options = PostgresStore::options().schema(*schema);
        assert!(
            is_config(options.open_lazy("postgres://nobody@127.0.0.1/none")),
            "{schema:?}"
        );
    }
    for url in BAD_URLS {
        assert!(
            is_config(PostgresStore::options().open_lazy(url)),
            "{url:?}"
        );
        assert!(
            is_config(PostgresStore::connect(url).await),
            "connect {url:?}"
        );
    }
}

/// The documented bounds are inclusive: every edge value is accepted.
#[test]
fn settings_at_their_bounds_are_accepted() {
    let o = PostgresStore::options;
    let (ms, s) = (Duration::from_millis, Duration::from_secs);
    let day = s(24 * 3600);
    let edges = [
        o().pool_size(1),
        o().pool_size(1024),
        o().lease_ttl(ms(10)),
        o().lease_ttl(day),
        o().poll_interval(ms(10)),
        o().poll_interval(day),
        o().progress_interval(Duration::ZERO),
        o().progress_interval(s(3600)),
        o().connect_timeout(ms(1)),
        o().connect_timeout(s(3600)),
        o().tcp_keepalive(s(1)),
        o().tcp_keepalive(s(2 * 3600)),
        o().pool_wait_timeout(ms(1)),
        o().call_timeout(ms(1)),
        o().call_timeout(s(3600)),
        o().schema("_"),
        o().schema("a234567890123456789012345678901234567890"),
    ];
    for options in edges {
        let opened = options.open_lazy("postgres://nobody@127.0.0.1/none");
        assert!(opened.is_ok(), "{options:?}: {:?}", opened.err());
    }
}

#[tokio::test]
async fn sslmode_require_without_tls_is_a_config_error() {
    let url = "postgres://nobody@127.0.0.1/none?sslmode=require";
    match PostgresStore::connect(url).await {
        Err(PostgresError::Config(why)) => assert!(why.contains("sslmode=require"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Against the real server: each bad setting is refused and the schema it names is never
/// created.
#[tokio::test]
async fn bad_settings_change_nothing_in_the_database() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    for (name, options) in bad_options() {
        let schema = pg::fresh_schema();
        let refused = options.schema(schema.as_str()).connect(&url).await;
        assert!(is_config(refused), "{name}");
        assert!(
            !schema_exists(&url, &schema).await,
            "{name} created {schema}"
        );
    }
    let refused = PostgresStore::options()
        .schema(pg::fresh_schema())
        .migrate(&format!("{url}?sslmode=require"))
        .await;
    assert!(
        matches!(refused, Err(PostgresError::Config(_))),
        "{refused:?}"
    );
}

/// A listener that accepts TCP connections (the kernel completes the handshake) and never
/// reads or answers: the shape of a hung server or a black-holing proxy.
fn silent_server() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, format!("postgres://nobody@127.0.0.1:{port}/none"))
}

fn fetch() -> impl lockgate_batch::Fetch<u32, u32> {
    |_ctx: FetchContext, n: u32| async move { Ok::<u32, FetchError>(n) }
}

/// On the paused clock the timeout fires as soon as the runtime has nothing else to do, so
/// the test is instant and does not depend on the machine's speed.
#[tokio::test(start_paused = true)]
async fn connect_to_a_silent_server_is_unavailable() {
    if !sockets_allowed() {
        return;
    }
    let (_listener, url) = silent_server();
    let refused = PostgresStore::options()
        .connect_timeout(Duration::from_secs(5))
        .connect(&url)
        .await;
    assert!(
        matches!(refused, Err(PostgresError::Unavailable(_))),
        "{refused:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn open_lazy_then_runner_new_on_a_silent_server_is_unavailable() {
    if !sockets_allowed() {
        return;
    }
    let (_listener, url) = silent_server();
    let store = PostgresStore::options()
        .connect_timeout(Duration::from_secs(5))
        .open_lazy(&url)
        .unwrap();
    let started = Runner::new(Config::default().workers(1), store, fetch()).await;
    assert!(
        matches!(started, Err(NewError::Store(StoreError::Unavailable(_)))),
        "{:?}",
        started.err()
    );
}

/// The same on a real clock, with a short timeout: the store's calls may run on a runtime
/// whose clock is not paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_unavailable_on_a_real_clock() {
    if !sockets_allowed() {
        return;
    }
    let (_listener, url) = silent_server();
    let refused = PostgresStore::options()
        .connect_timeout(Duration::from_millis(200))
        .connect(&url)
        .await;
    assert!(
        matches!(refused, Err(PostgresError::Unavailable(_))),
        "{refused:?}"
    );
    let store = PostgresStore::options()
        .connect_timeout(Duration::from_millis(200))
        .open_lazy(&url)
        .unwrap();
    let live = store.live_jobs().await;
    assert!(
        matches!(live, Err(PostgresError::Unavailable(_))),
        "{live:?}"
    );
}

/// A reserved word as the schema: quoted wherever it enters SQL, so the store migrates and
/// runs a job in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_named_select_runs_a_job() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Left over from an earlier run against the same cluster, if any.
    client
        .batch_execute("DROP SCHEMA IF EXISTS \"select\" CASCADE")
        .await
        .unwrap();
    let store = PostgresStore::options()
        .schema("select")
        .connect(&url)
        .await
        .expect("a reserved word is a valid, quoted schema name");
    let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let config = Config::default()
        .workers(2)
        .hooks(std::sync::Arc::new(EndedJobs(ended_tx)));
    let runner = Runner::new(config, store, fetch()).await.unwrap();
    let caller = Caller::new("select-test");
    let id = runner.submit(&caller, &[1, 2, 3]).await.unwrap();
    let status = tokio::time::timeout(PATIENCE, ended.recv()).await.unwrap();
    assert_eq!(status, Some(lockgate_batch::JobStatus::Done));
    let job = runner.status(&caller, id).await.unwrap();
    let outputs: Vec<u32> = job
        .targets
        .iter()
        .map(|t| t.state.output().unwrap().unwrap())
        .collect();
    assert_eq!(outputs, [1, 2, 3]);
    runner.close().await;
    let rows = client
        .query_one("SELECT COUNT(*) FROM \"select\".targets", &[])
        .await
        .unwrap();
    assert_eq!(
        rows.get::<_, i64>(0),
        3,
        "the tables are in the schema named select"
    );
    client
        .batch_execute("DROP SCHEMA \"select\" CASCADE")
        .await
        .unwrap();
}

/// With its one pooled connection stuck (a cancel waiting on a row lock the test holds), a
/// second call gives up after `pool_wait_timeout` with `Unavailable`, and the stuck call
/// finishes once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_waits_for_a_busy_pool_is_unavailable() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let store = std::sync::Arc::new(pg::open(
        pg::options()
            .schema(schema.as_str())
            .pool_size(1)
            .pool_wait_timeout(Duration::from_millis(100)),
    ));
    let now = lockgate_batch::store::Timestamp::from(std::time::SystemTime::now());
    let ann = lockgate_batch::Caller::new("ann");
    let job = lockgate_batch::store::NewJob::new(ann.clone(), vec!["1".into()], now, 10);
    let id = store.submit(job).await.unwrap().id;
    let (mut client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = client.transaction().await.unwrap();
    let lock = format!("SELECT * FROM \"{schema}\".jobs WHERE id = $1 FOR UPDATE");
    tx.execute(&lock, &[&(id.get() as i64)]).await.unwrap();

    let cancelling = tokio::spawn({
        let (store, ann) = (std::sync::Arc::clone(&store), ann.clone());
        async move { store.cancel(id, &ann, now).await }
    });
    // The cancel blocks on the row lock.
    crate::lock_waiters_become(&url, &schema, 1).await;

    let refused = store.live_jobs().await;
    assert!(
        matches!(refused, Err(PostgresError::Unavailable(_))),
        "{refused:?}"
    );
    tx.rollback().await.unwrap();
    let cancelled = cancelling.await.unwrap();
    assert!(
        matches!(
            cancelled,
            Ok(lockgate_batch::store::CancelOutcome::Cancelled(_))
        ),
        "{cancelled:?}"
    );
    assert_eq!(store.live_jobs().await.unwrap(), 0);
}
