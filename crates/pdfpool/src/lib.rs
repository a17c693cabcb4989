#![doc = include_str!("../README.md")]

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

pub use error::{BusyCause, Error};
pub use hooks::Hooks;
pub use pool::Pool;
