//! The PostgreSQL store's schema: created once, migrated idempotently (also by replicas that
//! start together), a newer version refused with a typed error and left untouched, bad
//! settings refused before connecting; a version 1 schema migrated with its counts intact.

use std::time::Duration;

use lockgate_batch::store::{CallerStore, ClaimEnd, Completion, Timestamp, WorkerStore};
use lockgate_batch::store::{NewJob, PostgresError, PostgresStore};
use lockgate_batch::{Caller, Counts, JobStatus, TargetState};

use crate::pg;

/// The schema version this release writes.
const LATEST: i32 = 7;

async fn version(url: &str, schema: &str) -> i32 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let sql = format!("SELECT version FROM {schema}.schema_version");
    client.query_one(&sql, &[]).await.unwrap().get(0)
}

async fn set_version(url: &str, schema: &str, version: i32) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let sql = format!("UPDATE {schema}.schema_version SET version = $1");
    client.execute(&sql, &[&version]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let options = PostgresStore::options().schema(schema.as_str());
    let starts = (0..4).map(|_| {
        let (options, url) = (options.clone(), url.clone());
        tokio::spawn(async move { options.connect(&url).await.map(|_| ()) })
    });
    for start in starts {
        start.await.unwrap().expect("every replica opens the store");
    }
    assert_eq!(version(&url, &schema).await, LATEST);
    // Opening again changes nothing.
    options.connect(&url).await.unwrap();
    assert_eq!(version(&url, &schema).await, LATEST);
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_alone() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let options = PostgresStore::options().schema(schema.as_str());
    options.connect(&url).await.unwrap();
    let newer = LATEST + 1;
    set_version(&url, &schema, newer).await;
    let refused = options.connect(&url).await.unwrap_err();
    assert!(
        matches!(
            refused,
            PostgresError::NewerSchema {
                found,
                supported: LATEST
            } if found == newer
        ),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("newer"), "{refused}");
    assert_eq!(version(&url, &schema).await, newer, "left as found");
}

#[tokio::test]
async fn bad_settings_are_refused_before_connecting() {
    // No server is needed: these fail before any connection.
    let bad_schema = PostgresStore::options().schema("Robert'); DROP TABLE jobs;--");
    assert!(matches!(
        bad_schema.open_lazy("postgres://localhost/db"),
        Err(PostgresError::Config(_))
    ));
    let zero_lease = PostgresStore::options().lease_ttl(Duration::ZERO);
    assert!(matches!(
        zero_lease.open_lazy("postgres://localhost/db"),
        Err(PostgresError::Config(_))
    ));
    assert!(matches!(
        PostgresStore::options().open_lazy("not a url ="),
        Err(PostgresError::Config(_))
    ));
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    // A port nothing listens on (just bound and released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://nobody@127.0.0.1:{port}/none");
    let err = PostgresStore::connect(&url).await.unwrap_err();
    assert!(matches!(err, PostgresError::Unavailable(_)), "{err:?}");
}

/// A schema written by version 1 (the changes of versions 2 to 7 undone by hand) opens migrated,
/// with its jobs' counts right, its pending target claimable in the new rotation, and keys
/// working on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_schema_migrates_with_its_counts() {
    if !pg::available() {
        return;
    }
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let options = PostgresStore::options().schema(schema.as_str());
    let ann = Caller::new("ann");
    let now = Timestamp::from(std::time::SystemTime::now());
    let id = {
        let store = options.connect(&url).await.unwrap();
        let targets = vec!["1".into(), "2".into(), "3".into()];
        let id = store
            .submit(NewJob::new(ann.clone(), targets, now, 10))
            .await
            .unwrap()
            .id;
        let results = [
            TargetState::Done {
                output_json: "1".into(),
            },
            TargetState::Failed {
                error: "no".into(),
                hint: None,
            },
        ];
        for result in results {
            let claim = store.claim(now).await.unwrap().unwrap();
            store
                .finish(&claim, ClaimEnd::Stored(result), now, false)
                .await
                .unwrap();
        }
        id
    };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path TO \"{schema}\";
             DROP INDEX jobs_caller_status;
             DROP INDEX jobs_status;
             DROP INDEX targets_failed;
             ALTER TABLE jobs DROP COLUMN settled;
             ALTER TABLE targets DROP COLUMN stored_by;
             DROP INDEX jobs_claimable;
             DROP INDEX jobs_evictable;
             DROP INDEX jobs_cancelled;
             CREATE INDEX jobs_leased ON jobs (lease_until) WHERE in_flight IS NOT NULL;
             CREATE INDEX jobs_evictable ON jobs (touch_seq)
                 WHERE status NOT IN ('queued', 'running') AND in_flight IS NULL;
             ALTER TABLE jobs RESET (fillfactor);
             ALTER TABLE jobs DROP COLUMN served;
             DROP SEQUENCE serves;
             CREATE INDEX jobs_claimable ON jobs (id)
                 WHERE status IN ('queued', 'running') AND in_flight IS NULL AND next < total;
             DROP INDEX jobs_caller_key;
             DROP INDEX jobs_caller;
             ALTER TABLE jobs DROP COLUMN key;
             UPDATE schema_version SET version = 1;"
        ))
        .await
        .unwrap();
    let store = options.connect(&url).await.unwrap();
    assert_eq!(version(&url, &schema).await, LATEST);
    let counts = Counts::new(1, 1, 1);
    let summary = store.summary(id, &ann).await.unwrap().unwrap();
    assert_eq!(
        (summary.status, summary.counts),
        (JobStatus::Running, counts)
    );
    let listed: Vec<_> = store.jobs(&ann).await.unwrap();
    assert_eq!(listed, [summary]);
    let claim = store.claim(now).await.unwrap().expect("the pending target");
    assert_eq!((claim.job, claim.index), (id, 2));
    let released = store.finish(&claim, ClaimEnd::Released, now, false).await;
    assert_eq!(released.unwrap().completion, Completion::Pending);
    let keyed =
        |target: &str| NewJob::new(Caller::new("bob"), vec![target.into()], now, 10).with_key("k");
    let first = store.submit(keyed("4")).await.unwrap();
    let again = store.submit(keyed("5")).await.unwrap();
    assert_eq!(
        (again.id, again.existing, first.existing),
        (first.id, true, false)
    );
}
