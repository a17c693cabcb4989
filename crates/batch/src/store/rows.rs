//! A job's and a target's SQL rows as the crate's types: written once for both SQL stores.
//!
//! The SQLite and PostgreSQL stores read the same columns (the schemas agree column for
//! column, `store/sql.rs`) through different clients; each reads a row's values into the
//! plain structs here and lets these functions decide what they mean. A value no store writes
//! (an unknown status or target state) is an `Err` naming it, which each store reports as its
//! own `InvalidRow`.

use crate::job::{Caller, Job, JobId, TargetEntry, TargetState};
use crate::page::JobListing;
use crate::store::sql::{counts, from_micros, status};
use crate::summary::JobSummary;

/// The `targets` columns a [`TargetRow`] is read from, in its fields' order.
pub(crate) const TARGET_COLUMNS: &str = "target, state, output, error, hint";

/// The `jobs` columns a [`SummaryRow`] is read from, in its fields' order.
pub(crate) const SUMMARY_COLUMNS: &str = "id, status, created, updated, total, done, failed";

/// The `jobs` columns a [`ListingRow`] is read from: [`SUMMARY_COLUMNS`], then whose the job
/// is and its idempotency key.
pub(crate) const LISTING_COLUMNS: &str =
    "id, status, created, updated, total, done, failed, caller, key";

/// One row of `targets`: [`TARGET_COLUMNS`].
pub(crate) struct TargetRow {
    pub(crate) target: String,
    pub(crate) state: String,
    pub(crate) output: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) hint: Option<String>,
}

impl TargetRow {
    /// The target and its state.
    pub(crate) fn entry(self) -> Result<TargetEntry, String> {
        let state = TargetState::from_columns(&self.state, self.output, self.error, self.hint)
            .ok_or_else(|| format!("target state {:?}", self.state))?;
        Ok(TargetEntry {
            target_json: self.target,
            state,
        })
    }
}

/// A job's own columns beside its targets: `status, created, updated`.
pub(crate) struct JobRow {
    pub(crate) status: String,
    pub(crate) created: i64,
    pub(crate) updated: i64,
}

impl JobRow {
    /// Job `id` with `targets` (in index order).
    pub(crate) fn job(self, id: JobId, targets: Vec<TargetEntry>) -> Result<Job, String> {
        Ok(Job {
            id,
            status: status(&self.status)?,
            created: from_micros(self.created).to_system_time(),
            updated: from_micros(self.updated).to_system_time(),
            targets,
        })
    }
}

/// One row of `jobs` as a summary: [`SUMMARY_COLUMNS`].
pub(crate) struct SummaryRow {
    pub(crate) id: i64,
    pub(crate) status: String,
    pub(crate) created: i64,
    pub(crate) updated: i64,
    pub(crate) total: i64,
    pub(crate) done: i64,
    pub(crate) failed: i64,
}

impl SummaryRow {
    /// The job's summary.
    pub(crate) fn summary(self) -> Result<JobSummary, String> {
        Ok(JobSummary::new(
            JobId::new(self.id as u64),
            status(&self.status)?,
            counts(self.total, self.done, self.failed),
            from_micros(self.created).to_system_time(),
            from_micros(self.updated).to_system_time(),
        ))
    }
}

/// One row of `jobs` as a page's row: [`LISTING_COLUMNS`].
pub(crate) struct ListingRow {
    pub(crate) summary: SummaryRow,
    pub(crate) caller: String,
    pub(crate) key: Option<String>,
}

impl ListingRow {
    /// The job's row of a page.
    pub(crate) fn listing(self) -> Result<JobListing, String> {
        Ok(JobListing::new(
            self.summary.summary()?,
            Caller::new(self.caller),
            self.key,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobStatus;

    #[test]
    fn unknown_words_are_errors_that_name_them() {
        let target = TargetRow {
            target: "1".into(),
            state: "lost".into(),
            output: None,
            error: None,
            hint: None,
        };
        assert!(target.entry().unwrap_err().contains("\"lost\""));
        let job = JobRow {
            status: "gone".into(),
            created: 0,
            updated: 0,
        };
        assert!(job.job(JobId::new(1), vec![]).unwrap_err().contains("gone"));
    }

    #[test]
    fn a_summary_row_reads_its_counts() {
        let row = SummaryRow {
            id: 7,
            status: "running".into(),
            created: 1,
            updated: 2,
            total: 5,
            done: 2,
            failed: 1,
        };
        let summary = row.summary().unwrap();
        assert_eq!(summary.id, JobId::new(7));
        assert_eq!(summary.status, JobStatus::Running);
        assert_eq!(summary.counts.pending, 2);
    }
}
