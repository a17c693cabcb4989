#![doc = include_str!("../README.md")]

mod config;
mod error;
mod fetch;
mod hooks;
mod job;
mod runner;
pub mod store;
mod summary;
mod sync;
mod time;
mod worker;

#[cfg(test)]
mod tests;

pub use config::{Config, MAX_WORKERS};
pub use error::{
    BoxError, ConfigError, InvalidJob, NewError, StatusError, StoreError, SubmitError,
};
pub use fetch::{Fetch, FetchError};
pub use hooks::{Hooks, NoHooks, TargetOutcome};
pub use job::{Caller, Counts, Job, JobId, JobStatus, TargetEntry, TargetState};
pub use runner::Runner;
pub use store::{MemoryStore, Store};
pub use summary::{JobSummary, Progress};
pub use time::Timestamp;
pub use tokio_util::sync::CancellationToken;
