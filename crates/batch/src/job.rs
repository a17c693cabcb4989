//! What a caller sees of a job: ids, statuses and the [`Job`] snapshot.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// A job's id, unique within its store. Serialized as its number.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct JobId(u64);

impl JobId {
    /// Wraps a raw id; stores mint ids, callers get them from [`Runner::submit`](crate::Runner::submit).
    pub const fn new(raw: u64) -> Self {
        Self(raw)
    }

    /// The raw id, as a store keeps it.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Who submitted a job: an opaque id, compared by value. Cloning is a reference count.
///
/// A caller sees only its own jobs: every call naming another caller's job answers exactly
/// as for an id that does not exist.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Caller(Arc<str>);

impl Caller {
    /// A caller named `id` (a user id, an API key's id: anything stable).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Serialized as its id, a string.
impl serde::Serialize for Caller {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Caller {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::new(String::deserialize(deserializer)?))
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Caller({:?})", &*self.0)
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a job is in its life.
///
/// `Queued` and `Running` are *live*; the other four are *terminal* and never change again.
/// Serialized as the lower-case word [`Display`](fmt::Display) prints (`"queued"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum JobStatus {
    /// Submitted; no target started yet.
    Queued,
    /// Its first target has started.
    Running,
    /// Every target is done.
    Done,
    /// Every target failed.
    Failed,
    /// Some targets are done, some failed.
    Partial,
    /// Cancelled by its caller before its last target was stored.
    Cancelled,
}

impl JobStatus {
    /// Every status, in the order of a job's life (the live ones first).
    pub(crate) const ALL: [Self; 6] = [
        Self::Queued,
        Self::Running,
        Self::Done,
        Self::Failed,
        Self::Partial,
        Self::Cancelled,
    ];

    /// `true` for `Queued` and `Running`.
    pub const fn is_live(self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }

    /// The status as one lower-case word (`"queued"`, …), as stores keep it and
    /// [`Display`](fmt::Display) prints it.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Partial => "partial",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the words [`Display`](fmt::Display) prints (`"queued"`, …) back.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == word)
    }

    /// The terminal status of a job whose targets all ended, `done` and `failed` of them.
    pub(crate) const fn settled(done: usize, failed: usize) -> Self {
        match (done, failed) {
            (_, 0) => Self::Done,
            (0, _) => Self::Failed,
            _ => Self::Partial,
        }
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One target of a [`Job`] snapshot.
///
/// Serialized (serde) as an object tagged by `"state"`, the output as the JSON value it is:
/// `{"state": "pending"}`, `{"state": "done", "output": {…}}`,
/// `{"state": "failed", "error": "…", "hint": null}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
#[non_exhaustive]
pub enum TargetState {
    /// Not stored yet (maybe in flight, maybe waiting for a busy retry).
    Pending,
    /// Fetched; the output as JSON.
    Done {
        /// The output, serialized with `serde_json` (by serde, as the value itself, named
        /// `output`).
        #[serde(rename = "output", with = "crate::json_text")]
        output_json: String,
    },
    /// Failed for good.
    Failed {
        /// What went wrong, fit to show the caller.
        error: String,
        /// A hint for the caller, when the fetch gave one.
        hint: Option<String>,
    },
}

impl TargetState {
    /// Pending, done or failed, without the output or error.
    pub fn kind(&self) -> crate::page::TargetKind {
        match self {
            Self::Pending => crate::page::TargetKind::Pending,
            Self::Done { .. } => crate::page::TargetKind::Done,
            Self::Failed { .. } => crate::page::TargetKind::Failed,
        }
    }

    /// The output, deserialized; `None` unless the target is done.
    ///
    /// # Errors
    ///
    /// The stored JSON does not fit `O`.
    pub fn output<O: serde::de::DeserializeOwned>(&self) -> Option<Result<O, serde_json::Error>> {
        match self {
            Self::Done { output_json } => Some(serde_json::from_str(output_json)),
            _ => None,
        }
    }

    /// `"pending"`, `"done"` or `"failed"`.
    #[cfg(feature = "store-spec")]
    pub(crate) const fn word(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Done { .. } => "done",
            Self::Failed { .. } => "failed",
        }
    }

    /// A stored result as a database row keeps it: `(state word, output, error, hint)`;
    /// `None` for [`Pending`](Self::Pending), which is never stored.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn to_columns(&self) -> Option<ResultColumns<'_>> {
        match self {
            Self::Pending => None,
            Self::Done { output_json } => Some(("done", Some(output_json), None, None)),
            Self::Failed { error, hint } => Some(("failed", None, Some(error), hint.as_deref())),
        }
    }

    /// Reads back what [`to_columns`](Self::to_columns) wrote (or a pending row); `None` for
    /// a row it never writes.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn from_columns(
        word: &str,
        output: Option<String>,
        error: Option<String>,
        hint: Option<String>,
    ) -> Option<Self> {
        match (word, output, error) {
            ("pending", _, _) => Some(Self::Pending),
            ("done", Some(output_json), _) => Some(Self::Done { output_json }),
            ("failed", _, Some(error)) => Some(Self::Failed { error, hint }),
            _ => None,
        }
    }

