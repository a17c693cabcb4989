#![doc = include_str!("../README.md")]
//!
//! ## Feature flags
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
#[cfg(feature = "dashboard")]
#[cfg_attr(docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
mod error;
mod fetch;
pub mod hooks;
mod inflight;
mod job;
mod json_text;
pub mod page;
mod rfc3339;
mod runner;
mod shared;
#[cfg(feature = "store-spec")]
pub mod spec;
pub mod store;
mod summary;
mod sync;
mod time;
mod watch;
mod worker;

#[cfg(test)]
mod tests;

pub use config::Config;
pub use error::{
    BoxError, ConfigError, InvalidJob, NewError, StatusError, StoreError, SubmitError,
};
pub use fetch::{Fetch, FetchContext, FetchError, fetch_fn};
pub use hooks::TargetOutcome;
pub use job::{Caller, Counts, Job, JobId, JobStatus, TargetEntry, TargetState};
pub use runner::Runner;
pub use summary::{JobSummary, Progress};
pub use watch::JobWatch;
