//! One owner per database file, whatever the name it is opened by: an exclusive lock on the
//! file itself.
//!
//! A SQLite store frees every claim it finds at start (`WorkerStore::recover`): correct for a
//! restarted owner, fatal for a second store over a file that a live runner still serves (its
//! claims would be freed under it and fetched twice, its results stored by two processes). So
//! a store takes this lock before it opens, or even reads, the database, and a second open,
//! from this process or another and through any name, is refused with
//! [`SqliteError::InUse`] and changes nothing.
//!
//! # The file, not its name
//!
//! The lock is the OS's advisory whole-file lock (`File::try_lock`: `flock` on Unix) on the
//! database file itself, which belongs to the file (its inode), not to the name: a symlink, a
//! hard link, a relative path or a `..` all reach the same lock. (A lock file beside the
//! database, as before, belonged to the name: a second process through a symlink took over a
//! live store's file.) The kernel drops it when the process ends, however it ends, so a
//! SIGKILLed owner never blocks its successor; `flock` and SQLite's own POSIX record locks are
//! separate kinds and never meet.
//!
//! Two more things follow the file rather than the name:
//! - SQLite opens the **canonical path** ([`OwnerLock::path`]: symlinks and `..` resolved),
//!   so its `-wal` and `-shm` files sit beside the real file whatever name was given.
//! - A file with **more than one hard link** is refused ([`SqliteError::InvalidPath`]) once
//!   its lock is held: SQLite names its WAL after the path, so a file reached by two names
//!   can lose or corrupt committed transactions even with one owner at a time (sqlite.org,
//!   "How To Corrupt An SQLite Database File", 2.5). A second owner through another link
//!   still meets the lock first: `InUse`.
//!
//! # This process's own stores
//!
//! Closing a descriptor of a file drops every POSIX lock this process holds on it, SQLite's
//! included. So an open never touches the file while a store of this process has it: the
//! registry ([`OWNERS`]) names each file (by device and inode) that a store of this process
//! holds, and is consulted, under its mutex, before the file is opened.
//!
//! 1. [`OwnerLock::acquire`] looks the file up in the registry by its id (from `stat`, no
//!    descriptor). A live store: `InUse`. A closing one: it waits on [`RELEASED`] until the
//!    entry is gone, then looks again. None: it opens the file, takes the lock, and records
//!    the file as live, all under the registry's mutex, so no other open of this process
//!    slips in between.
//! 2. A dropped store marks its entry closing ([`hand_over`]) as it closes its channel: an
//!    opener then waits for it instead of answering `InUse`, so "drop, then open again"
//!    always works.
//! 3. Each of the store's threads (the writer's and, for a file, the reader's) closes its
//!    connection, then drops its share of the [`OwnerLock`]; the last share closes the
//!    locked descriptor (releasing the lock) and only then removes the entry and wakes the
//!    waiters. So an entry is gone only once nothing of the store holds the file.
//! 4. A lock belongs to the open file, which a fork shares: a child forked while a store held
//!    the file keeps the lock until it execs (the descriptor is close-on-exec). A refused lock
//!    is therefore tried again for [`FORK_WINDOW_TRIES`] × [`FORK_WINDOW_PAUSE`] before
//!    `InUse`, so a store dropped while another thread spawned a process still reopens.
//!
//! The registry is std's mutex, not the `sync` shim's: this is I/O, which the loom models
//! leave out, and it never guards user code.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::SqliteError;

/// A file's identity, whatever its name: device and inode on Unix, the canonical path
/// elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileId(#[cfg(unix)] (u64, u64), #[cfg(not(unix))] PathBuf);

impl FileId {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata, _canonical: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self((meta.dev(), meta.ino()))
    }

    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata, canonical: &Path) -> Self {
        Self(canonical.to_path_buf())
    }
}

/// A file a store of this process holds, and whether that store is closing.
#[derive(Debug)]
struct Entry {
    file: FileId,
    closing: bool,
}

/// How often, and how far apart, a refused lock is tried again before `InUse` (100 ms in
/// all): long enough for a child forked while a store of this process held the file to exec,
/// which closes its copy of the descriptor.
const FORK_WINDOW_TRIES: u32 = 20;
const FORK_WINDOW_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// Step 1: the files this process's stores hold.
static OWNERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Step 3: notified whenever an entry leaves [`OWNERS`].
static RELEASED: Condvar = Condvar::new();

fn owners() -> MutexGuard<'static, Vec<Entry>> {
    // A panic cannot leave the list half-changed: recover the guard.
    OWNERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Step 2: marks the file of a dropped store as closing; `finish` closes the store's channel
/// (its thread, whose handle is not needed: step 3 says when the file is free).
pub(super) fn hand_over(file: &FileId, finish: impl FnOnce() -> Option<JoinHandle<()>>) {
    let mut list = owners();
    drop(finish());
    if let Some(entry) = list.iter_mut().find(|entry| entry.file == *file) {
        entry.closing = true;
    }
}

/// Holds the owner lock of one database file until dropped (step 3).
#[derive(Debug)]
pub(super) struct OwnerLock {
    file: Option<File>,
    id: FileId,
    path: PathBuf,
}

