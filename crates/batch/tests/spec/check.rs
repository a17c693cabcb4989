//! Runs one sequence of [`Op`]s against the [`Reference`] and a real [`Store`] side by side,
//! comparing every answer.
//!
//! Ids and tokens are the stores' own business: each store's job ids are mapped to the
//! reference's at submit (the n-th new job of one is the n-th of the other), and tokens are
//! only checked to increase from claim to claim. Everything else must be equal: submits and
//! refusals, every field of a claim, completions, cancels, snapshots, summaries, job lists,
//! evictions, recovers, and (within what the docs allow; see [`wakeup_agrees`]) wake-ups.
//!
//! After the sequence, a drain cancels every live job, releases every claim out and evicts
//! everything, comparing those answers too; so every sequence ends on an empty store, and one
//! store can serve the next sequence (that is how the PostgreSQL spec avoids a schema per
//! sequence).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;

use lockgate_batch::store::{self, Evicted, NewJob, Store, Timestamp};
use lockgate_batch::{Caller, Job, JobId, JobSummary, SubmitError, TargetState};

use super::ops::{Asker, Budget, CALLERS, ClaimPick, JobPick, KEYS, Op, Outcome};
use super::reference::{
    CancelOutcome, Claim, Completion, Ended, Reference, Refusal, Rules, Submitted,
};

/// An id no store mints in a test (and the reference never does): "no such job".
const GHOST: JobId = JobId::new(1 << 40);
/// What a store's id translates to when it matches no job the sequence submitted.
const UNKNOWN: JobId = JobId::new(u64::MAX);

/// How `next_wakeup` is compared for a store.
#[derive(Debug, Clone, Copy)]
pub enum Wakeups {
    /// Always, exactly (within [`wakeup_agrees`]).
    Exact,
    /// A shared store: a fallback poll time up to `poll` ahead is accepted in place of a
    /// later (or no) wake-up; and since it judges leases on another clock (the database
    /// server's) and converts their ends to the caller's, the reference (which gives such a
    /// store no lease) cannot say when a claim out lapses: while one is out, any time from
    /// now to `lease` ahead, and no later than the reference's wake-up, is accepted too.
    /// (Only the PostgreSQL store is shared; `wakeup_agrees_within_what_the_docs_allow`
    /// checks this leeway without a server.)
    Shared {
        /// The store's fallback poll interval.
        poll: Duration,
        /// The store's lease.
        lease: Duration,
    },
}

/// One store under test: its name (for messages) and how the rules apply to it.
#[derive(Debug, Clone, Copy)]
pub struct Flavor {
    /// Shown in failure messages.
    pub name: &'static str,
    /// The rules the reference follows for it.
    pub rules: Rules,
    /// How its wake-ups are compared.
    pub wakeups: Wakeups,
}

/// A claim without its token: what must be equal between the reference and a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// The job (the reference's id).
    job: JobId,
    /// Its caller.
    caller: Caller,
    /// The target's index.
    index: usize,
    /// The target, as JSON.
    target_json: String,
    /// When the target first came back busy.
    busy_since: Option<Timestamp>,
    /// A rescue of a lapsed claim.
    rescued: bool,
    /// The claim started its job.
    started: bool,
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
pub enum Answer {
    /// `submit`.
    Submit(Result<Submitted, Refusal>),
    /// `claim`.
    Claim(Option<Granted>),
    /// `renew`.
    Renewed(bool),
    /// `retry_later`.
    Retried(bool),
    /// `release`.
    Released(bool),
    /// `touch`.
    Touched(bool),
    /// `complete`.
    Completion(Completion),
    /// `cancel`.
    Cancel(CancelOutcome),
    /// `status`.
    Status(Option<Job>),
    /// `summary`.
    Summary(Option<JobSummary>),
    /// `jobs`.
    Jobs(Vec<JobSummary>),
    /// `next_wakeup`.
    Wakeup(Option<Timestamp>),
    /// `evict_oldest`.
    Evicted(Evicted),
    /// `recover`.
    Recovered(usize),
}

