//! `ours`: the `batch` crate's `PostgresStore` under its `Runner`, as a service would run it.
//!
//! `batch` is not a plain queue: a job is a list of targets done one at a time (target
//! `i + 1` starts only after target `i` is stored), workers take jobs round-robin, each caller
//! has at most one live job, and every claim is a lease with a fencing token. So the items are
//! submitted as [`Case::jobs`] jobs (64), one per caller, of `items / 64` targets each (the
//! first `items % 64` jobs one more), enough that every worker of every process can be busy.
//! They go in through the `CallerStore` trait (`CallerStore::submit` with `NewJob`) from the parent before
//! any worker process starts, so no process pays for submitting.
//!
//! Each child opens the store on the schema the parent migrated, with `pool_size(4)` (one
//! connection per worker, as the bare loop has; the store opens one more for `LISTEN`), and
//! at `go` starts a `Runner` with `Config::default().workers(4)`: every other setting is the
//! default (lease 30 s, fallback poll 5 s). A target is finished when the runner stored it;
//! the parent's clock stops when the store reports no live job.
//!
//! Durability per item is the store's own design, as for every subject: a stored target
//! commits with the server's `synchronous_commit` (on here), while `batch` commits its claims
//! without waiting for the disk (a claim lost in a crash only means the target is fetched
//! again). So one synchronous commit per item, where the bare loop makes two.

use std::time::{Duration, SystemTime};

use lockgate_batch::store::{CallerStore, NewJob, PostgresOptions, PostgresStore, Timestamp};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

use super::Probe;
use crate::child::{self, Control};
use crate::{Case, WORKERS_PER_PROCESS};

/// The PostgreSQL schema of the store, in the run's fresh database.
const SCHEMA: &str = "peers";

fn options() -> PostgresOptions {
    PostgresStore::options()
        .schema(SCHEMA)
        .pool_size(WORKERS_PER_PROCESS)
}

fn caller(job: usize) -> Caller {
    Caller::new(format!("caller{job}"))
}

/// The number of targets of job `job`: the items split as evenly as they go.
fn job_len(case: &Case, job: usize) -> usize {
    case.items / case.jobs + usize::from(job < case.items % case.jobs)
}

/// Migrates the schema and submits the items as `case.jobs` jobs of one caller each.
pub async fn prepare(url: &str, case: &Case) -> Result<(), String> {
    let store = options()
        .connect(url)
        .await
        .map_err(|err| err.to_string())?;
    let mut next: u32 = 0;
    for job in 0..case.jobs {
        let targets: Vec<String> = (0..job_len(case, job))
            .map(|_| {
                next += 1;
                next.to_string() // the JSON of the target, a u32
            })
            .collect();
        let now = Timestamp::from(SystemTime::now());
        store
            .submit(NewJob::new(caller(job), targets, now, case.jobs))
            .await
            .map_err(|err| format!("submitting job {job}: {err}"))?;
    }
    Ok(())
}

/// The store the parent asks for live jobs.
pub async fn probe(url: &str) -> Result<Probe, String> {
    let store = options().open_lazy(url).map_err(|err| err.to_string())?;
    store.live_jobs().await.map_err(|err| err.to_string())?; // connect now, not after `go`
    Ok(Probe::Ours(Box::new(store)))
}

/// Every job ended `done` with all its targets done.
pub async fn verify(url: &str, case: &Case) -> Result<(), String> {
    let store = options().open_lazy(url).map_err(|err| err.to_string())?;
    let mut done = 0;
    for job in 0..case.jobs {
        let jobs = store
            .jobs(&caller(job))
            .await
            .map_err(|err| err.to_string())?;
        match jobs.as_slice() {
            [summary] if summary.status == JobStatus::Done => done += summary.counts.done,
            other => return Err(format!("job {job}: expected one done job, found {other:?}")),
        }
    }
    if done == case.items {
        Ok(())
    } else {
        Err(format!("{done} targets done, expected {}", case.items))
    }
}

/// One runner process.
pub async fn child(url: &str, work: Duration, control: &mut Control) -> Result<(), String> {
    let store = options().open_lazy(url).map_err(|err| err.to_string())?;
    // Open the pool's connections before `go`, as the other subjects connect before it.
    let warm = (0..WORKERS_PER_PROCESS).map(|_| store.live_jobs());
    for result in futures::future::join_all(warm).await {
        result.map_err(|err| err.to_string())?;
    }
    control.ready_then_go().await?;
    let fetch = move |_ctx: FetchContext, n: u32| async move {
        child::work(work).await;
        Ok::<u32, FetchError>(n)
    };
    let config = Config::default().workers(WORKERS_PER_PROCESS);
    let runner: Runner<u32, u32> = Runner::new(config, store, fetch)
        .await
        .map_err(|err| err.to_string())?;
    control.stop().await?;
    runner.close().await;
    Ok(())
}
