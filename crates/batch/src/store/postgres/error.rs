//! What can go wrong with a PostgreSQL store, as types.

use crate::error::{StoreError, SubmitError};

/// A PostgreSQL store's failure.
///
/// [`PostgresOptions::connect`](super::PostgresOptions::connect) returns it directly. Once the
/// store is running, it reaches the runner inside a [`StoreError`]:
/// [`Unavailable`](Self::Unavailable) as [`StoreError::Unavailable`] (the runner tries the call
/// again after its retry wait: a lost connection is a retry, never a dropped target), the rest
/// as [`StoreError::Failed`]. A failed call changes nothing: every call is one transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The connection string or the options are not valid.
    #[error("invalid postgres store configuration: {0}")]
    Config(String),
    /// The server cannot be reached, the connection was lost (the server closed it, or an
    /// administrator ended the backend), or the transaction lost a serialization race. Trying
    /// again may work.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The schema was written by a newer release of this crate; it was not altered.
    #[error(
        "the database has schema version {found}, newer than the {supported} this release knows"
    )]
    NewerSchema {
        /// The version found in the database.
        found: i32,
        /// The newest version this release writes.
        supported: i32,
    },
    /// TLS was refused: the server's certificate is not signed by a root the options trust
    /// (feature `postgres-tls`) or does not name the host connected to, or `sslmode=require`
    /// met a server without TLS. Trying again will not help.
    #[error("the TLS handshake with the server failed: {0}")]
    Tls(String),
    /// A stored row does not read back as this crate wrote it.
    #[error("a stored row is invalid: {0}")]
    InvalidRow(String),
    /// Any other error the server or the client reported (shown as it is, its cause as its
    /// source).
    #[error(transparent)]
    Other(tokio_postgres::Error),
}

/// SQLSTATE classes and codes after which the same call may succeed: connection exceptions
/// (class 08), a serialization failure or deadlock (class 40), an operator intervention such as
/// `pg_terminate_backend` or a server shutdown (class 57), too many connections (53300).
pub(super) fn transient(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("40") || code.starts_with("57") || code == "53300"
}

impl From<tokio_postgres::Error> for PostgresError {
    fn from(err: tokio_postgres::Error) -> Self {
        // tokio-postgres' own text names only the kind ("error performing TLS handshake");
        // the cause is in the source chain.
        let text = with_causes(&err);
        #[cfg(feature = "postgres-tls")]
        if super::tls::is_handshake_refusal(&err) {
            return Self::Tls(text);
        }
        // tokio-postgres reports this one as text only.
        if text.contains("server does not support TLS") {
            return Self::Tls(text);
        }
        match err.code() {
            Some(code) if transient(code.code()) => Self::Unavailable(text),
            Some(_) => Self::Other(err),
            // No SQLSTATE: an I/O error or a closed connection on the client side.
            None => Self::Unavailable(text),
        }
    }
}

/// `err` and each error it wraps, joined with `: `.
fn with_causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        next = cause.source();
    }
    text
}

impl From<deadpool_postgres::PoolError> for PostgresError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        match err {
            deadpool_postgres::PoolError::Backend(err) => err.into(),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

impl From<PostgresError> for StoreError {
    fn from(err: PostgresError) -> Self {
        match err {
            PostgresError::Unavailable(_) => StoreError::Unavailable(Box::new(err)),
            _ => StoreError::Failed(Box::new(err)),
        }
    }
}

impl From<PostgresError> for SubmitError {
    fn from(err: PostgresError) -> Self {
        SubmitError::Store(err.into())
    }
}
