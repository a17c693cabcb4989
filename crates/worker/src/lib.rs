#![doc = include_str!("../README.md")]
//!
//! ## Feature flags
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod builder;
mod core;
mod error;
mod handle;
mod pool;
#[cfg(feature = "metrics")]
mod pool_metrics;
mod submit_async;
mod sync;
mod task_span;

#[cfg(test)]
mod tests;

pub use builder::{Builder, DEFAULT_SUBMIT_BUFFER, MAX_UNFINISHED, MAX_WORKERS};
pub use error::{
    BuildError, CloseError, JoinError, JoinTimeoutError, PoolJoinError, SubmitError,
    SubmitTimeoutError, TrySubmitError,
};
pub use handle::TaskHandle;
pub use lockgate_panicguard::Panic;
pub use pool::Pool;
#[cfg(feature = "metrics")]
pub use pool_metrics::PoolMetrics;
pub use submit_async::{SpawnAsync, SubmitAsync};
