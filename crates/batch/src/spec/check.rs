//! Runs one sequence of [`Op`]s against the [`Reference`] and a real [`Store`] side by side,
//! comparing every answer.
//!
//! Ids and tokens are the stores' own business: each store's job ids are mapped to the
//! reference's at submit (the n-th new job of one is the n-th of the other), and tokens are
//! only checked to increase from claim to claim. Everything else must be equal: submits and
//! refusals, every field of a claim, finishes, cancels, snapshots, summaries, job lists,
//! evictions, recovers, and (within what the docs allow; see [`wakeup_agrees`]) wake-ups.
//! Whether a `finish` asked to `take_next` hands a claim back is the store's choice; when it
//! does, that claim is compared with the one the reference makes then. The page reads are
//! checked in `check/pages.rs`.
//!
//! After the sequence, a drain cancels every live job, releases every claim out and evicts
//! everything, comparing those answers too; so every sequence ends on an empty store, and one
//! store can serve the next sequence (that is how a database's spec avoids a schema per
//! sequence).

mod pages;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;

use super::Rules;
use super::answer::{Answer, Granted};
use super::coverage::Coverage;
use super::ops::{Asker, Budget, CALLERS, ClaimPick, JobPick, KEYS, Op, Outcome};
use super::reference::{CancelOutcome, Claim, Completion, Ended, Reference, Refusal, Submitted};
use super::report::Failure;
use super::wakeup::wakeup_agrees;
use crate::error::{InvalidJob, SubmitError};
use crate::job::{Caller, JobId, TargetState};
use crate::store::{self, ClaimEnd, NewJob, Store, Timestamp};
use crate::summary::JobSummary;

/// An id no store mints in a test (and the reference never does): "no such job".
const GHOST: JobId = JobId::new(1 << 40);
/// What a store's id translates to when it matches no job the sequence submitted.
const UNKNOWN: JobId = JobId::new(u64::MAX);

/// The store under test, as the checker names it and holds it to the rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flavor<'a> {
    /// Shown in failure messages.
    pub(crate) name: &'a str,
    /// What the store promises where stores may differ.
    pub(crate) rules: Rules,
}

/// Why a sequence stopped: what went wrong, and both answers when they differed.
#[derive(Debug)]
struct Mismatch {
    /// What went wrong, at which step.
    what: String,
    /// The reference's answer and the store's.
    answers: Option<(String, String)>,
}

impl From<String> for Mismatch {
    fn from(what: String) -> Self {
        Self {
            what,
            answers: None,
        }
    }
}

/// What a store has handed out over its life, across the sequences it serves: its ids must
/// never repeat (an evicted job's included) and its tokens must keep increasing.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// Every job id the store minted.
    ids: BTreeSet<JobId>,
    /// The store's last token.
    last_token: Option<u64>,
}

/// One sequence in progress.
struct Session<'a, S> {
    /// The store under test.
    store: &'a S,
    /// Where the answers' kinds are counted.
    coverage: &'a mut Coverage,
    /// How the rules apply to the store.
    flavor: Flavor<'a>,
    /// The reference, fresh for each sequence.
    reference: Reference,
    /// The sequence's clock.
    now: Timestamp,
    /// Every job submitted: (reference id, store id, caller), in submit order.
    jobs: Vec<(JobId, JobId, Caller)>,
    /// Every claim handed out: the reference's and the store's, in claim order.
    claims: Vec<(Claim, store::Claim)>,
    /// What the store handed out before and during this sequence.
    history: &'a mut History,
    /// What ran so far, with the reference's answers.
    trace: Vec<String>,
    /// Submits so far, which makes every target's JSON unique.
    submits: usize,
    /// For each job ready now, the jobs claimed since it became ready (see
    /// [`Session::fairness`]).
    waits: BTreeMap<JobId, Vec<JobId>>,
    /// When the sequence started.
    start: Timestamp,
    /// The `next` of the last jobs page that had one: (the reference's, the store's).
    last_jobs_next: Option<(JobId, JobId)>,
    /// The `next` of the last targets page that had one.
    last_targets_next: Option<usize>,
}

