//! The in-memory store's state machine: jobs, the rotation, and the eviction order.
//!
//! # States of a job
//!
//! ```text
//!             claim                 complete (last target)
//!   queued ─────────▶ running ──────────────────────────▶ done | failed | partial
//!     │                  │  ▲ complete (more targets) / retry_later / release
//!     │ cancel           │  └──── (back to ready or waiting)
//!     └──────────────────┴──────▶ cancelled   (an in-flight claim still completes)
//! ```
//!
//! A live job is in exactly one of: **ready** (claimable now), **waiting** (a busy target's
//! retry time has not come), **in flight** (a claim is out).
//!
//! # Invariants
//!
//! 1. `id` is in `ready` iff the job is live, has a pending target, no claim out, and no
//!    future retry time. Ids grow with submits, so `ready` is the rotation's list in submit
//!    order, less the jobs a scan would skip. A claim takes the first entry at or after
//!    `cursor`, else the first (wrapping once), and sets `cursor` to the id after it: the
//!    rotation of `Store`'s docs, O(log n). A claim out keeps in `claim_from` the cursor its
//!    walk started from; its release sets `cursor` back to it if `cursor` is still the id
//!    after its job (no other claim moved it since), so a claim that served no target takes
//!    no turn, and never moves `cursor` back over another claim's turn.
//! 2. `(at, id)` is in `waiting` iff the job is live, has no claim out, and waits for its
//!    retry time `at`. `ready` and `waiting` are disjoint.
//! 3. A job has at most one claim out (`in_flight`): each job is serial.
//! 4. Targets before `next` are stored, targets from `next` on are pending; a claim is always
//!    for target `next`.
//! 5. `(touch, id)` is in `finished` iff the job is terminal and has no claim out: exactly the
//!    jobs eviction may remove, least recently touched first.
//! 6. `live` counts the live jobs; `callers` maps each caller with a live job to it (at most
//!    one per caller).
//! 7. `bytes` is the sum of every job's `bytes` (its targets' JSON plus stored results).
//! 8. `(until, id)` is in `leases` iff the job has a claim out and the store grants leases:
//!    a claim not renewed by `until` is taken back at the next `claim` (a rescue) and its
//!    token goes stale, so its holder can no longer store anything.
//! 9. A job's counts are kept on it: `done + failed == next` (the stored targets are exactly
//!    those before `next`), `done` and `failed` count the `Done` and `Failed` results, and
//!    `pending` is `targets.len() - next`. So a summary is O(1).
//! 10. `by_caller[c]` holds exactly the ids of the stored jobs of caller `c` (no empty set
//!     is kept), so `jobs(c)` lists them in submit order without a scan of every job.
//! 11. `keys[(c, k)] == id` iff stored job `id` is caller `c`'s with idempotency key `k`: at
//!     most one stored job per caller and key, found in O(1) by `submit`.
//! 12. `listing` lists every stored job under its status and its caller and status, and each
//!     job keeps its stored targets' indexes by state (`listing.rs`): pages of jobs and of
//!     targets read O(log n + page), never a scan.
//!
//! # Locking
//!
//! The whole `State` sits behind one mutex in [`MemoryStore`](super::MemoryStore); each
//! method here is one critical section, runs no user code, and ends with the invariants above
//! restored (checked by `debug_assert`s in debug builds).

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Duration;

use super::listing::{self, Listing};
use crate::error::{InvalidJob, SubmitError};
use crate::hooks::TargetOutcome;
use crate::job::{Caller, Counts, Job, JobId, JobStatus, TargetEntry, TargetState};
use crate::page::{
    IndexedTarget, JobListing, JobsPage, JobsQuery, Scope, TargetKind, TargetsPage, TargetsQuery,
    cut,
};
use crate::store::{CancelOutcome, Claim, ClaimEnd, Completion, Ended, Evicted, NewJob, Submitted};
use crate::summary::{JobSummary, Progress};
use crate::time::Timestamp;

/// Jobs (and targets per job) up to which the debug checks also rescan everything.
const SMALL: usize = 64;

