#![doc = include_str!("../README.md")]

mod error;
mod job;
mod pool;
mod slab;
mod sync;
pub(crate) mod table;
#[cfg(test)]
mod tests;
mod wait;

pub use error::Error;
pub use pool::Pool;
