//! The runner and the store API in one process: the runner suite over the in-memory store
//! (with and without leases), the runner's own API, leases and fencing, claims ahead, stores
//! finishing beside fetches, store errors, eviction, the executor it shares, stress, and
//! metrics (feature `metrics`). `store_api` and `store_eviction` check every store the same
//! way, SQLite and PostgreSQL included (each under its feature; PostgreSQL skips without a
//! server), as does the executor test with SQLite.

#[macro_use]
#[path = "../forward/mod.rs"]
mod forward;

#[cfg(feature = "postgres")]
#[path = "../pg/mod.rs"]
mod pg;
#[cfg(feature = "sqlite")]
#[path = "../scratch/mod.rs"]
mod scratch;
#[path = "../suite/mod.rs"]
mod suite;

mod claim_ahead;
mod close_races;
mod executor;
mod finish_beside;
mod leases;
mod memory_store;
mod memory_store_leased;
#[cfg(feature = "metrics")]
mod metrics;
mod rotation;
mod runner_api;
mod spans;
mod store_api;
mod store_errors;
mod store_eviction;
mod stress;
