//! The operations a spec sequence is made of, and the proptest strategies that generate them.
//!
//! An operation names its claim or job by position ([`Index`]) in what the sequence has
//! produced so far, not by id or token: stores mint ids and tokens their own way, and a
//! position stays meaningful when proptest shrinks the sequence by dropping operations.

use proptest::prelude::*;
use proptest::sample::Index;

use crate::job::JobStatus;
use crate::page::TargetKind;

/// Callers the sequences use; every op picks one of these by position.
pub(crate) const CALLERS: [&str; 3] = ["ann", "bob", "cy"];

/// Idempotency keys the sequences use.
pub(crate) const KEYS: [&str; 2] = ["k0", "k1"];

/// Which claim an operation uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimPick {
    /// Pick among the claims still current (by the reference), if there are any; else among
    /// every claim handed out so far, stale ones included.
    pub(crate) current: bool,
    /// The position among those.
    pub(crate) index: Index,
}

/// Who asks about a job.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asker {
    /// The job's own caller.
    Owner,
    /// `CALLERS[n]`, who may or may not own it.
    Caller(usize),
}

/// Which job an operation names, and who asks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobPick {
    /// A job submitted earlier in the sequence (evicted ones included), by position; `None`
    /// names an id no store ever minted.
    pub(crate) job: Option<Index>,
    /// Who asks.
    pub(crate) asker: Asker,
}

/// Whose jobs a page read covers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Viewer {
    /// One caller: [`Asker`] names which.
    Asker(Asker),
    /// [`Scope::Everyone`](crate::page::Scope::Everyone).
    Everyone,
}

/// Where a jobs page starts: its `before` key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum JobsKey {
    /// No key: the first page.
    First,
    /// The id of a job submitted earlier in the sequence (evicted ones included).
    Job(Index),
    /// One above such an id: a key no job has, between that job and the next.
    AboveJob(Index),
    /// An id above every job's (`GHOST`).
    Ghost,
    /// Id 0: below every job's.
    Zero,
    /// The `next` of the last jobs page read, if one had a next; else no key.
    Previous,
}

/// Where a targets page starts: its `after` key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TargetsKey {
    /// No key: the first page.
    First,
    /// This index (the sequences' jobs have up to three targets).
    At(usize),
    /// `usize::MAX`: past every target.
    Past,
    /// The `next` of the last targets page read, if one had a next (of whichever job);
    /// else no key.
    Previous,
}

/// A result to store.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    /// `Done` with an output of `len` characters inside its JSON quotes.
    Done {
        /// The output's length.
        len: usize,
    },
    /// `Failed` with an error of `len` characters, and a hint if `hint`.
    Failed {
        /// The error's length.
        len: usize,
        /// Whether a hint comes with it.
        hint: bool,
    },
}

/// The budget an eviction gets.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Budget {
    /// Remove every ended, idle job.
    Zero,
    /// `u64::MAX`: remove nothing.
    Unlimited,
    /// Exactly the bytes stored now: remove nothing.
    Keep,
    /// The bytes stored now less this many: remove the oldest until they fit.
    Free(u64),
}

