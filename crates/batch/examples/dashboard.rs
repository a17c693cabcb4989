//! A board of jobs in progress: a runner on a SQLite file with slow fake targets, three
//! callers' jobs running, and the dashboard mounted at `/jobs/` on 127.0.0.1.
//!
//! Run: `cargo run -p lockgate-batch --example dashboard --features dashboard` and open the
//! URL it prints. Every request is the caller `demo`, unless a header `x-user` names another
//! (`x-user: admin` sees every caller's jobs). It serves until stopped (Ctrl-C).
//!
//! `-- --once` (what `cargo xtask demo` runs): serves on an ephemeral port, drives one
//! `GET` of the list over HTTP, prints what it got, and exits.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::request::Parts;
use lockgate_batch::dashboard::Dashboard;
use lockgate_batch::store::SqliteStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};

/// Pretends to fetch `url`: takes 0.3 to 1.2 seconds; every seventh is missing.
async fn fetch(ctx: FetchContext, url: String) -> Result<String, FetchError> {
    let wait = 300 + (ctx.index() as u64 * 137) % 900;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(wait)) => {}
        () = ctx.cancelled() => return Err(FetchError::retry_later("closing")),
    }
    if ctx.index() % 7 == 6 {
        return Err(FetchError::target_with_hint(
            format!("{url}: not found"),
            "check the address",
        ));
    }
    Ok(format!("{} bytes from {url}", url.len() * 100))
}

fn urls(site: &str, count: usize) -> Vec<String> {
    (1..=count)
        .map(|n| format!("https://{site}/page/{n}"))
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let once = std::env::args().any(|arg| arg == "--once");
    let dir = std::env::temp_dir().join(format!("batch-dashboard-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = SqliteStore::open(dir.join("jobs.db"))?;
    let config = Config::default().workers(3);
    let runner: Arc<Runner<String, String>> = Arc::new(Runner::new(config, store, fetch).await?);

    for (caller, site, count) in [
        ("demo", "example.org", 40),
        ("ann", "docs.example", 25),
        ("bob", "shop.example", 60),
    ] {
        runner
            .submit(&Caller::new(caller), &urls(site, count))
            .await?;
    }

    let who = |parts: &Parts| {
        let user = match parts.headers.get("x-user") {
            Some(value) => value.to_str().ok()?,
            None => "demo",
        };
        Some(Caller::new(user))
    };
    let board = Dashboard::new(Arc::clone(&runner), who).admin(|c: &Caller| c.as_str() == "admin");
    let app = Router::new().nest_service("/jobs", board.router());
    let port = if once { 0 } else { 8038 };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(_) => tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?,
    };
    let address = listener.local_addr()?;
    println!("board: http://{address}/jobs/");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    if once {
        let (status, rows) = tokio::task::spawn_blocking(move || get_list(address)).await??;
        println!("GET /jobs/: {status}, {rows} job(s) listed");
        server.abort();
        runner.close().await;
        let _ = std::fs::remove_dir_all(&dir);
        return if status.contains("200") {
            Ok(())
        } else {
            Err(format!("the board answered {status}").into())
        };
    }
    server.await??;
    Ok(())
}

/// One plain HTTP/1.1 `GET /jobs/`: its status line and the count of job rows.
fn get_list(address: std::net::SocketAddr) -> std::io::Result<(String, usize)> {
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET /jobs/ HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response.lines().next().unwrap_or_default().to_owned();
    Ok((status, response.matches("<tr data-job-id=").count()))
}
