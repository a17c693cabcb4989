//! The decisions both SQL stores share, written once: which rows are live, claimable and
//! evictable, the rotation's order, and how a row's columns become a [`Counts`] or a
//! [`JobStatus`].
//!
//! The SQLite and PostgreSQL stores build their statements from these fragments (their
//! placeholders differ, `?1` and `$1`, so the fragments take none). SQLite's partial indexes
//! repeat the same predicates word for word: SQLite uses a partial index only when the
//! query's `WHERE` contains the index's. PostgreSQL's name only `LIVE` and the job's status,
//! so that storing a target stays a HOT update (its schema version 4).
//!
//! | decision | rule |
//! |---|---|
//! | live | `queued` or `running` |
//! | has work | a pending target: `next < total` (targets are stored in order) |
//! | claimable | live, has work, no claim out (PostgreSQL: or its lease lapsed), retry time come |
//! | rotation | the first claimable job from the cursor on, wrapping once: `id >= cursor ORDER BY id`, else from the start |
//! | evictable | not live, no claim out; least recently touched first (`touch_seq`) |
//! | settled | all done → `done`, all failed → `failed`, else `partial` |

use crate::job::{Counts, JobId, JobStatus};
use crate::time::Timestamp;

/// `WHERE` text of a live job.
pub(crate) const LIVE: &str = "status IN ('queued', 'running')";

/// `WHERE` text of a job with a pending target.
pub(crate) const HAS_WORK: &str = "next < total";

/// `WHERE` text of a job with no claim out (before a store's lease rule).
pub(crate) const IDLE: &str = "in_flight IS NULL";

/// `WHERE` text of an ended job with no claim out: what eviction may remove.
pub(crate) const EVICTABLE: &str = "status NOT IN ('queued', 'running') AND in_flight IS NULL";

/// A job's terminal status from its counts *before* the `UPDATE` that stores its last target
/// and that target's increments (`$3` done, `$4` failed): all done → `done`, all failed →
/// `failed`, else `partial` (`JobStatus::settled`, in SQL).
#[cfg(feature = "postgres")]
pub(crate) const SETTLED: &str = "CASE WHEN failed + $4 = 0 THEN 'done' \
     WHEN done + $3 = 0 THEN 'failed' ELSE 'partial' END";

/// The rotation's order: the jobs in submit order, which is id order (see `Store`'s docs).
/// A claim walks it from the cursor, and from the start only when that finds nothing.
pub(crate) const ROTATION: &str = "ORDER BY id";

/// A jobs page's key as the highest id the page may hold (`id <= ?`): every id below
/// `before`, every id at all without one. Ids start at 1, so `before` 0 (or 1) holds none.
pub(crate) fn highest_id(before: Option<JobId>) -> i64 {
    before.map_or(i64::MAX, |before| {
        i64::try_from(before.get().saturating_sub(1)).unwrap_or(i64::MAX)
    })
}

/// A targets page's key as the index its targets follow (`idx > ?`): -1 without one, so
/// that index 0 is past it.
pub(crate) fn after_index(after: Option<usize>) -> i64 {
    after.map_or(-1, |after| i64::try_from(after).unwrap_or(i64::MAX))
}

/// A page's row count as its `LIMIT`: one row past the page, to know whether a next page
/// exists (`page::cut`).
pub(crate) fn limit_past(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX).saturating_add(1)
}

/// A timestamp as its column value: microseconds since the Unix epoch.
pub(crate) fn to_micros(t: Timestamp) -> i64 {
    i64::try_from(t.as_micros()).unwrap_or(i64::MAX)
}

/// A column value back as a timestamp (a negative one, which no store writes, as the epoch).
pub(crate) fn from_micros(micros: i64) -> Timestamp {
    Timestamp::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// A job's counts from its row's `total`, `done` and `failed`.
pub(crate) fn counts(total: i64, done: i64, failed: i64) -> Counts {
    Counts {
        pending: usize::try_from(total - done - failed).unwrap_or(0),
        done: usize::try_from(done).unwrap_or(0),
        failed: usize::try_from(failed).unwrap_or(0),
    }
}

/// A `status` column's word as a status; `Err` names the word, for the store's `InvalidRow`.
pub(crate) fn status(word: &str) -> Result<JobStatus, String> {
    JobStatus::parse(word).ok_or_else(|| format!("job status {word:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_keys_bound_the_ids_and_indexes_asked_for() {
        assert_eq!(highest_id(None), i64::MAX);
        assert_eq!(highest_id(Some(JobId::new(7))), 6);
        assert_eq!(highest_id(Some(JobId::new(0))), 0);
        assert_eq!(highest_id(Some(JobId::new(u64::MAX))), i64::MAX);
        assert_eq!(after_index(None), -1);
        assert_eq!(after_index(Some(3)), 3);
        assert_eq!(after_index(Some(usize::MAX)), i64::MAX);
        assert_eq!(limit_past(50), 51);
    }

    #[test]
    fn counts_never_go_negative() {
        assert_eq!(counts(5, 2, 1).pending, 2);
        assert_eq!(counts(1, 2, 0).pending, 0);
    }

    #[test]
    fn every_status_word_round_trips() {
        for status in JobStatus::ALL {
            assert_eq!(super::status(status.as_str()), Ok(status));
        }
        assert!(super::status("lost").is_err());
    }
}
