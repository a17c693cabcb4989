//! When a thread may spin instead of sleeping, and how long.
//!
//! Two kinds of thread spin (with the pool's lock released) before they block: an idle
//! worker waiting for a claim (a submitter that finds it spinning skips a `notify`), and a
//! submitter that found the pool full, waiting for a few tasks to finish (so it does not pay
//! a sleep and a wake-up per task). A spin pays only while the thread it waits for runs; on
//! a machine with no CPU to spare it takes the CPU from exactly that thread, or, when it
//! yields, hands it to another process for a whole time slice. A spin is up to
//! [`PAUSE_ROUNDS`] rounds of `1 << round` spin hints (127 in all: from under a microsecond
//! to a few, depending on the CPU's pause instruction), then up to
//! [`YIELD_ROUNDS`] `yield_now`s, then the thread blocks on its condvar. Decided under the
//! pool's lock, before each spin:
//!
//! 1. **Spin hints only with a CPU to spare.** The pool's threads that want a CPU,
//!    `running + spinning workers + spinning submitters`, must be fewer than
//!    [`available_parallelism`](std::thread::available_parallelism) (and there must be two
//!    CPUs at least); otherwise the pause rounds are skipped. A full pool with as many
//!    workers as CPUs thus never has a submitter burn a CPU its workers need.
//! 2. **Yields only while they return at once.** A yield gives the CPU to whoever the OS
//!    picks. On a machine where nothing else wants it, that is our own workers and the
//!    yield is back in microseconds: cheap, and it lets a submitter wait for room without
//!    taking a CPU. On a loaded machine it is someone else's busy thread, for a time slice
//!    (milliseconds), while the pool still counts the yielding thread as awake and skips
//!    its wake-up. So each yield is timed; one that took longer than [`SLOW_YIELD`] ends the
//!    spin and turns yields off for [`YIELDS_OFF_FOR`]. Yielding blindly is what made the
//!    pool collapse beside busy-looping processes (docs/worker.md, "Spinning").
//! 3. **Only while it pays.** Each kind of spinner has a credit that every spin ending
//!    without what it waited for (the thread then blocks anyway) counts down, and a spin
//!    that succeeded refills. With no credit a thread blocks at once, except that one
//!    decision in [`PROBE_EVERY`] spins anyway, to find out whether spinning pays again.
//!    Other processes' threads are invisible to rule 1; this notices them too: on a loaded
//!    machine the awaited thread is often descheduled, and the spins fail.
//!
//! All of this only decides how long a thread waits before it blocks; every rule of the
//! pool is re-checked under the lock afterwards, so a wrong guess costs time, never
//! correctness. Its state is [`Policy`], a part of the pool's `State` apart from the rules;
//! the spins themselves are fast entries (`fast::spin_idle`, `fast::spin_for_room`), which
//! the reference build turns off. Under loom a spin is one pause round and never yields (no
//! clock reads in a model), so the models cover the spinning protocol; under Miri the same.

use std::time::{Duration, Instant};

use crate::sync::thread;

/// Rounds of `1 << round` spin hints: 127 hints in all. One under loom and Miri (the
/// protocol is the same, only shorter; Miri's scheduler makes spinning pure cost).
pub(super) const PAUSE_ROUNDS: u32 = if SHORT { 1 } else { 7 };

/// `yield_now` rounds after the pause rounds, while yields return at once (rule 2).
pub(super) const YIELD_ROUNDS: u32 = if SHORT { 0 } else { 4 };

/// Every round of a spin.
pub(super) const ROUNDS: u32 = PAUSE_ROUNDS + YIELD_ROUNDS;

const SHORT: bool = cfg!(any(all(test, loom), miri));

/// A yield that took longer than this lost the CPU to another thread for a time slice.
pub(super) const SLOW_YIELD: Duration = Duration::from_micros(50);

/// How long yields stay off after a slow one.
pub(super) const YIELDS_OFF_FOR: Duration = Duration::from_millis(100);

/// Credit refilled by a spin that paid off: this many failed spins in a row stop spinning.
pub(super) const CREDIT_MAX: u32 = 8;

/// With no credit, one spin decision in this many spins anyway (a probe).
pub(super) const PROBE_EVERY: u32 = 16;

/// Who spins: the two kinds keep separate credit (rule 3).
#[derive(Debug, Clone, Copy)]
pub(super) enum Spinner {
    /// An idle worker waiting for a claim.
    Worker,
    /// A submitter waiting for room.
    Submitter,
}

/// The spin policy's part of the pool's `State`: the state of rules 1-3, kept under the
/// pool's lock and apart from the pool's rules, none of which reads it. It carries no
/// invariant of the pool: a wrong value costs time, never a rule.
#[derive(Debug)]
pub(super) struct Policy {
    /// Submitters spinning (lock released) for room before they block; read only by rule 1.
    submitters_spinning: usize,
    /// Whether idle workers' and submitters' spins have paid off lately (rule 3).
    worker_credit: SpinCredit,
    submitter_credit: SpinCredit,
    /// Whether spinners may yield (rule 2).
    yields: Yields,
}

