//! Two jobs, one worker: the targets alternate, a busy target is retried while the rotation
//! goes on, and a third job is cancelled while its first target is in flight.
//!
//! Run: `cargo run -p batch --example demo` (on a fresh SQLite file in the temp folder, the
//! default store), or `cargo run -p batch --example demo -- --memory` (on the in-memory store).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use batch::store::SqliteStore;
use batch::store::{MemoryStore, Store};
use batch::{Caller, Config, FetchContext, FetchError, JobId, Runner};

/// Pretends to download `url`: `b/2` is busy on its first try, `c/*` is slow.
async fn download(url: String, busy_once: Arc<AtomicU32>) -> Result<String, FetchError> {
    println!("  fetch {url}");
    if url == "b/2" && busy_once.fetch_add(1, Ordering::Relaxed) == 0 {
        println!("  {url} is busy: retry later");
        return Err(FetchError::retry_later("busy"));
    }
    if url.starts_with("c/") {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if url.ends_with("/missing") {
        return Err(FetchError::target_with_hint(
            "not found",
            "check the address",
        ));
    }
    Ok(format!("{} bytes", url.len() * 100))
}

async fn show(runner: &Runner<String, String>, name: &str, id: JobId, who: &Caller) {
    let job = runner.status(id, who).await.expect("the job exists");
    let targets: Vec<String> = job
        .targets
        .iter()
        .map(|t| format!("{}={}", t.target_json, t.state.word()))
        .collect();
    println!(
        "job {name}: {:<9} {}",
        job.status.as_str(),
        targets.join(" ")
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|arg| arg == "--memory") {
        println!("store: in memory");
        return demo(MemoryStore::new()).await;
    }
    let db = std::env::temp_dir().join(format!("batch-demo-{}.db", std::process::id()));
    println!("store: SQLite file {}", db.display());
    let result = demo(SqliteStore::open(&db)?).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    result
}

async fn demo<S: Store>(store: S) -> Result<(), Box<dyn std::error::Error>> {
    let busy_once = Arc::new(AtomicU32::new(0));
    let fetch =
        move |_ctx: FetchContext, url: String| download(url.clone(), Arc::clone(&busy_once));
    let config = Config::default()
        .workers(1)
        .retry(Duration::from_millis(50), Duration::from_secs(5));
    let runner = Runner::new(config, store, fetch).await?;

    let (ann, bob, cid) = (Caller::new("ann"), Caller::new("bob"), Caller::new("cid"));
    let urls = |job: &str, names: &[&str]| -> Vec<String> {
        names.iter().map(|n| format!("{job}/{n}")).collect()
    };
    println!("submit a and b; one worker alternates between them:");
    let a = runner
        .submit(&ann, &urls("a", &["1", "2", "missing"]))
        .await?;
    let b = runner.submit(&bob, &urls("b", &["1", "2", "3"])).await?;
    show(&runner, "a", a, &ann).await;
    show(&runner, "b", b, &bob).await;

    while runner.status(a, &ann).await?.status.is_live()
        || runner.status(b, &bob).await?.status.is_live()
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    show(&runner, "a", a, &ann).await;
    show(&runner, "b", b, &bob).await;

    println!("submit c, cancel it while c/1 is in flight:");
    let c = runner.submit(&cid, &urls("c", &["1", "2"])).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    show(&runner, "c", c, &cid).await;
    println!("cancel c: {}", runner.cancel(c, &cid).await?);
    show(&runner, "c", c, &cid).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("c/1 finished and was stored; c/2 never started:");
    show(&runner, "c", c, &cid).await;
    println!(
        "cancel a (already ended): {}",
        runner.cancel(a, &ann).await?
    );

    runner.close().await;
    println!("closed");
    Ok(())
}
