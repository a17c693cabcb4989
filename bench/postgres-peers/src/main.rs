//! `postgres-peers`: items per second of `batch`'s PostgreSQL store against peer Rust job
//! queues, with the workers spread over several OS processes that share one PostgreSQL server
//! running with its default durability (`fsync = on`, `synchronous_commit = on`).
//!
//! # What runs
//!
//! The parent (`postgres-peers run`) loops over repeat × case × process count × subject
//! (subjects innermost, so a machine that gets busier during the run shifts every subject
//! alike). For each measurement it creates a fresh database on the server, lets the subject
//! put every item in it (not timed), starts N child processes of its own binary
//! (`postgres-peers child …`),
//! waits until every child has connected and built its workers (each prints `ready`), then
//! writes `go` to every child at once and starts the clock. The clock stops when the database
//! itself says every item is finished (see [`subjects::Probe`]); the children's own counts
//! only tell the parent when to start asking. Then the parent writes `stop`, waits for the
//! children to exit, checks the final state (every item finished exactly as often as items
//! were submitted) and drops the database.
//!
//! Cases (see [`Case`]):
//!
//! - `zero`: 5,000 items whose work returns at once: the per-item cost of the queue itself.
//! - `io`: 1,000 items whose work is `tokio::time::sleep(20 ms)`: how well the queue keeps its
//!   workers busy while the work waits.
//!
//! Each child runs 4 concurrent workers, for 1, 2 and 4 children.
//!
//! # Subjects and why the comparison is fair
//!
//! Every subject gets the same items, the same work function, the same 4 workers per process,
//! the same multi-threaded tokio runtime per process, and the same finish line (the database
//! says done; nothing is counted as finished while its completion is only in memory). Each is
//! configured as its documentation suggests, with the exceptions listed per module:
//!
//! - [`subjects::ours`]: `batch`'s `PostgresStore` under a `Runner` (its rules: serial per
//!   job, round-robin across jobs, leases and fencing). The items are 64 jobs of 64 callers.
//! - [`subjects::bare`]: a bare `FOR UPDATE SKIP LOCKED` loop on 4 connections: one claim
//!   statement and one "done" statement per item, none of the rules. The ceiling of the
//!   approach.
//! - [`subjects::apalis`]: `apalis-postgres` 1.x with a `WorkerBuilder` at concurrency 4.
//! - [`subjects::river`]: `riverqueue` (River's Rust client) with one queue of 4 workers.
//!
//! Throughput is `items / seconds` from `go` to done. The parent prints a markdown table of
//! medians and appends one JSON line per measurement to the file given with `--out`.

mod child;
mod parent;
mod subjects;

use std::process::ExitCode;
use std::time::Duration;

use subjects::Subject;

/// The environment variable that holds the PostgreSQL URL (`postgres://user@host:port/db`);
/// the parent creates and drops its databases next to `db`.
const URL_VAR: &str = "BATCH_BENCH_POSTGRES_URL";

/// Workers (concurrent items) in each process, for every subject.
const WORKERS_PER_PROCESS: usize = 4;

/// One workload: how many items, and what each item's work does.
#[derive(Debug, Clone, Copy)]
struct Case {
    /// `zero` or `io`: the column group in the table and the `case` field in JSON.
    name: &'static str,
    /// Items submitted (and drained) per measurement.
    items: usize,
    /// The work per item: `tokio::time::sleep` of this long, none when zero.
    work: Duration,
    /// How many jobs `batch` gets the items as (one caller each); the other subjects have no
    /// jobs and take the items one by one.
    jobs: usize,
}

/// What `run` was asked for.
#[derive(Debug)]
struct RunArgs {
    /// The JSON-lines file, appended to.
    out: std::path::PathBuf,
    /// Fewer items and one repeat: a smoke test, not a measurement.
    quick: bool,
    /// Every case's items times this (`--times`, 1 by default): a longer drain, for costs
    /// that grow while a run lasts (dead index entries, between vacuums).
    times: usize,
    /// Subjects to run (all when empty).
    only: Vec<Subject>,
    /// Cases to run by name (all when empty).
    cases: Vec<String>,
    /// Worker process counts, the table's columns within each case (`--processes`; 1, 2
    /// and 4 by default).
    processes: Vec<usize>,
    /// Repeats of every cell (`--repeats`; 3 by default, 1 with `--quick`).
    repeats: usize,
    /// Print the items finished so far on stderr as the children report them (`--trace`).
    trace: bool,
}

const USAGE: &str = "usage:
  postgres-peers run --out FILE [--quick] [--times N] [--only SUBJECT[,SUBJECT…]]
      [--case CASE[,CASE…]] [--processes N[,N…]] [--repeats N] [--trace]
      SUBJECT: ours, bare, apalis, river; CASE: zero, io; N processes: 1 to 16
      the URL comes from env BATCH_BENCH_POSTGRES_URL
  postgres-peers child SUBJECT URL WORK_MS INDEX   (started by `run`; not for direct use)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => parse_run(&args[1..]).and_then(parent::run),
        Some("child") => child::main(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("postgres-peers: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse_run(args: &[String]) -> Result<RunArgs, String> {
    let mut out = None;
    let mut quick = false;
    let mut times = 1;
    let mut only = Vec::new();
    let mut cases = Vec::new();
    let mut processes = Vec::new();
    let mut repeats = None;
    let mut trace = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = Some(args.next().ok_or("--out needs a file")?.into()),
            "--quick" => quick = true,
            "--times" => {
                times = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n: &usize| (1..=1_000).contains(&n))
                    .ok_or("--times needs a number from 1 to 1000")?;
            }
            "--only" => {
                for name in args.next().ok_or("--only needs a subject")?.split(',') {
                    only.push(name.parse()?);
                }
            }
            "--case" => {
                for name in args.next().ok_or("--case needs a case")?.split(',') {
                    match name {
                        "zero" | "io" => cases.push(name.to_string()),
                        other => return Err(format!("unknown case {other:?}\n{USAGE}")),
                    }
                }
            }
            "--processes" => {
                for n in args.next().ok_or("--processes needs a count")?.split(',') {
                    let n = n
                        .parse()
                        .ok()
                        .filter(|n: &usize| (1..=16).contains(n))
                        .ok_or("--processes needs counts from 1 to 16")?;
                    processes.push(n);
                }
            }
            "--repeats" => {
                repeats = Some(
                    args.next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n: &usize| (1..=100).contains(&n))
                        .ok_or("--repeats needs a number from 1 to 100")?,
                );
            }
            "--trace" => trace = true,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let out = out.ok_or_else(|| format!("--out FILE is required\n{USAGE}"))?;
    if processes.is_empty() {
        processes = vec![1, 2, 4];
    }
    let repeats = repeats.unwrap_or(if quick { 1 } else { 3 });
    Ok(RunArgs {
        out,
        quick,
        times,
        only,
        cases,
        processes,
        repeats,
        trace,
    })
}
