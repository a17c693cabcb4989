//! `apalis`: `apalis-postgres` 1.x with `apalis` 1.x workers, configured as its README shows.
//!
//! The parent runs `PostgresStorage::setup` (apalis's migrations, into the `apalis` schema of
//! the run's fresh database) and pushes the items as `u32` tasks with `push_bulk`. Each child
//! builds one `PostgresStorage::<u32>` on an sqlx `PgPool` with default options (at most 10
//! connections, opened on demand) and one worker, `WorkerBuilder::new(..).backend(..)
//! .concurrency(4)`: at most 4 items in flight per process. Everything else is apalis's
//! default: it fetches up to `batch_size` = 10 tasks per query (`FOR UPDATE SKIP LOCKED`,
//! marked `Queued` and locked to the worker), and writes the `Running` marks and the results
//! in batches; heartbeats every 30 s. No `with_pubsub` (`LISTEN`): every item is in the table
//! before the workers start, so notifications would add nothing. An item is finished when its
//! row's status is `Done`.

use std::sync::OnceLock;
use std::time::Duration;

use apalis::prelude::{BoxDynError, TaskSink, WorkerBuilder, WorkerBuilderExt};
use apalis_postgres::{PgPool, PostgresStorage};

use crate::child::{self, Control};
use crate::{Case, WORKERS_PER_PROCESS};

/// Unfinished items.
pub const UNFINISHED: &str = "SELECT count(*) FROM apalis.jobs WHERE status <> 'Done'";
/// Finished items, and all items.
pub const FINISHED: &str =
    "SELECT count(*) FILTER (WHERE status = 'Done'), count(*) FROM apalis.jobs";

/// The work per item in this process (the handler is a plain `async fn`).
static WORK: OnceLock<Duration> = OnceLock::new();

async fn handle(_item: u32) -> Result<(), BoxDynError> {
    child::work(WORK.get().copied().unwrap_or_default()).await;
    Ok(())
}

/// Runs apalis's migrations and pushes the items.
pub async fn prepare(url: &str, case: &Case) -> Result<(), String> {
    let pool = PgPool::connect(url).await.map_err(|err| err.to_string())?;
    PostgresStorage::setup(&pool)
        .await
        .map_err(|err| err.to_string())?;
    let mut storage = PostgresStorage::<u32>::new(&pool);
    let items: Vec<u32> = (1..=case.items as u32).collect();
    storage
        .push_bulk(items)
        .await
        .map_err(|err| err.to_string())?;
    pool.close().await;
    Ok(())
}

/// One process: one apalis worker at concurrency 4.
pub async fn child(
    url: &str,
    work: Duration,
    index: usize,
    control: &mut Control,
) -> Result<(), String> {
    WORK.set(work).map_err(|_| "work set twice")?;
    let pool = PgPool::connect(url).await.map_err(|err| err.to_string())?;
    let storage = PostgresStorage::<u32>::new(&pool);
    let worker = WorkerBuilder::new(format!("peers-{}-{index}", std::process::id()))
        .backend(storage)
        .concurrency(WORKERS_PER_PROCESS)
        .build(handle);
    control.ready_then_go().await?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
        Ok::<(), std::io::Error>(())
    }));
    control.stop().await?;
    let _ = stop.send(());
    running
        .await
        .map_err(|err| err.to_string())?
        .map_err(|err| err.to_string())?;
    pool.close().await;
    Ok(())
}
