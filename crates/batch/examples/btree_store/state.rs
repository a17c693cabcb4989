//! The state behind [`BTreeStore`](super::BTreeStore)'s lock: every job in a `BTreeMap`,
//! and each rule of the `Store` docs as one plain method that scans it.

use std::collections::BTreeMap;
use std::sync::Arc;

use lockgate_batch::page::{
    IndexedTarget, JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery,
};
use lockgate_batch::store::{
    CancelOutcome, Claim, ClaimEnd, Completion, Ended, Evicted, NewJob, Submitted, Timestamp,
};
use lockgate_batch::{
    Caller, Counts, InvalidJob, Job, JobId, JobStatus, JobSummary, Progress, SubmitError,
    TargetEntry, TargetOutcome, TargetState,
};

/// What the lock guards.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Every stored job by id; ids grow with submits, so this is submit order too.
    jobs: BTreeMap<JobId, Entry>,
    /// The last id given.
    last_id: u64,
    /// The last fencing token given.
    last_token: u64,
    /// Where the rotation's next scan starts: the id after the job claimed last.
    cursor: u64,
    /// The last touch time given: a counter, so that eviction order never ties.
    last_touch: u64,
}

/// One stored job.
#[derive(Debug)]
struct Entry {
    caller: Caller,
    key: Option<String>,
    status: JobStatus,
    created: Timestamp,
    /// Its submit, its first claim, each stored target, its cancel.
    updated: Timestamp,
    targets: Vec<Arc<str>>,
    results: Vec<TargetState>,
    /// Kept beside the results, so that a summary costs no scan.
    counts: Counts,
    /// The token of the claim out, if one is.
    token: Option<u64>,
    /// Where the claim out started its walk: the cursor a release hands back.
    claim_from: u64,
    /// When its next target first came back busy, if it has.
    busy_since: Option<Timestamp>,
    /// Not ready again before this.
    retry_at: Option<Timestamp>,
    /// Its touch time: its submit, its last `touch`, or when it became evictable.
    touched: u64,
}

impl Entry {
    /// Live, a pending target, no claim out, and its retry time (if any) has come.
    fn ready(&self, now: Timestamp) -> bool {
        self.status.is_live()
            && self.counts.pending > 0
            && self.token.is_none()
            && self.retry_at.is_none_or(|at| at <= now)
    }

    /// The bytes it holds: its targets' JSON and its stored results.
    fn bytes(&self) -> u64 {
        let targets = self.targets.iter().map(|target| target.len() as u64);
        targets
            .chain(self.results.iter().map(TargetState::stored_bytes))
            .sum()
    }

    fn summary(&self, id: JobId) -> JobSummary {
        let (created, updated) = (self.created.to_system_time(), self.updated.to_system_time());
        JobSummary::new(id, self.status, self.counts, created, updated)
    }

    fn snapshot(&self, id: JobId) -> Job {
        let entries = self.targets.iter().zip(&self.results);
        let targets =
            entries.map(|(target, state)| TargetEntry::new(target.to_string(), state.clone()));
        let (created, updated) = (self.created.to_system_time(), self.updated.to_system_time());
        Job::new(id, self.status, created, updated, targets.collect())
    }

    /// Stores target `index`'s `result`, ending the job if it was its last pending target
    /// and the job is live. Returns the bytes added and the job's progress right after.
    fn store(&mut self, index: usize, result: TargetState, now: Timestamp) -> (u64, Progress) {
        let outcome = if matches!(result, TargetState::Done { .. }) {
            self.counts.done += 1;
            TargetOutcome::Done
        } else {
            self.counts.failed += 1;
            TargetOutcome::Failed
        };
        self.counts.pending -= 1;
        let bytes = result.stored_bytes();
        self.results[index] = result;
        self.busy_since = None;
        self.updated = now;
        if self.status.is_live() && self.counts.pending == 0 {
            self.status = match (self.counts.done, self.counts.failed) {
                (_, 0) => JobStatus::Done,
                (0, _) => JobStatus::Failed,
                _ => JobStatus::Partial,
            };
        }
        (
            bytes,
            Progress::new(self.status, self.counts, Some((index, outcome))),
        )
    }
}

impl State {
    fn live_jobs(&self) -> usize {
        self.jobs
            .values()
            .filter(|job| job.status.is_live())
            .count()
    }

    /// Gives job `id` the next touch time.
    fn touch(&mut self, id: JobId) {
        self.last_touch += 1;
        if let Some(job) = self.jobs.get_mut(&id) {
            job.touched = self.last_touch;
        }
    }

    /// `caller`'s job `id`: another caller's job is as absent as a missing one.
    fn own(&mut self, id: JobId, caller: &Caller) -> Option<&mut Entry> {
        self.jobs.get_mut(&id).filter(|job| job.caller == *caller)
    }

    /// The job `claim` is for, if `claim` is its current claim.
    fn current(&mut self, claim: &Claim) -> Option<&mut Entry> {
        self.jobs
            .get_mut(&claim.job)
            .filter(|job| job.token == Some(claim.token))
    }

