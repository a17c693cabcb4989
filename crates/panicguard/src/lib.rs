#![doc = include_str!("../README.md")]
//!
//! ## Feature flags
#![doc = document_features::document_features!()]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod catch;
#[cfg(feature = "future")]
mod future;
mod panic;

pub use catch::catch;
#[cfg(feature = "future")]
#[allow(deprecated)]
pub use future::CatchUnwind;
#[cfg(feature = "future")]
pub use future::{CatchPanic, FutureExt};
pub use panic::Panic;