impl OwnerLock {
    /// Takes the lock of the database at `db` (creating an empty file if there is none),
    /// without waiting for another owner.
    ///
    /// # Errors
    ///
    /// [`SqliteError::InUse`] if another store holds it; [`SqliteError::InvalidPath`] if the
    /// file has more than one hard link; the file's I/O error otherwise (a missing folder, no
    /// permission, a read-only file system).
    pub(super) fn acquire(db: &Path) -> Result<Self, SqliteError> {
        let path = canonical(db)?;
        let in_use = || SqliteError::InUse { lock: path.clone() };
        let mut list = owners();
        // Step 1: never open a file a store of this process holds.
        // No file yet: no store of this process can hold it.
        while let Ok(meta) = std::fs::metadata(&path) {
            let id = FileId::of(&meta, &path);
            match list.iter().find(|entry| entry.file == id) {
                None => break,
                Some(entry) if !entry.closing => return Err(in_use()),
                Some(_) => {
                    list = RELEASED
                        .wait(list)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .or_else(|err| match err.kind() {
                // A read-only file still takes the lock; SQLite's open then says read-only.
                io::ErrorKind::PermissionDenied => File::open(&path),
                _ => Err(err),
            })
            .map_err(|err| io_error(&path, &err))?;
        let meta = file.metadata().map_err(|err| io_error(&path, &err))?;
        let id = FileId::of(&meta, &path);
        // Refused: another process holds the lock (this one holds no lock on the file, so
        // closing ours is safe), or a child this process forked meanwhile still holds a copy
        // of a dropped store's descriptor until it execs (a lock belongs to the open file,
        // which a fork shares). That window is short: try again for a while before `InUse`.
        let mut tries = 0;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if tries < FORK_WINDOW_TRIES => {
                    tries += 1;
                    std::thread::sleep(FORK_WINDOW_PAUSE);
                }
                Err(TryLockError::WouldBlock) => return Err(in_use()),
                Err(TryLockError::Error(err)) => return Err(io_error(&path, &err)),
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if meta.nlink() > 1 {
                return Err(SqliteError::InvalidPath {
                    path: db.to_path_buf(),
                    reason: format!(
                        "the file has {} hard links: SQLite names its WAL after the path, \
                         so a file reached by two names can lose committed transactions; \
                         keep one name",
                        meta.nlink()
                    ),
                });
            }
        }
        list.push(Entry {
            file: id.clone(),
            closing: false,
        });
        Ok(Self {
            file: Some(file),
            id,
            path,
        })
    }

    /// The file's identity: the key of [`hand_over`].
    pub(super) fn id(&self) -> &FileId {
        &self.id
    }

    /// The database's canonical path, which SQLite opens.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnerLock {
    /// Step 3: the lock goes with the descriptor, then the entry.
    fn drop(&mut self) {
        drop(self.file.take());
        let mut list = owners();
        list.retain(|entry| entry.file != self.id);
        drop(list);
        RELEASED.notify_all();
    }
}

/// `db` with symlinks, `.` and `..` resolved, from the root; for a file not created yet, its
/// folder's canonical path and its name.
fn canonical(db: &Path) -> Result<PathBuf, SqliteError> {
    match std::fs::canonicalize(db) {
        Ok(path) => Ok(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let name = db.file_name().ok_or_else(|| SqliteError::InvalidPath {
                path: db.to_path_buf(),
                reason: "it names no file".into(),
            })?;
            let folder = match db.parent() {
                Some(folder) if !folder.as_os_str().is_empty() => folder,
                _ => Path::new("."),
            };
            let folder = std::fs::canonicalize(folder).map_err(|err| io_error(folder, &err))?;
            Ok(folder.join(name))
        }
        Err(err) => Err(io_error(db, &err)),
    }
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

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("batch-owner-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_second_lock_of_one_file_is_refused_until_the_first_is_dropped() {
        let dir = folder("second");
        let db = dir.join("jobs.db");
        let first = OwnerLock::acquire(&db).unwrap();
        let second = OwnerLock::acquire(&db).unwrap_err();
        let canonical = std::fs::canonicalize(&db).unwrap();
        assert!(
            matches!(&second, SqliteError::InUse { lock } if *lock == canonical),
            "{second:?}"
        );
        drop(first);
        let third = OwnerLock::acquire(&db).unwrap();
        drop(third);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn every_name_of_the_file_reaches_its_lock() {
        let dir = folder("names");
        let db = dir.join("jobs.db");
        let first = OwnerLock::acquire(&db).unwrap();
        std::os::unix::fs::symlink(&db, dir.join("link.db")).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        for other in [
            dir.join("link.db"),
            dir.join("sub").join("..").join("jobs.db"),
        ] {
            let refused = OwnerLock::acquire(&other).unwrap_err();
            assert!(matches!(refused, SqliteError::InUse { .. }), "{other:?}");
        }
        assert_eq!(first.path(), std::fs::canonicalize(&db).unwrap());
        drop(first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_file_with_two_names_is_refused_once_locked() {
        let dir = folder("links");
        let db = dir.join("jobs.db");
        std::fs::write(&db, b"").unwrap();
        std::fs::hard_link(&db, dir.join("other.db")).unwrap();
        let refused = OwnerLock::acquire(&db).unwrap_err();
        assert!(
            matches!(&refused, SqliteError::InvalidPath { reason, .. } if reason.contains("2 hard links")),
            "{refused:?}"
        );
        // Refused without keeping the lock: one name less, and it opens.
        std::fs::remove_file(dir.join("other.db")).unwrap();
        drop(OwnerLock::acquire(&db).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_file_is_named_by_its_folders_canonical_path() {
        let dir = folder("new");
        std::fs::create_dir(dir.join("sub")).unwrap();
        let given = dir.join("sub").join("..").join("fresh.db");
        let lock = OwnerLock::acquire(&given).unwrap();
        assert_eq!(
            lock.path(),
            std::fs::canonicalize(&dir).unwrap().join("fresh.db")
        );
        drop(lock);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
