//! Placeholder: the contention bench lands in a later commit.

fn main() {}
