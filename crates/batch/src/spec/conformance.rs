//! [`Conformance`]: runs the generated sequences against a store and the reference.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use proptest::test_runner::{
    Config, FailurePersistence, FileFailurePersistence, RngAlgorithm, RngSeed, TestCaseError,
    TestError, TestRunner,
};

use super::Rules;
use super::check::{Flavor, History, check, describe};
use super::coverage::Coverage;
use super::ops;
use super::report::{Failure, Report};
use crate::store::{Store, Timestamp};

/// Where the first sequence's clock starts (a date in 2023, in microseconds); each later
/// sequence starts a second after the one before ended, so that a store kept from one
/// sequence to the next never sees its callers' clock go back.
const START: Timestamp = Timestamp::from_micros(1_700_000_000_000_000);

/// The comparison runs this many sequences unless told otherwise; from this many on, a kind
/// of answer that never came up fails the run.
const DEFAULT_CASES: u32 = 1000;

/// The longest sequence unless told otherwise.
const DEFAULT_MAX_OPS: usize = 60;

/// The conformance run of one store: random sequences of store calls (submits, claims,
/// renews, finishes of every kind, cancels, touches, reads, wake-ups, evictions, recovers,
/// stale calls, calls naming other callers' jobs, the clock moving), each run against the
/// reference model and a store from `make_store`, every answer compared; the first sequence
/// that disagrees is shrunk to a minimal one.
///
/// [`conformance`](super::conformance()) runs it with the defaults; the builder adjusts them.
/// Each call of `make_store` must return an empty store; it runs inside the run's tokio
/// runtime (see [`runtime`](Self::runtime)), so a store may spawn tasks or open pooled
/// connections there. With [`Report`] or [`Failure`] the run ends.
#[must_use = "a conformance check does nothing until it is run"]
pub struct Conformance<F> {
    /// Makes a fresh, empty store.
    make_store: F,
    /// What the store promises.
    rules: Rules,
    /// The store's name in messages.
    name: Option<String>,
    /// Sequences to run; `None`: `PROPTEST_CASES`, else [`DEFAULT_CASES`].
    cases: Option<u32>,
    /// The longest sequence.
    max_ops: usize,
    /// Keep a store from one passing sequence to the next.
    reuse_store: bool,
    /// The runtime the store's calls run on; `None`: a current-thread one of the run's own.
    runtime: Option<tokio::runtime::Runtime>,
    /// The source file beside which failing seeds are kept.
    regressions: Option<&'static str>,
    /// The generator's seed; `None`: a random one per run.
    seed: Option<u64>,
}

