//! What can go wrong with a SQLite store, as types.

use std::path::PathBuf;

use rusqlite::ErrorCode;

use crate::error::StoreError;

/// A SQLite store's failure.
///
/// [`SqliteStore::open`](super::SqliteStore::open) returns it directly. Once the store is
/// running, it reaches the runner inside a [`StoreError`]: [`Locked`](Self::Locked) as
/// [`StoreError::Unavailable`] (the runner tries again), and so does
/// [`Aborted`](Self::Aborted); the rest as [`StoreError::Failed`];
/// `std::error::Error::source` (or `downcast_ref::<SqliteError>()` on the boxed error) gives
/// this type back. A failed call changes nothing: every call is one transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// Another store owns this database file, in this process or another, through this name
    /// or any other (see [`SqliteStore`](super::SqliteStore)'s "One owner"). Nothing was read
    /// or written. It clears when that store is dropped or its process ends.
    #[error("the database {} is in use by another store", lock.display())]
    InUse {
        /// The database file whose owner lock is held, by its canonical path.
        lock: PathBuf,
    },
    /// The path names no file (`""` or `":memory:"`, which SQLite reads as a private
    /// temporary database), or a file with more than one hard link (SQLite names its WAL
    /// after the path, so a second name can lose committed transactions). Nothing was
    /// opened.
    #[error("{path:?} is not a database file path: {reason}")]
    InvalidPath {
        /// The path given.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// An option of [`SqliteOptions`](super::SqliteOptions) is out of range. Nothing was
    /// opened.
    #[error("invalid sqlite store setting `{setting}`: {reason}")]
    InvalidSetting {
        /// The option's name.
        setting: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The file is not a SQLite database, or its pages are damaged (a truncated or overwritten
    /// file). Nothing was written to it.
    #[error("the database file is corrupt or not a SQLite database: {0}")]
    Corrupt(String),
    /// The file or its folder cannot be opened (missing folder, no permission).
    #[error("the database file cannot be opened: {0}")]
    Unreadable(String),
    /// The database may not be written (a read-only file or mount).
    #[error("the database is read-only: {0}")]
    ReadOnly(String),
    /// The disk (or the database's size limit) is full. The transaction was rolled back;
    /// nothing stored before is lost.
    #[error("the disk is full: {0}")]
    Full(String),
    /// Another connection holds a lock longer than the busy timeout. Trying again may work.
    #[error("the database is locked by another connection: {0}")]
    Locked(String),
    /// The database was written by a newer release of this crate; it was not altered.
    #[error(
        "the database has schema version {found}, newer than the {supported} this release knows"
    )]
    NewerSchema {
        /// The version found in the file.
        found: u32,
        /// The newest version this release writes.
        supported: u32,
    },
    /// A stored row does not read back as this crate wrote it.
    #[error("a stored row is invalid: {0}")]
    InvalidRow(String),
    /// Another call sharing this call's commit failed in a way that made SQLite roll their
    /// transaction back (a full disk, an I/O error); this call changed nothing. Trying again
    /// may work.
    #[error("the call's transaction was rolled back by another call's failure: {0}")]
    Aborted(String),
    /// Any other SQLite error.
    #[error("sqlite: {0}")]
    Other(#[source] rusqlite::Error),
}

impl SqliteError {
    /// The same failure again, for each call of a batch that failed as a whole (the store's
    /// thread answers every call of a batch whose commit failed with it).
    pub(super) fn duplicate(&self) -> Self {
        match self {
            Self::InUse { lock } => Self::InUse { lock: lock.clone() },
            Self::InvalidPath { path, reason } => Self::InvalidPath {
                path: path.clone(),
                reason: reason.clone(),
            },
            Self::InvalidSetting { setting, reason } => Self::InvalidSetting {
                setting,
                reason: reason.clone(),
            },
            Self::Corrupt(text) => Self::Corrupt(text.clone()),
            Self::Unreadable(text) => Self::Unreadable(text.clone()),
            Self::ReadOnly(text) => Self::ReadOnly(text.clone()),
            Self::Full(text) => Self::Full(text.clone()),
            Self::Locked(text) => Self::Locked(text.clone()),
            Self::NewerSchema { found, supported } => Self::NewerSchema {
                found: *found,
                supported: *supported,
            },
            Self::InvalidRow(text) => Self::InvalidRow(text.clone()),
            Self::Aborted(text) => Self::Aborted(text.clone()),
            Self::Other(rusqlite::Error::SqliteFailure(code, message)) => {
                Self::Other(rusqlite::Error::SqliteFailure(*code, message.clone()))
            }
            Self::Other(other) => Self::Other(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(other.to_string()),
            )),
        }
    }
}

impl From<rusqlite::Error> for SqliteError {
    fn from(err: rusqlite::Error) -> Self {
        let Some(code) = err.sqlite_error_code() else {
            return Self::Other(err);
        };
        let text = err.to_string();
        match code {
            ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => Self::Corrupt(text),
            ErrorCode::CannotOpen | ErrorCode::PermissionDenied => Self::Unreadable(text),
            ErrorCode::ReadOnly => Self::ReadOnly(text),
            ErrorCode::DiskFull => Self::Full(text),
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Self::Locked(text),
            _ => Self::Other(err),
        }
    }
}

impl From<SqliteError> for StoreError {
    fn from(err: SqliteError) -> Self {
        match err {
            SqliteError::Locked(_) | SqliteError::Aborted(_) => {
                StoreError::Unavailable(Box::new(err))
            }
            _ => StoreError::Failed(Box::new(err)),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        SqliteError::from(err).into()
    }
}
