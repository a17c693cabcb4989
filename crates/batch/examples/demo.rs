//! Three jobs, two workers, one progress bar per job drawn from `Runner::watch`: the jobs
//! alternate, a busy target is retried while the rotation goes on, a failed target is stored
//! with its hint, and the third job is cancelled halfway. `Runner::wait` then reads each
//! job's final snapshot with typed outputs.
//!
//! Run: `cargo run -p lockgate-batch --example demo` (on a fresh SQLite file in the temp folder, the
//! default store), or `cargo run -p lockgate-batch --example demo -- --memory` (on the in-memory
//! store). Without a terminal the bars stay hidden and only the summary lines print.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use lockgate_batch::store::{MemoryStore, SqliteStore, Store};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobId, Runner, fetch_fn};

/// Pretends to download `url`: `b/3` is busy on its first try, `a/5` is missing, every
/// fetch takes a little while.
async fn download(
    ctx: FetchContext,
    url: String,
    busy_once: &AtomicU32,
) -> Result<usize, FetchError> {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(60)) => {}
        () = ctx.cancelled() => return Err(FetchError::retry_later("closing")),
    }
    if url == "b/3" && busy_once.fetch_add(1, Ordering::Relaxed) == 0 {
        return Err(FetchError::retry_after(
            "rate limited",
            Duration::from_millis(100),
        ));
    }
    if url == "a/5" {
        return Err(FetchError::target_with_hint(
            "not found",
            "check the address",
        ));
    }
    Ok(url.len() * 100)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|arg| arg == "--memory") {
        println!("store: in memory");
        return demo(MemoryStore::new()).await;
    }
    let dir = std::env::temp_dir().join(format!("batch-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!("store: SQLite file {}", dir.join("jobs.db").display());
    let result = demo(SqliteStore::open(dir.join("jobs.db"))?).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn demo(store: impl Store) -> Result<(), Box<dyn std::error::Error>> {
    let busy_once = Arc::new(AtomicU32::new(0));
    let fetch = fetch_fn(move |ctx, url: String| {
        let busy_once = Arc::clone(&busy_once);
        async move { download(ctx, url, &busy_once).await }
    });
    let config = Config::default()
        .workers(2)
        .retry(Duration::from_millis(100), Duration::from_secs(5));
    let runner: Arc<Runner<String, usize>> = Arc::new(Runner::new(config, store, fetch).await?);

    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>4} [{bar:30}] {pos}/{len} {msg}")?
        .progress_chars("=> ");
    let mut jobs = Vec::new();
    for (name, count) in [("a", 8), ("b", 6), ("c", 10)] {
        let caller = Caller::new(name);
        let urls: Vec<String> = (1..=count).map(|n| format!("{name}/{n}")).collect();
        let id = runner.submit(&caller, &urls).await?;
        let bar = bars.add(ProgressBar::new(count as u64).with_style(style.clone()));
        bar.set_prefix(name);
        jobs.push((
            caller,
            id,
            tokio::spawn(follow(Arc::clone(&runner), Caller::new(name), id, bar)),
        ));
    }

    // Cancel c once three of its targets are stored: the one in flight finishes, no other starts.
    let (c_caller, c_id) = (jobs[2].0.clone(), jobs[2].1);
    let mut watch = runner.watch(&c_caller, c_id).await?;
    while let Some(progress) = watch.changed().await {
        if progress.counts.stored() >= 3 {
            runner.cancel(&c_caller, c_id).await?;
            break;
        }
    }

    for (caller, id, follower) in jobs {
        follower.await?;
        let job = runner.wait(&caller, id).await?;
        let bytes: usize = job
            .targets
            .iter()
            .filter_map(|target| target.output::<usize>())
            .map(|output| output.unwrap_or(0))
            .sum();
        let counts = job.counts();
        println!(
            "job {caller} ({id}): {}, {} done, {} failed, {} never started; {bytes} bytes",
            job.status, counts.done, counts.failed, counts.pending
        );
    }
    runner.close().await;
    Ok(())
}

/// Draws one job's bar from its watch until the job ends.
async fn follow(runner: Arc<Runner<String, usize>>, caller: Caller, id: JobId, bar: ProgressBar) {
    let Ok(mut watch) = runner.watch(&caller, id).await else {
        return;
    };
    loop {
        let progress = watch.progress();
        bar.set_position(progress.counts.stored() as u64);
        bar.set_message(format!(
            "{} ({} failed)",
            progress.status, progress.counts.failed
        ));
        if watch.changed().await.is_none() {
            let progress = watch.progress();
            bar.set_position(progress.counts.stored() as u64);
            bar.finish_with_message(format!("{}", progress.status));
            return;
        }
    }
}
