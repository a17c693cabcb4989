//! Targets per second with an instant fetch on a shared PostgreSQL store, for 1, 2 and 4
//! runners (each with its own pool, as replicas), against the SQLite store and against a bare
//! `FOR UPDATE SKIP LOCKED` claim-and-update loop on 4 connections (the ceiling of the
//! approach: the same two round trips per target, none of the rules).
//!
//! Needs a server: `BATCH_TEST_POSTGRES_URL=postgres://… cargo bench -p lockgate-batch --features postgres
//! --bench postgres -- --warm-up-time 1 --measurement-time 3`. Every peer stores the same
//! 1,000 targets over 10 jobs per iteration, on a fresh schema; compare them by ratio.
//!
//! Subjects named `batch_…` are ours; `cargo xtask bench` takes the first of them in
//! alphabetical order (`batch_postgres_1_runners`) as the reference of its ratios.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion, Throughput, criterion_main};
use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{PostgresOptions, PostgresStore, SqliteStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

const JOBS: usize = 10;
const TARGETS_PER_JOB: u32 = 100;
const URL_VAR: &str = "BATCH_TEST_POSTGRES_URL";

/// Counts ended jobs over every runner and wakes the bench when all have.
struct Ended {
    jobs: AtomicUsize,
    expected: usize,
    all: Notify,
}

impl Hooks for Ended {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let _status = event.status;
        if self.jobs.fetch_add(1, Ordering::AcqRel) + 1 == self.expected {
            self.all.notify_waiters();
        }
    }
}

fn fresh_schema() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "bench_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn options(schema: &str) -> PostgresOptions {
    PostgresStore::options().schema(schema).pool_size(4)
}

/// One runner per store (2 workers each), the jobs submitted round-robin over them, until
/// every job ended.
async fn run_runners<S: lockgate_batch::store::Store>(
    stores: Vec<S>,
    callers: &[Caller],
    targets: &[u32],
) {
    let ended = Arc::new(Ended {
        jobs: AtomicUsize::new(0),
        expected: callers.len(),
        all: Notify::new(),
    });
    let mut all = pin!(ended.all.notified());
    all.as_mut().enable();
    let mut runners = Vec::new();
    for store in stores {
        let config = Config::default()
            .workers(2)
            .max_live_jobs(callers.len())
            .hooks(ended.clone());
        let fetch =
            |_ctx: FetchContext, n: u32| async move { Ok::<u32, FetchError>(n.wrapping_mul(2)) };
        runners.push(Runner::new(config, store, fetch).await.unwrap());
    }
    for (i, caller) in callers.iter().enumerate() {
        runners[i % runners.len()]
            .submit(caller, targets)
            .await
            .unwrap();
    }
    if ended.jobs.load(Ordering::Acquire) < ended.expected {
        all.await;
    }
    for runner in &runners {
        runner.close().await;
    }
}

/// The bare loop: a queue table of `total` rows and `connections` clients that each claim the
/// next row with `FOR UPDATE SKIP LOCKED` and then mark it done, until none is left.
async fn bare_skip_locked(url: &str, schema: &str, connections: usize) {
    let mut clients = Vec::new();
    for _ in 0..connections {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .await
            .unwrap();
        clients.push(client);
    }
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            tokio::spawn(async move {
                let claim = client
                    .prepare(
                        "UPDATE queue SET state = 'running' WHERE id = (
                             SELECT id FROM queue WHERE state = 'pending'
                             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                         RETURNING id, payload",
                    )
                    .await
                    .unwrap();
                let done = client
                    .prepare("UPDATE queue SET state = 'done', output = $2 WHERE id = $1")
                    .await
                    .unwrap();
                while let Some(row) = client.query_opt(&claim, &[]).await.unwrap() {
                    let id: i64 = row.get(0);
                    let payload: String = row.get(1);
                    client.execute(&done, &[&id, &payload]).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

async fn make_queue(url: &str, schema: &str, total: u32) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.queue (id BIGSERIAL PRIMARY KEY, payload TEXT NOT NULL,
                 state TEXT NOT NULL DEFAULT 'pending', output TEXT);
             INSERT INTO {schema}.queue (payload) SELECT g::TEXT FROM generate_series(1, {total}) g;"
        ))
        .await
        .unwrap();
}

fn bench(c: &mut Criterion) {
    let Some(url) = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty()) else {
        println!("SKIPPED: postgres bench: set {URL_VAR} to a PostgreSQL server's URL");
        return;
    };
    let rt = Runtime::new().unwrap();
    let callers: Vec<Caller> = (0..JOBS).map(|i| Caller::new(format!("p{i}"))).collect();
    let targets: Vec<u32> = (0..TARGETS_PER_JOB).collect();
    let total = JOBS as u32 * TARGETS_PER_JOB;
    let dir = std::env::temp_dir().join(format!("batch-pg-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = AtomicU32::new(0);

    let mut group = c.benchmark_group("postgres/1k_targets_10_jobs");
    group.sample_size(10);
    group.throughput(Throughput::Elements(u64::from(total)));
    group.bench_function("batch_sqlite_1_runner", |b| {
        b.iter_batched(
            || {
                let n = files.fetch_add(1, Ordering::Relaxed);
                SqliteStore::open(dir.join(format!("{n}.db"))).unwrap()
            },
            |store| rt.block_on(run_runners(vec![store], &callers, &targets)),
            BatchSize::PerIteration,
        );
    });
    for runners in [1, 2, 4] {
        group.bench_function(format!("batch_postgres_{runners}_runners"), |b| {
            b.iter_batched(
                || {
                    let schema = fresh_schema();
                    rt.block_on(options(&schema).migrate(&url)).unwrap();
                    (0..runners)
                        .map(|_| options(&schema).open_lazy(&url).unwrap())
                        .collect::<Vec<_>>()
                },
                |stores| rt.block_on(run_runners(stores, &callers, &targets)),
                BatchSize::PerIteration,
            );
        });
    }
    group.bench_function("bare_skip_locked_4_connections", |b| {
        b.iter_batched(
            || {
                let schema = fresh_schema();
                rt.block_on(make_queue(&url, &schema, total));
                schema
            },
            |schema| rt.block_on(bare_skip_locked(&url, &schema, 4)),
            BatchSize::PerIteration,
        );
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
