//! What the pipeline tests share: jobs submitted one per caller, and the rotation's order
//! in which a single worker must fetch their targets.

use lockgate_batch::{Caller, JobId, JobStatus, Runner};

/// `n` targets named `"0"`, `"1"`, ….
pub fn targets(n: usize) -> Vec<String> {
    (0..n).map(|i| i.to_string()).collect()
}

/// Submits `jobs` jobs of `per_job` targets, one per caller (`c0`, `c1`, …); returns the
/// callers and the ids in submit order.
pub async fn submit_one_per_caller(
    runner: &Runner<String, String>,
    jobs: usize,
    per_job: usize,
) -> (Vec<Caller>, Vec<JobId>) {
    let callers: Vec<Caller> = (0..jobs).map(|n| Caller::new(format!("c{n}"))).collect();
    let mut ids = Vec::new();
    for caller in &callers {
        ids.push(runner.submit(caller, &targets(per_job)).await.unwrap());
    }
    (callers, ids)
}

/// Submits as [`submit_one_per_caller`], waits for every job to end done, and closes the
/// runner; returns the `(job, index)` order of round-robin service, target by target.
pub async fn run_round_robin(
    runner: Runner<String, String>,
    jobs: usize,
    per_job: usize,
) -> Vec<(u64, usize)> {
    let (callers, ids) = submit_one_per_caller(&runner, jobs, per_job).await;
    for (caller, id) in callers.iter().zip(&ids) {
        let job = runner.wait(caller, *id).await.unwrap();
        assert_eq!(job.status, JobStatus::Done);
    }
    runner.close().await;
    (0..per_job)
        .flat_map(|index| ids.iter().map(move |id| (id.get(), index)))
        .collect()
}