    /// No lease to extend: a claim is current until it finishes.
    pub(super) fn renew(&mut self, claim: &Claim) -> bool {
        self.current(claim).is_some()
    }

    pub(super) fn status(&mut self, id: JobId, caller: &Caller) -> Option<Job> {
        self.own(id, caller).map(|job| job.snapshot(id))
    }

    pub(super) fn summary(&mut self, id: JobId, caller: &Caller) -> Option<JobSummary> {
        self.own(id, caller).map(|job| job.summary(id))
    }

    /// `caller`'s jobs, in submit order.
    pub(super) fn jobs_of(&self, caller: &Caller) -> Vec<JobSummary> {
        let mine = self.jobs.iter().filter(|(_, job)| job.caller == *caller);
        mine.map(|(&id, job)| job.summary(id)).collect()
    }

    /// Job `id` with whose it is and its key, if `scope` covers it.
    pub(super) fn job(&self, scope: &Scope, id: JobId) -> Option<JobListing> {
        let job = self.jobs.get(&id).filter(|job| scope.covers(&job.caller))?;
        Some(JobListing::new(
            job.summary(id),
            job.caller.clone(),
            job.key.clone(),
        ))
    }

    /// The jobs `scope` covers, newest first, below the query's key and in its status: one
    /// row past the page tells whether a next page exists.
    pub(super) fn jobs_page(&self, scope: &Scope, query: &JobsQuery) -> JobsPage {
        let below = query.before.unwrap_or(JobId::new(u64::MAX));
        let len = query.page_len();
        let mut ids: Vec<JobId> = self
            .jobs
            .range(..below)
            .rev()
            .filter(|(_, job)| scope.covers(&job.caller))
            .filter(|(_, job)| query.status.is_none_or(|status| job.status == status))
            .map(|(&id, _)| id)
            .take(len + 1)
            .collect();
        let next = (ids.len() > len).then(|| ids[len - 1]);
        ids.truncate(len);
        let jobs = ids.into_iter().filter_map(|id| self.job(scope, id));
        JobsPage::new(jobs.collect(), next)
    }

    /// Job `id`'s targets after the query's key and in its state, if `scope` covers it.
    pub(super) fn targets_page(
        &self,
        scope: &Scope,
        id: JobId,
        query: &TargetsQuery,
    ) -> Option<TargetsPage> {
        let listing = self.job(scope, id)?;
        let job = &self.jobs[&id];
        let len = query.page_len();
        let mut targets: Vec<IndexedTarget> = job
            .targets
            .iter()
            .zip(&job.results)
            .enumerate()
            .filter(|(index, _)| query.after.is_none_or(|after| *index > after))
            .filter(|(_, (_, state))| query.state.is_none_or(|kind| state.kind() == kind))
            .take(len + 1)
            .map(|(index, (target, state))| {
                IndexedTarget::new(index, TargetEntry::new(target.to_string(), state.clone()))
            })
            .collect();
        let next = (targets.len() > len).then(|| targets[len - 1].index);
        targets.truncate(len);
        Some(TargetsPage::new(listing, targets, next))
    }

    /// Job `id`'s end, now.
    fn ended(&self, id: JobId, now: Timestamp) -> Ended {
        let job = &self.jobs[&id];
        let after = now.saturating_since(job.created);
        Ended::new(id, job.status, job.counts, after, self.live_jobs())
    }

    /// Refuses an empty job first, then answers the caller's stored job with the same key,
    /// then refuses with `Full`, then with `CallerBusy`: the order the docs ask.
    pub(super) fn submit(&mut self, new: NewJob) -> Result<Submitted, SubmitError> {
        if new.targets.is_empty() {
            return Err(InvalidJob::Empty.into());
        }
        let mine = |job: &Entry| job.caller == new.caller;
        if let Some(key) = &new.key {
            let same = self
                .jobs
                .iter()
                .find(|(_, j)| mine(j) && j.key.as_ref() == Some(key));
            if let Some((&id, _)) = same {
                return Ok(Submitted::found_by_key(id, self.live_jobs()));
            }
        }
        if self.live_jobs() >= new.max_live_jobs {
            return Err(SubmitError::Full);
        }
        if let Some((&live, _)) = self
            .jobs
            .iter()
            .find(|(_, j)| mine(j) && j.status.is_live())
        {
            return Err(SubmitError::CallerBusy { live });
        }
        self.last_id += 1;
        let id = JobId::new(self.last_id);
        self.last_touch += 1;
        let pending = new.targets.len();
        self.jobs.insert(
            id,
            Entry {
                caller: new.caller,
                key: new.key,
                status: JobStatus::Queued,
                created: new.now,
                updated: new.now,
                targets: new.targets.into_iter().map(Arc::from).collect(),
                results: vec![TargetState::Pending; pending],
                counts: Counts::new(pending, 0, 0),
                token: None,
                claim_from: 0,
                busy_since: None,
                retry_at: None,
                touched: self.last_touch,
            },
        );
        Ok(Submitted::new(id, self.live_jobs()))
    }

