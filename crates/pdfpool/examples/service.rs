//! An extraction service in miniature: requests arrive, share jobs, queue, get refused with
//! `Busy` and `CallerBusy`, one job panics, and one waits past the limit; the pool's counters
//! are printed after every event.
//!
//! Run with `cargo run -p lockgate-pdfpool --example service`.

use std::time::Duration;

use lockgate_pdfpool::{Error, Pool};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

/// Keyed by document, callers are user names, the output is the extracted text.
type Extractor = Pool<&'static str, &'static str, String>;

/// Stands in for a child process that extracts a PDF's text.
async fn extract(path: &'static str, takes: Duration) -> String {
    sleep(takes).await;
    assert!(path != "broken.pdf", "extractor crashed on {path}");
    format!("<text of {path}>")
}

fn counters(pool: &Extractor, keys: &[&'static str]) -> String {
    let waiting: Vec<String> = keys
        .iter()
        .map(|key| format!("{key}={}", pool.waiting(key)))
        .collect();
    format!(
        "running={} queued={} waiting[{}]",
        pool.running(),
        pool.queued(),
        waiting.join(" ")
    )
}

/// What the (absent) HTTP layer would answer.
fn reply(outcome: &Result<String, Error>) -> String {
    match outcome {
        Ok(text) => format!("200 {text}"),
        Err(busy @ Error::Busy { cause, .. }) => format!(
            "503 {cause}, retry after {} ms",
            busy.retry_after().unwrap_or_default().as_millis()
        ),
        Err(Error::CallerBusy) => "429 one document at a time".to_owned(),
        Err(Error::Panicked(panic)) => format!("500 {panic}"),
        Err(other) => format!("503 {other}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    const KEYS: [&str; 6] = ["a.pdf", "b.pdf", "c.pdf", "d.pdf", "broken.pdf", "slow.pdf"];
    // A one-line panic report instead of the default hook's, to keep the output readable.
    std::panic::set_hook(Box::new(|info| {
        println!("          (a job panicked: {info})")
    }));
    let start = Instant::now();
    // Two slots, one queue place, and a queued job waits at most 250 ms.
    let pool = Extractor::new(2, 1, Duration::from_millis(250));
    let submissions: [(&str, &str, u64); 9] = [
        ("alice", "a.pdf", 600),     // starts (slot 1)
        ("bob", "a.pdf", 600),       // shares alice's job
        ("carol", "b.pdf", 100),     // starts (slot 2)
        ("dave", "c.pdf", 100),      // queued
        ("erin", "d.pdf", 100),      // Busy: no slot, queue full
        ("alice", "d.pdf", 100),     // CallerBusy: alice's a.pdf is in flight
        ("frank", "c.pdf", 100),     // shares dave's queued job
        ("gina", "broken.pdf", 400), // starts (slot 2) later, panics
        ("hank", "slow.pdf", 100),   // queued behind two long jobs: waits past the limit
    ];
    let mut requests = Vec::new();
    for (index, (user, path, millis)) in submissions.into_iter().enumerate() {
        if index == 7 {
            // Let b.pdf and c.pdf finish so the queue has room again.
            sleep(Duration::from_millis(220)).await;
            println!(
                "{:>4} ms  ... b.pdf and c.pdf done",
                start.elapsed().as_millis()
            );
        }
        let takes = Duration::from_millis(millis);
        let handle: JoinHandle<()> = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let outcome = pool.run(path, user, move || extract(path, takes)).await;
                // Printed as each request ends, so the order shows what happened when.
                println!(
                    "{:>4} ms  {user:>5} gets {path:<10} {:<34} -> {}",
                    start.elapsed().as_millis(),
                    reply(&outcome),
                    counters(&pool, &KEYS)
                );
            })
        };
        // Let the request reach the pool before printing the counters.
        tokio::task::yield_now().await;
        println!(
            "{:>4} ms  {user:>5} asked for {path:<10} -> {}",
            start.elapsed().as_millis(),
            counters(&pool, &KEYS)
        );
        requests.push(handle);
    }
    for request in requests {
        request.await.expect("request task");
    }
    assert_eq!((pool.running(), pool.queued()), (0, 0));
    pool.close();
    println!(
        "{:>4} ms  closed: a new request gets {:?}",
        start.elapsed().as_millis(),
        pool.run("a.pdf", "zoe", || extract("a.pdf", Duration::ZERO))
            .await
    );
}
