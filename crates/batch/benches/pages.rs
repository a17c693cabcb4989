//! What one page costs the store (`crate::page`): a page of 50 jobs over a store of 100 jobs
//! against one of 100,000, and a page of 50 targets of a job of 100 targets against one of
//! 100,000, on SQLite and PostgreSQL. A keyset page walks an index from its key, so the big
//! store's page should cost what the small one's does: the goal is a ratio within 2×.
//!
//! Run: `cargo bench -p lockgate-batch --features sqlite --bench pages` (SQLite only), with
//! `BATCH_TEST_POSTGRES_URL=postgres://…` and `--features postgres` for PostgreSQL too
//! (without it the PostgreSQL groups print `SKIPPED: …`).
//!
//! Each group is one page kind on one store; its subjects are the small store
//! (`batch_100_…`, the first in alphabetical order, so the reference of `cargo xtask bench`'s
//! ratios) and the big one (`batch_big_100k_…`): each ratio reads "big ÷ small". Each
//! iteration is one store call, as the dashboard's server makes it (on PostgreSQL its round
//! trip included): the call's time in the server, not in a browser.
//!
//! - `jobs_of_a_caller`: a caller's newest jobs. Every other job is this caller's
//!   (cancelled: a caller has one live job at a time), the rest are other callers' (queued).
//! - `jobs_cancelled_of_everyone`: everyone's jobs in one status, from the top.
//! - `targets_all`: a job's targets from the middle of the job, every state.
//! - `targets_failed`: a job's failed targets from the start. The small job's fail one in
//!   two, the big job's one in 1,900: a page of 50 failed targets spread over the whole job,
//!   which the index of failed targets reads directly and a scan would walk in full.
//!
//! The stores are seeded in bulk by SQL, with the rows `submit`, `cancel` and `finish`
//! leave (`jobs_sql`, `targets_sql`), in about a second: through the API, 100,000 jobs (each
//! of the caller's cancelled before her next) and 100,000 stored targets took SQLite minutes,
//! and PostgreSQL's `submit` counts the live jobs under its advisory lock each time.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_main};
use lockgate_batch::page::{JobsQuery, Scope, TargetKind, TargetsQuery};
use lockgate_batch::store::{SqliteStore, Store};
use lockgate_batch::{Caller, JobId};
use tokio::runtime::Runtime;

const SMALL: usize = 100;
const BIG: usize = 100_000;
const PAGE: usize = 50;
/// The big job fails one target in this many.
const BIG_FAILS_ONE_IN: usize = 1_900;

/// The seeded rows' times, in microseconds since the epoch: any fixed time.
const NOW: i64 = 1_700_000_000_000_000;

/// A series of integers `from..=to` named `g(i)`, as each database spells it in a `FROM`.
#[derive(Clone, Copy)]
enum Dialect {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

impl Dialect {
    fn series(self, from: usize, to: usize) -> String {
        match self {
            Self::Sqlite => format!(
                "(WITH RECURSIVE g(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM g \
                 WHERE i < {to}) SELECT i FROM g) AS g"
            ),
            Self::Postgres => format!("generate_series({from}, {to}) AS g(i)"),
        }
    }
}

/// `n` jobs of one target, as `submit` and `cancel` leave them: ids 1 to `n`, the even ones
/// `ann`'s and cancelled (a caller has one live job at a time), the odd ones of callers of
/// their own, queued.
fn jobs_sql(dialect: Dialect, n: usize) -> String {
    let now = NOW;
    format!(
        "INSERT INTO jobs (id, caller, status, created, updated, touched, touch_seq, total, bytes)
         SELECT i, CASE WHEN i % 2 = 0 THEN 'ann' ELSE 'other' || i END,
                CASE WHEN i % 2 = 0 THEN 'cancelled' ELSE 'queued' END,
                {now}, {now}, {now}, i, 1, 3
         FROM {};
         INSERT INTO targets (job, idx, target) SELECT id, 0, '\"x\"' FROM jobs;",
        dialect.series(1, n)
    )
}

/// Job 1 of `SMALL` targets (`cy`'s), one in two failed, and job 2 of `BIG` (`dee`'s), one in
/// [`BIG_FAILS_ONE_IN`] failed, every target stored, as `finish` leaves them.
fn targets_sql(dialect: Dialect) -> String {
    let now = NOW;
    let mut sql = String::new();
    for (id, caller, n, one_in) in [(1, "cy", SMALL, 2), (2, "dee", BIG, BIG_FAILS_ONE_IN)] {
        let failed = n.div_ceil(one_in);
        let done = n - failed;
        let fails = format!("i % {one_in} = 0");
        sql += &format!(
            "INSERT INTO jobs (id, caller, status, created, updated, touched, touch_seq, total,
                               next, done, failed, bytes)
             VALUES ({id}, '{caller}', 'partial', {now}, {now}, {now}, {id}, {n},
                     {n}, {done}, {failed}, 0);
             INSERT INTO targets (job, idx, target, state, output, error)
             SELECT {id}, i, '\"x\"', CASE WHEN {fails} THEN 'failed' ELSE 'done' END,
                    CASE WHEN {fails} THEN NULL ELSE '1' END,
                    CASE WHEN {fails} THEN 'no' ELSE NULL END
             FROM {};",
            dialect.series(0, n - 1)
        );
    }
    sql
}

