//! The dashboard (feature `dashboard`), driven in-process through its router
//! (`tower::ServiceExt::oneshot`): pages and the DOM contract, the JSON API, bad input,
//! security, actions, and event streams.

mod actions;
mod api;
mod bad_input;
mod events;
mod harness;
mod pages;
mod security;
#[cfg(feature = "sqlite")]
mod sqlite;
