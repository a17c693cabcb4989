#![doc = include_str!("../README.md")]

mod catch;
#[cfg(feature = "future")]
mod future;
mod panic;

pub use catch::catch;
#[cfg(feature = "future")]
pub use future::{CatchUnwind, FutureExt};
pub use panic::Panic;
