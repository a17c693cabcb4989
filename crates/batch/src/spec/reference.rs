//! The reference store: the [`Store`](crate::store::Store) contract's documented rules,
//! written as plainly as possible, for the kit to hold every real store against.
//!
//! It is written from the contract's documentation (`src/store/mod.rs`), not from any store:
//! one `Vec` of jobs in submit order, scanned from the start by every call, with nothing
//! cached that can be computed (counts, bytes and the live-job count are recounted on every
//! read). It is slow on purpose; the point is that each rule reads as one short, obviously
//! right function, so a disagreement with a real store is a question about the store (or
//! about the docs), never about an index that drifted.
//!
//! Each method mirrors the store call of the same name, takes the same arguments, and returns
//! the same answer, in plain copies of the crate's answer types: the checker translates each
//! store's ids into the reference's before comparing, and leaves out what is the store's own
//! business (its tokens, whether `finish` hands a next claim back).
//!
//! # The rules, as modelled here
//!
//! - **Rotation.** The jobs form one list in submit order (new jobs at the end), and the
//!   store keeps one cursor into it, at the start while nothing was claimed. A claim scans
//!   the list from the cursor to the end, then from the start up to the cursor (wrapping
//!   once), for the first *ready* job (live, a pending target, no current claim, and no
//!   retry time still to come), claims its first pending target, marks it `running`
//!   (reporting `started` if it was `queued`), and sets the cursor to the job after it. A
//!   job it skips (in flight, waiting to retry) passes behind the cursor like any other. A
//!   claim that ends [`ClaimEnd::Released`] hands its turn back: if the cursor still stands
//!   just after its job (no other claim moved it since), it goes back to where that claim's
//!   walk started; otherwise nothing moves.
//! - **Fencing.** Each claim gets a fresh token; `renew` and `finish` act only under the
//!   job's current token, and `finish` ends the claim whichever way it ends
//!   ([`ClaimEnd::Stored`], [`ClaimEnd::RetryLater`], [`ClaimEnd::Released`]).
//! - **The next claim.** A `finish` asked to `take_next` may claim in the same step, or not:
//!   that is the store's choice. When the store hands a claim back, it must be the claim
//!   [`claim`](Reference::claim) would make right after the finish, among the other jobs
//!   ([`Reference::claim_next`]); a stale finish, or one not asked, hands none back.
//! - **Leases** (only with [`Rules::lease`]). A claim's lease ends `lease` after its claim,
//!   and a renew moves the end to `now + lease` (never earlier). A claim whose lease end has
//!   come (`end <= now`) is taken back by the next `claim`, before it picks: its token goes
//!   stale and its job's next claim reports `rescued`; a taken-back claim on a cancelled job
//!   simply ends. Until then it is still current (a late `renew` or `finish` still works).
//! - **Recover.** A store owned by one process ([`Rules::recover_frees_claims`]) frees every
//!   claim (its holder is gone; the next claim is not a rescue); a shared store leaves claims
//!   to their leases. Either way it answers the live-job count.
//! - **Bytes.** A job's bytes are its targets' JSON and its stored results
//!   ([`TargetState::stored_bytes`]); a stored result adds its own.
//! - **Eviction order.** A job's touch time is the latest of its submit, its last `touch`,
//!   and the moment it became evictable (ended with no claim out: a cancel of an idle job,
//!   the finish that stores its last target, or the end of the claim a cancelled job still
//!   had out). Ties are impossible: one counter orders them all. When one claim takes back
//!   several lapsed claims of cancelled jobs, they become evictable in order of lease end,
//!   then submit order.
//! - **Pages.** A jobs page is the jobs the scope covers (a caller's own, or everyone's),
//!   in the query's status if it names one, with an id below its `before` key, highest id
//!   first, cut to the query's clamped `limit`; its `next` is the last row's id when more
//!   rows were left out. A targets page is the same over one job's targets (if the scope
//!   covers the job), by index above `after`, lowest first. Each row carries the job's
//!   caller and key.
//! - **Wake-ups.** [`Reference::next_wakeup`] is the earliest lease end of a current claim or
//!   the earliest retry time still to come of a job that waits only for it. A retry time that
//!   has already come is not a wake-up of its own here, since such a job is simply ready;
//!   [`Reference::passed_retries`] lists those times, which a store may still report (the
//!   docs allow any time at or before now when a claim now finds work).

