//! What a run of the kit hands back: a [`Report`] when the store agreed throughout, a
//! [`Failure`] when it did not.

use std::collections::BTreeMap;
use std::fmt;

/// A passing run: how many sequences ran, and how often each kind of answer came up (a
/// rule the sequences never reach is a rule never checked).
#[derive(Debug, Clone)]
pub struct Report {
    /// The store's name, as [`Conformance::name`](super::Conformance::name) gave it.
    store: String,
    /// Sequences run.
    cases: u32,
    /// Each kind of answer, with how often the reference gave it.
    answers: BTreeMap<&'static str, u64>,
}

impl Report {
    /// A report of `cases` sequences run on `store`.
    pub(crate) fn new(store: String, cases: u32, answers: BTreeMap<&'static str, u64>) -> Self {
        Self {
            store,
            cases,
            answers,
        }
    }

    /// Sequences run.
    pub fn cases(&self) -> u32 {
        self.cases
    }

    /// Each kind of answer (`"claim: a rescue"`, `"submit: full"`, …) with how often it came
    /// up, by kind.
    pub fn answers(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.answers.iter().map(|(kind, count)| (*kind, *count))
    }
}

impl fmt::Display for Report {
    /// `<store>: <n> sequences; answers by kind:` and one line per kind.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} sequences; answers by kind:",
            self.store, self.cases
        )?;
        for (kind, count) in &self.answers {
            writeln!(f, "  {count:>6}  {kind}")?;
        }
        Ok(())
    }
}

/// A store that broke the contract: what differed, with the (shrunk, minimal) sequence of
/// calls that shows it and what ran of it.
///
/// Its `Display` is the whole story; its `Debug` is the same text, so that a test's
/// `.unwrap()` or `-> Result<(), Failure>` prints it readably.
#[derive(Clone)]
pub struct Failure(Box<Details>);

/// What a [`Failure`] holds (boxed: a `Result` carrying it stays small).
#[derive(Clone)]
struct Details {
    /// The store's name.
    store: String,
    /// What went wrong, at which step.
    what: String,
    /// The reference's answer and the store's, when they differed.
    answers: Option<(String, String)>,
    /// The failing sequence, one operation per line.
    sequence: Vec<String>,
    /// What ran of it, with the reference's answers.
    trace: Vec<String>,
}

impl Failure {
    /// A failure of the store named `store`: `what` went wrong.
    pub(crate) fn new(store: impl Into<String>, what: impl Into<String>) -> Self {
        Self(Box::new(Details {
            store: store.into(),
            what: what.into(),
            answers: None,
            sequence: Vec::new(),
            trace: Vec::new(),
        }))
    }

    /// The same failure, the reference having answered `reference` and the store `store`.
    pub(crate) fn with_answers(mut self, answers: Option<(String, String)>) -> Self {
        self.0.answers = answers;
        self
    }

    /// The same failure, shown by `sequence` of which `trace` ran.
    pub(crate) fn with_sequence(mut self, sequence: Vec<String>, trace: Vec<String>) -> Self {
        self.0.sequence = sequence;
        self.0.trace = trace;
        self
    }

    /// What went wrong, and at which step: `the store disagrees at step 4 (t+500ms):
    /// claim`, `the store failed a submit: …`, `the sequences never reached […]`.
    pub fn what(&self) -> &str {
        &self.0.what
    }

    /// The reference's answer, when the store answered otherwise.
    pub fn reference_answer(&self) -> Option<&str> {
        self.0
            .answers
            .as_ref()
            .map(|(reference, _)| reference.as_str())
    }

    /// The store's answer, when it differed from the reference's.
    pub fn store_answer(&self) -> Option<&str> {
        self.0.answers.as_ref().map(|(_, store)| store.as_str())
    }

    /// The failing sequence of operations, shrunk to a minimal one, one per entry (empty
    /// when no single sequence shows the failure, as for a rule no sequence reached).
    pub fn sequence(&self) -> &[String] {
        &self.0.sequence
    }

    /// What ran of the sequence, one call per entry, with the reference's answers.
    pub fn trace(&self) -> &[String] {
        &self.0.trace
    }

    /// The sequence as proptest shrank it, if this failure has none of its own yet.
    pub(crate) fn sequence_or(mut self, sequence: Vec<String>) -> Self {
        if self.0.sequence.is_empty() {
            self.0.sequence = sequence;
        }
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.store, self.0.what)?;
        if let Some((reference, store)) = &self.0.answers {
            write!(f, "\n  reference: {reference}\n  store:     {store}")?;
        }
        if !self.0.sequence.is_empty() {
            write!(f, "\n\nthe sequence ({} ops):", self.0.sequence.len())?;
            for (i, op) in self.0.sequence.iter().enumerate() {
                write!(f, "\n  {i:>2}: {op}")?;
            }
        }
        if !self.0.trace.is_empty() {
            write!(f, "\n\nwhat ran, with the reference's answers:")?;
            for line in &self.0.trace {
                write!(f, "\n  {line}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Failure {}