impl Policy {
    pub(super) fn new() -> Self {
        Self {
            submitters_spinning: 0,
            worker_credit: SpinCredit::new(),
            submitter_credit: SpinCredit::new(),
            yields: Yields::default(),
        }
    }

    /// Whether a thread of kind `who` may spin now, and how (rules 1-3), with
    /// `workers_spinning` idle workers spinning and `running` tasks running. A submitter
    /// given a plan is counted spinning until [`Policy::ended`].
    pub(super) fn plan(
        &mut self,
        budget: &Budget,
        who: Spinner,
        workers_spinning: usize,
        running: usize,
        cpus: usize,
    ) -> Option<Plan> {
        let awake = running + workers_spinning + self.submitters_spinning;
        let credit = match who {
            Spinner::Worker => &mut self.worker_credit,
            Spinner::Submitter => &mut self.submitter_credit,
        };
        let plan = plan(budget, credit, &mut self.yields, awake, cpus);
        if plan.is_some() && matches!(who, Spinner::Submitter) {
            self.submitters_spinning += 1;
        }
        plan
    }

    /// Records how a spin of a thread of kind `who` ended.
    pub(super) fn ended(&mut self, who: Spinner, outcome: Outcome) {
        let credit = match who {
            Spinner::Worker => &mut self.worker_credit,
            Spinner::Submitter => {
                self.submitters_spinning -= 1;
                &mut self.submitter_credit
            }
        };
        record(credit, &mut self.yields, outcome);
    }
}

/// Whether spinning has paid off lately, for one kind of spinner (rule 3). Idle workers and
/// submitters keep one each: they wait for different threads, so one may pay while the
/// other does not. Guarded by the pool's lock, in [`Policy`].
#[derive(Debug)]
pub(super) struct SpinCredit {
    /// Failed spins still allowed before spinning stops.
    credit: u32,
    /// Spin decisions refused for lack of credit since the last probe.
    refused: u32,
}

impl SpinCredit {
    pub(super) fn new() -> Self {
        Self {
            credit: CREDIT_MAX,
            refused: 0,
        }
    }

    /// Whether spinning pays (rule 3); counts a refusal toward the next probe.
    fn pays(&mut self) -> bool {
        if self.credit > 0 {
            return true;
        }
        self.refused += 1;
        if self.refused >= PROBE_EVERY {
            self.refused = 0;
            return true;
        }
        false
    }

    /// Records how a spin ended.
    fn record(&mut self, outcome: Outcome) {
        self.credit = match outcome {
            Outcome::Paid => CREDIT_MAX,
            Outcome::Spent | Outcome::SlowYield => self.credit.saturating_sub(1),
        };
    }
}

/// The pool-wide spin state kept under the lock: whether yields are off (rule 2).
#[derive(Debug, Default)]
pub(super) struct Yields {
    off_until: Option<Instant>,
}

impl Yields {
    fn allowed(&mut self) -> bool {
        if YIELD_ROUNDS == 0 {
            return false;
        }
        match self.off_until {
            None => true,
            Some(until) if Instant::now() >= until => {
                self.off_until = None;
                true
            }
            Some(_) => false,
        }
    }
}

/// How a spin ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// What it waited for came.
    Paid,
    /// Its rounds ran out first.
    Spent,
    /// A yield lost the CPU for a time slice (rule 2).
    SlowYield,
}

/// The rounds one spin may use, decided under the lock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    from: u32,
    to: u32,
}

impl Plan {
    /// The pause rounds only, no yields (a worker's lock-free search, [`super::search`]).
    pub(super) const PAUSES: Self = Self {
        from: 0,
        to: PAUSE_ROUNDS,
    };
}

/// A spin's progress through its rounds, kept across the spins of one wait so a thread that
/// spins again (it lost what it waited for to another thread) goes on with what is left.
#[derive(Debug, Default)]
pub(super) struct Budget {
    round: u32,
}

impl Budget {
    /// Whether rounds are left at all (cheap; checked before [`plan`]).
    pub(super) fn left(&self) -> bool {
        self.round < ROUNDS
    }
}

/// Decides whether a thread may spin now and with which rounds (rules 1-3): `awake` of the
/// pool's threads want a CPU (running tasks or spinning), out of `cpus`. `None`: block now.
pub(super) fn plan(
    budget: &Budget,
    credit: &mut SpinCredit,
    yields: &mut Yields,
    awake: usize,
    cpus: usize,
) -> Option<Plan> {
    let from = if cpus >= 2 && awake < cpus {
        budget.round
    } else {
        budget.round.max(PAUSE_ROUNDS)
    };
    let to = if yields.allowed() {
        ROUNDS
    } else {
        PAUSE_ROUNDS
    };
    (from < to && credit.pays()).then_some(Plan { from, to })
}

