#![doc = include_str!("../README.md")]
//!
//! ## Feature flags
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "tower")]
mod admission;
mod error;
mod fast;
/// The admission gate alone, for its loom models: the loom step builds without features, and
/// the layer around the gate needs feature `tower`.
#[cfg(all(test, loom, not(feature = "tower")))]
#[path = "admission/gate.rs"]
#[allow(dead_code)]
pub(crate) mod gate;
mod hooks;
mod job;
#[cfg(feature = "metrics")]
mod metrics_hooks;
mod pool;
#[cfg(feature = "axum")]
mod responses;
mod shared;
mod slab;
mod sync;
pub(crate) mod table;
#[cfg(test)]
mod tests;
mod wait;

#[cfg(feature = "tower")]
pub use admission::{Admission, AdmissionError, AdmissionFuture, AdmissionLayer, Rejected};
pub use error::{BusyCause, Error};
pub use hooks::Hooks;
#[cfg(feature = "metrics")]
pub use metrics_hooks::MetricsHooks;
pub use pool::Pool;