/// One call (or a step of the clock) in a sequence.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `submit` a job of `CALLERS[caller]`, one target per entry of `targets` (its extra
    /// length), with key `KEYS[k]` if `key` is `Some(k)`, refused when `max_live_jobs` are
    /// live.
    Submit {
        /// The caller.
        caller: usize,
        /// Each target's extra length (the sizes vary the stored bytes).
        targets: Vec<usize>,
        /// The idempotency key, if any.
        key: Option<usize>,
        /// The `max_live_jobs` limit.
        max_live_jobs: usize,
    },
    /// `claim`.
    Claim,
    /// `renew` a claim.
    Renew(ClaimPick),
    /// `finish` a claim with a result to store ([`ClaimEnd::Stored`]).
    ///
    /// [`ClaimEnd::Stored`]: crate::store::ClaimEnd::Stored
    Store(ClaimPick, Outcome),
    /// The same with `take_next`: the store may claim another job in the same step.
    StoreTakingNext(ClaimPick, Outcome),
    /// `finish` a claim as busy ([`ClaimEnd::RetryLater`]), ready again `wait_ms` from now,
    /// first busy at the claim's own `busy_since` or now (what the runner passes).
    ///
    /// [`ClaimEnd::RetryLater`]: crate::store::ClaimEnd::RetryLater
    RetryLater(ClaimPick, u64),
    /// `finish` a claim without a result ([`ClaimEnd::Released`]).
    ///
    /// [`ClaimEnd::Released`]: crate::store::ClaimEnd::Released
    Release(ClaimPick),
    /// `cancel` a job.
    Cancel(JobPick),
    /// `touch` a job.
    Touch(JobPick),
    /// `status` of a job.
    Status(JobPick),
    /// `summary` of a job.
    Summary(JobPick),
    /// `jobs` of `CALLERS[n]`.
    Jobs(usize),
    /// `jobs_page` of `CALLERS[n]` (`None`: everyone's), in a status if one is named.
    JobsPage {
        /// The caller whose page it is; `None` for everyone's.
        caller: Option<usize>,
        /// The status filter.
        status: Option<JobStatus>,
        /// Where the page starts.
        key: JobsKey,
        /// The query's `limit`.
        limit: Option<usize>,
    },
    /// `job` of a job (`job: None` names an id never minted).
    Job(Option<Index>, Viewer),
    /// `targets_page` of a job (`job: None` names an id never minted), in a state if one
    /// is named.
    TargetsPage {
        /// The job.
        job: Option<Index>,
        /// Who reads it.
        viewer: Viewer,
        /// The state filter.
        state: Option<TargetKind>,
        /// Where the page starts.
        key: TargetsKey,
        /// The query's `limit`.
        limit: Option<usize>,
    },
    /// `next_wakeup`.
    NextWakeup,
    /// `evict_oldest` with a budget.
    Evict(Budget),
    /// `recover`.
    Recover,
    /// The clock moves this many milliseconds forward.
    Advance(u64),
}

fn claim_pick() -> impl Strategy<Value = ClaimPick> {
    (proptest::bool::weighted(0.8), any::<Index>())
        .prop_map(|(current, index)| ClaimPick { current, index })
}

fn job_pick() -> impl Strategy<Value = JobPick> {
    let job = prop_oneof![12 => any::<Index>().prop_map(Some), 1 => Just(None)];
    let asker = prop_oneof![
        4 => Just(Asker::Owner),
        1 => (0..CALLERS.len()).prop_map(Asker::Caller),
    ];
    (job, asker).prop_map(|(job, asker)| JobPick { job, asker })
}

fn viewer() -> impl Strategy<Value = Viewer> {
    prop_oneof![
        3 => Just(Viewer::Asker(Asker::Owner)),
        1 => (0..CALLERS.len()).prop_map(|n| Viewer::Asker(Asker::Caller(n))),
        2 => Just(Viewer::Everyone),
    ]
}

/// A page's `limit`: mostly short pages, so that sequences page through a few rows; now and
/// then none (the default), 0 (clamped to 1), or a million (clamped to `MAX_PAGE`).
fn limit() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(0)),
        6 => (1usize..=3).prop_map(Some),
        1 => Just(Some(1_000_000)),
    ]
}

fn job_status() -> impl Strategy<Value = Option<JobStatus>> {
    prop_oneof![
        3 => Just(None),
        1 => proptest::sample::select(JobStatus::ALL.to_vec())
        .prop_map(Some),
    ]
}

fn target_kind() -> impl Strategy<Value = Option<TargetKind>> {
    prop_oneof![
        2 => Just(None),
        1 => proptest::sample::select(vec![
            TargetKind::Pending,
            TargetKind::Done,
            TargetKind::Failed,
        ])
        .prop_map(Some),
    ]
}

fn jobs_key() -> impl Strategy<Value = JobsKey> {
    prop_oneof![
        3 => Just(JobsKey::First),
        2 => any::<Index>().prop_map(JobsKey::Job),
        1 => any::<Index>().prop_map(JobsKey::AboveJob),
        1 => Just(JobsKey::Ghost),
        1 => Just(JobsKey::Zero),
        4 => Just(JobsKey::Previous),
    ]
}

