//! The PostgreSQL store's schema: created once, migrated idempotently (also by replicas that
//! start together), a newer version refused with a typed error and left untouched, bad
//! settings refused before connecting.

mod pg;

use std::time::Duration;

use batch::store::{PostgresError, PostgresStore};

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
    assert_eq!(version(&url, &schema).await, 1);
    // Opening again changes nothing.
    options.connect(&url).await.unwrap();
    assert_eq!(version(&url, &schema).await, 1);
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
    set_version(&url, &schema, 7).await;
    let refused = options.connect(&url).await.unwrap_err();
    assert!(
        matches!(
            refused,
            PostgresError::NewerSchema {
                found: 7,
                supported: 1
            }
        ),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("newer"), "{refused}");
    assert_eq!(version(&url, &schema).await, 7, "left as found");
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
