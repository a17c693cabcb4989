//! `river`: `riverqueue`, River's Rust client, configured as its README shows.
//!
//! The parent applies River's migrations (`riverqueue::migrate::PostgresMigrator::migrate_up`,
//! into the `public` schema of the run's fresh database) and inserts the items with an
//! insert-only client's `insert_many`, in chunks of 1,000. Each child builds a `Client` on an
//! sqlx `PgPool` with default options (at most 10 connections) with one worker function and
//! the queue `default` at `QueueConfig::new(4)`: at most 4 items in flight per process; it
//! starts the client (`Client::start`) at `go` and stops it gracefully (`RunHandle::stop`) at
//! `stop`. An item is finished when its `river_job` row is `completed`.
//!
//! One setting differs from River's defaults, in River's favour: the fetch cooldown, 100 ms
//! by default, is set to its minimum (1 ms, `FETCH_COOLDOWN_MIN`). River documents it as the
//! limit on throughput: a producer fetches at most once per cooldown, at most as many jobs as
//! it has free workers, so with 4 workers the default caps a process at 40 items per second
//! whatever the work. The subject `river-default` (not in the default set; `--only
//! river-default`) keeps the default, to show that cap.

use std::time::Duration;

use riverqueue::migrate::PostgresMigrator;
use riverqueue::sqlx::PgPool;
use riverqueue::{
    BoxError, Client, FETCH_COOLDOWN_MIN, Job, JobArgs, QueueConfig, WorkContext, WorkOutcome,
    Workers,
};
use serde::{Deserialize, Serialize};

use crate::child::{self, Control};
use crate::{Case, WORKERS_PER_PROCESS};

/// Unfinished items.
pub const UNFINISHED: &str = "SELECT count(*) FROM river_job WHERE state <> 'completed'";
/// Finished items, and all items.
pub const FINISHED: &str =
    "SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM river_job";

/// Items inserted per `insert_many`.
const INSERT_CHUNK: usize = 1_000;

/// One item's arguments.
#[derive(Debug, Clone, Serialize, Deserialize, JobArgs)]
#[river(kind = "peers_item")]
struct Item {
    /// The item's number.
    n: u32,
}

/// Runs River's migrations and inserts the items.
pub async fn prepare(url: &str, case: &Case) -> Result<(), String> {
    let pool = PgPool::connect(url).await.map_err(|err| err.to_string())?;
    PostgresMigrator::new(pool.clone())
        .migrate_up()
        .await
        .map_err(|err| err.to_string())?;
    let client = Client::builder(pool.clone())
        .build()
        .map_err(|err| err.to_string())?;
    let items: Vec<Item> = (1..=case.items as u32).map(|n| Item { n }).collect();
    for chunk in items.chunks(INSERT_CHUNK) {
        client
            .insert_many(chunk.to_vec())
            .await
            .map_err(|err| err.to_string())?;
    }
    drop(client);
    pool.close().await;
    Ok(())
}

/// One process: a River client working the `default` queue with 4 workers; with
/// `default_cooldown`, River's default fetch cooldown instead of its minimum.
pub async fn child(
    url: &str,
    work: Duration,
    index: usize,
    default_cooldown: bool,
    control: &mut Control,
) -> Result<(), String> {
    let pool = PgPool::connect(url).await.map_err(|err| err.to_string())?;
    let mut workers = Workers::new();
    workers
        .add_fn(move |_ctx: WorkContext, _job: Job<Item>| async move {
            child::work(work).await;
            Ok::<WorkOutcome, BoxError>(WorkOutcome::Complete)
        })
        .map_err(|err| err.to_string())?;
    let mut builder = Client::builder(pool.clone())
        .id(format!("peers-{}-{index}", std::process::id()))
        .workers(workers)
        .queue("default", QueueConfig::new(WORKERS_PER_PROCESS));
    if !default_cooldown {
        builder = builder.fetch_cooldown(FETCH_COOLDOWN_MIN);
    }
    let client = builder.build().map_err(|err| err.to_string())?;
    control.ready_then_go().await?;
    let mut run = client.start().map_err(|err| err.to_string())?;
    control.stop().await?;
    run.stop().await.map_err(|err| err.to_string())?;
    drop(client);
    pool.close().await;
    Ok(())
}