    /// The rotation: the first ready job from the cursor on, wrapping once.
    pub(super) fn claim(&mut self, now: Timestamp) -> Option<Claim> {
        let from = JobId::new(self.cursor);
        let (after, before) = (self.jobs.range(from..), self.jobs.range(..from));
        let id = *after.chain(before).find(|(_, job)| job.ready(now))?.0;
        let claim_from = std::mem::replace(&mut self.cursor, id.get() + 1);
        self.last_token += 1;
        let job = self.jobs.get_mut(&id)?;
        let index = job
            .results
            .iter()
            .position(|r| matches!(r, TargetState::Pending))?;
        let started = job.status == JobStatus::Queued;
        if started {
            job.status = JobStatus::Running;
            job.updated = now;
        }
        job.token = Some(self.last_token);
        job.claim_from = claim_from;
        job.retry_at = None;
        let target = Arc::clone(&job.targets[index]);
        let mut claim = Claim::new(id, job.caller.clone(), index, target, self.last_token);
        claim.busy_since = job.busy_since;
        claim.started = started;
        Some(claim)
    }

    /// Ends `claim` as `end` says, if it is current; a job no longer live becomes evictable.
    /// A released claim hands its turn back if no other claim moved the cursor since.
    pub(super) fn finish(&mut self, claim: &Claim, end: ClaimEnd, now: Timestamp) -> Completion {
        let cursor = self.cursor;
        let Some(job) = self.current(claim) else {
            return Completion::Stale;
        };
        let hand_back =
            (end == ClaimEnd::Released && cursor == claim.job.get() + 1).then_some(job.claim_from);
        job.token = None;
        let was_live = job.status.is_live();
        let stored = match end {
            ClaimEnd::Stored(result) => Some(job.store(claim.index, result, now)),
            ClaimEnd::RetryLater { busy_since, at } => {
                job.busy_since = Some(busy_since);
                job.retry_at = Some(at);
                None
            }
            ClaimEnd::Released => None,
        };
        let live = job.status.is_live();
        if let Some(from) = hand_back {
            self.cursor = from;
        }
        if !live {
            // Ended with no claim out: evictable from now on, which counts as its touch.
            self.touch(claim.job);
        }
        let Some((bytes, progress)) = stored else {
            return Completion::Pending;
        };
        // The job ended now if this result moved it from live to terminal.
        let ended = (was_live && !live).then(|| self.ended(claim.job, now));
        Completion::Stored {
            bytes,
            ended,
            progress,
        }
    }

    /// The earliest retry time still to come of a job that waits only for it (no leases).
    pub(super) fn next_wakeup(&self, now: Timestamp) -> Option<Timestamp> {
        let waiting =
            |job: &&Entry| job.status.is_live() && job.token.is_none() && job.counts.pending > 0;
        let retries = self
            .jobs
            .values()
            .filter(waiting)
            .filter_map(|job| job.retry_at);
        retries.filter(|&at| at > now).min()
    }

    /// Frees every claim: their holder went with its process.
    pub(super) fn recover(&mut self) -> usize {
        let held: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, job)| job.token.is_some())
            .map(|(&id, _)| id)
            .collect();
        for id in held {
            let job = self.jobs.get_mut(&id).expect("a job just listed");
            job.token = None;
            if !job.status.is_live() {
                self.touch(id);
            }
        }
        self.live_jobs()
    }

    /// Marks `caller`'s job `id` recently used; `false` if not found.
    pub(super) fn touch_own(&mut self, id: JobId, caller: &Caller) -> bool {
        let found = self.own(id, caller).is_some();
        if found {
            self.touch(id);
        }
        found
    }

    /// Cancels `caller`'s live job `id`; a claim out stays out and is stored when it ends.
    pub(super) fn cancel(&mut self, id: JobId, caller: &Caller, now: Timestamp) -> CancelOutcome {
        let Some(job) = self.own(id, caller) else {
            return CancelOutcome::NotFound;
        };
        if !job.status.is_live() {
            return CancelOutcome::Terminal;
        }
        job.status = JobStatus::Cancelled;
        job.updated = now;
        // A claim out keeps it from eviction until that claim ends, which then touches it.
        if job.token.is_none() {
            self.touch(id);
        }
        CancelOutcome::Cancelled(self.ended(id, now))
    }

    /// Removes ended jobs with no claim out, least recently touched first, while the bytes
    /// stored are above `max_bytes`.
    pub(super) fn evict_oldest(&mut self, max_bytes: u64) -> Evicted {
        let mut evicted = Evicted::default();
        let mut stored: u64 = self.jobs.values().map(Entry::bytes).sum();
        while stored > max_bytes {
            let idle_and_ended =
                |(_, job): &(&JobId, &Entry)| !job.status.is_live() && job.token.is_none();
            let oldest = self
                .jobs
                .iter()
                .filter(idle_and_ended)
                .min_by_key(|(_, job)| job.touched);
            let Some((&id, _)) = oldest else {
                break;
            };
            let bytes = self.jobs.remove(&id).map_or(0, |job| job.bytes());
            stored -= bytes;
            evicted.jobs += 1;
            evicted.bytes += bytes;
            evicted.largest = evicted.largest.max(bytes);
        }
        evicted
    }
}
