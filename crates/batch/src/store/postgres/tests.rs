//! Unit tests of the PostgreSQL store's pieces that need no server.

use super::error::transient;

#[test]
fn connection_losses_and_races_are_transient() {
    // connection failure, admin shutdown (pg_terminate_backend), crash shutdown,
    // serialization failure, deadlock, too many connections
    for code in ["08006", "57P01", "57P02", "40001", "40P01", "53300"] {
        assert!(transient(code), "{code}");
    }
}

#[test]
fn refusals_are_lasting() {
    // unique violation, undefined table, insufficient privilege, disk full
    for code in ["23505", "42P01", "42501", "53100"] {
        assert!(!transient(code), "{code}");
    }
}
