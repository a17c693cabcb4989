//! Who is asking: a request's caller (from the dashboard's `who` function, never from the
//! URL) and the [`Scope`] of jobs that caller sees.
//!
//! # Rules
//!
//! 1. `who` answering `None` is `401` before anything else is read.
//! 2. A caller is an admin only if the dashboard has an admin predicate and it answers `true`;
//!    only an admin gets [`Scope::Everyone`].
//! 3. A job the scope does not cover answers exactly as an unknown id ([`Error::NotFound`]).

use axum::http::request::Parts;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Board;
use super::error::Error;
use crate::job::{Caller, JobId};
use crate::page::{JobListing, Scope};

/// The caller of one request and what it may see.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    /// Whether the caller is an admin (sees every caller's jobs).
    pub(crate) admin: bool,
    /// The jobs the caller sees.
    pub(crate) scope: Scope,
}

impl<T, O> Board<T, O>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    /// The viewer of a request, or [`Error::Unauthorized`].
    pub(crate) fn viewer(&self, parts: &Parts) -> Result<Viewer, Error> {
        let caller: Caller = (self.who)(parts).ok_or(Error::Unauthorized)?;
        let admin = self
            .admin
            .as_ref()
            .is_some_and(|is_admin| is_admin(&caller));
        let scope = if admin {
            Scope::Everyone
        } else {
            Scope::Caller(caller)
        };
        Ok(Viewer { admin, scope })
    }

    /// Job `id` if `viewer` may see it, with whose it is.
    pub(crate) async fn listing(&self, viewer: &Viewer, id: JobId) -> Result<JobListing, Error> {
        Ok(self.runner.job(&viewer.scope, id).await?)
    }
}