use std::time::Duration;

use super::Rules;
use crate::hooks::TargetOutcome;
use crate::job::{Caller, Counts, Job, JobId, JobStatus, TargetEntry, TargetState};
use crate::page::{
    IndexedTarget, JobListing, JobsPage, JobsQuery, Scope, TargetsPage, TargetsQuery,
};
use crate::store::{ClaimEnd, Evicted, NewJob, Timestamp};
use crate::summary::{JobSummary, Progress};

/// [`crate::store::Submitted`], as the reference answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Submitted {
    /// The job's id: new, or the caller's stored job with the same key.
    pub(crate) id: JobId,
    /// Live jobs right after.
    pub(crate) live_jobs: usize,
    /// The caller had a job stored with the same key; nothing was added.
    pub(crate) existing: bool,
}

/// The refusals of [`crate::SubmitError`] that a store itself decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The job has no targets.
    Empty,
    /// `max_live_jobs` jobs are live already.
    Full,
    /// The caller has a live job already: this one.
    CallerBusy {
        /// The caller's live job.
        live: JobId,
    },
}

/// [`crate::store::Claim`], as the reference hands it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The job.
    pub(crate) job: JobId,
    /// Its caller.
    pub(crate) caller: Caller,
    /// The target's index.
    pub(crate) index: usize,
    /// The target, as JSON.
    pub(crate) target_json: String,
    /// The fencing token (the reference counts from 1).
    pub(crate) token: u64,
    /// When this target first came back busy, if it has.
    pub(crate) busy_since: Option<Timestamp>,
    /// This claim takes over one whose lease lapsed.
    pub(crate) rescued: bool,
    /// This claim moved its job from `queued` to `running`.
    pub(crate) started: bool,
}

/// [`crate::store::Ended`], as the reference reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The job.
    pub(crate) job: JobId,
    /// Its terminal status.
    pub(crate) status: JobStatus,
    /// Its counts when it ended.
    pub(crate) counts: Counts,
    /// How long after its submit it ended.
    pub(crate) after: Duration,
    /// Live jobs right after.
    pub(crate) live_jobs: usize,
}

/// [`crate::store::Completion`], as the reference reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completion {
    /// The result is stored.
    Stored {
        /// The bytes it added.
        bytes: u64,
        /// Set when the job ended now.
        ended: Option<Ended>,
        /// The job right after.
        progress: Progress,
    },
    /// The claim ended without a result (a busy retry or a release).
    Pending,
    /// The claim is not current: nothing changed.
    Stale,
    /// The store said the claim was lost in a crash ([`crate::store::Completion::Lost`]),
    /// which no sequence of the spec makes: a store's answer only, never the reference's.
    Lost,
}

/// [`crate::store::CancelOutcome`], as the reference reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelOutcome {
    /// No such job for this caller.
    NotFound,
    /// The job had ended already.
    Terminal,
    /// The job is cancelled now.
    Cancelled(Ended),
}

/// The claim a job has out.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// Its fencing token.
    token: u64,
    /// When it lapses unless renewed; `None` without leases.
    lease_end: Option<Timestamp>,
    /// Where its walk started: the cursor before it, which a release gives back.
    from: JobId,
}

/// One stored job.
#[derive(Debug, Clone)]
struct Entry {
    /// Its id.
    id: JobId,
    /// Who submitted it.
    caller: Caller,
    /// Its idempotency key.
    key: Option<String>,
    /// Its status.
    status: JobStatus,
    /// Its submit time.
    created: Timestamp,
    /// When its status or a target last changed: its submit, its first claim, each stored
    /// target, its cancel.
    updated: Timestamp,
    /// Its targets, as JSON.
    targets: Vec<String>,
    /// One per target; `Pending` until stored.
    results: Vec<TargetState>,
    /// One per target: the token of the claim that stored it (for replayed stores).
    stored_by: Vec<Option<u64>>,
    /// The claim out, if any.
    held: Option<Held>,
    /// Its last claim was taken back after its lease lapsed: the next claim is a rescue.
    rescue: bool,
    /// When its next target first came back busy, if it has.
    busy_since: Option<Timestamp>,
    /// Not ready before this (set by a finish with `RetryLater`, cleared by its next claim).
    retry_at: Option<Timestamp>,
    /// Its touch time, on the store-wide touch counter.
    touched: u64,
}

