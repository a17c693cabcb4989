//! The application's own connection settings: a store from a `tokio_postgres::Config`, and
//! one over a `deadpool_postgres::Pool` the application built (whose connections know nothing
//! of the store's schema), each running a job through a runner.

use std::sync::Arc;

use lockgate_batch::store::{CallerStore, PostgresStore, Store, StoreEvent};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

use crate::{EndedJobs, PATIENCE, pg};

/// Runs one job of three targets through a runner over `store`; returns the outputs.
async fn run_a_job(store: impl Store) -> Vec<u32> {
    let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let config = Config::default()
        .workers(2)
        .hooks(Arc::new(EndedJobs(ended_tx)));
    let fetch = |_ctx: FetchContext, n: u32| async move { Ok::<u32, FetchError>(n + 100) };
    let runner = Runner::new(config, store, fetch).await.unwrap();
    let caller = Caller::new("own-connections");
    let id = runner.submit(&caller, &[1, 2, 3]).await.unwrap();
    let status = tokio::time::timeout(PATIENCE, ended.recv()).await.unwrap();
    assert_eq!(status, Some(JobStatus::Done));
    let job = runner.status(&caller, id).await.unwrap();
    runner.close().await;
    job.targets
        .iter()
        .map(|t| t.state.output().unwrap().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_from_a_config_runs_a_job() {
    if !pg::available() {
        return;
    }
    let mut config: tokio_postgres::Config = pg::url().unwrap().parse().unwrap();
    config.application_name("the application's name");
    let store = PostgresStore::options()
        .schema(pg::fresh_schema())
        .connect_config(config)
        .await
        .unwrap();
    assert_eq!(run_a_job(store).await, [101, 102, 103]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_over_the_applications_pool_runs_a_job_in_its_schema() {
    if !pg::available() {
        return;
    }
    let config: tokio_postgres::Config = pg::url().unwrap().parse().unwrap();
    let manager = deadpool_postgres::Manager::new(config.clone(), tokio_postgres::NoTls);
    let pool = deadpool_postgres::Pool::builder(manager)
        .max_size(4)
        .build()
        .unwrap();
    let schema = pg::fresh_schema();
    let store = PostgresStore::options()
        .schema(schema.as_str())
        .connect_pool(pool.clone(), config)
        .await
        .unwrap();
    // Another replica hears the job's notes, which the store sends on the application's
    // pool too (each in a transaction that sets the schema first).
    let other = pg::open(pg::options().schema(schema.as_str()));
    let mut events = other.events().expect("a shared store has events");
    let first = tokio::time::timeout(PATIENCE, events.recv()).await;
    assert_eq!(first.unwrap().unwrap(), StoreEvent::Missed, "listening");
    assert_eq!(run_a_job(store).await, [101, 102, 103]);
    let ended = async {
        loop {
            if let StoreEvent::Progress { progress, .. } = events.recv().await.unwrap()
                && progress.status == JobStatus::Done
            {
                return progress.counts.done;
            }
        }
    };
    let done = tokio::time::timeout(PATIENCE, ended).await;
    assert_eq!(
        done.unwrap(),
        3,
        "the end's note came from the application's pool"
    );

    let client = pool.get().await.unwrap();
    let sql = format!("SELECT COUNT(*) FROM \"{schema}\".targets WHERE state = 'done'");
    let done: i64 = client.query_one(&sql, &[]).await.unwrap().get(0);
    assert_eq!(done, 3, "the job lives in the store's schema");
    // The store set its schema per transaction: the application's connections keep theirs.
    let path: String = client
        .query_one("SHOW search_path", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!path.contains(&schema), "{path}");
}

/// The application's pool may have no timeouts of its own: a call that cannot get one of its
/// connections gives up after the store's wait + create + recycle timeouts, `Unavailable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_an_exhausted_application_pool_is_unavailable() {
    if !pg::available() {
        return;
    }
    let config: tokio_postgres::Config = pg::url().unwrap().parse().unwrap();
    let manager = deadpool_postgres::Manager::new(config.clone(), tokio_postgres::NoTls);
    let pool = deadpool_postgres::Pool::builder(manager)
        .max_size(1)
        .build()
        .unwrap();
    let short = std::time::Duration::from_millis(50);
    let store = PostgresStore::options()
        .schema(pg::fresh_schema())
        .pool_wait_timeout(short)
        .connect_timeout(short)
        .connect_pool(pool.clone(), config)
        .await
        .unwrap();
    let held = pool.get().await.unwrap();
    let refused = store.live_jobs().await;
    assert!(
        matches!(
            refused,
            Err(lockgate_batch::store::PostgresError::Unavailable(_))
        ),
        "{refused:?}"
    );
    drop(held);
    assert_eq!(store.live_jobs().await.unwrap(), 0);
}
