//! One owner per database file: an exclusive `flock`-style lock on a file beside it.
//!
//! A SQLite store frees every claim it finds at start (`Store::recover`): correct for a
//! restarted owner, fatal for a second store over a file that a live runner still serves (its
//! claims would be freed under it and fetched twice). So a store takes this lock before it
//! opens, or even reads, the database, and a second open — from this process or another —
//! is refused with [`SqliteError::InUse`] and changes nothing.
//!
//! The lock is the OS's advisory whole-file lock (`File::try_lock`: `flock` on Unix,
//! `LockFileEx` on Windows). The kernel drops it when the process ends, however it ends, so
//! a SIGKILLed owner never blocks its successor. It sits on a separate file, `<db>.lock`,
//! never on the database itself: closing any other descriptor of the database would drop
//! SQLite's own POSIX locks on it. The lock file is left in place when the store closes
//! (deleting it would race with an opener that has it open already); it is empty.
//!
//! # Closing stores
//!
//! A dropped store's thread closes the connection and releases the lock on its own, a few
//! milliseconds later, so that `drop` never blocks a tokio thread. Its handle goes into
//! [`CLOSING`] first, and an open in this process that finds the lock taken looks there: a
//! store of this process that is still closing the file is waited for, so "drop, then open
//! again" always works. Only a live store, or another process, makes an open `InUse`.
//!
//! 1. `hand_over` closes the store's channel and records the thread's handle under the list's
//!    lock, so an opener sees the store either live or in the list, never between.
//! 2. The thread, once it has released the file lock, removes its own entry ([`closed`]),
//!    so no handle of a finished thread stays behind (it would be a leaked, unjoined thread).
//! 3. An opener refused by the file lock looks in the list under the list's lock. An entry:
//!    it takes the handle, joins the thread (outside the list's lock) and tries again. No
//!    entry: it tries the lock once more while still holding the list's lock, which settles a
//!    thread that released the file between the first try and step 2. Refused again means a
//!    live store or another process: `InUse`.
//!
//! `CLOSING` is std's mutex, not the `sync` shim's: this is I/O, which the loom models leave
//! out, and it never guards user code.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;

use super::SqliteError;

/// The threads of dropped stores still closing their file, by canonical lock-file path.
static CLOSING: Mutex<Vec<(PathBuf, JoinHandle<()>)>> = Mutex::new(Vec::new());

fn closing() -> std::sync::MutexGuard<'static, Vec<(PathBuf, JoinHandle<()>)>> {
    // A panic cannot leave the list half-changed: recover the guard.
    CLOSING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Step 1: hands the closing thread of the store that owns `key` to later openers; `finish`
/// closes the store's channel and returns its thread.
pub(super) fn hand_over(key: &Path, finish: impl FnOnce() -> Option<JoinHandle<()>>) {
    let mut list = closing();
    if let Some(thread) = finish() {
        list.push((key.to_path_buf(), thread));
    }
}

/// Step 2: called by a store's thread as its last act, after it released the file lock.
pub(super) fn closed() {
    let me = std::thread::current().id();
    // Dropping our own handle detaches this thread, which is ending anyway.
    closing().retain(|(_, thread)| thread.thread().id() != me);
}

/// Holds the owner lock of one database file until dropped.
#[derive(Debug)]
pub(super) struct OwnerLock {
    _file: File,
    key: PathBuf,
}

impl OwnerLock {
    /// Takes the lock of the database at `db`, without waiting.
    ///
    /// # Errors
    ///
    /// [`SqliteError::InUse`] if another store holds it; the lock file's I/O error otherwise
    /// (a missing folder, no permission, a read-only file system).
    pub(super) fn acquire(db: &Path) -> Result<Self, SqliteError> {
        let path = lock_path(db);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|err| io_error(&path, &err))?;
        let key = std::fs::canonicalize(&path).map_err(|err| io_error(&path, &err))?;
        let refused = || SqliteError::InUse { lock: path.clone() };
        let mut waited = false;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { _file: file, key }),
                Err(TryLockError::WouldBlock) if !waited => {
                    waited = true;
                    // Step 3.
                    let closing_thread = {
                        let mut list = closing();
                        match list.iter().position(|(held, _)| *held == key) {
                            Some(at) => list.swap_remove(at).1,
                            None => match file.try_lock() {
                                Ok(()) => return Ok(Self { _file: file, key }),
                                Err(TryLockError::WouldBlock) => return Err(refused()),
                                Err(TryLockError::Error(err)) => return Err(io_error(&path, &err)),
                            },
                        }
                    };
                    // A store of this process is closing the file: wait for it (this blocks,
                    // as opening does anyway), then try once more.
                    let _ = closing_thread.join();
                }
                Err(TryLockError::WouldBlock) => return Err(refused()),
                Err(TryLockError::Error(err)) => return Err(io_error(&path, &err)),
            }
        }
    }

    /// The lock file's canonical path: the key of [`hand_over`].
    pub(super) fn key(&self) -> &Path {
        &self.key
    }
}

/// The lock file of the database at `db`: `<db>.lock` beside it.
pub(super) fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn io_error(path: &Path, err: &io::Error) -> SqliteError {
    let text = format!("{}: {err}", path.display());
    match err.kind() {
        io::ErrorKind::ReadOnlyFilesystem => SqliteError::ReadOnly(text),
        _ => SqliteError::Unreadable(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_one_file_is_refused_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("batch-owner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("jobs.db");
        let first = OwnerLock::acquire(&db).unwrap();
        let second = OwnerLock::acquire(&db).unwrap_err();
        assert!(
            matches!(&second, SqliteError::InUse { lock } if *lock == lock_path(&db)),
            "{second:?}"
        );
        drop(first);
        let third = OwnerLock::acquire(&db).unwrap();
        drop(third);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_lock_file_sits_beside_the_database() {
        assert_eq!(
            lock_path(Path::new("/var/lib/app/jobs.db")),
            Path::new("/var/lib/app/jobs.db.lock")
        );
    }
}
