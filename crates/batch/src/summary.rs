//! What a service shows of a job without reading its targets: [`JobSummary`], and
//! [`Progress`], what a watcher sees after one event.
//!
//! Both are cheap: a store keeps each job's [`Counts`] beside its status and updates them in
//! the same step that stores a target, so neither needs a scan over the job's targets.
//!
//! # The merge rule
//!
//! Events about one job can arrive out of order (two replicas of a shared store announce
//! their changes independently). [`Progress::is_newer_than`] orders them without a clock:
//!
//! 1. A terminal status is never replaced: a job's status never changes after it ends. (A
//!    cancelled job's one in-flight target may still be stored after the cancel; a watcher
//!    that holds the `cancelled` progress keeps its counts, and a
//!    [`summary`](crate::store::CallerStore::summary) shows the final ones.)
//! 2. Otherwise the progress with more stored targets (`done + failed`) is newer: stored
//!    targets never become pending again.
//! 3. With as many stored targets, a move from `queued` to `running`, or from a live status
//!    to a terminal one, is newer; anything else (a repeat) is not.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::hooks::TargetOutcome;
use crate::job::{Counts, JobId, JobStatus};

/// A job without its targets: its status and how many targets are pending, done and failed.
///
/// What [`CallerStore::summary`](crate::store::CallerStore::summary) and [`CallerStore::jobs`](crate::store::CallerStore::jobs)
/// return; reading one costs the same for a job of one target or of a hundred thousand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JobSummary {
    /// Its id.
    pub id: JobId,
    /// Its status when the summary was taken.
    pub status: JobStatus,
    /// How many targets are pending, done and failed.
    pub counts: Counts,
    /// When it was submitted (serialized as RFC 3339 text in UTC).
    #[serde(with = "crate::rfc3339")]
    pub created: SystemTime,
    /// When its status or a target last changed (serialized as RFC 3339 text in UTC).
    #[serde(with = "crate::rfc3339")]
    pub updated: SystemTime,
}

impl JobSummary {
    /// A summary of job `id` (stores build these; tests compare against them).
    pub fn new(
        id: JobId,
        status: JobStatus,
        counts: Counts,
        created: SystemTime,
        updated: SystemTime,
    ) -> Self {
        Self {
            id,
            status,
            counts,
            created,
            updated,
        }
    }

    /// What a watcher of this job knows from the summary alone (no last target).
    pub fn progress(&self) -> Progress {
        Progress::new(self.status, self.counts, None)
    }
}

/// What a job's watcher sees after one event: the job's status and counts right after it,
/// and the target the event stored, if it stored one.
///
/// Stores report it in [`Completion::Stored`](crate::store::Completion::Stored) and, for
/// changes made by other processes, in [`StoreEvent::Progress`](crate::store::StoreEvent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// The job's status right after the event.
    pub status: JobStatus,
    /// The job's counts right after the event.
    pub counts: Counts,
    /// The index and outcome of the target the event stored; `None` for a submit, a start,
    /// a cancel, a busy retry or a release. Serialized as `{"index": 3, "outcome": "done"}`.
    #[serde(with = "last_target")]
    pub last: Option<(usize, TargetOutcome)>,
}

impl Progress {
    /// A progress report.
    pub fn new(status: JobStatus, counts: Counts, last: Option<(usize, TargetOutcome)>) -> Self {
        Self {
            status,
            counts,
            last,
        }
    }

    /// Whether `self` is later in the job's life than `other` (see the module's merge rule):
    /// a watcher keeps the newer of what it has and what arrives, so events that arrive out
    /// of order, or twice, never move it back.
    pub(crate) fn is_newer_than(&self, other: &Progress) -> bool {
        if !other.status.is_live() {
            return false;
        }
        let stored = |p: &Progress| p.counts.done + p.counts.failed;
        let (mine, theirs) = (stored(self), stored(other));
        if mine != theirs {
            return mine > theirs;
        }
        match (other.status, self.status) {
            (JobStatus::Queued, JobStatus::Running) => true,
            (_, status) => !status.is_live(),
        }
    }
}

/// [`Progress::last`] as `{"index": 3, "outcome": "done"}` (or `null`), not as a tuple.
mod last_target {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::hooks::TargetOutcome;

    #[derive(Serialize, Deserialize)]
    struct Last {
        index: usize,
        outcome: TargetOutcome,
    }

    pub(super) fn serialize<S: Serializer>(
        last: &Option<(usize, TargetOutcome)>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        last.map(|(index, outcome)| Last { index, outcome })
            .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<(usize, TargetOutcome)>, D::Error> {
        let last = Option::<Last>::deserialize(deserializer)?;
        Ok(last.map(|last| (last.index, last.outcome)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(status: JobStatus, pending: usize, done: usize, failed: usize) -> Progress {
        Progress::new(
            status,
            Counts {
                pending,
                done,
                failed,
            },
            None,
        )
    }

    #[test]
    fn more_stored_targets_are_newer() {
        let one = p(JobStatus::Running, 2, 1, 0);
        let two = p(JobStatus::Running, 1, 1, 1);
        assert!(two.is_newer_than(&one));
        assert!(!one.is_newer_than(&two));
    }

    #[test]
    fn a_start_is_newer_than_the_submit() {
        let queued = p(JobStatus::Queued, 3, 0, 0);
        let running = p(JobStatus::Running, 3, 0, 0);
        assert!(running.is_newer_than(&queued));
        assert!(!queued.is_newer_than(&running));
    }

    #[test]
    fn a_repeat_is_not_newer() {
        let running = p(JobStatus::Running, 3, 0, 0);
        assert!(!running.is_newer_than(&running));
        let queued = p(JobStatus::Queued, 3, 0, 0);
        assert!(!queued.is_newer_than(&queued));
    }

    #[test]
    fn an_end_is_newer_than_a_live_status_with_as_many_targets() {
        let running = p(JobStatus::Running, 2, 1, 0);
        let cancelled = p(JobStatus::Cancelled, 2, 1, 0);
        assert!(cancelled.is_newer_than(&running));
        assert!(cancelled.is_newer_than(&p(JobStatus::Queued, 2, 1, 0)));
        assert!(!running.is_newer_than(&cancelled));
    }

    #[test]
    fn a_terminal_status_is_never_replaced() {
        let cancelled = p(JobStatus::Cancelled, 2, 1, 0);
        // The in-flight target of a cancelled job stored afterwards: more targets, still
        // cancelled. It does not replace what the watcher has either.
        let later = p(JobStatus::Cancelled, 1, 2, 0);
        assert!(!later.is_newer_than(&cancelled));
        assert!(!p(JobStatus::Running, 0, 5, 0).is_newer_than(&cancelled));
        let done = p(JobStatus::Done, 0, 3, 0);
        assert!(!p(JobStatus::Partial, 0, 2, 1).is_newer_than(&done));
    }

    #[test]
    fn it_round_trips_through_json() {
        let progress = Progress::new(
            JobStatus::Running,
            Counts {
                pending: 1,
                done: 2,
                failed: 0,
            },
            Some((1, TargetOutcome::Done)),
        );
        let json = serde_json::to_string(&progress).unwrap();
        assert_eq!(serde_json::from_str::<Progress>(&json).unwrap(), progress);
    }
}
