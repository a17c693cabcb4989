//! The page reads' checks: `jobs_page`, `job` and `targets_page` on both sides, each answer
//! compared whole (rows, their callers and keys, and `next`), the store's ids translated.
//!
//! A page's key comes from the op: none, a job's id (or one above it, an id no job has),
//! an id above or below every job's, an index, or the `next` the last page of its kind
//! handed out. A key names the same place on both sides: the store's ids grow in submit
//! order as the reference's do, so "below job k's id" and "below job k's id plus one" hold
//! the same jobs in both.

use super::{GHOST, Mismatch, Session, failed};
use crate::job::{Caller, JobId, JobStatus};
use crate::page::{JobsPage, JobsQuery, Scope, TargetKind, TargetsPage, TargetsQuery};
use crate::spec::answer::Answer;
use crate::spec::ops::{Asker, CALLERS, JobsKey, TargetsKey, Viewer};
use crate::store::Store;

use proptest::sample::Index;

impl<S: Store> Session<'_, S> {
    /// Counts what kind of page query this is.
    fn note_query(&mut self, limit: Option<usize>, filtered: bool) {
        if limit == Some(1_000_000) {
            self.coverage.note("a page asked for a million rows");
        }
        if filtered {
            self.coverage.note("a page of one status or state");
        }
    }

    /// The job `job` names (reference id, store id, owner), or an id never minted.
    fn page_job(&mut self, job: Option<Index>) -> (JobId, JobId, Caller) {
        match job {
            Some(index) if !self.jobs.is_empty() => self.jobs[index.index(self.jobs.len())].clone(),
            _ => {
                self.coverage.note("a call naming a job never submitted");
                (GHOST, GHOST, Caller::new(CALLERS[0]))
            }
        }
    }

    /// The scope `viewer` reads job `owner`'s job in.
    fn scope_of(&mut self, viewer: Viewer, owner: &Caller) -> Scope {
        match viewer {
            Viewer::Asker(Asker::Owner) => Scope::Caller(owner.clone()),
            Viewer::Asker(Asker::Caller(n)) => {
                let caller = Caller::new(CALLERS[n]);
                if caller != *owner {
                    self.coverage.note("a call naming another caller's job");
                    self.coverage.note("a page read by another caller");
                }
                Scope::Caller(caller)
            }
            Viewer::Everyone => {
                self.coverage.note("a page read by everyone");
                Scope::Everyone
            }
        }
    }

    /// A store's jobs page, its ids translated.
    fn jobs_page_of(&self, mut page: JobsPage) -> JobsPage {
        for job in &mut page.jobs {
            job.summary = self.summary(job.summary);
        }
        page.next = page.next.map(|next| self.ref_id(next));
        page
    }

    /// Compares a jobs page of `CALLERS[caller]` (everyone's if `None`).
    pub(super) async fn jobs_page(
        &mut self,
        at: &str,
        caller: Option<usize>,
        status: Option<JobStatus>,
        key: JobsKey,
        limit: Option<usize>,
    ) -> Result<(), Mismatch> {
        let scope = match caller {
            Some(n) => Scope::Caller(Caller::new(CALLERS[n])),
            None => {
                self.coverage.note("a page read by everyone");
                Scope::Everyone
            }
        };
        let job = |index: Index| self.jobs.get(index.index(self.jobs.len().max(1)));
        let keys = match key {
            JobsKey::First => None,
            JobsKey::Job(index) => job(index).map(|(r, s, _)| (*r, *s)),
            JobsKey::AboveJob(index) => {
                job(index).map(|(r, s, _)| (JobId::new(r.get() + 1), JobId::new(s.get() + 1)))
            }
            JobsKey::Ghost => Some((GHOST, GHOST)),
            JobsKey::Zero => Some((JobId::new(0), JobId::new(0))),
            JobsKey::Previous => self.last_jobs_next,
        };
        if keys.is_some() {
            self.coverage.note(match key {
                JobsKey::Previous => "a page from the previous page's next",
                _ => "a page from a key no page handed out",
            });
        }
        self.note_query(limit, status.is_some());
        let query = |before: Option<JobId>| JobsQuery {
            status,
            before,
            limit,
        };
        let (mine, theirs) = (query(keys.map(|k| k.0)), query(keys.map(|k| k.1)));
        let what = format!("{at}: jobs_page of {scope:?} {mine:?}");
        let expected = self.reference.jobs_page(&scope, &mine);
        let got = self
            .store
            .jobs_page(&scope, &theirs)
            .await
            .map_err(|e| failed("jobs_page", e))?;
        let store_next = got.next;
        let got = self.jobs_page_of(got);
        // The next page's key on each side, for a later `Previous`.
        self.last_jobs_next = expected.next.zip(store_next).or(self.last_jobs_next);
        self.compare(what, Answer::JobsPage(expected), Answer::JobsPage(got))
    }

    /// Compares one job read by `viewer`.
    pub(super) async fn job(
        &mut self,
        at: &str,
        job: Option<Index>,
        viewer: Viewer,
    ) -> Result<(), Mismatch> {
        let (ref_id, store_id, owner) = self.page_job(job);
        let scope = self.scope_of(viewer, &owner);
        let what = format!("{at}: job {ref_id} in {scope:?}");
        let expected = self.reference.job(&scope, ref_id);
        let got = self
            .store
            .job(&scope, store_id)
            .await
            .map_err(|e| failed("job", e))?
            .map(|mut job| {
                job.summary = self.summary(job.summary);
                job
            });
        self.compare(what, Answer::Job(expected), Answer::Job(got))
    }

    /// Compares a page of one job's targets read by `viewer`.
    pub(super) async fn targets_page(
        &mut self,
        at: &str,
        job: Option<Index>,
        viewer: Viewer,
        state: Option<TargetKind>,
        key: TargetsKey,
        limit: Option<usize>,
    ) -> Result<(), Mismatch> {
        let (ref_id, store_id, owner) = self.page_job(job);
        let scope = self.scope_of(viewer, &owner);
        let after = match key {
            TargetsKey::First => None,
            TargetsKey::At(index) => Some(index),
            TargetsKey::Past => Some(usize::MAX),
            TargetsKey::Previous => self.last_targets_next,
        };
        if after.is_some() {
            self.coverage.note(match key {
                TargetsKey::Previous => "a page from the previous page's next",
                _ => "a page from a key no page handed out",
            });
        }
        self.note_query(limit, state.is_some());
        let query = TargetsQuery {
            state,
            after,
            limit,
        };
        let what = format!("{at}: targets_page of job {ref_id} in {scope:?} {query:?}");
        let expected = self.reference.targets_page(&scope, ref_id, &query);
        let got: Option<TargetsPage> = self
            .store
            .targets_page(&scope, store_id, &query)
            .await
            .map_err(|e| failed("targets_page", e))?
            .map(|mut page| {
                page.job.summary = self.summary(page.job.summary);
                page
            });
        if let Some(next) = expected.as_ref().and_then(|page| page.next) {
            self.last_targets_next = Some(next);
        }
        self.compare(
            what,
            Answer::TargetsPage(expected),
            Answer::TargetsPage(got),
        )
    }
}
