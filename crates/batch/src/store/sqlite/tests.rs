//! Tests that need the store's insides: a full disk (through the connection), and batches
//! (the thread held in a call while others queue behind it).

use super::*;
use crate::job::{Counts, JobStatus, TargetState};

fn job(caller: &str, targets: &[&str]) -> NewJob {
    NewJob::new(
        Caller::new(caller),
        targets.iter().map(|t| t.to_string()).collect(),
        Timestamp::from_micros(1),
        100,
    )
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

#[test]
fn a_full_disk_is_a_typed_error_and_loses_nothing_stored() {
    let store = SqliteStore::open_in_memory().unwrap();
    let first = block_on(store.submit(job("ann", &["\"a1\""]))).unwrap();
    let claim = block_on(store.claim(Timestamp::from_micros(2)))
        .unwrap()
        .unwrap();
    let done = TargetState::Done {
        output_json: "\"kept\"".into(),
    };
    block_on(store.finish(
        &claim,
        ClaimEnd::Stored(done.clone()),
        Timestamp::from_micros(3),
        false,
    ))
    .unwrap();

    // SQLite answers SQLITE_FULL once the file would outgrow max_page_count: the same code
    // path as a full disk.
    store.with_connection(|conn| {
        let pages: i64 = conn
            .pragma_query_value(None, "page_count", |row| row.get(0))
            .unwrap();
        conn.pragma_update(None, "max_page_count", pages).unwrap();
    });
    let huge = "x".repeat(64 * 1024);
    let err = block_on(store.submit(job("bob", &[&format!("\"{huge}\"")]))).unwrap_err();
    let SubmitError::Store(StoreError::Failed(source)) = err else {
        panic!("expected a failed store, got {err:?}");
    };
    assert!(
        matches!(
            source.downcast_ref::<SqliteError>(),
            Some(SqliteError::Full(_))
        ),
        "{source}"
    );

    let kept = block_on(store.status(first.id, &Caller::new("ann")))
        .unwrap()
        .unwrap();
    assert_eq!(kept.status, JobStatus::Done);
    assert_eq!(kept.targets.len(), 1);
    assert_eq!(kept.targets[0].target_json, "\"a1\"");
    assert_eq!(kept.targets[0].state, done);
    assert_eq!(block_on(store.live_jobs()).unwrap(), 0);
    assert_eq!(store.stored_bytes(), 4 + 6);
}

#[test]
fn stale_claims_store_nothing() {
    let store = SqliteStore::open_in_memory().unwrap();
    block_on(store.submit(job("ann", &["1", "2"]))).unwrap();
    let claim = block_on(store.claim(Timestamp::from_micros(2)))
        .unwrap()
        .unwrap();
    assert_eq!(
        block_on(store.recover(Timestamp::from_micros(3))).unwrap(),
        1
    );
    let result = TargetState::Done {
        output_json: "1".into(),
    };
    let outcome = block_on(store.finish(
        &claim,
        ClaimEnd::Stored(result),
        Timestamp::from_micros(4),
        false,
    ))
    .unwrap();
    assert_eq!(outcome.completion, Completion::Stale);
    assert!(!block_on(store.renew(&claim, Timestamp::from_micros(4))).unwrap());
    let again = block_on(store.claim(Timestamp::from_micros(5)))
        .unwrap()
        .unwrap();
    assert_eq!((again.index, again.token > claim.token), (0, true));
}

/// Holds the store's thread in a call until the returned sender is used or dropped, so that
/// the calls made meanwhile wait in its channel and run as one batch. Returns once the thread
/// is inside that call: a thread still on its way to it would take the calls queued next in
/// the same batch as the hold (a race the busy gate hit).
async fn hold_thread(store: &Arc<SqliteStore>) -> std::sync::mpsc::Sender<()> {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (entered, inside) = tokio::sync::oneshot::channel::<()>();
    let store = Arc::clone(store);
    tokio::spawn(async move {
        let _ = store
            .thread
            .call(move |_| {
                let _ = entered.send(());
                let _ = held.recv();
                Ok::<(), StoreError>(())
            })
            .await;
    });
    inside.await.expect("the store's thread runs the hold");
    release
}

/// Spawns `call` over `store`, polls it until it has sent its call, and hands back its task.
async fn queued<R: Send + 'static, F>(
    store: &Arc<SqliteStore>,
    call: impl FnOnce(Arc<SqliteStore>) -> F,
) -> tokio::task::JoinHandle<R>
where
    F: Future<Output = R> + Send + 'static,
{
    let task = tokio::spawn(call(Arc::clone(store)));
    // On a current-thread runtime a spawned task runs at the next yield: it sends its call
    // to the (held) thread and waits.
    tokio::task::yield_now().await;
    task
}

