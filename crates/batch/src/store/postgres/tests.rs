//! Unit tests of the PostgreSQL store's pieces that need no server.

use super::error::transient;

#[test]
fn connection_losses_and_races_are_transient() {
    // connection failure, admin shutdown (pg_terminate_backend), crash shutdown,
    // serialization failure, deadlock, too many connections
    for code in ["08006", "57P01", "57P02", "40001", "40P01", "53300"] {
        assert!(transient(code), "{code}");
    }
}

#[test]
fn refusals_are_lasting() {
    // unique violation, undefined table, insufficient privilege, disk full
    for code in ["23505", "42P01", "42501", "53100"] {
        assert!(!transient(code), "{code}");
    }
}

mod notes {
    use crate::hooks::TargetOutcome;
    use crate::job::{Counts, JobId, JobStatus};
    use crate::store::postgres::queries::Note;
    use crate::summary::Progress;

    fn note(wake: bool, last: Option<(usize, TargetOutcome)>) -> Note {
        let counts = Counts {
            pending: 3,
            done: 1,
            failed: 0,
        };
        Note {
            wake,
            job: JobId::new(17),
            progress: Progress::new(JobStatus::Running, counts, last),
        }
    }

    #[test]
    fn payloads_are_compact_and_read_back() {
        let stored = note(true, Some((0, TargetOutcome::Done)));
        assert_eq!(stored.payload(), "w 17 running 3 1 0 0 d");
        assert_eq!(Note::parse(&stored.payload()), Some(stored));
        let started = note(false, None);
        assert_eq!(started.payload(), "p 17 running 3 1 0");
        assert_eq!(Note::parse(&started.payload()), Some(started));
        let failed = note(false, Some((12, TargetOutcome::Failed)));
        assert_eq!(Note::parse(&failed.payload()), Some(failed));
    }

    #[test]
    fn malformed_payloads_are_refused() {
        for bad in [
            "",
            "w",
            "x 17 running 3 1 0",
            "w 17 sleeping 3 1 0",
            "w -1 running 3 1 0",
            "w 17 running 3 1",
            "w 17 running 3 1 0 0",
            "w 17 running 3 1 0 0 x",
            "w 17 running 3 1 0 zero d",
            "w 17 running 3 1 0 0 d extra",
        ] {
            assert_eq!(Note::parse(bad), None, "{bad:?}");
        }
    }
}

/// The test server's URL from `BATCH_TEST_POSTGRES_URL`, or `None` (saying so): the server
/// tests below skip without one, as the integration tests do.
fn server_url() -> Option<String> {
    let url = std::env::var("BATCH_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    if url.is_none() {
        println!("skipped: set BATCH_TEST_POSTGRES_URL to run the PostgreSQL tests");
    }
    url
}

/// A schema name no other test run uses: `prefix`, the process id and the clock.
fn fresh_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % (1 << 40))
}

/// The claim statement against a server: what its walk reads. Skipped without
/// `BATCH_TEST_POSTGRES_URL` (saying so), as the integration tests are.
mod claims_on_a_server {
    use std::time::{Duration, SystemTime};

    use crate::job::{Caller, TargetState};
    use crate::store::postgres::{PostgresStore, queries};
    use crate::store::{CallerStore, ClaimEnd, NewJob, WorkerStore};
    use crate::time::Timestamp;

    const LEASE: Duration = Duration::from_secs(30);

    async fn store() -> Option<PostgresStore> {
        let url = super::server_url()?;
        let store = PostgresStore::options()
            .schema(super::fresh_schema("t_claims"))
            .connect(&url)
            .await
            .expect("connect the test store");
        // Dead index entries must stay where the claims leave them for the walk to show.
        store
            .client()
            .await
            .unwrap()
            .batch_execute("ALTER TABLE jobs SET (autovacuum_enabled = false)")
            .await
            .unwrap();
        Some(store)
    }

    fn now() -> Timestamp {
        Timestamp::from(SystemTime::now())
    }

    fn job(caller: &str, targets: usize) -> NewJob {
        NewJob::new(
            Caller::new(caller),
            (0..targets).map(|i| i.to_string()).collect(),
            now(),
            100,
        )
    }

    /// The claim statement from `cursor` under `EXPLAIN (ANALYZE, BUFFERS)`, which claims as
    /// the statement does: the plan's lines.
    async fn explain_claim(store: &PostgresStore, cursor: i64) -> Vec<String> {
        let client = store.client().await.unwrap();
        let now = crate::store::sql::to_micros(now());
        let lease = i64::try_from(LEASE.as_micros()).unwrap();
        let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", queries::claim_sql());
        let rows = client.query(&sql, &[&now, &lease, &cursor]).await.unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    }

    /// The buffers read by the first node at or after the first line that contains `from`:
    /// its `Buffers:` line, the first one there.
    fn buffers(plan: &[String], from: &str) -> i64 {
        let line = plan
            .iter()
            .skip_while(|line| !line.contains(from))
            .find(|line| line.trim_start().starts_with("Buffers:"))
            .expect("EXPLAIN counts buffers");
        let count = |word: &str| {
            line.split([' ', ','])
                .find_map(|part| part.strip_prefix(word))
                .map_or(0, |n| n.parse::<i64>().unwrap())
        };
        count("hit=") + count("read=")
    }