/// Runs `ops` from time `start` against the reference and `store` (whose earlier life is
/// `history`), then drains both; returns the time the sequence ended at, or what went wrong
/// with the sequence and what ran of it.
pub(crate) async fn check<S: Store>(
    store: &S,
    history: &mut History,
    coverage: &mut Coverage,
    flavor: Flavor<'_>,
    ops: &[Op],
    start: Timestamp,
) -> Result<Timestamp, Failure> {
    let mut session = Session {
        store,
        coverage,
        flavor,
        reference: Reference::new(flavor.rules),
        now: start,
        jobs: Vec::new(),
        claims: Vec::new(),
        history,
        trace: Vec::new(),
        submits: 0,
        waits: BTreeMap::new(),
        start,
        last_jobs_next: None,
        last_targets_next: None,
    };
    match session.run(ops).await {
        Ok(()) => Ok(session.now),
        Err(mismatch) => Err(Failure::new(flavor.name, mismatch.what)
            .with_answers(mismatch.answers)
            .with_sequence(describe(ops), session.trace)),
    }
}

/// `ops`, one `Debug` line each.
pub(crate) fn describe(ops: &[Op]) -> Vec<String> {
    ops.iter().map(|op| format!("{op:?}")).collect()
}

/// A store call's failure, as a message.
fn failed(call: &str, err: impl Debug) -> String {
    format!("the store failed a {call}: {err:?}")
}

