//! Placeholder: the uncontended bench lands in a later commit.

fn main() {}
