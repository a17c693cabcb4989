//! Faults of the SQLite store's file: each is a typed error, and nothing stored is lost.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockgate_batch::store::Timestamp;
use lockgate_batch::store::{CallerStore, NewJob, SqliteError, SqliteStore};
use lockgate_batch::{Caller, StoreError, SubmitError};

use crate::scratch::Scratch;

fn job(caller: &str, n: usize) -> NewJob {
    NewJob::new(
        Caller::new(caller),
        (0..n)
            .map(|i| format!("\"{caller}-target-{i:04}\""))
            .collect(),
        Timestamp::from_micros(1),
        100,
    )
}

/// Runs one store call to its end (the store answers from its own thread).
fn now<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// A database file holding one job of `n` targets, closed (its WAL checkpointed away).
fn written_db(path: &Path, n: usize) {
    let store = SqliteStore::open(path).unwrap();
    now(store.submit(job("ann", n))).unwrap();
    now(store.close());
}

fn open_err(path: &Path) -> SqliteError {
    SqliteStore::options()
        .busy_timeout(Duration::ZERO)
        .open(path)
        .expect_err("opening must fail")
}

#[test]
fn garbage_file_is_refused_as_corrupt_and_left_alone() {
    let dir = Scratch::new("faults", "garbage");
    let garbage = vec![0xAB_u8; 8192];
    std::fs::write(dir.db(), &garbage).unwrap();
    assert!(matches!(open_err(&dir.db()), SqliteError::Corrupt(_)));
    assert_eq!(std::fs::read(dir.db()).unwrap(), garbage);
}

#[test]
fn truncated_file_is_refused_as_corrupt() {
    let dir = Scratch::new("faults", "truncated");
    written_db(&dir.db(), 2000);
    let len = std::fs::metadata(dir.db()).unwrap().len();
    assert!(len > 8 * 4096, "the job spans many pages ({len} bytes)");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.db())
        .unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let before = std::fs::read(dir.db()).unwrap();
    assert!(matches!(open_err(&dir.db()), SqliteError::Corrupt(_)));
    assert_eq!(
        std::fs::read(dir.db()).unwrap(),
        before,
        "the file is untouched"
    );
}

#[test]
fn newer_schema_is_refused_and_not_altered() {
    let dir = Scratch::new("faults", "newer");
    written_db(&dir.db(), 3);
    {
        // A rollback-journal file: switching it to WAL (a change) must not happen either.
        let conn = rusqlite::Connection::open(dir.db()).unwrap();
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let before = std::fs::read(dir.db()).unwrap();
    match open_err(&dir.db()) {
        SqliteError::NewerSchema { found, supported } => {
            assert_eq!(found, 99);
            assert!(supported < 99);
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(dir.db()).unwrap(),
        before,
        "the file is untouched"
    );
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
}

#[test]
fn missing_folder_is_unreadable() {
    let dir = Scratch::new("faults", "missing");
    let path = dir.0.join("no-such-folder").join("jobs.db");
    assert!(matches!(open_err(&path), SqliteError::Unreadable(_)));
}

#[test]
fn database_locked_at_open_is_a_locked_error() {
    let dir = Scratch::new("faults", "locked-open");
    // A rollback-journal database under an exclusive lock: no reader gets in.
    let holder = rusqlite::Connection::open(dir.db()).unwrap();
    holder
        .execute_batch("CREATE TABLE other (x); BEGIN EXCLUSIVE; INSERT INTO other VALUES (1);")
        .unwrap();
    assert!(matches!(open_err(&dir.db()), SqliteError::Locked(_)));
    holder.execute_batch("COMMIT").unwrap();
}

#[test]
fn database_locked_while_running_is_unavailable_then_recovers() {
    let dir = Scratch::new("faults", "locked-run");
    let store = SqliteStore::options()
        .busy_timeout(Duration::ZERO)
        .open(dir.db())
        .unwrap();
    let first = now(store.submit(job("ann", 2))).unwrap();

    let holder = rusqlite::Connection::open(dir.db()).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let err = now(store.submit(job("bob", 2))).unwrap_err();
    let SubmitError::Store(StoreError::Unavailable(source)) = err else {
        panic!("expected an unavailable store, got {err:?}");
    };
    assert!(matches!(
        source.downcast_ref::<SqliteError>(),
        Some(SqliteError::Locked(_))
    ));
    holder.execute_batch("ROLLBACK").unwrap();

    now(store.submit(job("bob", 2))).unwrap();
    let kept = now(store.status(first.id, &Caller::new("ann")))
        .unwrap()
        .unwrap();
    assert_eq!(kept.targets.len(), 2);
    assert_eq!(now(store.live_jobs()).unwrap(), 2);
}

/// Makes `path` unwritable even for root (`chattr +i`) and undoes it on drop.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Self> {
        let status = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status();
        status
            .is_ok_and(|s| s.success())
            .then(|| Self(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn read_only_file_is_refused_as_read_only() {
    let dir = Scratch::new("faults", "read-only");
    written_db(&dir.db(), 3);
    let mut perms = std::fs::metadata(dir.db()).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(dir.db(), perms).unwrap();
    // Permission bits do not stop root; the immutable flag does, where the file system has it.
    let writable = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.db())
        .is_ok();
    let _guard = if writable {
        match Immutable::set(&dir.db()) {
            Some(guard) => Some(guard),
            None => {
                eprintln!(
                    "SKIPPED: read_only_file_is_refused_as_read_only: running as root on a file \
                     system without `chattr +i`, so no file is read-only here"
                );
                return;
            }
        }
    } else {
        None
    };
    let before = std::fs::read(dir.db()).unwrap();
    assert!(matches!(open_err(&dir.db()), SqliteError::ReadOnly(_)));
    assert_eq!(std::fs::read(dir.db()).unwrap(), before);
}

#[test]
fn bad_settings_are_typed_errors_and_touch_no_file() {
    let dir = Scratch::new("faults", "settings");
    for timeout in [Duration::MAX, Duration::from_secs(25 * 24 * 3600)] {
        let err = SqliteStore::options()
            .busy_timeout(timeout)
            .open(dir.db())
            .unwrap_err();
        assert!(
            matches!(
                err,
                SqliteError::InvalidSetting {
                    setting: "busy_timeout",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&dir.0).unwrap().count(),
        0,
        "no file was created"
    );
    // The largest accepted timeout (SQLite's `int` of milliseconds) opens.
    let store = SqliteStore::options()
        .busy_timeout(Duration::from_millis(i32::MAX as u64))
        .open(dir.db());
    assert!(store.is_ok(), "{:?}", store.err());
}

#[test]
fn paths_that_name_no_file_are_refused() {
    for path in ["", ":memory:"] {
        let err = SqliteStore::open(path).unwrap_err();
        assert!(
            matches!(&err, SqliteError::InvalidPath { path: p, .. } if p.as_os_str() == path),
            "{path:?}: {err:?}"
        );
    }
    assert!(
        !Path::new(":memory:.lock").exists() && !Path::new(".lock").exists(),
        "no lock file was made for them"
    );
}