impl Entry {
    /// Its counts, by counting.
    fn counts(&self) -> Counts {
        let count = |word: &str| self.results.iter().filter(|r| r.word() == word).count();
        Counts::new(count("pending"), count("done"), count("failed"))
    }

    /// Its bytes: target JSON plus stored results.
    fn bytes(&self) -> u64 {
        let targets: usize = self.targets.iter().map(String::len).sum();
        targets as u64
            + self
                .results
                .iter()
                .map(TargetState::stored_bytes)
                .sum::<u64>()
    }

    /// The first target not stored yet.
    fn first_pending(&self) -> Option<usize> {
        self.results
            .iter()
            .position(|r| matches!(r, TargetState::Pending))
    }

    /// Its summary.
    fn summary(&self) -> JobSummary {
        JobSummary::new(
            self.id,
            self.status,
            self.counts(),
            self.created.to_system_time(),
            self.updated.to_system_time(),
        )
    }

    /// Its row of a page: its summary, caller and key.
    fn listing(&self) -> JobListing {
        JobListing::new(self.summary(), self.caller.clone(), self.key.clone())
    }

    /// Ready at `now`: live, a pending target, no claim out, no retry time still to come.
    fn ready(&self, now: Timestamp) -> bool {
        self.status.is_live()
            && self.first_pending().is_some()
            && self.held.is_none()
            && self.retry_at.is_none_or(|at| at <= now)
    }

    /// Whether `claim` is its current claim.
    fn holds(&self, claim: &Claim) -> bool {
        self.held.is_some_and(|held| held.token == claim.token)
    }
}

/// The reference store: see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    /// How it differs per store.
    rules: Rules,
    /// Every stored job, in submit order.
    jobs: Vec<Entry>,
    /// The last job id given.
    last_id: u64,
    /// The last fencing token given.
    last_token: u64,
    /// The rotation's cursor: the next claim scans from the first job whose id is at least
    /// this (the job after the one claimed last), then wraps to the start.
    cursor: JobId,
    /// The last touch time given.
    last_touch: u64,
}

impl Reference {
    /// An empty store under `rules`.
    pub(crate) fn new(rules: Rules) -> Self {
        Self {
            rules,
            jobs: Vec::new(),
            last_id: 0,
            last_token: 0,
            cursor: JobId::new(0),
            last_touch: 0,
        }
    }

    /// The next touch time.
    fn next_touch(&mut self) -> u64 {
        self.last_touch += 1;
        self.last_touch
    }

    /// Where job `id` is stored, whoever owns it.
    fn find(&self, id: JobId) -> Option<usize> {
        self.jobs.iter().position(|j| j.id == id)
    }

    /// `caller`'s job `id`: another caller's job is as absent as a missing one.
    fn own(&self, id: JobId, caller: &Caller) -> Option<usize> {
        self.find(id).filter(|&i| self.jobs[i].caller == *caller)
    }

    /// The job `claim` is for, if `claim` is still its current claim.
    fn current(&self, claim: &Claim) -> Option<usize> {
        self.find(claim.job).filter(|&i| self.jobs[i].holds(claim))
    }

    /// Live (queued or running) jobs now.
    pub(crate) fn live_jobs(&self) -> usize {
        self.jobs.iter().filter(|j| j.status.is_live()).count()
    }

    /// Bytes stored now: every job's target JSON and stored results.
    pub(crate) fn stored_bytes(&self) -> u64 {
        self.jobs.iter().map(Entry::bytes).sum()
    }

    /// The live jobs, in submit order, with their callers.
    pub(crate) fn live(&self) -> Vec<(JobId, Caller)> {
        self.jobs
            .iter()
            .filter(|j| j.status.is_live())
            .map(|j| (j.id, j.caller.clone()))
            .collect()
    }

    /// The tokens of the claims out now, in submit order of their jobs.
    pub(crate) fn claims_out(&self) -> Vec<u64> {
        self.jobs
            .iter()
            .filter_map(|j| j.held.map(|h| h.token))
            .collect()
    }

