//! [`Answer`]: one call's answer, as the checker compares it, and its kind for coverage.

use super::reference::{CancelOutcome, Claim, Completion, Refusal, Submitted};
use crate::job::{Caller, Job, JobId};
use crate::page::{JobListing, JobsPage, TargetsPage};
use crate::store::{Evicted, Timestamp};
use crate::summary::JobSummary;

/// A claim without its token: what must be equal between the reference and a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Granted {
    /// The job (the reference's id).
    pub(crate) job: JobId,
    /// Its caller.
    pub(crate) caller: Caller,
    /// The target's index.
    pub(crate) index: usize,
    /// The target, as JSON.
    pub(crate) target_json: String,
    /// When the target first came back busy.
    pub(crate) busy_since: Option<Timestamp>,
    /// A rescue of a lapsed claim.
    pub(crate) rescued: bool,
    /// The claim started its job.
    pub(crate) started: bool,
}

impl From<&Claim> for Granted {
    fn from(c: &Claim) -> Self {
        Self {
            job: c.job,
            caller: c.caller.clone(),
            index: c.index,
            target_json: c.target_json.clone(),
            busy_since: c.busy_since,
            rescued: c.rescued,
            started: c.started,
        }
    }
}

/// One answer, the reference's or a store's (its ids translated to the reference's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `submit`.
    Submit(Result<Submitted, Refusal>),
    /// `claim` (or the next claim a `finish` handed back).
    Claim(Option<Granted>),
    /// `renew`.
    Renewed(bool),
    /// `finish` with a result to store.
    Stored(Completion),
    /// `finish` with a busy retry.
    RetriedLater(Completion),
    /// `finish` with a release.
    Released(Completion),
    /// `touch`.
    Touched(bool),
    /// `cancel`.
    Cancel(CancelOutcome),
    /// `status`.
    Status(Option<Job>),
    /// `summary`.
    Summary(Option<JobSummary>),
    /// `jobs`.
    Jobs(Vec<JobSummary>),
    /// `jobs_page`.
    JobsPage(JobsPage),
    /// `job`.
    Job(Option<JobListing>),
    /// `targets_page`.
    TargetsPage(Option<TargetsPage>),
    /// `next_wakeup`.
    Wakeup(Option<Timestamp>),
    /// `evict_oldest`.
    Evicted(Evicted),
    /// `recover`.
    Recovered(usize),
}

impl Answer {
    /// What kind of answer this is, for [`Coverage`](super::coverage::Coverage): each kind
    /// names a rule the sequences should reach.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Submit(Ok(s)) if s.existing => "submit: the same key's job",
            Self::Submit(Ok(_)) => "submit: a new job",
            Self::Submit(Err(Refusal::Empty)) => "submit: empty",
            Self::Submit(Err(Refusal::Full)) => "submit: full",
            Self::Submit(Err(Refusal::CallerBusy { .. })) => "submit: caller busy",
            Self::Claim(None) => "claim: nothing ready",
            Self::Claim(Some(c)) if c.rescued => "claim: a rescue",
            Self::Claim(Some(c)) if c.started => "claim: starts its job",
            Self::Claim(Some(c)) if c.busy_since.is_some() => "claim: a busy target again",
            Self::Claim(Some(_)) => "claim: a running job",
            Self::Renewed(true) => "renew: current",
            Self::Renewed(false) => "renew: stale",
            Self::Stored(Completion::Stale) => "finish stored: stale",
            Self::Stored(Completion::Lost)
            | Self::RetriedLater(Completion::Lost)
            | Self::Released(Completion::Lost) => "finish: lost in a crash",
            Self::Stored(Completion::Stored { ended: Some(_), .. }) => {
                "finish stored: ends its job"
            }
            Self::Stored(Completion::Stored { progress, .. }) if !progress.status.is_live() => {
                "finish stored: into a cancelled job"
            }
            Self::Stored(_) => "finish stored: more to do",
            Self::RetriedLater(Completion::Stale) => "finish retry later: stale",
            Self::RetriedLater(_) => "finish retry later: current",
            Self::Released(Completion::Stale) => "finish released: stale",
            Self::Released(_) => "finish released: current",
            Self::Touched(true) => "touch: found",
            Self::Touched(false) => "touch: not found",
            Self::Cancel(CancelOutcome::NotFound) => "cancel: not found",
            Self::Cancel(CancelOutcome::Terminal) => "cancel: already ended",
            Self::Cancel(CancelOutcome::Cancelled(_)) => "cancel: cancelled",
            Self::Status(None) | Self::Summary(None) => "status or summary: not found",
            Self::Status(Some(_)) | Self::Summary(Some(_)) => "status or summary: found",
            Self::Jobs(jobs) if jobs.is_empty() => "jobs: none",
            Self::Jobs(_) => "jobs: some",
            Self::JobsPage(page) if page.jobs.is_empty() => "jobs_page: empty",
            Self::JobsPage(page) if page.next.is_some() => "jobs_page: a page with a next",
            Self::JobsPage(_) => "jobs_page: the last page",
            Self::Job(None) => "job: not found",
            Self::Job(Some(_)) => "job: found",
            Self::TargetsPage(None) => "targets_page: job not found",
            Self::TargetsPage(Some(page)) if page.targets.is_empty() => "targets_page: empty",
            Self::TargetsPage(Some(page)) if page.next.is_some() => {
                "targets_page: a page with a next"
            }
            Self::TargetsPage(Some(_)) => "targets_page: the last page",
            Self::Wakeup(None) => "next_wakeup: none",
            Self::Wakeup(Some(_)) => "next_wakeup: a time",
            Self::Evicted(e) if e.jobs == 0 => "evict_oldest: nothing",
            Self::Evicted(_) => "evict_oldest: some jobs",
            Self::Recovered(_) => "recover",
        }
    }
}