/// One store's four groups, named `pages/<store>_<kind>`.
fn groups<S: Store>(
    c: &mut Criterion,
    rt: &Runtime,
    name: &str,
    jobs: [(&str, Arc<S>); 2],
    targets: (&S, JobId, JobId),
) {
    let ann = Scope::Caller(Caller::new("ann"));
    let mut group = c.benchmark_group(format!("pages/{name}_jobs_of_a_caller"));
    for (subject, store) in &jobs {
        let query = JobsQuery::new().limit(PAGE);
        group.bench_function(format!("batch_{subject}_jobs"), |b| {
            b.iter(|| {
                let page = rt.block_on(store.jobs_page(&ann, &query)).unwrap();
                assert_eq!(page.jobs.len(), PAGE);
                black_box(page)
            });
        });
    }
    group.finish();
    let mut group = c.benchmark_group(format!("pages/{name}_jobs_cancelled_of_everyone"));
    for (subject, store) in &jobs {
        let query = JobsQuery::new()
            .status(lockgate_batch::JobStatus::Cancelled)
            .limit(PAGE);
        group.bench_function(format!("batch_{subject}_jobs"), |b| {
            b.iter(|| {
                let page = rt
                    .block_on(store.jobs_page(&Scope::Everyone, &query))
                    .unwrap();
                assert_eq!(page.jobs.len(), PAGE);
                black_box(page)
            });
        });
    }
    group.finish();
    let (store, small, big) = targets;
    let subjects = [("100", small, SMALL), ("big_100k", big, BIG)];
    let mut group = c.benchmark_group(format!("pages/{name}_targets_all"));
    for (subject, id, n) in subjects {
        // The middle of the job: a key deep into it costs what the first page does.
        let query = TargetsQuery::new().after((n - PAGE) / 2).limit(PAGE);
        group.bench_function(format!("batch_{subject}_targets"), |b| {
            b.iter(|| {
                let page = rt
                    .block_on(store.targets_page(&Scope::Everyone, id, &query))
                    .unwrap()
                    .unwrap();
                assert_eq!(page.targets.len(), PAGE);
                black_box(page)
            });
        });
    }
    group.finish();
    let mut group = c.benchmark_group(format!("pages/{name}_targets_failed"));
    for (subject, id, _) in subjects {
        let query = TargetsQuery::new().state(TargetKind::Failed).limit(PAGE);
        group.bench_function(format!("batch_{subject}_targets"), |b| {
            b.iter(|| {
                let page = rt
                    .block_on(store.targets_page(&Scope::Everyone, id, &query))
                    .unwrap()
                    .unwrap();
                assert_eq!(page.targets.len(), PAGE);
                black_box(page)
            });
        });
    }
    group.finish();
}

fn sqlite(c: &mut Criterion, rt: &Runtime) {
    let dir = std::env::temp_dir().join(format!("batch-pages-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let started = std::time::Instant::now();
    // Each file is created (migrated) by the store, seeded while no store has it open, and
    // opened again, so that the store reads its counters back from the seeded rows.
    let open = |file: &str, seed: String| {
        let path = dir.join(file);
        rt.block_on(SqliteStore::open(&path).unwrap().close());
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(&seed).unwrap();
        tx.commit().unwrap();
        drop(conn);
        Arc::new(SqliteStore::open(&path).unwrap())
    };
    let small = open("small.db", jobs_sql(Dialect::Sqlite, SMALL));
    let big = open("big.db", jobs_sql(Dialect::Sqlite, BIG));
    let targets = open("targets.db", targets_sql(Dialect::Sqlite));
    println!("sqlite: seeded in {:.1?}", started.elapsed());
    groups(
        c,
        rt,
        "sqlite",
        [("100", small), ("big_100k", big)],
        (&*targets, JobId::new(1), JobId::new(2)),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
fn postgres(c: &mut Criterion, rt: &Runtime) {
    use lockgate_batch::store::PostgresStore;
    use std::sync::atomic::{AtomicU32, Ordering};
    const URL_VAR: &str = "BATCH_TEST_POSTGRES_URL";
    let Some(url) = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty()) else {
        println!("SKIPPED: pages bench, PostgreSQL: set {URL_VAR} to a PostgreSQL server's URL");
        return;
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let started = std::time::Instant::now();
    // Each schema is created (migrated) by the store, then seeded and analyzed (as
    // autovacuum would soon after such an insert) before the store opens.
    let open = |seed: String| {
        let schema = format!(
            "bench_pages_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let options = PostgresStore::options().schema(schema.as_str());
        rt.block_on(async {
            options.migrate(&url).await.unwrap();
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!(
                    "BEGIN; SET LOCAL search_path TO \"{schema}\"; {seed}
                     ANALYZE jobs; ANALYZE targets; COMMIT;"
                ))
                .await
                .unwrap();
        });
        let _guard = rt.enter();
        Arc::new(options.open_lazy(&url).unwrap())
    };
    let small = open(jobs_sql(Dialect::Postgres, SMALL));
    let big = open(jobs_sql(Dialect::Postgres, BIG));
    let targets = open(targets_sql(Dialect::Postgres));
    println!("postgres: seeded in {:.1?}", started.elapsed());
    groups(
        c,
        rt,
        "postgres",
        [("100", small), ("big_100k", big)],
        (&*targets, JobId::new(1), JobId::new(2)),
    );
}

#[cfg(not(feature = "postgres"))]
fn postgres(_c: &mut Criterion, _rt: &Runtime) {
    println!("SKIPPED: pages bench, PostgreSQL: built without the `postgres` feature");
}

fn bench(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    sqlite(c, &rt);
    postgres(c, &rt);
}

mod benches {
    //! criterion's macros define undocumented items; they live here.
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(benches::benches);