    /// The jobs ready at `now`, in submit order (claims whose lease lapsed count as taken
    /// back, as the next claim would take them).
    pub(crate) fn ready(&self, now: Timestamp) -> Vec<JobId> {
        let lapsed = |j: &Entry| j.held.and_then(|h| h.lease_end).is_some_and(|e| e <= now);
        self.jobs
            .iter()
            .filter(|j| {
                let mut j = (*j).clone();
                if lapsed(&j) {
                    j.held = None;
                }
                j.ready(now)
            })
            .map(|j| j.id)
            .collect()
    }

    /// The rotation's cursor now (a released claim that hands its turn back moves it back).
    pub(crate) fn cursor(&self) -> JobId {
        self.cursor
    }

    /// Whether `claim` is its job's current claim now.
    pub(crate) fn is_current(&self, claim: &Claim) -> bool {
        self.current(claim).is_some()
    }

    /// Ends the claim of job `i`: it is ready again, or waits for `retry_at`; a job that is no
    /// longer live becomes evictable now, which counts as its touch.
    fn end_claim(&mut self, i: usize, retry_at: Option<Timestamp>) {
        self.jobs[i].held = None;
        self.jobs[i].retry_at = retry_at;
        if !self.jobs[i].status.is_live() {
            self.jobs[i].touched = self.next_touch();
        }
    }

    /// As [`WorkerStore::recover`](crate::store::WorkerStore::recover).
    pub(crate) fn recover(&mut self, _now: Timestamp) -> usize {
        if self.rules.recover_frees_claims {
            for i in 0..self.jobs.len() {
                if self.jobs[i].held.is_some() {
                    let retry_at = self.jobs[i].retry_at;
                    self.end_claim(i, retry_at);
                }
            }
        }
        self.live_jobs()
    }

    /// As [`CallerStore::submit`](crate::store::CallerStore::submit): the key first, then `Full`, then
    /// `CallerBusy`.
    pub(crate) fn submit(&mut self, job: NewJob) -> Result<Submitted, Refusal> {
        if job.targets.is_empty() {
            return Err(Refusal::Empty);
        }
        if let Some(key) = &job.key {
            let same = self
                .jobs
                .iter()
                .find(|j| j.caller == job.caller && j.key.as_ref() == Some(key));
            if let Some(same) = same {
                return Ok(Submitted {
                    id: same.id,
                    live_jobs: self.live_jobs(),
                    existing: true,
                });
            }
        }
        if self.live_jobs() >= job.max_live_jobs {
            return Err(Refusal::Full);
        }
        let busy = self
            .jobs
            .iter()
            .find(|j| j.caller == job.caller && j.status.is_live());
        if let Some(busy) = busy {
            return Err(Refusal::CallerBusy { live: busy.id });
        }
        self.last_id += 1;
        let id = JobId::new(self.last_id);
        let touched = self.next_touch();
        self.jobs.push(Entry {
            id,
            caller: job.caller,
            key: job.key,
            status: JobStatus::Queued,
            created: job.now,
            updated: job.now,
            results: vec![TargetState::Pending; job.targets.len()],
            stored_by: vec![None; job.targets.len()],
            targets: job.targets,
            held: None,
            rescue: false,
            busy_since: None,
            retry_at: None,
            touched,
        });
        Ok(Submitted {
            id,
            live_jobs: self.live_jobs(),
            existing: false,
        })
    }

    /// As [`WorkerStore::claim`](crate::store::WorkerStore::claim): takes back lapsed claims, then
    /// claims the first ready job from the cursor on, wrapping once.
    pub(crate) fn claim(&mut self, now: Timestamp) -> Option<Claim> {
        self.claim_other_than(now, None)
    }

    /// The next claim a `finish` with `take_next` may hand back after it stored `stored`'s
    /// result: as [`claim`](Self::claim), among the other jobs. Called only when the store
    /// did hand one back (taking one is its choice), after [`finish`](Self::finish).
    pub(crate) fn claim_next(&mut self, stored: &Claim, now: Timestamp) -> Option<Claim> {
        self.claim_other_than(now, Some(stored.job))
    }