    /// A snapshot held open in a transaction of its own, as concurrent workers' transactions
    /// hold theirs: the row versions and index entries that claims and stores leave stay
    /// (recently dead), so tables and indexes grow as under load.
    async fn hold_snapshot(
        client: &mut deadpool_postgres::Object,
    ) -> deadpool_postgres::Transaction<'_> {
        let snapshot = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .start()
            .await
            .unwrap();
        snapshot.query_one("SELECT 1", &[]).await.unwrap();
        snapshot
    }

    /// Claims and stores `n` targets, one at a time.
    async fn drain(store: &PostgresStore, n: usize) {
        for _ in 0..n {
            let claim = store.claim(now()).await.unwrap().expect("work is left");
            let done = TargetState::Done {
                output_json: "1".into(),
            };
            store
                .finish(&claim, ClaimEnd::Stored(done), now(), false)
                .await
                .unwrap();
        }
    }

    /// A claim reads its target by the job's key and index, one probe, whatever the planner
    /// estimates (no statistics here: vacuum, and so analyze, is off; the tables hold the
    /// versions of a thousand claims). Joined in the claim's `UPDATE`, the target was read
    /// here by a scan of every target of the job (253 buffers for 127 targets).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_reads_its_target_in_one_probe() {
        let Some(store) = store().await else { return };
        for j in 0..8 {
            store.submit(job(&format!("c{j}"), 127)).await.unwrap();
        }
        let mut holder = store.client().await.unwrap();
        let snapshot = hold_snapshot(&mut holder).await;
        drain(&store, 1_000).await;
        snapshot.commit().await.unwrap();
        let plan = explain_claim(&store, 0).await;
        let read = buffers(&plan, "using targets_pkey");
        assert!(
            read <= 5,
            "the claim read {read} buffers of targets:\n{}",
            plan.join("\n")
        );
    }

    /// A claim and a stored target change no column `jobs_claimable` names (key or `WHERE`),
    /// so both are HOT updates that leave no index entry for the next claim's walk to read
    /// (the previous rotation's service stamp was in the index, and every claim left an entry
    /// behind). Checked on the index's definition, which holds whatever else the server runs
    /// meanwhile (a snapshot held elsewhere can stop pruning and so HOT updates for a while,
    /// which made a count of the walk's buffers depend on the tests beside it).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_change_no_column_the_walk_names() {
        let Some(store) = store().await else { return };
        let client = store.client().await.unwrap();
        let row = client
            .query_one(
                "SELECT pg_get_indexdef(i.indexrelid)
                 FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                 WHERE c.relname = 'jobs_claimable'
                   AND c.relnamespace = current_schema()::regnamespace",
                &[],
            )
            .await
            .unwrap();
        let definition: String = row.get(0);
        assert!(definition.contains("(id)"), "{definition}");
        // What the claim statement and a stored target write (`queries.rs`).
        for written in [
            "in_flight",
            "lease_until",
            "rescue",
            "retry_at",
            "next",
            "done",
            "failed",
            "updated",
            "busy_since",
            "served",
        ] {
            assert!(
                !definition.contains(written),
                "jobs_claimable names `{written}`, which claims change: {definition}"
            );
        }
    }
}

/// Every connection of the store plans its statements generically from their first
/// execution (`options::PLANNER_SETTINGS`): on the store's own pool (startup options) and on
/// an application's (`SET LOCAL` in each transaction). A custom plan shows the parameter's
/// value in its index condition, a generic one the placeholder. Skipped without
/// `BATCH_TEST_POSTGRES_URL`.
mod generic_plans_on_a_server {
    use super::{fresh_schema, server_url};
    use crate::store::postgres::PostgresStore;

    /// The first execution's plan of a statement with a parameter over the store's `jobs`,
    /// prepared in `client`'s current transaction or session.
    async fn first_plan(client: &impl deadpool_postgres::GenericClient) -> String {
        let prepare = "PREPARE by_id (BIGINT) AS SELECT id FROM jobs WHERE id = $1";
        client.batch_execute(prepare).await.unwrap();
        let rows = client.query("EXPLAIN EXECUTE by_id(7)", &[]).await.unwrap();
        let plan: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        client.batch_execute("DEALLOCATE by_id").await.unwrap();
        plan.join("\n")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stores_own_connections_plan_generically_at_once() {
        let Some(url) = server_url() else { return };
        let store = PostgresStore::options()
            .schema(fresh_schema("t_plans"))
            .connect(&url)
            .await
            .unwrap();
        let client = store.client().await.unwrap();
        let plan = first_plan(&client).await;
        assert!(plan.contains("= $1"), "{plan}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_applications_connections_plan_generically_in_the_stores_transactions() {
        let Some(url) = server_url() else { return };
        let config: tokio_postgres::Config = url.parse().unwrap();
        let manager = deadpool_postgres::Manager::new(config.clone(), tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(1)
            .build()
            .unwrap();
        let store = PostgresStore::options()
            .schema(fresh_schema("t_plans"))
            .connect_pool(pool, config)
            .await
            .unwrap();
        let mut client = store.client().await.unwrap();
        let mode = "SELECT current_setting('plan_cache_mode')";
        let theirs: String = client.query_one(mode, &[]).await.unwrap().get(0);
        let tx = store.begin(&mut client).await.unwrap();
        let plan = first_plan(&tx).await;
        assert!(plan.contains("= $1"), "{plan}");
        tx.commit().await.unwrap();
        // After the store's transaction, committed, the application's setting holds again.
        let after: String = client.query_one(mode, &[]).await.unwrap().get(0);
        assert_eq!(after, theirs);
    }
}