impl Answer {
    /// What kind of answer this is, for [`Coverage`]: each kind names a rule the sequences
    /// should reach.
    fn kind(&self) -> &'static str {
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
            Self::Retried(true) => "retry_later: current",
            Self::Retried(false) => "retry_later: stale",
            Self::Released(true) => "release: current",
            Self::Released(false) => "release: stale",
            Self::Touched(true) => "touch: found",
            Self::Touched(false) => "touch: not found",
            Self::Completion(Completion::Stale) => "complete: stale",
            Self::Completion(Completion::Stored { ended: Some(_), .. }) => "complete: ends its job",
            Self::Completion(Completion::Stored { progress, .. }) if !progress.status.is_live() => {
                "complete: into a cancelled job"
            }
            Self::Completion(Completion::Stored { .. }) => "complete: more to do",
            Self::Cancel(CancelOutcome::NotFound) => "cancel: not found",
            Self::Cancel(CancelOutcome::Terminal) => "cancel: already ended",
            Self::Cancel(CancelOutcome::Cancelled(_)) => "cancel: cancelled",
            Self::Status(None) | Self::Summary(None) => "status or summary: not found",
            Self::Status(Some(_)) | Self::Summary(Some(_)) => "status or summary: found",
            Self::Jobs(jobs) if jobs.is_empty() => "jobs: none",
            Self::Jobs(_) => "jobs: some",
            Self::Wakeup(None) => "next_wakeup: none",
            Self::Wakeup(Some(_)) => "next_wakeup: a time",
            Self::Evicted(e) if e.jobs == 0 => "evict_oldest: nothing",
            Self::Evicted(_) => "evict_oldest: some jobs",
            Self::Recovered(_) => "recover",
        }
    }
}

/// How often each kind of answer (see [`Answer::kind`]) came up over a whole run: a
/// generator that stops reaching a rule would otherwise pass in silence.
#[derive(Debug, Default)]
pub struct Coverage(pub BTreeMap<&'static str, u64>);

impl Coverage {
    /// Counts `answer`'s kind.
    fn count(&mut self, answer: &Answer) {
        self.note(answer.kind());
    }

    /// Counts `kind`.
    fn note(&mut self, kind: &'static str) {
        *self.0.entry(kind).or_default() += 1;
    }

    /// The kinds every run must reach; `leases` adds the rescue.
    pub fn required(leases: bool) -> Vec<&'static str> {
        let mut kinds = vec![
            "submit: the same key's job",
            "submit: a new job",
            "submit: full",
            "submit: caller busy",
            "claim: nothing ready",
            "claim: starts its job",
            "claim: a busy target again",
            "claim: a running job",
            "renew: current",
            "renew: stale",
            "retry_later: current",
            "retry_later: stale",
            "release: current",
            "release: stale",
            "touch: found",
            "touch: not found",
            "complete: stale",
            "complete: ends its job",
            "complete: into a cancelled job",
            "complete: more to do",
            "cancel: not found",
            "cancel: already ended",
            "cancel: cancelled",
            "status or summary: not found",
            "status or summary: found",
            "jobs: none",
            "jobs: some",
            "next_wakeup: none",
            "next_wakeup: a time",
            "evict_oldest: nothing",
            "evict_oldest: some jobs",
            "recover",
            "a call naming a job never submitted",
            "a call naming another caller's job",
        ];
        if leases {
            kinds.push("claim: a rescue");
        }
        kinds
    }

    /// The required kinds never reached.
    pub fn missing(&self, leases: bool) -> Vec<&'static str> {
        Self::required(leases)
            .into_iter()
            .filter(|kind| !self.0.contains_key(kind))
            .collect()
    }
}

/// What a store has handed out over its life, across the sequences it serves: its ids must
/// never repeat (an evicted job's included) and its tokens must keep increasing.
#[derive(Debug, Default)]
pub struct History {
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
    flavor: Flavor,
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
}