    /// [`claim`](Self::claim), never of job `other_than`.
    fn claim_other_than(&mut self, now: Timestamp, other_than: Option<JobId>) -> Option<Claim> {
        let mut lapsed: Vec<(Timestamp, usize)> = self
            .jobs
            .iter()
            .enumerate()
            .filter_map(|(i, j)| {
                let end = j.held?.lease_end?;
                (end <= now).then_some((end, i))
            })
            .collect();
        lapsed.sort();
        for (_, i) in lapsed {
            self.jobs[i].rescue = true;
            let retry_at = self.jobs[i].retry_at;
            self.end_claim(i, retry_at);
        }
        // The list is in submit order, so "from the cursor on" is "id at least the cursor".
        let from = self
            .jobs
            .iter()
            .position(|j| j.id >= self.cursor)
            .unwrap_or(self.jobs.len());
        let i = (from..self.jobs.len())
            .chain(0..from)
            .find(|&i| self.jobs[i].ready(now) && Some(self.jobs[i].id) != other_than)?;
        let start = self.cursor;
        self.cursor = JobId::new(self.jobs[i].id.get() + 1);
        self.last_token += 1;
        let token = self.last_token;
        let lease_end = self.rules.lease.map(|lease| now.saturating_add(lease));
        let job = &mut self.jobs[i];
        let index = job
            .first_pending()
            .expect("a ready job has a pending target");
        let started = job.status == JobStatus::Queued;
        if started {
            job.status = JobStatus::Running;
            job.updated = now;
        }
        job.held = Some(Held {
            token,
            lease_end,
            from: start,
        });
        job.retry_at = None;
        Some(Claim {
            job: job.id,
            caller: job.caller.clone(),
            index,
            target_json: job.targets[index].clone(),
            token,
            busy_since: job.busy_since,
            rescued: std::mem::take(&mut job.rescue),
            started,
        })
    }

    /// As [`WorkerStore::renew`](crate::store::WorkerStore::renew).
    pub(crate) fn renew(&mut self, claim: &Claim, now: Timestamp) -> bool {
        let Some(i) = self.current(claim) else {
            return false;
        };
        if let (Some(lease), Some(held)) = (self.rules.lease, &mut self.jobs[i].held)
            && let Some(end) = &mut held.lease_end
        {
            *end = (*end).max(now.saturating_add(lease));
        }
        true
    }

    /// As [`WorkerStore::finish`](crate::store::WorkerStore::finish), without the next
    /// claim (see [`claim_next`](Self::claim_next)): ends `claim` as `end` says, if it is
    /// current.
    pub(crate) fn finish(&mut self, claim: &Claim, end: ClaimEnd, now: Timestamp) -> Completion {
        let Some(i) = self.current(claim) else {
            return self.replay(claim, &end).unwrap_or(Completion::Stale);
        };
        match end {
            ClaimEnd::Stored(result) => self.store(i, claim, result, now),
            ClaimEnd::RetryLater { busy_since, at } => {
                self.jobs[i].busy_since = Some(busy_since);
                self.end_claim(i, Some(at));
                Completion::Pending
            }
            ClaimEnd::Released => {
                // The claim hands its turn back, if no other claim moved the cursor since.
                let from = self.jobs[i].held.map(|held| held.from);
                if let Some(from) = from
                    && self.cursor.get() == self.jobs[i].id.get() + 1
                {
                    self.cursor = from;
                }
                self.end_claim(i, None);
                Completion::Pending
            }
        }
    }

    /// A store that `claim` made already, answered again, where the rules say the store
    /// replays ([`Rules::replays_stores`]): the target as stored, the job as it is now, and
    /// its end if that target was its last and the job settled.
    fn replay(&self, claim: &Claim, end: &ClaimEnd) -> Option<Completion> {
        let ClaimEnd::Stored(result) = end else {
            return None;
        };
        if !self.rules.replays_stores {
            return None;
        }
        let job = &self.jobs[self.find(claim.job)?];
        if *job.stored_by.get(claim.index)? != Some(claim.token) {
            return None;
        }
        let outcome = match job.results[claim.index] {
            TargetState::Done { .. } => TargetOutcome::Done,
            _ => TargetOutcome::Failed,
        };
        let counts = job.counts();
        let settled = matches!(
            job.status,
            JobStatus::Done | JobStatus::Failed | JobStatus::Partial
        );
        let ended = (settled && claim.index + 1 == job.targets.len()).then(|| Ended {
            job: job.id,
            status: job.status,
            counts,
            after: job.updated.saturating_since(job.created),
            live_jobs: self.live_jobs(),
        });
        Some(Completion::Stored {
            bytes: result.stored_bytes(),
            ended,
            progress: Progress::new(job.status, counts, Some((claim.index, outcome))),
        })
    }