#[test]
fn a_call_that_fails_in_a_batch_undoes_only_itself() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(SqliteStore::open_in_memory().unwrap());
        let release = hold_thread(&store).await;
        let first = queued(
            &store,
            |s| async move { s.submit(job("ann", &["1"])).await },
        )
        .await;
        let busy = queued(
            &store,
            |s| async move { s.submit(job("ann", &["2"])).await },
        )
        .await;
        let other = queued(
            &store,
            |s| async move { s.submit(job("bob", &["3"])).await },
        )
        .await;
        release.send(()).unwrap();
        assert!(first.await.unwrap().is_ok());
        assert!(matches!(
            busy.await.unwrap(),
            Err(SubmitError::CallerBusy { .. })
        ));
        assert!(other.await.unwrap().is_ok());
        assert_eq!(store.live_jobs().await.unwrap(), 2);
        assert_eq!(
            store.stored_bytes(),
            2,
            "the failed call's bytes were not counted"
        );
    });
}

#[test]
fn a_batch_that_sqlite_rolls_back_keeps_none_of_its_calls() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(SqliteStore::open_in_memory().unwrap());
        store.submit(job("ann", &["\"kept\""])).await.unwrap();
        let bytes_before = store.stored_bytes();
        store.with_connection(|conn| {
            let pages: i64 = conn
                .pragma_query_value(None, "page_count", |row| row.get(0))
                .unwrap();
            conn.pragma_update(None, "max_page_count", pages).unwrap();
        });
        let huge = format!("\"{}\"", "x".repeat(64 * 1024));
        let release = hold_thread(&store).await;
        let before = queued(
            &store,
            |s| async move { s.submit(job("bob", &["1"])).await },
        )
        .await;
        let full = queued(&store, move |s| async move {
            s.submit(job("cy", &[huge.as_str()])).await
        })
        .await;
        let after = queued(
            &store,
            |s| async move { s.submit(job("dee", &["2"])).await },
        )
        .await;
        release.send(()).unwrap();

        // The disk-full call gets its own error; SQLite rolled the whole transaction back, so
        // the call before it is not kept either and the one after never ran: both are told
        // to try again.
        let SubmitError::Store(StoreError::Failed(source)) = full.await.unwrap().unwrap_err()
        else {
            panic!("the disk-full call fails for good");
        };
        assert!(matches!(
            source.downcast_ref::<SqliteError>(),
            Some(SqliteError::Full(_))
        ));
        for aborted in [before.await.unwrap(), after.await.unwrap()] {
            let Err(SubmitError::Store(StoreError::Unavailable(source))) = aborted else {
                panic!("a batch-mate of the failure is retryable: {aborted:?}");
            };
            assert!(matches!(
                source.downcast_ref::<SqliteError>(),
                Some(SqliteError::Aborted(_))
            ));
        }
        assert_eq!(
            store.live_jobs().await.unwrap(),
            1,
            "only the job from before"
        );
        assert_eq!(store.stored_bytes(), bytes_before);
        // Trying again works.
        store.submit(job("bob", &["1"])).await.unwrap();
        assert_eq!(store.live_jobs().await.unwrap(), 2);
    });
}