/// Runs `ops` from time `start` against the reference and `store` (whose earlier life is
/// `history`), then drains both; returns
/// the time the sequence ended at, or a message showing the sequence and both answers.
pub async fn check<S: Store>(
    store: &S,
    history: &mut History,
    coverage: &mut Coverage,
    flavor: Flavor,
    ops: &[Op],
    start: Timestamp,
) -> Result<Timestamp, String> {
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
    };
    let outcome = session.run(ops).await;
    outcome.map_err(|why| {
        let mut text = format!(
            "{}: {why}\n\nthe sequence ({} ops):\n",
            flavor.name,
            ops.len()
        );
        for (i, op) in ops.iter().enumerate() {
            text.push_str(&format!("  {i:>2}: {op:?}\n"));
        }
        text.push_str("\nwhat ran, with the reference's answers:\n");
        for line in &session.trace {
            text.push_str(&format!("  {line}\n"));
        }
        text
    })?;
    Ok(session.now)
}

/// A store call's failure, as a message.
fn failed(call: &str, err: impl Debug) -> String {
    format!("the store failed a {call}: {err:?}")
}

/// How a store's `next_wakeup` answer is one the docs allow, if it is, given the reference's
/// `expected` (earliest lease end, or retry time still to come), its `passed` retry times,
/// and whether `claims_out`: the expected time; or a retry time that has come of a job a
/// claim now finds (no later than the expected one, as the earliest); or, for a shared store,
/// a fallback poll time or a converted lease end (see [`Wakeups::Shared`]).
pub fn wakeup_agrees(
    expected: Option<Timestamp>,
    passed: &[Timestamp],
    got: Option<Timestamp>,
    now: Timestamp,
    claims_out: bool,
    wakeups: Wakeups,
) -> Option<&'static str> {
    if got == expected {
        return Some("as the reference");
    }
    let at = got?;
    if passed.contains(&at) && expected.is_none_or(|e| at <= e) {
        return Some("a retry time that has come");
    }
    let Wakeups::Shared { poll, lease } = wakeups else {
        return None;
    };
    if claims_out
        && at >= now
        && at <= now.saturating_add(lease)
        && expected.is_none_or(|e| at <= e)
    {
        return Some("a lease end on the server's clock");
    }
    if at > now && at <= now.saturating_add(poll) && expected.is_none_or(|e| at < e) {
        return Some("the fallback poll");
    }
    None
}

/// The leeway of [`wakeup_agrees`], checked on its own: the PostgreSQL spec, the only one
/// with a shared store, runs only with a server, and a leeway too wide would let it pass
/// anything. A shared store may give a lease end up to a lease ahead while a claim is out, or
/// its poll up to the poll interval ahead, never later than the reference's own wake-up; an
/// exact store gets neither.
#[test]
fn wakeup_agrees_within_what_the_docs_allow() {
    const LEASE_END: Option<&str> = Some("a lease end on the server's clock");
    const POLL: Option<&str> = Some("the fallback poll");
    let now = Timestamp::from_micros(1_700_000_000_000_000);
    let ahead = |secs| now.saturating_add(Duration::from_secs(secs));
    let shared = Wakeups::Shared {
        poll: Duration::from_secs(10),
        lease: Duration::from_secs(60),
    };
    let agrees = |got, expected, claims_out, wakeups| {
        wakeup_agrees(expected, &[], Some(got), now, claims_out, wakeups)
    };
    // The reference's own wake-up, and a retry time that has come, for every store.
    for wakeups in [Wakeups::Exact, shared] {
        assert_eq!(
            agrees(ahead(99), Some(ahead(99)), false, wakeups),
            Some("as the reference")
        );
        let passed = [ahead(1)];
        let retry = wakeup_agrees(Some(ahead(5)), &passed, Some(ahead(1)), now, false, wakeups);
        assert_eq!(retry, Some("a retry time that has come"));
    }
    // A lease end: while a claim is out, from now up to a lease ahead.
    assert_eq!(agrees(now, None, true, shared), LEASE_END);
    assert_eq!(agrees(ahead(60), None, true, shared), LEASE_END);
    assert_eq!(agrees(ahead(61), None, true, shared), None);
    assert_eq!(agrees(ahead(30), None, false, shared), None, "no claim out");
    assert_eq!(agrees(ahead(30), Some(ahead(20)), true, shared), None);
    // The poll: after now, up to the poll interval ahead, before the reference's wake-up.
    assert_eq!(agrees(ahead(10), None, false, shared), POLL);
    assert_eq!(agrees(ahead(9), Some(ahead(10)), false, shared), POLL);
    assert_eq!(agrees(ahead(11), None, false, shared), None);
    assert_eq!(agrees(now, None, false, shared), None);
    assert_eq!(agrees(ahead(10), Some(ahead(9)), false, shared), None);
    // An exact store: nothing but the reference's wake-up and a retry time that has come.
    for (got, claims_out) in [(now, true), (ahead(10), false), (ahead(60), true)] {
        assert_eq!(agrees(got, None, claims_out, Wakeups::Exact), None);
    }
}