impl<F, S> Conformance<F>
where
    F: FnMut() -> S,
    S: Store,
{
    /// A run over the stores `make_store` makes: [`Rules::owned`], 1,000 sequences
    /// (`PROPTEST_CASES` in the environment overrides that default) of up to 60 calls, a
    /// fresh store for each, on a current-thread runtime of the run's own.
    pub fn new(make_store: F) -> Self {
        Self {
            make_store,
            rules: Rules::owned(),
            name: None,
            cases: None,
            max_ops: DEFAULT_MAX_OPS,
            seed: None,
            reuse_store: false,
            runtime: None,
            regressions: None,
        }
    }

    /// What the store promises where stores may differ (default [`Rules::owned`]).
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// The store's name in the report and in failures (default: its type's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Runs `cases` sequences, whatever `PROPTEST_CASES` says. From 1,000 on, the run also
    /// fails if some kind of answer never came up (the generator would have stopped
    /// reaching a rule).
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = Some(cases);
        self
    }

    /// Generates from `seed`: the same sequences on every run (by default each run draws its
    /// own), so that a run can be repeated exactly.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sequences of at most `max_ops` calls (default 60): fewer for a store whose every
    /// call is a round trip.
    pub fn max_ops(mut self, max_ops: usize) -> Self {
        self.max_ops = max_ops.max(1);
        self
    }

    /// Keeps each store for the next sequence while sequences pass (every sequence drains
    /// the store through its calls, so it ends empty), making a new one only after a
    /// failure. Faster for a store that is slow to make (a database schema), and it checks
    /// that a store's history changes nothing: ids far from 1 are never minted twice, tokens
    /// keep increasing. Default: a fresh store per sequence.
    pub fn reuse_store(mut self, reuse: bool) -> Self {
        self.reuse_store = reuse;
        self
    }

    /// Runs the store's calls on `runtime`, one that suits the store (a multi-thread one, or
    /// the runtime its connections must live on), instead of a current-thread runtime of
    /// the run's own. `make_store` runs inside it too.
    pub fn runtime(mut self, runtime: tokio::runtime::Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Keeps the seeds of failing sequences beside `source_file` (pass `file!()`), in a file
    /// of the same name with the extension `proptest-regressions`, and replays them before
    /// any new sequence. Default: nothing is kept.
    pub fn regressions(mut self, source_file: &'static str) -> Self {
        self.regressions = Some(source_file);
        self
    }

    /// Runs the sequences: a [`Report`] when the store agreed with the reference
    /// throughout, else the [`Failure`] of the minimal sequence that shows the first
    /// disagreement (or the store's error, or the kinds of answer never reached).
    pub fn run(self) -> Result<Report, Failure> {
        let Self {
            make_store,
            rules,
            name,
            cases,
            max_ops,
            reuse_store,
            runtime,
            regressions,
            seed,
        } = self;
        let name = name.unwrap_or_else(|| std::any::type_name::<S>().to_owned());
        let runtime = match runtime {
            Some(runtime) => runtime,
            None => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Failure::new(&*name, format!("no runtime to run on: {e}")))?,
        };
        let cases = cases.unwrap_or_else(default_cases);
        let persistence = regressions.map(|_| {
            // The seeds go to `<source_file>.proptest-regressions`, beside the source file.
            Box::new(FileFailurePersistence::WithSource("proptest-regressions"))
                as Box<dyn FailurePersistence>
        });
        let config = Config {
            cases,
            source_file: regressions,
            failure_persistence: persistence,
            // ChaCha, the default, took most of the time in a debug build.
            rng_algorithm: RngAlgorithm::XorShift,
            rng_seed: seed.map_or(RngSeed::Random, RngSeed::Fixed),
            ..Config::default()
        };
        let flavor = Flavor { name: &name, rules };
        let make_store = RefCell::new(make_store);
        let new_store = || {
            let _inside = runtime.enter();
            (make_store.borrow_mut())()
        };
        let kept: RefCell<Option<(S, History)>> = RefCell::new(None);
        let clock = Cell::new(START);
        let coverage = RefCell::new(Coverage::default());
        // Every failure, to hand back the one of the sequence proptest shrinks to.
        let failures: RefCell<Vec<Failure>> = RefCell::new(Vec::new());
        let mut runner = TestRunner::new(config);
        let outcome = runner.run(&ops::sequence(max_ops), |ops| {
            let (store, mut history) = kept
                .take()
                .unwrap_or_else(|| (new_store(), History::default()));
            let start = clock.get().saturating_add(Duration::from_secs(1));
            let checked = runtime.block_on(check(
                &store,
                &mut history,
                &mut coverage.borrow_mut(),
                flavor,
                &ops,
                start,
            ));
            match checked {
                Ok(end) => {
                    clock.set(end);
                    if reuse_store {
                        kept.replace(Some((store, history)));
                    }
                    Ok(())
                }
                Err(failure) => {
                    let why = failure.what().to_owned();
                    failures.borrow_mut().push(failure);
                    Err(TestCaseError::fail(why))
                }
            }
        });
        match outcome {
            Ok(()) => {}
            Err(TestError::Fail(why, minimal)) => {
                let minimal = describe(&minimal);
                let failure = failures
                    .into_inner()
                    .into_iter()
                    .rev()
                    .find(|failure| failure.sequence() == minimal)
                    // Not one the checker reported: the store panicked.
                    .unwrap_or_else(|| Failure::new(&*name, why.message()))
                    .sequence_or(minimal);
                return Err(failure);
            }
            Err(TestError::Abort(why)) => {
                return Err(Failure::new(&*name, format!("the run aborted: {why}")));
            }
        }
        let coverage = coverage.into_inner();
        let missing = coverage.missing(rules.lease.is_some());
        if cases >= DEFAULT_CASES && !missing.is_empty() {
            let why = format!("the sequences never reached {missing:?}");
            return Err(Failure::new(&*name, why));
        }
        Ok(Report::new(name, cases, coverage.0))
    }
}

/// `PROPTEST_CASES` if it is a number, else [`DEFAULT_CASES`].
fn default_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}