/// A database written by schema version 1 (built here from version 1's own SQL, with rows as
/// version 1 wrote them) opens migrated: its jobs' counts read right, their targets untouched,
/// and keys and job lists work on it.
#[test]
fn a_version_1_database_migrates_with_its_counts() {
    let dir = std::env::temp_dir().join(format!("batch-sqlite-v1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jobs.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        // Job 1: three targets, one done and one failed, the third pending; running.
        // Job 2: ended done. Job 3: another caller's, queued.
        conn.execute_batch(
            "INSERT INTO jobs (id, caller, status, created, updated, touched, touch_seq, total,
                               next, done, failed, bytes)
             VALUES (1, 'ann', 'running', 10, 20, 10, 1, 3, 2, 1, 1, 20),
                    (2, 'ann', 'done',    11, 21, 21, 4, 1, 1, 1, 0, 4),
                    (3, 'bob', 'queued',  12, 12, 12, 3, 1, 0, 0, 0, 1);
             INSERT INTO targets (job, idx, target, state, output, error) VALUES
                 (1, 0, '1', 'done', '\"x\"', NULL),
                 (1, 1, '2', 'failed', NULL, 'no'),
                 (1, 2, '3', 'pending', NULL, NULL),
                 (2, 0, '4', 'done', '\"y\"', NULL),
                 (3, 0, '5', 'pending', NULL, NULL);
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let ann = Caller::new("ann");
    block_on(async {
        let counts = |pending, done, failed| Counts {
            pending,
            done,
            failed,
        };
        let one = store.summary(JobId::new(1), &ann).await.unwrap().unwrap();
        assert_eq!(
            (one.status, one.counts),
            (JobStatus::Running, counts(1, 1, 1))
        );
        assert_eq!(one.created, Timestamp::from_micros(10).to_system_time());
        let listed: Vec<(u64, Counts)> = store
            .jobs(&ann)
            .await
            .unwrap()
            .iter()
            .map(|j| (j.id.get(), j.counts))
            .collect();
        assert_eq!(listed, [(1, counts(1, 1, 1)), (2, counts(0, 1, 0))]);
        assert_eq!(store.summary(JobId::new(3), &ann).await.unwrap(), None);
        let status = store.status(JobId::new(1), &ann).await.unwrap().unwrap();
        assert_eq!(
            status.counts(),
            one.counts,
            "the targets agree with the counts"
        );
        // The new column works on the old rows: a keyed submit for a new caller, twice.
        let first = store
            .submit(job("cid", &["6"]).with_key("k"))
            .await
            .unwrap();
        let again = store
            .submit(job("cid", &["7"]).with_key("k"))
            .await
            .unwrap();
        assert_eq!((again.id, again.existing), (first.id, true));
        assert_eq!(first.id, JobId::new(4));
    });
    let version: u32 = store.with_connection(|conn| {
        conn.pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    });
    assert_eq!(version, schema::VERSION);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `jobs` and the key lookup of `submit` read through their indexes, not a scan of every job.
#[test]
fn caller_lookups_use_their_indexes() {
    let store = SqliteStore::open_in_memory().unwrap();
    let plans = store.with_connection(|conn| {
        [
            ("SELECT id FROM jobs WHERE caller = ?1 AND key = ?2", 2),
            (
                "SELECT id, status, created, updated, total, done, failed FROM jobs
                 WHERE caller = ?1 ORDER BY id",
                1,
            ),
        ]
        .map(|(sql, params)| {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let params = rusqlite::params_from_iter(["ann", "k"].into_iter().take(params));
            stmt.query_map(params, |row| row.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>()
                .join("; ")
        })
    });
    assert!(plans[0].contains("jobs_caller_key"), "{}", plans[0]);
    assert!(plans[1].contains("jobs_caller "), "{}", plans[1]);
    assert!(!plans[1].contains("TEMP B-TREE"), "no sort: {}", plans[1]);
}

/// A scratch folder of this test process, emptied first.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("batch-sqlite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A caller's read in flight, however long it takes (here: held until the writes are done),
/// holds no write back: a claim, a stored target and a submit all answer while it runs
/// (`reader.rs`, rule 4). With the callers' reads on the writer's thread this test hangs.
#[test]
fn a_long_read_holds_no_write_back() {
    let dir = scratch("long-read");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(SqliteStore::open(dir.join("jobs.db")).unwrap());
        store.submit(job("ann", &["1", "2"])).await.unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (entered, inside) = tokio::sync::oneshot::channel::<()>();
        let reading = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                store
                    .caller_read(move |conn| {
                        // The snapshot begins at this first read, before the writes.
                        let live = queries::live_jobs(conn);
                        let _ = entered.send(());
                        let _ = held.recv();
                        live
                    })
                    .await
            }
        });
        inside.await.expect("the read starts");
        let writes = async {
            let claim = store
                .claim(Timestamp::from_micros(2))
                .await?
                .expect("a claim");
            let done = TargetState::Done {
                output_json: "1".into(),
            };
            store
                .finish(
                    &claim,
                    ClaimEnd::Stored(done),
                    Timestamp::from_micros(3),
                    false,
                )
                .await?;
            store
                .submit(job("bob", &["3"]))
                .await
                .map_err(|e| match e {
                    SubmitError::Store(e) => e,
                    other => panic!("{other:?}"),
                })?;
            Ok::<(), StoreError>(())
        };
        // A hang guard, not a timing claim: the writes need no time the read could give them.
        tokio::time::timeout(std::time::Duration::from_secs(60), writes)
            .await
            .expect("the writes answered while the read was held")
            .unwrap();
        release.send(()).unwrap();
        assert_eq!(reading.await.unwrap().unwrap(), 1, "the read's snapshot");
        let job = store.status(JobId::new(1), &Caller::new("ann")).await;
        assert_eq!(
            job.unwrap().unwrap().counts(),
            Counts::new(1, 1, 0),
            "a read made after a write's answer sees it"
        );
        assert_eq!(store.live_jobs().await.unwrap(), 2);
    });
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads of several statements see one committed state: a `status` made while targets are
/// being stored sees the job's row and its targets as of one commit (`reader.rs`, rule 2).
/// The job's `updated` time says how many targets its row has seen stored; the targets must
/// agree.
#[test]
fn a_status_is_one_snapshot() {
    let dir = scratch("snapshot");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    // The k-th target is stored at this time (claims come between, at odd times).
    let stored_at = |k: u64| Timestamp::from_micros(1_000 + 2 * k);
    rt.block_on(async {
        let store = Arc::new(SqliteStore::open(dir.join("jobs.db")).unwrap());
        let targets: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
        let id = store.submit(job("ann", &refs)).await.unwrap().id;
        let writer = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                let mut k = 1;
                while let Some(claim) = store
                    .claim(Timestamp::from_micros(999 + 2 * k))
                    .await
                    .unwrap()
                {
                    let done = TargetState::Done {
                        output_json: "0".into(),
                    };
                    store
                        .finish(&claim, ClaimEnd::Stored(done), stored_at(k), false)
                        .await
                        .unwrap();
                    k += 1;
                }
            }
        });
        let mut reads = 0;
        loop {
            let job = store
                .status(id, &Caller::new("ann"))
                .await
                .unwrap()
                .unwrap();
            reads += 1;
            let stored = job
                .targets
                .iter()
                .filter(|t| matches!(t.state, TargetState::Done { .. }))
                .count() as u64;
            if stored > 0 {
                assert_eq!(
                    job.updated,
                    stored_at(stored).to_system_time(),
                    "the job's row and its {stored} stored targets are of one commit"
                );
            }
            if !job.status.is_live() {
                break;
            }
        }
        writer.await.unwrap();
        assert!(reads > 1);
    });
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The reader's thread runs [`reader::READER_NICENESS`] steps nicer than the process, and the
/// writer's at the process's own priority (`reader.rs`, rule 6). Linux only: elsewhere the
/// rule is documented as lost.
#[cfg(target_os = "linux")]
#[test]
fn the_reader_yields_the_cpu_to_the_writer() {
    /// The niceness of the task whose `stat` file this is (field 19, after the command).
    fn niceness(stat: &str) -> i32 {
        let after_command = &stat[stat.rfind(')').unwrap() + 1..];
        after_command
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    }
    /// The niceness of every thread of this process named `name` (as the kernel keeps it,
    /// cut to 15 bytes).
    fn threads_named(name: &str) -> Vec<i32> {
        let name = &name[..name.len().min(15)];
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let task = task.ok()?.path();
                let comm = std::fs::read_to_string(task.join("comm")).ok()?;
                let stat = std::fs::read_to_string(task.join("stat")).ok()?;
                (comm.trim_end() == name).then(|| niceness(&stat))
            })
            .collect()
    }
    let dir = scratch("niceness");
    let process = niceness(&std::fs::read_to_string("/proc/self/stat").unwrap());
    let store = SqliteStore::open(dir.join("jobs.db")).unwrap();
    // The thread sets its priority before its first call: one answered call proves it ran.
    block_on(store.live_jobs()).unwrap();
    block_on(store.caller_read(queries::live_jobs)).unwrap();
    let readers = threads_named("batch-sqlite-read");
    assert!(!readers.is_empty(), "a reader thread runs");
    let expected = (process + reader::READER_NICENESS).min(19);
    assert!(
        readers.iter().all(|&n| n == expected),
        "{readers:?} != {expected}"
    );
    let writers = threads_named("batch-sqlite");
    assert!(
        writers.iter().all(|&n| n == process),
        "{writers:?} != {process}"
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