impl<S: Store> Session<'_, S> {
    /// Runs every op, then the drain.
    async fn run(&mut self, ops: &[Op]) -> Result<(), String> {
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
    fn compare(&mut self, what: String, expected: Answer, got: Answer) -> Result<(), String> {
        let agree = expected == got;
        self.coverage.count(&expected);
        self.trace.push(format!("{what} -> {expected:?}"));
        if agree {
            Ok(())
        } else {
            Err(format!(
                "the store disagrees at {what}\n  reference: {expected:?}\n  store:     {got:?}"
            ))
        }
    }

    /// Runs `op`, the `step`-th, on both sides and compares the answers.
    async fn step(&mut self, step: usize, op: &Op) -> Result<(), String> {
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
                                ));
                            }
                            self.jobs.push((new.id, s.id, caller));
                        }
                        Ok(Submitted {
                            id: self.ref_id(s.id),
                            live_jobs: s.live_jobs,
                            existing: s.existing,
                        })
                    }
                    Err(SubmitError::Invalid(lockgate_batch::InvalidJob::Empty)) => {
                        Err(Refusal::Empty)
                    }
                    Err(SubmitError::Full) => Err(Refusal::Full),
                    Err(SubmitError::CallerBusy { live }) => Err(Refusal::CallerBusy {
                        live: self.ref_id(live),
                    }),
                    Err(err) => return Err(failed("submit", err)),
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
            Op::Complete(pick, outcome) | Op::CompleteAndClaim(pick, outcome) => {
                let Some(k) = self.pick_claim(*pick) else {
                    return self.nothing(at, op);
                };
                let result = match *outcome {
                    Outcome::Done { len } => TargetState::Done {
                        output_json: format!("\"{}\"", "o".repeat(len)),
                    },
                    Outcome::Failed { len, hint } => TargetState::Failed {
                        error: "e".repeat(len),
                        hint: hint.then(|| "try later".to_owned()),
                    },
                };
                let (mine, theirs) = self.claims[k].clone();
                let and_claim = matches!(op, Op::CompleteAndClaim(..));
                let call = if and_claim {
                    "complete_and_claim"
                } else {
                    "complete"
                };
                let what = format!(
                    "{at}: {call} claim #{k} (job {}, target {}, token {}) with {result:?}",
                    mine.job, mine.index, mine.token
                );
                let ((expected, expected_next), (got, got_next)) = if and_claim {
                    (
                        self.reference
                            .complete_and_claim(&mine, result.clone(), now),
                        self.store
                            .complete_and_claim(&theirs, result, now)
                            .await
                            .map_err(|e| failed(call, e))?,
                    )
                } else {
                    (
                        (self.reference.complete(&mine, result.clone(), now), None),
                        (
                            self.store
                                .complete(&theirs, result, now)
                                .await
                                .map_err(|e| failed(call, e))?,
                            None,
                        ),
                    )
                };
                let got = match got {
                    store::Completion::Stored {
                        bytes,
                        ended,
                        progress,
                    } => Completion::Stored {
                        bytes,
                        ended: ended.as_ref().map(|e| self.ended(e)),
                        progress,
                    },
                    store::Completion::Stale => Completion::Stale,
                    other => return Err(format!("{at}: an unknown completion {other:?}")),
                };
                self.compare(what, Answer::Completion(expected), Answer::Completion(got))?;
                if and_claim {
                    let what = format!("{at}: … and its claim");
                    self.claimed(&at, what, expected_next, got_next, now)?;
                }
                Ok(())
            }
            Op::RetryLater(pick, wait_ms) => {
                let Some(k) = self.pick_claim(*pick) else {
                    return self.nothing(at, op);
                };
                let (mine, theirs) = self.claims[k].clone();
                let busy_since = mine.busy_since.unwrap_or(now);
                let retry_at = now.saturating_add(Duration::from_millis(*wait_ms));
                let what = format!(
                    "{at}: retry_later claim #{k} (job {}, token {}) busy since {busy_since:?}, \
                     at {retry_at:?}",
                    mine.job, mine.token
                );
                let expected = self.reference.retry_later(&mine, busy_since, retry_at, now);
                let got = self
                    .store
                    .retry_later(&theirs, busy_since, retry_at, now)
                    .await
                    .map_err(|e| failed("retry_later", e))?;
                self.compare(what, Answer::Retried(expected), Answer::Retried(got))
            }
            Op::Release(pick) => {
                let Some(k) = self.pick_claim(*pick) else {
                    return self.nothing(at, op);
                };
                let (mine, theirs) = self.claims[k].clone();
                let what = format!(
                    "{at}: release claim #{k} (job {}, token {})",
                    mine.job, mine.token
                );
                let expected = self.reference.release(&mine, now);
                let got = self
                    .store
                    .release(&theirs, now)
                    .await
                    .map_err(|e| failed("release", e))?;
                self.compare(what, Answer::Released(expected), Answer::Released(got))
            }
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

    /// Checks the rotation's fairness bound on the reference after it claimed job `claimed`:
    /// while a job stays ready, every other job is claimed at most once before it. (A check
    /// of the reference against a consequence the docs state separately; the stores agree
    /// with the reference claim by claim.)
    fn fairness(&mut self, at: &str, claimed: JobId, now: Timestamp) -> Result<(), String> {
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
                ));
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
    ) -> Result<(), String> {
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
                ));
            }
            self.history.last_token = Some(theirs.token);
            self.claims.push((mine, theirs));
        }
        Ok(())
    }

    /// Traces a claim op that found no claim to use.
    fn nothing(&mut self, at: String, op: &Op) -> Result<(), String> {
        self.trace
            .push(format!("{at}: {op:?}: no claim yet, nothing called"));
        Ok(())
    }

    /// Compares `caller`'s job lists.
    async fn jobs_of(&mut self, at: &str, caller: &Caller) -> Result<(), String> {
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
    async fn evict(&mut self, at: &str, max_bytes: u64) -> Result<(), String> {
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
    async fn wakeup(&mut self, at: &str) -> Result<(), String> {
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
            wakeup_agrees(expected, &passed, got, now, claims_out, self.flavor.wakeups)
        {
            self.coverage.count(&Answer::Wakeup(expected));
            self.coverage.note(match how {
                "as the reference" => "next_wakeup (store): as the reference",
                "a retry time that has come" => "next_wakeup (store): a retry time that has come",
                "a lease end on the server's clock" => {
                    "next_wakeup (store): a lease end on the server's clock"
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
    ) -> Result<(), String> {
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
    async fn drain(&mut self) -> Result<(), String> {
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
            let expected = self.reference.release(&mine, now);
            let got = self
                .store
                .release(&theirs, now)
                .await
                .map_err(|e| failed("release", e))?;
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
