//! `bare`: the least a PostgreSQL queue can do, as a ceiling for the others.
//!
//! A table of items (`id`, `payload`, `state`) with a partial index on the ready ones. Each
//! process runs 4 tasks, each on its own tokio-postgres connection, each looping: one
//! statement claims the lowest ready item (`UPDATE … WHERE id = (SELECT id … WHERE state =
//! 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING …`: one transaction, one
//! round trip, one commit), the work runs, and a second statement marks it done (a second
//! commit). Two durable commits per item, as every other subject makes at least, and none of
//! their rules: no leases or heartbeats, no retries, no fairness, no ordering within a group.
//! A task stops when no ready item is left (items are never added during a run).

use std::time::Duration;

use super::connect;
use crate::child::{self, Control};
use crate::{Case, WORKERS_PER_PROCESS};

/// Unfinished items.
pub const UNFINISHED: &str = "SELECT count(*) FROM items WHERE state <> 'done'";
/// Finished items, and all items.
pub const FINISHED: &str = "SELECT count(*) FILTER (WHERE state = 'done'), count(*) FROM items";

const CLAIM: &str = "UPDATE items SET state = 'running' WHERE id = (
        SELECT id FROM items WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, payload";
const DONE: &str = "UPDATE items SET state = 'done' WHERE id = $1";

/// Creates the table and inserts the items.
pub async fn prepare(url: &str, case: &Case) -> Result<(), String> {
    let client = connect(url).await?;
    client
        .batch_execute(&format!(
            "CREATE TABLE items (
                 id BIGINT PRIMARY KEY,
                 payload TEXT NOT NULL,
                 state TEXT NOT NULL DEFAULT 'ready');
             CREATE INDEX items_ready ON items (id) WHERE state = 'ready';
             INSERT INTO items (id, payload) SELECT g, g::TEXT FROM generate_series(1, {}) g;
             ANALYZE items;",
            case.items
        ))
        .await
        .map_err(|err| err.to_string())
}

/// One process: 4 claim-work-done loops on 4 connections.
pub async fn child(url: &str, work: Duration, control: &mut Control) -> Result<(), String> {
    let mut loops = Vec::new();
    for _ in 0..WORKERS_PER_PROCESS {
        let client = connect(url).await?;
        let claim = client.prepare(CLAIM).await.map_err(|err| err.to_string())?;
        let done = client.prepare(DONE).await.map_err(|err| err.to_string())?;
        loops.push((client, claim, done));
    }
    control.ready_then_go().await?;
    let tasks: Vec<_> = loops
        .into_iter()
        .map(|(client, claim, done)| {
            tokio::spawn(async move {
                let result = async {
                    while let Some(row) = client.query_opt(&claim, &[]).await? {
                        let id: i64 = row.get(0);
                        let _payload: String = row.get(1);
                        child::work(work).await;
                        client.execute(&done, &[&id]).await?;
                    }
                    Ok::<(), tokio_postgres::Error>(())
                }
                .await;
                if let Err(err) = &result {
                    eprintln!("bare loop: {err}"); // now: the parent waits for `stop` otherwise
                }
                result
            })
        })
        .collect();
    control.stop().await?;
    for task in tasks {
        task.await
            .map_err(|err| err.to_string())?
            .map_err(|err| err.to_string())?;
    }
    Ok(())
}
