//! Throughput benches (placeholder until the peers land).
fn main() {}
