//! The application under test: a runner of string targets over a SQLite store (in memory),
//! its dashboard mounted at `/jobs`, served on a loopback port.
//!
//! Every request is the caller [`CALLER`] (a browser cannot set the header a real `who`
//! would read), and every job is theirs. A caller has one live job at a time, so the steps
//! run one live job after another.
//!
//! A target's text is what the pages show, so it says nothing about how the fetch treats it:
//! the test gives a target a [`Plan`] by its text. A target with none succeeds at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::request::Parts;
use lockgate_batch::dashboard;
use lockgate_batch::store::SqliteStore;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobId, JobStatus, JobSummary, Runner,
};
use tokio::sync::Semaphore;

use crate::driver::{POLL_EVERY, WAIT_LIMIT};
use crate::server::Server;

pub type Run = Runner<String, String>;

/// Whose every job and request is.
pub const CALLER: &str = "ann";

/// How the fetch treats a target.
#[derive(Clone)]
pub enum Plan {
    /// Waits for a permit of this gate (or the job's cancel), then succeeds.
    Hold(Arc<Semaphore>),
    /// Fails at once with this error and hint.
    Fail(String, String),
}

type Plans = Arc<Mutex<HashMap<String, Plan>>>;

pub struct Board {
    pub runner: Arc<Run>,
    pub server: Server,
    plans: Plans,
}

async fn fetch(plans: Plans, ctx: FetchContext, target: String) -> Result<String, FetchError> {
    let plan = plans.lock().unwrap().get(&target).cloned();
    match plan {
        None => {}
        Some(Plan::Fail(error, hint)) => return Err(FetchError::target_with_hint(error, hint)),
        Some(Plan::Hold(gate)) => tokio::select! {
            permit = gate.acquire() => permit.expect("gates stay open").forget(),
            () = ctx.cancelled() => return Err(FetchError::retry_later("cancelled")),
        },
    }
    // Outputs of a few kilobytes, of different sizes, as documents would be.
    Ok(format!(
        "{target}: {}",
        "x".repeat(1_000 + 1_237 * ctx.index() % 9_000)
    ))
}

impl Board {
    /// Two workers. A job has one target in flight at a time (the store's claim rule), so a
    /// job whose next target is held keeps one worker waiting and the other one free.
    pub async fn start() -> Board {
        let plans = Plans::default();
        let fetch = {
            let plans = Arc::clone(&plans);
            move |ctx: FetchContext, target: String| fetch(Arc::clone(&plans), ctx, target)
        };
        let store = SqliteStore::open_in_memory().expect("a SQLite store");
        let runner = Arc::new(
            Runner::new(Config::default().workers(2), store, fetch)
                .await
                .expect("a runner"),
        );
        let board = dashboard::router(Arc::clone(&runner), |_: &Parts| Some(Caller::new(CALLER)));
        let server = Server::start(Router::new().nest_service("/jobs", board)).await;
        Board {
            runner,
            server,
            plans,
        }
    }

    /// The list page's URL.
    pub fn list_url(&self) -> String {
        format!("{}/jobs/", self.server.origin)
    }

    /// Job `id`'s page, with `query` (empty, or `?…`).
    pub fn job_url(&self, id: JobId, query: &str) -> String {
        format!("{}/jobs/{id}{query}", self.server.origin)
    }

    /// Gives `target` a plan.
    pub fn plan(&self, target: &str, plan: Plan) {
        self.plans.lock().unwrap().insert(target.to_owned(), plan);
    }

    /// Submits `targets`.
    pub async fn submit(&self, targets: &[String]) -> JobId {
        self.runner
            .submit(&Caller::new(CALLER), targets)
            .await
            .expect("submitted")
    }

    /// Cancels job `id`; whether it was live.
    pub async fn cancel(&self, id: JobId) -> bool {
        self.runner
            .cancel(&Caller::new(CALLER), id)
            .await
            .expect("cancelled")
    }

    /// Job `id`'s status.
    pub async fn status(&self, id: JobId) -> JobStatus {
        self.runner
            .status(&Caller::new(CALLER), id)
            .await
            .expect("a job")
            .status
    }

    /// Waits until job `id` has `stored` targets stored (and returns its status); panics
    /// after [`WAIT_LIMIT`].
    pub async fn until_stored(&self, id: JobId, stored: usize) -> JobStatus {
        self.until(id, &format!("{stored} targets stored"), |summary| {
            summary.counts.stored() >= stored
        })
        .await
    }

    /// Waits until job `id` has status `status`; panics after [`WAIT_LIMIT`].
    pub async fn until_status(&self, id: JobId, status: JobStatus) {
        self.until(id, &format!("status {status}"), |summary| {
            summary.status == status
        })
        .await;
    }

    /// Waits until job `id`'s summary in the store passes `check`, and returns its status
    /// then; panics after [`WAIT_LIMIT`].
    ///
    /// It polls the store rather than following [`Runner::watch`]: a watch opened while a
    /// claim starts the job can miss the move to `running` (`publish_start` finds no first
    /// read yet and drops the start; the first read, taken before the claim, then says
    /// `queued`) and, with every target held, no later change would correct it.
    async fn until(&self, id: JobId, what: &str, check: impl Fn(&JobSummary) -> bool) -> JobStatus {
        let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
        loop {
            let summary = self
                .runner
                .summary(&Caller::new(CALLER), id)
                .await
                .expect("a job");
            if check(&summary) {
                return summary.status;
            }
            assert!(
                summary.status.is_live(),
                "job {id} ended as {summary:?}, not with {what}"
            );
            if tokio::time::Instant::now() >= deadline {
                let jobs = self.runner.jobs(&Caller::new(CALLER)).await;
                panic!("job {id}: waited {WAIT_LIMIT:?} for {what}; the jobs: {jobs:#?}");
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// `n` targets named `{prefix}-{i}` (1-based), as a site's report URLs.
pub fn targets(prefix: &str, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| format!("https://{prefix}.example/reports/{i:02}.pdf"))
        .collect()
}