fn targets_key() -> impl Strategy<Value = TargetsKey> {
    prop_oneof![
        3 => Just(TargetsKey::First),
        2 => (0usize..4).prop_map(TargetsKey::At),
        1 => Just(TargetsKey::Past),
        4 => Just(TargetsKey::Previous),
    ]
}

/// A page read: of jobs, of one job, or of one job's targets.
fn page_op() -> impl Strategy<Value = Op> {
    let caller = prop_oneof![2 => (0..CALLERS.len()).prop_map(Some), 1 => Just(None)];
    let jobs_page =
        (caller, job_status(), jobs_key(), limit()).prop_map(|(caller, status, key, limit)| {
            Op::JobsPage {
                caller,
                status,
                key,
                limit,
            }
        });
    let job = || prop_oneof![12 => any::<Index>().prop_map(Some), 1 => Just(None)];
    let targets_page = (job(), viewer(), target_kind(), targets_key(), limit()).prop_map(
        |(job, viewer, state, key, limit)| Op::TargetsPage {
            job,
            viewer,
            state,
            key,
            limit,
        },
    );
    prop_oneof![
        3 => jobs_page,
        1 => (job(), viewer()).prop_map(|(job, viewer)| Op::Job(job, viewer)),
        3 => targets_page,
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => (0usize..12).prop_map(|len| Outcome::Done { len }),
        1 => (0usize..12, any::<bool>()).prop_map(|(len, hint)| Outcome::Failed { len, hint }),
    ]
}

fn budget() -> impl Strategy<Value = Budget> {
    prop_oneof![
        2 => Just(Budget::Zero),
        1 => Just(Budget::Unlimited),
        1 => Just(Budget::Keep),
        4 => (1u64..40).prop_map(Budget::Free),
    ]
}

/// Milliseconds a step of the clock or a retry wait takes: often a round number, so that a
/// retry time or lease end and `now` meet exactly.
fn millis() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => Just(0u64),
        2 => Just(500u64),
        2 => Just(1_000u64),
        1 => Just(2_000u64),
        2 => 1u64..3_000,
    ]
}

/// One operation, weighted so that jobs get submitted, claimed and finished often.
pub(crate) fn op() -> impl Strategy<Value = Op> {
    let submit = (
        0..CALLERS.len(),
        // Now and then no target at all: refused before anything else.
        prop_oneof![
            1 => Just(Vec::new()),
            12 => proptest::collection::vec(0usize..6, 1..=3),
        ],
        prop_oneof![2 => Just(None), 1 => (0..KEYS.len()).prop_map(Some)],
        prop_oneof![1 => 1usize..=3, 2 => Just(10usize)],
    )
        .prop_map(|(caller, targets, key, max_live_jobs)| Op::Submit {
            caller,
            targets,
            key,
            max_live_jobs,
        });
    prop_oneof![
        8 => submit,
        10 => Just(Op::Claim),
        2 => claim_pick().prop_map(Op::Renew),
        6 => (claim_pick(), outcome()).prop_map(|(c, o)| Op::Store(c, o)),
        4 => (claim_pick(), outcome()).prop_map(|(c, o)| Op::StoreTakingNext(c, o)),
        3 => (claim_pick(), millis()).prop_map(|(c, ms)| Op::RetryLater(c, ms)),
        2 => claim_pick().prop_map(Op::Release),
        2 => job_pick().prop_map(Op::Cancel),
        1 => job_pick().prop_map(Op::Touch),
        1 => job_pick().prop_map(Op::Status),
        1 => job_pick().prop_map(Op::Summary),
        1 => (0..CALLERS.len()).prop_map(Op::Jobs),
        4 => page_op(),
        3 => Just(Op::NextWakeup),
        2 => budget().prop_map(Op::Evict),
        1 => Just(Op::Recover),
        5 => millis().prop_map(Op::Advance),
    ]
}

/// A sequence of up to `max_len` operations.
pub(crate) fn sequence(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=max_len)
}