/// Spins through `plan`'s rounds until `done` returns `true` or they run out.
pub(super) fn spin(budget: &mut Budget, plan: Plan, done: impl Fn() -> bool) -> Outcome {
    budget.round = plan.from;
    while budget.round < plan.to {
        if done() {
            return Outcome::Paid;
        }
        if budget.round < PAUSE_ROUNDS {
            for _ in 0..1u32 << budget.round {
                std::hint::spin_loop();
            }
        } else {
            let before = Instant::now();
            thread::yield_now();
            if before.elapsed() > SLOW_YIELD {
                budget.round = ROUNDS;
                return Outcome::SlowYield;
            }
        }
        budget.round += 1;
    }
    if plan.to < ROUNDS {
        // Rounds skipped by rule 2 are not spent later either: block.
        budget.round = ROUNDS;
    }
    if done() {
        Outcome::Paid
    } else {
        Outcome::Spent
    }
}

/// Records a finished spin under the lock: the credit of its kind, and yields off after a
/// slow one.
pub(super) fn record(credit: &mut SpinCredit, yields: &mut Yields, outcome: Outcome) {
    credit.record(outcome);
    if outcome == Outcome::SlowYield {
        yields.off_until = Some(Instant::now() + YIELDS_OFF_FOR);
    }
}

/// The CPUs this process may use, read once per pool. Under loom a fixed 2, so models are
/// deterministic.
pub(super) fn cpus() -> usize {
    if cfg!(all(test, loom)) {
        2
    } else {
        std::thread::available_parallelism().map_or(1, usize::from)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn planned(
        budget: &Budget,
        credit: &mut SpinCredit,
        yields: &mut Yields,
        awake: usize,
        cpus: usize,
    ) -> Option<(u32, u32)> {
        plan(budget, credit, yields, awake, cpus).map(|plan| (plan.from, plan.to))
    }

    #[test]
    fn spin_hints_only_with_a_cpu_to_spare() {
        let (budget, mut credit, mut yields) =
            (Budget::default(), SpinCredit::new(), Yields::default());
        assert_eq!(
            planned(&budget, &mut credit, &mut yields, 1, 2),
            Some((0, ROUNDS))
        );
        // Every CPU busy with a running task or spinner: the yields only.
        let yields_only = (YIELD_ROUNDS > 0).then_some((PAUSE_ROUNDS, ROUNDS));
        assert_eq!(
            planned(&budget, &mut credit, &mut yields, 2, 2),
            yields_only
        );
        assert_eq!(
            planned(&budget, &mut credit, &mut yields, 0, 1),
            yields_only
        );
    }

    #[test]
    fn a_slow_yield_turns_yields_off_for_a_while() {
        let (mut budget, mut credit, mut yields) =
            (Budget::default(), SpinCredit::new(), Yields::default());
        record(&mut credit, &mut yields, Outcome::SlowYield);
        assert_eq!(
            planned(&budget, &mut credit, &mut yields, 0, 2),
            Some((0, PAUSE_ROUNDS))
        );
        assert_eq!(
            planned(&budget, &mut credit, &mut yields, 2, 2),
            None,
            "nothing left to spin with"
        );
        // A spin without yields leaves no rounds for later: the thread blocks.
        let plan = plan(&budget, &mut credit, &mut yields, 0, 2).unwrap();
        assert_eq!(spin(&mut budget, plan, || false), Outcome::Spent);
        assert!(!budget.left());
        yields.off_until = Some(Instant::now());
        assert!(
            yields.allowed() || YIELD_ROUNDS == 0,
            "back on once the pause is over"
        );
    }

    #[test]
    fn failed_spins_stop_spinning_except_for_a_probe() {
        let (budget, mut credit, mut yields) =
            (Budget::default(), SpinCredit::new(), Yields::default());
        for _ in 0..CREDIT_MAX {
            assert!(planned(&budget, &mut credit, &mut yields, 0, 2).is_some());
            record(&mut credit, &mut yields, Outcome::Spent);
        }
        let allowed: Vec<bool> = (0..2 * PROBE_EVERY)
            .map(|_| planned(&budget, &mut credit, &mut yields, 0, 2).is_some())
            .collect();
        assert_eq!(
            allowed.iter().filter(|a| **a).count(),
            2,
            "one probe in {PROBE_EVERY}"
        );
        // A probe that pays turns spinning back on.
        record(&mut credit, &mut yields, Outcome::Paid);
        assert!(planned(&budget, &mut credit, &mut yields, 0, 2).is_some());
    }

    #[test]
    fn a_spin_stops_as_soon_as_what_it_waits_for_came() {
        let (mut budget, mut credit, mut yields) =
            (Budget::default(), SpinCredit::new(), Yields::default());
        let plan = plan(&budget, &mut credit, &mut yields, 0, 2).unwrap();
        assert_eq!(spin(&mut budget, plan, || true), Outcome::Paid);
        assert_eq!(budget.round, 0, "no round used");
    }
}