/// Hashes job ids with one multiply (the Fx hash) instead of SipHash: the store mints the ids
/// itself, in order, so there is no hash-flooding input to defend against, and the two
/// lookups per target are on the hot path.
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Job entries by raw id.
type Jobs = HashMap<u64, Entry, BuildHasherDefault<IdHasher>>;

/// One job in memory.
#[derive(Debug)]
struct Entry {
    caller: Caller,
    status: JobStatus,
    created: Timestamp,
    updated: Timestamp,
    targets: Vec<Arc<str>>,
    results: Vec<TargetState>,
    /// Invariant 4.
    next: usize,
    /// The token of the claim out, if any (invariant 3).
    in_flight: Option<u64>,
    /// The cursor the claim out started its walk from (invariant 1); meaningless without one.
    claim_from: u64,
    /// When the claim out lapses, if the store grants leases (invariant 8).
    lease_until: Option<Timestamp>,
    /// The last claim lapsed; the next one is a rescue.
    rescue: bool,
    busy_since: Option<Timestamp>,
    retry_at: Option<Timestamp>,
    /// The eviction key (invariant 5); bumped on touch and when the job ends.
    touch: u64,
    bytes: u64,
    /// Invariant 9.
    done: usize,
    failed: usize,
    /// The indexes of the `Done` and `Failed` results, ascending (invariant 12).
    done_at: Vec<usize>,
    failed_at: Vec<usize>,
    /// The idempotency key (invariant 11).
    key: Option<String>,
}

impl Entry {
    /// Invariant 9: O(1).
    fn counts(&self) -> Counts {
        Counts {
            pending: self.targets.len() - self.next,
            done: self.done,
            failed: self.failed,
        }
    }

    fn summary(&self, id: u64) -> JobSummary {
        JobSummary::new(
            JobId::new(id),
            self.status,
            self.counts(),
            self.created.to_system_time(),
            self.updated.to_system_time(),
        )
    }

    fn listing(&self, id: u64) -> JobListing {
        JobListing::new(self.summary(id), self.caller.clone(), self.key.clone())
    }

    fn ended(&self, id: u64, now: Timestamp, live_jobs: usize) -> Ended {
        Ended {
            job: JobId::new(id),
            status: self.status,
            counts: self.counts(),
            after: now.saturating_since(self.created),
            live_jobs,
        }
    }
}

/// Everything the in-memory store holds.
#[derive(Debug, Default)]
pub(crate) struct State {
    jobs: Jobs,
    /// Invariant 1.
    ready: BTreeSet<u64>,
    /// The rotation's cursor: the id after the job claimed last (invariant 1).
    cursor: u64,
    waiting: BTreeSet<(Timestamp, u64)>,
    finished: BTreeSet<(u64, u64)>,
    leases: BTreeSet<(Timestamp, u64)>,
    /// Claims taken back because their lease lapsed, since the store was made.
    rescued: u64,
    live: usize,
    callers: HashMap<Caller, u64>,
    /// Invariant 10.
    by_caller: HashMap<Caller, BTreeSet<u64>>,
    /// Invariant 11.
    keys: HashMap<(Caller, String), u64>,
    /// Invariant 12.
    listing: Listing,
    bytes: u64,
    next_id: u64,
    next_token: u64,
    next_touch: u64,
}

/// Whether `claim` is the job's claim out now (invariant 3). A claim that was released,
/// completed, or taken back after its lease lapsed has a stale token and is refused.
fn current(entry: &Entry, claim: &Claim) -> bool {
    entry.in_flight == Some(claim.token)
}

impl State {
    fn bump_touch(&mut self) -> u64 {
        self.next_touch += 1;
        self.next_touch
    }

    pub(crate) fn live_jobs(&self) -> usize {
        self.live
    }

