#![doc = include_str!("../README.md")]

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
