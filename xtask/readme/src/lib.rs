//! The workspace README's Rust snippets as doc tests: `cargo test --doc` (the gate's test
//! step) compiles each one and runs it, so a snippet a newcomer copies compiles against the
//! crates as they are. Nothing else lives here; the package is never published.
#![cfg_attr(doctest, doc = include_str!("../../../README.md"))]