    #[cfg(test)]
    pub(crate) fn stored_bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn submit(&mut self, job: NewJob) -> Result<Submitted, SubmitError> {
        if job.targets.is_empty() {
            return Err(InvalidJob::Empty.into());
        }
        if let Some(key) = &job.key
            && let Some(&id) = self.keys.get(&(job.caller.clone(), key.clone()))
        {
            return Ok(Submitted {
                id: JobId::new(id),
                live_jobs: self.live,
                existing: true,
            });
        }
        if self.live >= job.max_live_jobs {
            return Err(SubmitError::Full);
        }
        if let Some(&live) = self.callers.get(&job.caller) {
            return Err(SubmitError::CallerBusy {
                live: JobId::new(live),
            });
        }
        self.next_id += 1;
        let id = self.next_id;
        let targets: Vec<Arc<str>> = job.targets.into_iter().map(Arc::from).collect();
        let bytes = targets.iter().map(|t| t.len() as u64).sum();
        let touch = self.bump_touch();
        self.callers.insert(job.caller.clone(), id);
        self.by_caller
            .entry(job.caller.clone())
            .or_default()
            .insert(id);
        if let Some(key) = &job.key {
            self.keys.insert((job.caller.clone(), key.clone()), id);
        }
        self.listing.insert(&job.caller, JobStatus::Queued, id);
        self.jobs.insert(
            id,
            Entry {
                caller: job.caller,
                status: JobStatus::Queued,
                created: job.now,
                updated: job.now,
                results: vec![TargetState::Pending; targets.len()],
                targets,
                next: 0,
                in_flight: None,
                claim_from: 0,
                lease_until: None,
                rescue: false,
                busy_since: None,
                retry_at: None,
                touch,
                bytes,
                done: 0,
                failed: 0,
                done_at: Vec::new(),
                failed_at: Vec::new(),
                key: job.key,
            },
        );
        self.ready.insert(id);
        self.live += 1;
        self.bytes += bytes;
        self.check(id);
        Ok(Submitted {
            id: JobId::new(id),
            live_jobs: self.live,
            existing: false,
        })
    }

    #[cfg(test)]
    pub(crate) fn rescued(&self) -> u64 {
        self.rescued
    }

    /// Claims the next target; with `lease`, the claim lapses unless renewed within it.
    pub(crate) fn claim(&mut self, now: Timestamp, lease: Option<Duration>) -> Option<Claim> {
        while let Some(&(until, id)) = self.leases.first() {
            if until > now {
                break;
            }
            tracing::warn!(job = id, "claim lease lapsed; the target is claimed again");
            self.rescued += 1;
            self.end_claim(id, None);
            if let Some(entry) = self.jobs.get_mut(&id) {
                entry.rescue = true;
            }
            self.check(id);
        }
        while let Some(&(at, id)) = self.waiting.first() {
            if at > now {
                break;
            }
            self.waiting.pop_first();
            if let Some(entry) = self.jobs.get_mut(&id) {
                entry.retry_at = None;
                self.ready.insert(id);
            }
        }
        let id = match self.ready.range(self.cursor..).next() {
            Some(&id) => id,
            None => *self.ready.first()?,
        };
        self.ready.remove(&id);
        let from = std::mem::replace(&mut self.cursor, id + 1);
        self.next_token += 1;
        let token = self.next_token;
        let entry = self.jobs.get_mut(&id).expect("a ready job exists");
        entry.in_flight = Some(token);
        entry.claim_from = from;
        if let Some(lease) = lease {
            let until = now.saturating_add(lease);
            entry.lease_until = Some(until);
            self.leases.insert((until, id));
        }
        let started = entry.status == JobStatus::Queued;
        if started {
            entry.status = JobStatus::Running;
            entry.updated = now;
            self.listing
                .moved(&entry.caller, JobStatus::Queued, JobStatus::Running, id);
        }
        let claim = Claim {
            job: JobId::new(id),
            caller: entry.caller.clone(),
            index: entry.next,
            target_json: Arc::clone(&entry.targets[entry.next]),
            token,
            busy_since: entry.busy_since,
            rescued: std::mem::take(&mut entry.rescue),
            started,
        };
        self.check(id);
        Some(claim)
    }

    pub(crate) fn renew(&mut self, claim: &Claim, now: Timestamp, lease: Option<Duration>) -> bool {
        let id = claim.job.get();
        let Some(entry) = self.jobs.get_mut(&id).filter(|e| current(e, claim)) else {
            return false;
        };
        if let (Some(lease), Some(old)) = (lease, entry.lease_until) {
            let until = now.saturating_add(lease).max(old);
            entry.lease_until = Some(until);
            self.leases.remove(&(old, id));
            self.leases.insert((until, id));
        }
        self.check(id);
        true
    }

