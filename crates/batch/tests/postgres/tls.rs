//! TLS (feature `postgres-tls`): `sslmode=require` against the gate's cluster, whose
//! certificate a throwaway CA signed; the server's certificate verified against the roots
//! given, and a handshake the client refuses is `PostgresError::Tls`, not a retry.

use std::sync::Arc;

use lockgate_batch::store::{PostgresError, PostgresStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

use crate::{EndedJobs, PATIENCE, durable_url, pg};

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

fn require_tls(url: &str) -> String {
    format!("{url}?sslmode=require")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_runs_a_job_over_verified_tls() {
    if !pg::available() {
        return;
    }
    let Some(ca) = ca() else { return };
    let url = pg::url().unwrap();
    let schema = pg::fresh_schema();
    let store = PostgresStore::options()
        .schema(schema.as_str())
        .tls_roots_pem(ca)
        .connect(&require_tls(&url))
        .await
        .expect("a certificate signed by the given CA is trusted");
    let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let config = Config::default()
        .workers(2)
        .hooks(Arc::new(EndedJobs(ended_tx)));
    let fetch = |_ctx: FetchContext, n: u32| async move { Ok::<u32, FetchError>(n * 10) };
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let caller = Caller::new("tls");
    let id = runner.submit(&caller, &[1, 2, 3, 4]).await.unwrap();
    let status = tokio::time::timeout(PATIENCE, ended.recv()).await.unwrap();
    assert_eq!(status, Some(JobStatus::Done));
    let job = runner.status(&caller, id).await.unwrap();
    let outputs: Vec<u32> = job
        .targets
        .iter()
        .map(|t| t.state.output().unwrap().unwrap())
        .collect();
    assert_eq!(outputs, [10, 20, 30, 40]);

    // The server's view: every connection the store holds open is encrypted.
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE s.ssl)
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
             WHERE a.application_name = $1",
            &[&format!("batch {schema}")],
        )
        .await
        .unwrap();
    let (open, encrypted): (i64, i64) = (row.get(0), row.get(1));
    assert!(open >= 1, "the store keeps pooled connections open");
    assert_eq!(encrypted, open, "every store connection uses TLS");
    runner.close().await;
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused_as_tls() {
    if !pg::available() {
        return;
    }
    if ca().is_none() {
        return;
    }
    let url = require_tls(&pg::url().unwrap());
    let schema = pg::fresh_schema();
    let refused = PostgresStore::options()
        .schema(schema.as_str())
        .tls_roots_pem(UNRELATED_CA)
        .connect(&url)
        .await;
    match refused {
        Err(PostgresError::Tls(why)) => assert!(why.contains("certificate"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_server_without_tls_is_refused_under_sslmode_require() {
    // The durable cluster runs without TLS.
    let Some(url) = durable_url() else { return };
    let refused = PostgresStore::options()
        .schema(pg::fresh_schema())
        .tls_roots_pem(UNRELATED_CA)
        .connect(&require_tls(&url))
        .await;
    assert!(matches!(refused, Err(PostgresError::Tls(_))), "{refused:?}");
}

/// No server needed: the roots are checked before connecting.
#[tokio::test]
async fn roots_that_are_not_certificates_are_a_config_error() {
    for pem in [
        &b""[..],
        b"not pem at all",
        b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
    ] {
        let refused = PostgresStore::options()
            .tls_roots_pem(pem)
            .open_lazy("postgres://nobody@127.0.0.1/none?sslmode=require");
        assert!(
            matches!(refused, Err(PostgresError::Config(_))),
            "{:?}: {refused:?}",
            String::from_utf8_lossy(pem)
        );
    }
}
