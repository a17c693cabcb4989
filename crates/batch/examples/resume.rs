//! A job that survives its process: run this, kill it halfway (Ctrl-C, or `kill -9`), run it
//! again, and the new runner finishes the same job from where the first one stopped.
//!
//! Run: `cargo run -p lockgate-batch --example resume` (twice, with a kill in between).
//! The database is `batch-resume.db` in the system temp folder, or the path given as the first
//! argument; delete it to start over.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::CallerStore;
use lockgate_batch::store::SqliteStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobId, Runner};

const PAGES: u32 = 20;

/// Pretends to extract one page: slow enough to kill the process halfway.
async fn extract(page: u32) -> Result<String, FetchError> {
    tokio::time::sleep(Duration::from_millis(250)).await;
    Ok(format!("page {page}: {} words", 100 + page * 7))
}

/// Prints every stored target and wakes `main` when the job ends.
struct Progress(tokio::sync::Notify);

impl Hooks for Progress {
    fn target(&self, event: &lockgate_batch::hooks::TargetEvent) {
        println!(
            "  stored target {}: {:?} after {:.0?}",
            event.index, event.outcome, event.elapsed
        );
    }
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        println!("job ended: {status}");
        self.0.notify_one();
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("batch-resume.db"));
    // The job's id is kept beside the database, so a second run knows which job to follow.
    let id_file = db.with_extension("job");
    let store = SqliteStore::open(&db)?;
    let caller = Caller::new("resume-demo");
    let previous = match std::fs::read_to_string(&id_file) {
        Ok(text) => Some(JobId::new(text.trim().parse()?)),
        Err(_) => None,
    };
    let previous = match previous {
        Some(id) => store.status(id, &caller).await?.map(|job| (id, job)),
        None => None,
    };

    let progress = Arc::new(Progress(tokio::sync::Notify::new()));
    let fetch = |_ctx: FetchContext, page: u32| extract(page);
    let config = Config::default().workers(1).hooks(progress.clone());
    let runner = Runner::new(config, store, fetch).await?;

    let id = match previous {
        Some((id, job)) if job.status.is_live() => {
            let counts = job.counts();
            println!(
                "resuming job {id} from {}: {} of {PAGES} pages stored, {} pending",
                db.display(),
                counts.done + counts.failed,
                counts.pending
            );
            id
        }
        Some((id, job)) => {
            println!("job {id} in {} already ended: {}", db.display(), job.status);
            println!("delete {} to start over", db.display());
            runner.close().await;
            return Ok(());
        }
        None => {
            let pages: Vec<u32> = (1..=PAGES).collect();
            let id = runner.submit(&caller, &pages).await?;
            std::fs::write(&id_file, id.to_string())?;
            println!("submitted job {id} of {PAGES} pages to {}", db.display());
            println!("kill this process halfway (Ctrl-C), then run it again");
            id
        }
    };

    let ended = progress.0.notified();
    if runner.status(&caller, id).await?.status.is_live() {
        ended.await;
    }
    let job = runner.status(&caller, id).await?;
    let outputs: Vec<String> = job
        .targets
        .iter()
        .filter_map(|target| target.state.output::<String>().and_then(Result::ok))
        .collect();
    println!(
        "{} pages stored, first: {:?}, last: {:?}",
        outputs.len(),
        outputs.first(),
        outputs.last()
    );
    runner.close().await;
    Ok(())
}