    /// Ends `id`'s claim; the job goes back to ready, to waiting (`retry_at`), or, if it is
    /// no longer live, into the eviction order.
    fn end_claim(&mut self, id: u64, retry_at: Option<Timestamp>) {
        let touch = self.bump_touch();
        let entry = self.jobs.get_mut(&id).expect("the job exists");
        entry.in_flight = None;
        entry.retry_at = retry_at;
        if let Some(until) = entry.lease_until.take() {
            self.leases.remove(&(until, id));
        }
        if !entry.status.is_live() {
            entry.touch = touch;
            self.finished.insert((touch, id));
        } else if let Some(at) = retry_at {
            self.waiting.insert((at, id));
        } else if entry.next < entry.targets.len() {
            self.ready.insert(id);
        }
    }

    /// [`WorkerStore::finish`](crate::store::WorkerStore::finish), without a next claim.
    pub(crate) fn finish(&mut self, claim: &Claim, end: ClaimEnd, now: Timestamp) -> Completion {
        let ended = match end {
            ClaimEnd::Stored(result) => return self.complete(claim, result, now),
            ClaimEnd::RetryLater { busy_since, at } => self.retry_later(claim, busy_since, at),
            ClaimEnd::Released => self.release(claim),
        };
        if ended {
            Completion::Pending
        } else {
            Completion::Stale
        }
    }

    pub(crate) fn complete(
        &mut self,
        claim: &Claim,
        result: TargetState,
        now: Timestamp,
    ) -> Completion {
        let id = claim.job.get();
        let Some(entry) = self.jobs.get_mut(&id).filter(|e| current(e, claim)) else {
            return Completion::Stale;
        };
        debug_assert_eq!(claim.index, entry.next, "a claim is for the next target");
        debug_assert!(!matches!(result, TargetState::Pending));
        let bytes = result.stored_bytes();
        let outcome = match result {
            TargetState::Done { .. } => {
                entry.done += 1;
                entry.done_at.push(entry.next);
                TargetOutcome::Done
            }
            _ => {
                entry.failed += 1;
                entry.failed_at.push(entry.next);
                TargetOutcome::Failed
            }
        };
        let index = entry.next;
        entry.results[entry.next] = result;
        entry.next += 1;
        entry.busy_since = None;
        entry.bytes += bytes;
        entry.updated = now;
        let mut ended = None;
        if entry.status.is_live() && entry.next == entry.targets.len() {
            let was = entry.status;
            entry.status = JobStatus::settled(entry.done, entry.failed);
            let caller = entry.caller.clone();
            self.listing.moved(&caller, was, entry.status, id);
            self.live -= 1;
            self.callers.remove(&caller);
            ended = Some(self.jobs[&id].ended(id, now, self.live));
        }
        let entry = &self.jobs[&id];
        let progress = Progress::new(entry.status, entry.counts(), Some((index, outcome)));
        self.bytes += bytes;
        self.end_claim(id, None);
        self.check(id);
        Completion::Stored {
            bytes,
            ended,
            progress,
        }
    }

    pub(crate) fn retry_later(
        &mut self,
        claim: &Claim,
        busy_since: Timestamp,
        at: Timestamp,
    ) -> bool {
        let id = claim.job.get();
        let Some(entry) = self.jobs.get_mut(&id).filter(|e| current(e, claim)) else {
            return false;
        };
        entry.busy_since = Some(busy_since);
        self.end_claim(id, Some(at));
        self.check(id);
        true
    }

    pub(crate) fn release(&mut self, claim: &Claim) -> bool {
        let id = claim.job.get();
        let Some(entry) = self.jobs.get(&id).filter(|e| current(e, claim)) else {
            return false;
        };
        // Invariant 1: the claim hands its turn back if no other claim moved the cursor since.
        if self.cursor == id + 1 {
            self.cursor = entry.claim_from;
        }
        self.end_claim(id, None);
        debug_assert!(
            self.cursor <= self.next_id + 1,
            "inv 1: cursor past the list"
        );
        self.check(id);
        true
    }

