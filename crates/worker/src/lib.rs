#![doc = include_str!("../README.md")]

mod builder;
mod core;
mod error;
mod handle;
mod pool;
mod sync;

#[cfg(test)]
mod tests;

pub use builder::{Builder, DEFAULT_SUBMIT_BUFFER, MAX_WORKERS};
pub use error::{
    BuildError, CloseError, JoinError, JoinTimeoutError, PoolJoinError, SubmitError,
    SubmitTimeoutError, TrySubmitError,
};
pub use handle::TaskHandle;
pub use lockgate_panicguard::Panic;
pub use pool::Pool;
