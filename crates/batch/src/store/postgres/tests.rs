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

mod notes {
    use crate::hooks::TargetOutcome;
    use crate::job::{Counts, JobId, JobStatus};
    use crate::store::postgres::queries::Note;
    use crate::summary::Progress;

    fn note(wake: bool, last: Option<(usize, TargetOutcome)>) -> Note {
        let counts = Counts {
            pending: 3,
            done: 1,
            failed: 0,
        };
        Note {
            wake,
            job: JobId::new(17),
            progress: Progress::new(JobStatus::Running, counts, last),
        }
    }

    #[test]
    fn payloads_are_compact_and_read_back() {
        let stored = note(true, Some((0, TargetOutcome::Done)));
        assert_eq!(stored.payload(), "w 17 running 3 1 0 0 d");
        assert_eq!(Note::parse(&stored.payload()), Some(stored));
        let started = note(false, None);
        assert_eq!(started.payload(), "p 17 running 3 1 0");
        assert_eq!(Note::parse(&started.payload()), Some(started));
        let failed = note(false, Some((12, TargetOutcome::Failed)));
        assert_eq!(Note::parse(&failed.payload()), Some(failed));
    }

    #[test]
    fn malformed_payloads_are_refused() {
        for bad in [
            "",
            "w",
            "x 17 running 3 1 0",
            "w 17 sleeping 3 1 0",
            "w -1 running 3 1 0",
            "w 17 running 3 1",
            "w 17 running 3 1 0 0",
            "w 17 running 3 1 0 0 x",
            "w 17 running 3 1 0 zero d",
            "w 17 running 3 1 0 0 d extra",
        ] {
            assert_eq!(Note::parse(bad), None, "{bad:?}");
        }
    }
}