    /// Frees every claim out: their holder is gone.
    pub(crate) fn recover(&mut self) -> usize {
        let mut held: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, e)| e.in_flight.is_some())
            .map(|(&id, _)| id)
            .collect();
        held.sort_unstable();
        for id in held {
            let retry_at = self.jobs[&id].retry_at;
            self.end_claim(id, retry_at);
            self.check(id);
        }
        self.live
    }

    pub(crate) fn next_wakeup(&self) -> Option<Timestamp> {
        let retry = self.waiting.first().map(|&(at, _)| at);
        let lapse = self.leases.first().map(|&(until, _)| until);
        retry.into_iter().chain(lapse).min()
    }

    fn entry_of(&self, id: JobId, caller: &Caller) -> Option<&Entry> {
        self.jobs.get(&id.get()).filter(|e| e.caller == *caller)
    }

    pub(crate) fn status(&self, id: JobId, caller: &Caller) -> Option<Job> {
        let entry = self.entry_of(id, caller)?;
        Some(Job {
            id,
            status: entry.status,
            created: entry.created.to_system_time(),
            updated: entry.updated.to_system_time(),
            targets: entry
                .targets
                .iter()
                .zip(&entry.results)
                .map(|(target, state)| TargetEntry {
                    target_json: target.to_string(),
                    state: state.clone(),
                })
                .collect(),
        })
    }

    pub(crate) fn summary(&self, id: JobId, caller: &Caller) -> Option<JobSummary> {
        Some(self.entry_of(id, caller)?.summary(id.get()))
    }

    /// `caller`'s stored jobs in submit order (ids are minted in submit order).
    pub(crate) fn jobs_of(&self, caller: &Caller) -> Vec<JobSummary> {
        self.by_caller.get(caller).map_or_else(Vec::new, |ids| {
            ids.iter().map(|&id| self.jobs[&id].summary(id)).collect()
        })
    }

    /// Job `id` if `scope` covers it.
    fn entry_in(&self, scope: &Scope, id: JobId) -> Option<&Entry> {
        self.jobs.get(&id.get()).filter(|e| scope.covers(&e.caller))
    }

    /// A page of the jobs `scope` covers, newest first, through the index that holds exactly
    /// the jobs of the scope and status asked for (invariants 10 and 12).
    pub(crate) fn jobs_page(&self, scope: &Scope, query: &JobsQuery) -> JobsPage {
        let ids = match (scope, query.status) {
            (Scope::Caller(caller), None) => self.by_caller.get(caller),
            (Scope::Caller(caller), Some(status)) => self.listing.of_caller_in(caller, status),
            (Scope::Everyone, None) => Some(self.listing.all()),
            (Scope::Everyone, Some(status)) => self.listing.in_status(status),
        };
        let Some(ids) = ids else {
            return JobsPage::new(Vec::new(), None);
        };
        let below = query.before.map_or(u64::MAX, |before| before.get());
        let len = query.page_len();
        let rows: Vec<JobListing> = ids
            .range(..below)
            .rev()
            .take(len + 1)
            .map(|&id| self.jobs[&id].listing(id))
            .collect();
        let (jobs, next) = cut(rows, len, |job| job.summary.id);
        JobsPage::new(jobs, next)
    }

    /// Job `id` if `scope` covers it.
    pub(crate) fn job(&self, scope: &Scope, id: JobId) -> Option<JobListing> {
        Some(self.entry_in(scope, id)?.listing(id.get()))
    }

    /// A page of job `id`'s targets if `scope` covers it, through the job's indexes by state
    /// (invariant 12): pending targets are those from `next` on.
    pub(crate) fn targets_page(
        &self,
        scope: &Scope,
        id: JobId,
        query: &TargetsQuery,
    ) -> Option<TargetsPage> {
        let entry = self.entry_in(scope, id)?;
        let len = query.page_len();
        let from = query.after.map_or(0, |after| after.saturating_add(1));
        let total = entry.targets.len();
        let indexes: Vec<usize> = match query.state {
            None => (from.min(total)..total).take(len + 1).collect(),
            Some(TargetKind::Pending) => (from.max(entry.next).min(total)..total)
                .take(len + 1)
                .collect(),
            Some(TargetKind::Done) => listing::from_after(&entry.done_at, query.after)
                .iter()
                .take(len + 1)
                .copied()
                .collect(),
            Some(TargetKind::Failed) => listing::from_after(&entry.failed_at, query.after)
                .iter()
                .take(len + 1)
                .copied()
                .collect(),
        };
        let (indexes, next) = cut(indexes, len, |&index| index);
        let targets = indexes
            .into_iter()
            .map(|index| {
                let entry = TargetEntry::new(
                    entry.targets[index].to_string(),
                    entry.results[index].clone(),
                );
                IndexedTarget::new(index, entry)
            })
            .collect();
        Some(TargetsPage::new(entry.listing(id.get()), targets, next))
    }

    pub(crate) fn touch(&mut self, id: JobId, caller: &Caller) -> bool {
        if self.entry_of(id, caller).is_none() {
            return false;
        }
        let touch = self.bump_touch();
        let entry = self.jobs.get_mut(&id.get()).expect("found above");
        let old = std::mem::replace(&mut entry.touch, touch);
        if self.finished.remove(&(old, id.get())) {
            self.finished.insert((touch, id.get()));
        }
        self.check(id.get());
        true
    }

    pub(crate) fn cancel(&mut self, id: JobId, caller: &Caller, now: Timestamp) -> CancelOutcome {
        let Some(entry) = self.entry_of(id, caller) else {
            return CancelOutcome::NotFound;
        };
        if !entry.status.is_live() {
            return CancelOutcome::Terminal;
        }
        let raw = id.get();
        let touch = self.bump_touch();
        let entry = self.jobs.get_mut(&raw).expect("found above");
        self.listing
            .moved(&entry.caller, entry.status, JobStatus::Cancelled, raw);
        entry.status = JobStatus::Cancelled;
        entry.updated = now;
        let (caller, retry_at, idle) = (
            entry.caller.clone(),
            entry.retry_at,
            entry.in_flight.is_none(),
        );
        if idle {
            entry.touch = touch;
            self.finished.insert((touch, raw));
        }
        self.ready.remove(&raw);
        if let Some(at) = retry_at {
            self.waiting.remove(&(at, raw));
        }
        self.live -= 1;
        self.callers.remove(&caller);
        self.check(raw);
        CancelOutcome::Cancelled(self.jobs[&raw].ended(raw, now, self.live))
    }

    pub(crate) fn evict_oldest(&mut self, max_bytes: u64) -> Evicted {
        let mut evicted = Evicted::default();
        while self.bytes > max_bytes {
            let Some((_, id)) = self.finished.pop_first() else {
                break;
            };
            let entry = self.jobs.remove(&id).expect("a finished job exists");
            if let Some(ids) = self.by_caller.get_mut(&entry.caller) {
                ids.remove(&id);
                if ids.is_empty() {
                    self.by_caller.remove(&entry.caller);
                }
            }
            self.listing.remove(&entry.caller, entry.status, id);
            if let Some(key) = entry.key {
                self.keys.remove(&(entry.caller, key));
            }
            self.bytes -= entry.bytes;
            // Invariants 10 and 11 (and the others' sums) without the job.
            self.check(id);
            evicted.jobs += 1;
            evicted.bytes += entry.bytes;
            evicted.largest = evicted.largest.max(entry.bytes);
        }
        evicted
    }

    /// Checks the invariants that concern job `id` (debug builds), in O(1) plus O(log n) set
    /// lookups; the scans over a whole job or every job run only below [`SMALL`], so tests of
    /// small cases check everything and a 100k-target job is not rescanned per target.
    fn check(&self, id: u64) {
        if !cfg!(debug_assertions) {
            return;
        }
        if let Some(e) = self.jobs.get(&id) {
            let ready = self.ready.contains(&id);
            let waiting = e
                .retry_at
                .is_some_and(|at| self.waiting.contains(&(at, id)));
            let pending = e.next < e.targets.len();
            let live = e.status.is_live();
            let idle = e.in_flight.is_none();
            assert_eq!(
                ready,
                live && pending && idle && e.retry_at.is_none(),
                "inv 1: {e:?}"
            );
            assert_eq!(
                waiting,
                live && idle && e.retry_at.is_some(),
                "inv 2: {e:?}"
            );
            assert!(!(ready && waiting), "inv 2: ready and waiting");
            // Inv 4 at its boundary: the one place a transition moves it.
            assert!(
                e.next == 0 || !matches!(e.results[e.next - 1], TargetState::Pending),
                "inv 4: target before next is pending"
            );
            assert!(
                e.results
                    .get(e.next)
                    .is_none_or(|r| matches!(r, TargetState::Pending)),
                "inv 4: target at next is stored"
            );
            assert_eq!(
                self.finished.contains(&(e.touch, id)),
                !live && idle,
                "inv 5: {e:?}"
            );
            assert_eq!(self.callers.get(&e.caller) == Some(&id), live, "inv 6");
            assert_eq!(e.done + e.failed, e.next, "inv 9: {e:?}");
            assert!(
                self.by_caller
                    .get(&e.caller)
                    .is_some_and(|ids| ids.contains(&id)),
                "inv 10"
            );
            assert!(self.listing.lists(&e.caller, e.status, id), "inv 12");
            assert_eq!(
                (e.done_at.len(), e.failed_at.len()),
                (e.done, e.failed),
                "inv 12: {e:?}"
            );
            assert!(
                e.done_at
                    .last()
                    .max(e.failed_at.last())
                    .is_none_or(|&i| i < e.next),
                "inv 12: a stored index at or past next"
            );
            if let Some(key) = &e.key {
                assert_eq!(
                    self.keys.get(&(e.caller.clone(), key.clone())),
                    Some(&id),
                    "inv 11"
                );
            }
            let leased = e
                .lease_until
                .is_some_and(|u| self.leases.contains(&(u, id)));
            assert_eq!(leased, e.lease_until.is_some(), "inv 8");
            assert!(
                idle <= e.lease_until.is_none(),
                "inv 8: a lease without a claim"
            );
            // The whole-job scans (inv 4 everywhere, inv 7's sum) are O(targets): they run for
            // small jobs only, so a debug build stays O(change) on big ones.
            if e.targets.len() <= SMALL {
                assert!(
                    e.results[..e.next]
                        .iter()
                        .all(|r| !matches!(r, TargetState::Pending)),
                    "inv 4"
                );
                assert!(
                    e.results[e.next..]
                        .iter()
                        .all(|r| matches!(r, TargetState::Pending)),
                    "inv 4"
                );
                let done = e
                    .results
                    .iter()
                    .filter(|r| matches!(r, TargetState::Done { .. }))
                    .count();
                assert_eq!((done, e.next - done), (e.done, e.failed), "inv 9");
                let at = |kind| {
                    (0..e.next)
                        .filter(|&i| e.results[i].kind() == kind)
                        .collect::<Vec<_>>()
                };
                assert_eq!(at(TargetKind::Done), e.done_at, "inv 12");
                assert_eq!(at(TargetKind::Failed), e.failed_at, "inv 12");
                let bytes: u64 = e.targets.iter().map(|t| t.len() as u64).sum::<u64>()
                    + e.results.iter().map(TargetState::stored_bytes).sum::<u64>();
                assert_eq!(bytes, e.bytes, "inv 7");
            }
        }
        if self.jobs.len() <= SMALL {
            let live = self.jobs.values().filter(|e| e.status.is_live()).count();
            assert_eq!(live, self.live, "inv 6: live count");
            assert_eq!(self.callers.len(), self.live, "inv 6: callers");
            assert_eq!(
                self.jobs.values().map(|e| e.bytes).sum::<u64>(),
                self.bytes,
                "inv 7"
            );
            assert_eq!(
                self.by_caller.values().map(BTreeSet::len).sum::<usize>(),
                self.jobs.len(),
                "inv 10: every id is a stored job's"
            );
            assert!(self.by_caller.values().all(|ids| !ids.is_empty()), "inv 10");
            let keyed = self.jobs.values().filter(|e| e.key.is_some()).count();
            assert_eq!(self.keys.len(), keyed, "inv 11");
            let n = self.jobs.len();
            assert_eq!(
                self.listing.sizes(),
                (n, n, n),
                "inv 12: every id is a stored job's"
            );
        }
    }
}