impl<S: Store> Session<'_, S> {
    /// Runs every op, then the drain.
    async fn run(&mut self, ops: &[Op]) -> Result<(), Mismatch> {
        for (step, op) in ops.iter().enumerate() {
            self.step(step, op).await?;
        }
        self.drain().await
    }

    /// The reference id of the store's job `id`.
    fn ref_id(&self, id: JobId) -> JobId {
        if id == GHOST {
            return GHOST;
        }
        self.jobs
            .iter()
            .find(|(_, s, _)| *s == id)
            .map_or(UNKNOWN, |(r, _, _)| *r)
    }

    /// A store's `Ended`, its id translated.
    fn ended(&self, e: &store::Ended) -> Ended {
        Ended {
            job: self.ref_id(e.job),
            status: e.status,
            counts: e.counts,
            after: e.after,
            live_jobs: e.live_jobs,
        }
    }

    /// A store's completion, its ids translated.
    fn completion(&self, completion: store::Completion) -> Completion {
        match completion {
            store::Completion::Stored {
                bytes,
                ended,
                progress,
            } => Completion::Stored {
                bytes,
                ended: ended.as_ref().map(|e| self.ended(e)),
                progress,
            },
            store::Completion::Pending => Completion::Pending,
            store::Completion::Stale => Completion::Stale,
            store::Completion::Lost => Completion::Lost,
        }
    }

    /// A store's claim without its token, its id translated.
    fn granted(&self, c: &store::Claim) -> Granted {
        Granted {
            job: self.ref_id(c.job),
            caller: c.caller.clone(),
            index: c.index,
            target_json: c.target_json.to_string(),
            busy_since: c.busy_since,
            rescued: c.rescued,
            started: c.started,
        }
    }

    /// A store's summary, its id translated.
    fn summary(&self, s: JobSummary) -> JobSummary {
        JobSummary::new(self.ref_id(s.id), s.status, s.counts, s.created, s.updated)
    }

    /// The claim `pick` names, by its position in `claims`; `None` before any claim.
    fn pick_claim(&self, pick: ClaimPick) -> Option<usize> {
        if self.claims.is_empty() {
            return None;
        }
        let current: Vec<usize> = (0..self.claims.len())
            .filter(|&k| self.reference.is_current(&self.claims[k].0))
            .collect();
        Some(if pick.current && !current.is_empty() {
            current[pick.index.index(current.len())]
        } else {
            pick.index.index(self.claims.len())
        })
    }

    /// The job `pick` names: (reference id, store id, asker).
    fn pick_job(&mut self, pick: JobPick) -> (JobId, JobId, Caller) {
        let (ref_id, store_id, owner) = match pick.job {
            Some(index) if !self.jobs.is_empty() => self.jobs[index.index(self.jobs.len())].clone(),
            _ => (GHOST, GHOST, Caller::new(CALLERS[0])),
        };
        let asker = match pick.asker {
            Asker::Owner => owner.clone(),
            Asker::Caller(n) => Caller::new(CALLERS[n]),
        };
        if ref_id == GHOST {
            self.coverage.note("a call naming a job never submitted");
        } else if asker != owner {
            self.coverage.note("a call naming another caller's job");
        }
        (ref_id, store_id, asker)
    }

    /// Counts and traces the reference's answer to `what`; `Err` shows both answers if the
    /// store's differs.
    fn compare(&mut self, what: String, expected: Answer, got: Answer) -> Result<(), Mismatch> {
        let agree = expected == got;
        self.coverage.count(&expected);
        self.trace.push(format!("{what} -> {expected:?}"));
        if agree {
            Ok(())
        } else {
            Err(Mismatch {
                what: format!("the store disagrees at {what}"),
                answers: Some((format!("{expected:?}"), format!("{got:?}"))),
            })
        }
    }

    /// Runs `op`, the `step`-th, on both sides and compares the answers.
    async fn step(&mut self, step: usize, op: &Op) -> Result<(), Mismatch> {
        let now = self.now;
        let at = format!(
            "step {step} (t+{}ms)",
            now.saturating_since(self.start).as_millis()
        );
        match op {
            Op::Submit {
                caller,
                targets,
                key,
                max_live_jobs,
            } => {
                let caller = Caller::new(CALLERS[*caller]);
                self.submits += 1;
                let targets: Vec<String> = targets
                    .iter()
                    .enumerate()
                    .map(|(i, pad)| format!("\"{caller}{}.{i}{}\"", self.submits, "x".repeat(*pad)))
                    .collect();
                let mut job = NewJob::new(caller.clone(), targets, now, *max_live_jobs);
                if let Some(k) = key {
                    job = job.with_key(KEYS[*k]);
                }
                let what = format!("{at}: submit {job:?}");
                let expected = self.reference.submit(job.clone());
                let got = match self.store.submit(job).await {
                    Ok(s) => {
                        if let Ok(new) = expected
                            && !new.existing
                            && !s.existing
                            && self.ref_id(s.id) == UNKNOWN
                        {
                            if !self.history.ids.insert(s.id) {
                                return Err(format!(
                                    "{at}: the store minted id {} again, for a new job",
                                    s.id
                                )
                                .into());
                            }
                            self.jobs.push((new.id, s.id, caller));
                        }
                        Ok(Submitted {
                            id: self.ref_id(s.id),
                            live_jobs: s.live_jobs,
                            existing: s.existing,
                        })
                    }
                    Err(SubmitError::Invalid(InvalidJob::Empty)) => Err(Refusal::Empty),
                    Err(SubmitError::Full) => Err(Refusal::Full),
                    Err(SubmitError::CallerBusy { live }) => Err(Refusal::CallerBusy {
                        live: self.ref_id(live),
                    }),
                    Err(err) => return Err(failed("submit", err).into()),
                };
                self.compare(what, Answer::Submit(expected), Answer::Submit(got))
            }
            Op::Claim => {
                let what = format!("{at}: claim");
                let expected = self.reference.claim(now);
                let got = self
                    .store
                    .claim(now)
                    .await
                    .map_err(|e| failed("claim", e))?;
                self.claimed(&at, what, expected, got, now)
            }
            Op::Renew(pick) => {
                let Some(k) = self.pick_claim(*pick) else {
                    return self.nothing(at, op);
                };
                let (mine, theirs) = &self.claims[k];
                let what = format!(
                    "{at}: renew claim #{k} (job {}, token {})",
                    mine.job, mine.token
                );
                let expected = self.reference.renew(mine, now);
                let got = self
                    .store
                    .renew(theirs, now)
                    .await
                    .map_err(|e| failed("renew", e))?;
                self.compare(what, Answer::Renewed(expected), Answer::Renewed(got))
            }
            Op::Store(pick, outcome) | Op::StoreTakingNext(pick, outcome) => {
                let result = match *outcome {
                    Outcome::Done { len } => TargetState::Done {
                        output_json: format!("\"{}\"", "o".repeat(len)),
                    },
                    Outcome::Failed { len, hint } => TargetState::Failed {
                        error: "e".repeat(len),
                        hint: hint.then(|| "try later".to_owned()),
                    },
                };
                let take_next = matches!(op, Op::StoreTakingNext(..));
                self.finish(&at, op, *pick, ClaimEnd::Stored(result), take_next)
                    .await
            }
            Op::RetryLater(pick, wait_ms) => {
                let Some(k) = self.pick_claim(*pick) else {
                    return self.nothing(at, op);
                };
                // What the runner passes: the claim's own `busy_since`, else now.
                let end = ClaimEnd::RetryLater {
                    busy_since: self.claims[k].0.busy_since.unwrap_or(now),
                    at: now.saturating_add(Duration::from_millis(*wait_ms)),
                };
                self.finish(&at, op, *pick, end, false).await
            }
            Op::Release(pick) => self.finish(&at, op, *pick, ClaimEnd::Released, false).await,
            Op::Cancel(pick) => {
                let (ref_id, store_id, asker) = self.pick_job(*pick);
                let what = format!("{at}: cancel job {ref_id} as {asker}");
                self.cancel(what, ref_id, store_id, &asker).await
            }
            Op::Touch(pick) => {
                let (ref_id, store_id, asker) = self.pick_job(*pick);
                let what = format!("{at}: touch job {ref_id} as {asker}");
                let expected = self.reference.touch(ref_id, &asker, now);
                let got = self
                    .store
                    .touch(store_id, &asker, now)
                    .await
                    .map_err(|e| failed("touch", e))?;
                self.compare(what, Answer::Touched(expected), Answer::Touched(got))
            }
            Op::Status(pick) => {
                let (ref_id, store_id, asker) = self.pick_job(*pick);
                let what = format!("{at}: status of job {ref_id} as {asker}");
                let expected = self.reference.status(ref_id, &asker);
                let got = self
                    .store
                    .status(store_id, &asker)
                    .await
                    .map_err(|e| failed("status", e))?
                    .map(|mut job| {
                        job.id = self.ref_id(job.id);
                        job
                    });
                self.compare(what, Answer::Status(expected), Answer::Status(got))
            }
            Op::Summary(pick) => {
                let (ref_id, store_id, asker) = self.pick_job(*pick);
                let what = format!("{at}: summary of job {ref_id} as {asker}");
                let expected = self.reference.summary(ref_id, &asker);
                let got = self
                    .store
                    .summary(store_id, &asker)
                    .await
                    .map_err(|e| failed("summary", e))?
                    .map(|s| self.summary(s));
                self.compare(what, Answer::Summary(expected), Answer::Summary(got))
            }
            Op::Jobs(n) => self.jobs_of(&at, &Caller::new(CALLERS[*n])).await,
            Op::JobsPage {
                caller,
                status,
                key,
                limit,
            } => self.jobs_page(&at, *caller, *status, *key, *limit).await,
            Op::Job(job, viewer) => self.job(&at, *job, *viewer).await,
            Op::TargetsPage {
                job,
                viewer,
                state,
                key,
                limit,
            } => {
                self.targets_page(&at, *job, *viewer, *state, *key, *limit)
                    .await
            }
            Op::NextWakeup => self.wakeup(&at).await,
            Op::Evict(budget) => {
                let stored = self.reference.stored_bytes();
                let max_bytes = match *budget {
                    Budget::Zero => 0,
                    Budget::Unlimited => u64::MAX,
                    Budget::Keep => stored,
                    Budget::Free(bytes) => stored.saturating_sub(bytes),
                };
                self.evict(&at, max_bytes).await
            }
            Op::Recover => {
                let what = format!("{at}: recover");
                let expected = self.reference.recover(now);
                let got = self
                    .store
                    .recover(now)
                    .await
                    .map_err(|e| failed("recover", e))?;
                self.compare(what, Answer::Recovered(expected), Answer::Recovered(got))
            }
            Op::Advance(ms) => {
                self.now = now.saturating_add(Duration::from_millis(*ms));
                self.trace.push(format!("{at}: the clock moves {ms} ms"));
                Ok(())
            }
        }
    }

    /// Finishes the claim `pick` names as `end` says, asking for the next claim if
    /// `take_next`, and compares the answers; a next claim the store hands back is compared
    /// with the one the reference makes then.
    async fn finish(
        &mut self,
        at: &str,
        op: &Op,
        pick: ClaimPick,
        end: ClaimEnd,
        take_next: bool,
    ) -> Result<(), Mismatch> {
        let Some(k) = self.pick_claim(pick) else {
            return self.nothing(at.to_owned(), op);
        };
        let now = self.now;
        let (mine, theirs) = self.claims[k].clone();
        let what = format!(
            "{at}: finish claim #{k} (job {}, target {}, token {}) with {end:?}{}",
            mine.job,
            mine.index,
            mine.token,
            if take_next { ", taking the next" } else { "" }
        );
        let answer = match end {
            ClaimEnd::Stored(_) => Answer::Stored,
            ClaimEnd::RetryLater { .. } => Answer::RetriedLater,
            ClaimEnd::Released => Answer::Released,
        };
        let cursor = self.reference.cursor();
        let expected = self.reference.finish(&mine, end.clone(), now);
        if self.reference.cursor() != cursor {
            // A released claim handed its turn back: for the fairness bound, it took none.
            for passed_by in self.waits.values_mut() {
                passed_by.retain(|&job| job != mine.job);
            }
        }
        let finished = self
            .store
            .finish(&theirs, end, now, take_next)
            .await
            .map_err(|e| failed("finish", e))?;
        if finished.next.is_some() && !take_next {
            let why = format!("{at}: a finish not asked to take the next claim handed one back");
            return Err(why.into());
        }
        let got = self.completion(finished.completion);
        self.compare(what, answer(expected), answer(got))?;
        if let Some(next) = finished.next {
            // Taking the next claim is the store's choice: the reference claims only when
            // the store did, and then the claim must be the one it would make.
            let expected_next = match expected {
                Completion::Stale | Completion::Lost => None,
                _ => self.reference.claim_next(&mine, now),
            };
            self.coverage.note("finish: the store took the next claim");
            let what = format!("{at}: … and the next claim");
            self.claimed(at, what, expected_next, Some(next), now)?;
        }
        Ok(())
    }

    /// Checks the rotation's fairness bound on the reference after it claimed job `claimed`:
    /// while a job stays ready, every other job is claimed at most once before it. (A check
    /// of the reference against a consequence the docs state separately; the stores agree
    /// with the reference claim by claim.)
    fn fairness(&mut self, at: &str, claimed: JobId, now: Timestamp) -> Result<(), Mismatch> {
        let ready = self.reference.ready(now);
        // A job's wait starts afresh when it is claimed; one no longer ready waits no more.
        self.waits
            .retain(|job, _| *job != claimed && ready.contains(job));
        for job in ready {
            let passed_by = self.waits.entry(job).or_default();
            if passed_by.contains(&claimed) {
                return Err(format!(
                    "{at}: the reference claimed job {claimed} twice while job {job} stayed \
                     ready, against the rotation's fairness bound"
                )
                .into());
            }
            passed_by.push(claimed);
        }
        Ok(())
    }

    /// Compares a claim's answers (`what`), checks the reference's fairness bound and the
    /// store's token order, and keeps the claim for later calls.
    fn claimed(
        &mut self,
        at: &str,
        what: String,
        expected: Option<Claim>,
        got: Option<store::Claim>,
        now: Timestamp,
    ) -> Result<(), Mismatch> {
        if let Some(mine) = &expected {
            self.fairness(at, mine.job, now)?;
        }
        let answer = got.as_ref().map(|c| self.granted(c));
        self.compare(
            what,
            Answer::Claim(expected.as_ref().map(Granted::from)),
            Answer::Claim(answer),
        )?;
        if let (Some(mine), Some(theirs)) = (expected, got) {
            let last = self.history.last_token;
            if last.is_some_and(|last| theirs.token <= last) {
                return Err(format!(
                    "{at}: the store's token {} does not follow its last, {last:?}",
                    theirs.token
                )
                .into());
            }
            self.history.last_token = Some(theirs.token);
            self.claims.push((mine, theirs));
        }
        Ok(())
    }

    /// Traces a claim op that found no claim to use.
    fn nothing(&mut self, at: String, op: &Op) -> Result<(), Mismatch> {
        self.trace
            .push(format!("{at}: {op:?}: no claim yet, nothing called"));
        Ok(())
    }

    /// Compares `caller`'s job lists.
    async fn jobs_of(&mut self, at: &str, caller: &Caller) -> Result<(), Mismatch> {
        let what = format!("{at}: jobs of {caller}");
        let expected = self.reference.jobs(caller);
        let got = self
            .store
            .jobs(caller)
            .await
            .map_err(|e| failed("jobs", e))?
            .into_iter()
            .map(|s| self.summary(s))
            .collect();
        self.compare(what, Answer::Jobs(expected), Answer::Jobs(got))
    }

    /// Compares evictions down to `max_bytes`.
    async fn evict(&mut self, at: &str, max_bytes: u64) -> Result<(), Mismatch> {
        let what = format!(
            "{at}: evict_oldest to {max_bytes} bytes (stored: {})",
            self.reference.stored_bytes()
        );
        let expected = self.reference.evict_oldest(max_bytes);
        let got = self
            .store
            .evict_oldest(max_bytes)
            .await
            .map_err(|e| failed("evict_oldest", e))?;
        self.compare(what, Answer::Evicted(expected), Answer::Evicted(got))
    }

    /// Compares wake-ups, within [`wakeup_agrees`].
    async fn wakeup(&mut self, at: &str) -> Result<(), Mismatch> {
        let now = self.now;
        let what = format!("{at}: next_wakeup");
        let expected = self.reference.next_wakeup(now);
        let passed = self.reference.passed_retries(now);
        let got = self
            .store
            .next_wakeup(now)
            .await
            .map_err(|e| failed("next_wakeup", e))?;
        let claims_out = !self.reference.claims_out().is_empty();
        if let Some(how) =
            wakeup_agrees(expected, &passed, got, now, claims_out, &self.flavor.rules)
        {
            self.coverage.count(&Answer::Wakeup(expected));
            self.coverage.note(match how {
                "as the reference" => "next_wakeup (store): as the reference",
                "a retry time that has come" => "next_wakeup (store): a retry time that has come",
                "a lease end on the store's clock" => {
                    "next_wakeup (store): a lease end on the store's clock"
                }
                _ => "next_wakeup (store): the fallback poll",
            });
            self.trace.push(format!(
                "{what} -> {got:?}: {how} (reference: {expected:?}, passed retries {passed:?})"
            ));
            Ok(())
        } else {
            self.compare(what, Answer::Wakeup(expected), Answer::Wakeup(got))
        }
    }

    /// Cancels a job as `asker` in both stores (`ref_id` in the reference, `store_id` in the
    /// store under test) at the sequence's clock, and compares the answers.
    async fn cancel(
        &mut self,
        what: String,
        ref_id: JobId,
        store_id: JobId,
        asker: &Caller,
    ) -> Result<(), Mismatch> {
        let now = self.now;
        let expected = self.reference.cancel(ref_id, asker, now);
        let got = match self
            .store
            .cancel(store_id, asker, now)
            .await
            .map_err(|e| failed("cancel", e))?
        {
            store::CancelOutcome::NotFound => CancelOutcome::NotFound,
            store::CancelOutcome::Terminal => CancelOutcome::Terminal,
            store::CancelOutcome::Cancelled(e) => CancelOutcome::Cancelled(self.ended(&e)),
        };
        self.compare(what, Answer::Cancel(expected), Answer::Cancel(got))
    }

    /// Cancels every live job, releases every claim out and evicts everything, comparing each
    /// answer; then every caller's job list must be empty.
    async fn drain(&mut self) -> Result<(), Mismatch> {
        let now = self.now;
        for (ref_id, caller) in self.reference.live() {
            let store_id = self
                .jobs
                .iter()
                .find(|(r, _, _)| *r == ref_id)
                .map(|(_, s, _)| *s)
                .expect("every live job was submitted in the sequence");
            let what = format!("drain: cancel job {ref_id}");
            self.cancel(what, ref_id, store_id, &caller).await?;
        }
        for k in 0..self.claims.len() {
            let (mine, theirs) = self.claims[k].clone();
            if !self.reference.is_current(&mine) {
                continue;
            }
            let what = format!("drain: release claim #{k} (job {})", mine.job);
            let expected = self.reference.finish(&mine, ClaimEnd::Released, now);
            let finished = self
                .store
                .finish(&theirs, ClaimEnd::Released, now, false)
                .await
                .map_err(|e| failed("finish", e))?;
            if let Some(next) = finished.next {
                let why = format!("drain: a release handed a next claim back: {next:?}");
                return Err(why.into());
            }
            let got = self.completion(finished.completion);
            self.compare(what, Answer::Released(expected), Answer::Released(got))?;
        }
        self.evict("drain", 0).await?;
        self.wakeup("drain").await?;
        for caller in CALLERS {
            self.jobs_of("drain", &Caller::new(caller)).await?;
        }
        assert_eq!(self.reference.stored_bytes(), 0, "the reference drained");
        Ok(())
    }
}
