#![doc = include_str!("../README.md")]

#[cfg(feature = "tower")]
mod admission;
mod error;
mod hooks;
mod job;
mod pool;
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
pub use pool::Pool;