    /// The bytes this state adds to a store's budget (output, error and hint text).
    pub fn stored_bytes(&self) -> u64 {
        let len = match self {
            Self::Pending => 0,
            Self::Done { output_json } => output_json.len(),
            Self::Failed { error, hint } => error.len() + hint.as_ref().map_or(0, String::len),
        };
        len as u64
    }
}

/// A stored result's columns: `(state word, output, error, hint)`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) type ResultColumns<'a> = (
    &'static str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

/// A snapshot of one job, from [`Runner::status`](crate::Runner::status).
///
/// Serializable (serde) as it is, so a service can return it without a DTO of its own: times
/// as RFC 3339 text in UTC, the job's [`counts`](Self::counts) beside its status, and each
/// target and output as the JSON value it is:
///
/// ```json
/// {"id": 7, "status": "partial", "counts": {"pending": 0, "done": 1, "failed": 1},
///  "created": "2026-12-08T00:10:41.123456Z", "updated": "2026-12-08T00:10:42.000000Z",
///  "targets": [{"target": "x", "state": "done", "output": 1},
///              {"target": "y", "state": "failed", "error": "…", "hint": null}]}
/// ```
///
/// Reading it back ignores `counts` (they follow from the targets).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[non_exhaustive]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// Its status when the snapshot was taken.
    pub status: JobStatus,
    /// When it was submitted.
    #[serde(with = "crate::rfc3339")]
    pub created: SystemTime,
    /// When its status or a target last changed.
    #[serde(with = "crate::rfc3339")]
    pub updated: SystemTime,
    /// Every target in submit order.
    pub targets: Vec<TargetEntry>,
}

/// One target of a [`Job`] snapshot: the target as submitted, and where it is.
///
/// Serialized (serde) as one object: the target as the JSON value it is, beside its
/// [`TargetState`]'s fields: `{"target": "x", "state": "done", "output": 1}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TargetEntry {
    /// The target, as JSON.
    #[serde(rename = "target", with = "crate::json_text")]
    pub target_json: String,
    /// Pending, or its stored result.
    #[serde(flatten)]
    pub state: TargetState,
}

impl TargetEntry {
    /// An entry, as a store builds it.
    pub fn new(target_json: String, state: TargetState) -> Self {
        Self { target_json, state }
    }

    /// The target, deserialized.
    ///
    /// # Errors
    ///
    /// The stored JSON does not fit `T`.
    pub fn target<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.target_json)
    }

    /// The output, deserialized; `None` unless the target is done. See
    /// [`TargetState::output`].
    ///
    /// # Errors
    ///
    /// The stored JSON does not fit `O`.
    pub fn output<O: serde::de::DeserializeOwned>(&self) -> Option<Result<O, serde_json::Error>> {
        self.state.output()
    }
}

impl Job {
    /// A snapshot, as a store builds it.
    pub fn new(
        id: JobId,
        status: JobStatus,
        created: SystemTime,
        updated: SystemTime,
        targets: Vec<TargetEntry>,
    ) -> Self {
        Self {
            id,
            status,
            created,
            updated,
            targets,
        }
    }

    /// How many targets are pending, done and failed.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for target in &self.targets {
            match target.state {
                TargetState::Pending => counts.pending += 1,
                TargetState::Done { .. } => counts.done += 1,
                TargetState::Failed { .. } => counts.failed += 1,
            }
        }
        counts
    }
}

impl serde::Serialize for Job {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The job as written: its fields, with its counts beside its status.
        #[derive(serde::Serialize)]
        struct Written<'a> {
            id: JobId,
            status: JobStatus,
            counts: Counts,
            #[serde(with = "crate::rfc3339")]
            created: SystemTime,
            #[serde(with = "crate::rfc3339")]
            updated: SystemTime,
            targets: &'a [TargetEntry],
        }
        Written {
            id: self.id,
            status: self.status,
            counts: self.counts(),
            created: self.created,
            updated: self.updated,
            targets: &self.targets,
        }
        .serialize(serializer)
    }
}

/// Target counts of a [`Job`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Counts {
    /// Not stored yet.
    pub pending: usize,
    /// Stored done.
    pub done: usize,
    /// Stored failed.
    pub failed: usize,
}

impl Counts {
    /// Counts of `pending`, `done` and `failed` targets (a count added later starts at 0).
    pub const fn new(pending: usize, done: usize, failed: usize) -> Self {
        Self {
            pending,
            done,
            failed,
        }
    }

    /// Every target: pending, done and failed.
    pub const fn total(&self) -> usize {
        self.pending + self.done + self.failed
    }

    /// Stored targets: done and failed.
    pub const fn stored(&self) -> usize {
        self.done + self.failed
    }
}
