//! [`Coverage`]: how often each kind of answer came up over a run.

use std::collections::BTreeMap;

use super::answer::Answer;

/// How often each kind of answer (see [`Answer::kind`]) came up over a whole run: a
/// generator that stops reaching a rule would otherwise pass in silence.
#[derive(Debug, Default)]
pub(crate) struct Coverage(pub(crate) BTreeMap<&'static str, u64>);

impl Coverage {
    /// Counts `answer`'s kind.
    pub(crate) fn count(&mut self, answer: &Answer) {
        self.note(answer.kind());
    }

    /// Counts `kind`.
    pub(crate) fn note(&mut self, kind: &'static str) {
        *self.0.entry(kind).or_default() += 1;
    }

    /// The kinds every run must reach; `leases` adds the rescue.
    fn required(leases: bool) -> Vec<&'static str> {
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
            "finish stored: stale",
            "finish stored: ends its job",
            "finish stored: into a cancelled job",
            "finish stored: more to do",
            "finish retry later: current",
            "finish retry later: stale",
            "finish released: current",
            "finish released: stale",
            "touch: found",
            "touch: not found",
            "cancel: not found",
            "cancel: already ended",
            "cancel: cancelled",
            "status or summary: not found",
            "status or summary: found",
            "jobs: none",
            "jobs: some",
            "jobs_page: empty",
            "jobs_page: a page with a next",
            "jobs_page: the last page",
            "job: not found",
            "job: found",
            "targets_page: job not found",
            "targets_page: empty",
            "targets_page: a page with a next",
            "targets_page: the last page",
            "a page read by everyone",
            "a page read by another caller",
            "a page of one status or state",
            "a page from the previous page's next",
            "a page from a key no page handed out",
            "a page asked for a million rows",
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
    pub(crate) fn missing(&self, leases: bool) -> Vec<&'static str> {
        Self::required(leases)
            .into_iter()
            .filter(|kind| !self.0.contains_key(kind))
            .collect()
    }
}
