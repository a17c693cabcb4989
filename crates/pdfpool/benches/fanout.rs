//! Placeholder: the fanout bench lands in a later commit.

fn main() {}