    /// Stores `result` for the current `claim` of job `i`, ending the claim, and the job if
    /// that was its last pending target and it is live.
    fn store(
        &mut self,
        i: usize,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Completion {
        let outcome = match result {
            TargetState::Done { .. } => TargetOutcome::Done,
            TargetState::Failed { .. } => TargetOutcome::Failed,
            TargetState::Pending => panic!("a store is never asked to store a pending result"),
        };
        let bytes = result.stored_bytes();
        let job = &mut self.jobs[i];
        let index = job
            .first_pending()
            .expect("a claimed job has a pending target");
        assert_eq!(
            index, claim.index,
            "a claim is for the first pending target"
        );
        job.results[index] = result;
        job.stored_by[index] = Some(claim.token);
        job.busy_since = None;
        job.updated = now;
        let counts = job.counts();
        let ends = job.status.is_live() && counts.pending == 0;
        if ends {
            job.status = match (counts.done, counts.failed) {
                (_, 0) => JobStatus::Done,
                (0, _) => JobStatus::Failed,
                _ => JobStatus::Partial,
            };
        }
        let progress = Progress::new(job.status, counts, Some((index, outcome)));
        self.end_claim(i, None);
        let job = &self.jobs[i];
        let ended = ends.then(|| Ended {
            job: job.id,
            status: job.status,
            counts,
            after: now.saturating_since(job.created),
            live_jobs: self.live_jobs(),
        });
        Completion::Stored {
            bytes,
            ended,
            progress,
        }
    }

    /// As [`WorkerStore::next_wakeup`](crate::store::WorkerStore::next_wakeup): the earliest lease end
    /// of a claim out (with leases), or retry time still to come of a job that waits only for
    /// it.
    pub(crate) fn next_wakeup(&self, now: Timestamp) -> Option<Timestamp> {
        let leases = self
            .jobs
            .iter()
            .filter_map(|j| j.held.and_then(|h| h.lease_end));
        let retries = self
            .jobs
            .iter()
            .filter(|j| j.status.is_live() && j.held.is_none() && j.first_pending().is_some())
            .filter_map(|j| j.retry_at)
            .filter(|&at| at > now);
        leases.chain(retries).min()
    }

    /// The retry times that have come (`<= now`) of jobs that are ready because of it: a
    /// store may still report one from `next_wakeup`, since a claim now finds that job.
    pub(crate) fn passed_retries(&self, now: Timestamp) -> Vec<Timestamp> {
        self.jobs
            .iter()
            .filter(|j| j.ready(now))
            .filter_map(|j| j.retry_at)
            .collect()
    }

    /// As [`CallerStore::status`](crate::store::CallerStore::status).
    pub(crate) fn status(&self, id: JobId, caller: &Caller) -> Option<Job> {
        let job = &self.jobs[self.own(id, caller)?];
        let targets = job
            .targets
            .iter()
            .zip(&job.results)
            .map(|(target, state)| TargetEntry::new(target.clone(), state.clone()))
            .collect();
        Some(Job::new(
            job.id,
            job.status,
            job.created.to_system_time(),
            job.updated.to_system_time(),
            targets,
        ))
    }

    /// As [`CallerStore::summary`](crate::store::CallerStore::summary).
    pub(crate) fn summary(&self, id: JobId, caller: &Caller) -> Option<JobSummary> {
        Some(self.jobs[self.own(id, caller)?].summary())
    }

    /// As [`CallerStore::jobs`](crate::store::CallerStore::jobs): in submit order.
    pub(crate) fn jobs(&self, caller: &Caller) -> Vec<JobSummary> {
        self.jobs
            .iter()
            .filter(|j| j.caller == *caller)
            .map(Entry::summary)
            .collect()
    }

    /// As [`CallerStore::jobs_page`](crate::store::CallerStore::jobs_page): every job the
    /// scope covers in the status asked for below the key, highest id first, then cut.
    pub(crate) fn jobs_page(&self, scope: &Scope, query: &JobsQuery) -> JobsPage {
        let mut rows: Vec<JobListing> = self
            .jobs
            .iter()
            .rev()
            .filter(|j| scope.covers(&j.caller))
            .filter(|j| query.status.is_none_or(|status| j.status == status))
            .filter(|j| query.before.is_none_or(|before| j.id < before))
            .map(Entry::listing)
            .collect();
        let len = query.page_len();
        let next = (rows.len() > len).then(|| rows[len - 1].summary.id);
        rows.truncate(len);
        JobsPage::new(rows, next)
    }

    /// As [`CallerStore::job`](crate::store::CallerStore::job).
    pub(crate) fn job(&self, scope: &Scope, id: JobId) -> Option<JobListing> {
        let job = &self.jobs[self.find(id)?];
        scope.covers(&job.caller).then(|| job.listing())
    }

    /// As [`CallerStore::targets_page`](crate::store::CallerStore::targets_page): every
    /// target of the job in the state asked for after the key, lowest index first, then cut.
    pub(crate) fn targets_page(
        &self,
        scope: &Scope,
        id: JobId,
        query: &TargetsQuery,
    ) -> Option<TargetsPage> {
        let listing = self.job(scope, id)?;
        let job = &self.jobs[self.find(id)?];
        let mut rows: Vec<IndexedTarget> = job
            .targets
            .iter()
            .zip(&job.results)
            .enumerate()
            .filter(|(index, _)| query.after.is_none_or(|after| *index > after))
            .filter(|(_, (_, state))| query.state.is_none_or(|kind| state.kind() == kind))
            .map(|(index, (target, state))| {
                IndexedTarget::new(index, TargetEntry::new(target.clone(), state.clone()))
            })
            .collect();
        let len = query.page_len();
        let next = (rows.len() > len).then(|| rows[len - 1].index);
        rows.truncate(len);
        Some(TargetsPage::new(listing, rows, next))
    }

    /// As [`CallerStore::touch`](crate::store::CallerStore::touch).
    pub(crate) fn touch(&mut self, id: JobId, caller: &Caller, _now: Timestamp) -> bool {
        let Some(i) = self.own(id, caller) else {
            return false;
        };
        self.jobs[i].touched = self.next_touch();
        true
    }

    /// As [`CallerStore::cancel`](crate::store::CallerStore::cancel): a claim out stays out.
    pub(crate) fn cancel(&mut self, id: JobId, caller: &Caller, now: Timestamp) -> CancelOutcome {
        let Some(i) = self.own(id, caller) else {
            return CancelOutcome::NotFound;
        };
        if !self.jobs[i].status.is_live() {
            return CancelOutcome::Terminal;
        }
        self.jobs[i].status = JobStatus::Cancelled;
        self.jobs[i].updated = now;
        if self.jobs[i].held.is_none() {
            self.jobs[i].touched = self.next_touch();
        }
        let job = &self.jobs[i];
        CancelOutcome::Cancelled(Ended {
            job: job.id,
            status: JobStatus::Cancelled,
            counts: job.counts(),
            after: now.saturating_since(job.created),
            live_jobs: self.live_jobs(),
        })
    }

    /// As [`WorkerStore::evict_oldest`](crate::store::WorkerStore::evict_oldest): ended jobs with no
    /// claim out, least recently touched first, while the stored bytes exceed `max_bytes`.
    pub(crate) fn evict_oldest(&mut self, max_bytes: u64) -> Evicted {
        let mut evicted = Evicted::default();
        while self.stored_bytes() > max_bytes {
            let oldest = (0..self.jobs.len())
                .filter(|&i| !self.jobs[i].status.is_live() && self.jobs[i].held.is_none())
                .min_by_key(|&i| self.jobs[i].touched);
            let Some(i) = oldest else {
                break;
            };
            let bytes = self.jobs.remove(i).bytes();
            evicted.jobs += 1;
            evicted.bytes += bytes;
            evicted.largest = evicted.largest.max(bytes);
        }
        evicted
    }
}
