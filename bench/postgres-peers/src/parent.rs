//! The parent side: fresh database per measurement, child processes, the clock, the table.

use std::io::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::subjects::{Subject, connect};
use crate::{Case, RunArgs, URL_VAR, WORKERS_PER_PROCESS};

/// How long children may take to connect and print `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one measurement may take from `go` to done.
const RUN_TIMEOUT: Duration = Duration::from_secs(900);
/// How long children may take to exit after `stop`.
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the parent asks the database, once the children counted every item.
const PROBE_EVERY: Duration = Duration::from_millis(2);

/// The cases of a run: all, or those named by `--case`.
fn cases(args: &RunArgs) -> Vec<Case> {
    let scale = if args.quick { 5 } else { 1 };
    let all = [
        Case {
            name: "zero",
            items: 5_000 * args.times / scale,
            work: Duration::ZERO,
            jobs: 64,
        },
        Case {
            name: "io",
            items: 1_000 * args.times / scale,
            work: Duration::from_millis(20),
            jobs: 64,
        },
    ];
    all.into_iter()
        .filter(|case| args.cases.is_empty() || args.cases.iter().any(|name| name == case.name))
        .collect()
}

/// One timed drain.
struct Measurement {
    subject: Subject,
    case: Case,
    processes: usize,
    /// `Err` when the measurement failed (the table shows `error`).
    seconds: Result<f64, String>,
}

/// `run`: every subject × case × process count × repeat, then the table.
pub fn run(args: RunArgs) -> Result<(), String> {
    let url = std::env::var(URL_VAR)
        .ok()
        .filter(|url| !url.is_empty())
        .ok_or_else(|| {
            format!("set {URL_VAR} to a PostgreSQL URL (postgres://user@host:port/db)")
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    runtime.block_on(run_all(args, url))
}

async fn run_all(args: RunArgs, url: String) -> Result<(), String> {
    let subjects = if args.only.is_empty() {
        Subject::DEFAULT.to_vec()
    } else {
        args.only.clone()
    };
    let repeats = args.repeats;
    let commit = batch_commit();
    let admin = connect(&url).await?;
    let server = server_settings(&admin).await?;
    eprintln!("server: {server}");
    eprintln!("batch: {commit}");
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)
        .map_err(|err| format!("{}: {err}", args.out.display()))?;

    let mut measurements = Vec::new();
    let mut run_no = 0;
    // Repeats outermost and subjects innermost: a machine that gets busier or quieter during
    // the run (other builds, the disk) shifts every subject's cells alike, not one subject's.
    for repeat in 0..repeats {
        for case in cases(&args) {
            for &processes in &args.processes {
                for &subject in &subjects {
                    run_no += 1;
                    let seconds =
                        measure(&admin, &url, subject, &case, processes, run_no, args.trace).await;
                    let line = json_line(
                        subject, &case, processes, repeat, &seconds, &commit, &server,
                    );
                    match &seconds {
                        Ok(s) => eprintln!(
                            "{subject} {} x{processes} #{repeat}: {:.3} s, {:.0} items/s",
                            case.name,
                            s,
                            case.items as f64 / s
                        ),
                        Err(err) => {
                            eprintln!("{subject} {} x{processes} #{repeat}: {err}", case.name)
                        }
                    }
                    writeln!(out, "{line}").map_err(|err| err.to_string())?;
                    measurements.push(Measurement {
                        subject,
                        case,
                        processes,
                        seconds,
                    });
                }
            }
        }
    }
    println!(
        "{}",
        table(
            &subjects,
            &cases(&args),
            &args.processes,
            &measurements,
            repeats,
            &commit,
            &server
        )
    );
    Ok(())
}

/// One measurement in a database of its own, dropped afterwards.
async fn measure(
    admin: &tokio_postgres::Client,
    url: &str,
    subject: Subject,
    case: &Case,
    processes: usize,
    run_no: usize,
    trace: bool,
) -> Result<f64, String> {
    let db = format!("peers_{}_{run_no}", std::process::id());
    let sql = |err: tokio_postgres::Error| format!("{db}: {err}");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .await
        .map_err(sql)?;
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .map_err(sql)?;
    let result = measure_in(&with_dbname(url, &db)?, subject, case, processes, trace).await;
    admin
        .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
        .await
        .map_err(sql)?;
    result
}

/// What a child printed, or that it closed its stdout.
enum Said {
    Ready,
    Count(u64),
    Final(u64),
    Closed,
}

async fn measure_in(
    url: &str,
    subject: Subject,
    case: &Case,
    processes: usize,
    trace: bool,
) -> Result<f64, String> {
    subject.prepare(url, case).await?;
    let probe = subject.probe(url).await?;

    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    let (said_tx, mut said) = mpsc::unbounded_channel::<(usize, Said)>();
    let mut children: Vec<Child> = Vec::new();
    let mut stdins: Vec<ChildStdin> = Vec::new();
    for index in 0..processes {
        let mut child = Command::new(&exe)
            .arg("child")
            .arg(subject.name())
            .arg(url)
            .arg(case.work.as_millis().to_string())
            .arg(index.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| format!("starting {}: {err}", exe.display()))?;
        stdins.push(child.stdin.take().ok_or("no child stdin")?);
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        let said_tx = said_tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut words = line.split_whitespace();
                let message = match (words.next(), words.next().map(str::parse::<u64>)) {
                    (Some("ready"), None) => Said::Ready,
                    (Some("count"), Some(Ok(n))) => Said::Count(n),
                    (Some("final"), Some(Ok(n))) => Said::Final(n),
                    _ => {
                        eprintln!("child {index}: {line}");
                        continue;
                    }
                };
                if said_tx.send((index, message)).is_err() {
                    return;
                }
            }
            let _ = said_tx.send((index, Said::Closed));
        });
        children.push(child);
    }
    drop(said_tx);

    // Everyone connected and built its workers.
    let mut ready = 0;
    let ready_by = Instant::now() + READY_TIMEOUT;
    while ready < processes {
        match next(&mut said, ready_by).await? {
            (_, Said::Ready) => ready += 1,
            (index, Said::Closed) => return Err(format!("child {index} exited before ready")),
            (index, _) => return Err(format!("child {index} worked before go")),
        }
    }

    // Go: the clock runs until the database says every item is finished.
    let start = Instant::now();
    for stdin in &mut stdins {
        send(stdin, "go").await?;
    }
    let done_by = start + RUN_TIMEOUT;
    let mut counts = vec![0u64; processes];
    while counts.iter().sum::<u64>() < case.items as u64 {
        match next(&mut said, done_by).await? {
            (index, Said::Count(n)) => {
                counts[index] = n;
                if trace {
                    let ms = start.elapsed().as_millis();
                    eprintln!("trace {ms} ms {} items", counts.iter().sum::<u64>());
                }
            }
            (index, Said::Closed) => return Err(format!("child {index} exited while working")),
            (index, _) => return Err(format!("child {index} said something out of turn")),
        }
    }
    loop {
        if probe.unfinished().await? == 0 {
            break;
        }
        if Instant::now() > done_by {
            return Err(format!("not finished after {RUN_TIMEOUT:?}"));
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    if trace {
        eprintln!("trace {} ms finished", start.elapsed().as_millis());
    }
    drop(probe);

    // Stop, and check that each item ran once.
    for stdin in &mut stdins {
        send(stdin, "stop").await?;
    }
    let mut finals = vec![None; processes];
    let exit_by = Instant::now() + EXIT_TIMEOUT;
    while finals.iter().any(Option::is_none) {
        match next(&mut said, exit_by).await? {
            (index, Said::Final(n)) => finals[index] = Some(n),
            (index, Said::Closed) if finals[index].is_none() => {
                return Err(format!("child {index} exited without its final count"));
            }
            _ => {}
        }
    }
    for (index, child) in children.iter_mut().enumerate() {
        let status = tokio::time::timeout(EXIT_TIMEOUT, child.wait())
            .await
            .map_err(|_| format!("child {index} did not exit"))?
            .map_err(|err| err.to_string())?;
        if !status.success() {
            return Err(format!("child {index} failed: {status}"));
        }
    }
    let executions: u64 = finals.iter().flatten().sum();
    if executions != case.items as u64 {
        return Err(format!("{executions} executions of {} items", case.items));
    }
    subject.verify(url, case).await?;
    Ok(seconds)
}

async fn next(
    said: &mut mpsc::UnboundedReceiver<(usize, Said)>,
    by: Instant,
) -> Result<(usize, Said), String> {
    match tokio::time::timeout_at(by.into(), said.recv()).await {
        Ok(Some(message)) => Ok(message),
        Ok(None) => Err("every child closed its stdout".into()),
        Err(_) => Err("timed out waiting for the children".into()),
    }
}

async fn send(stdin: &mut ChildStdin, word: &str) -> Result<(), String> {
    stdin
        .write_all(format!("{word}\n").as_bytes())
        .await
        .map_err(|err| format!("writing {word:?} to a child: {err}"))?;
    stdin.flush().await.map_err(|err| err.to_string())
}

/// `url` with its database name replaced by `db` (URL form only: `postgres://…/name?…`).
fn with_dbname(url: &str, db: &str) -> Result<String, String> {
    let scheme_end = url
        .find("://")
        .ok_or_else(|| format!("{URL_VAR} must be a URL (postgres://user@host:port/db)"))?
        + 3;
    let (head, rest) = url.split_at(scheme_end);
    let (rest, query) = match rest.find('?') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    Ok(format!("{head}{authority}/{db}{query}"))
}

/// The `batch` commit this binary measures: the last commit of the repository around it that
/// changed `crates/` (batch and panicguard), with `+dirty` when they have uncommitted changes.
fn batch_commit() -> String {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(mut commit) = git(&["log", "-1", "--format=%h (%cs) %s", "--", "crates"]) else {
        return "unknown".into();
    };
    if let Some((cut, _)) = commit.char_indices().nth(100) {
        commit.truncate(cut);
        commit += "…";
    }
    let dirty = git(&["status", "--porcelain", "--", "crates"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit} +dirty")
    } else {
        commit
    }
}

/// The server's version and durability settings, for the table and the JSON.
async fn server_settings(admin: &tokio_postgres::Client) -> Result<String, String> {
    let mut parts = Vec::new();
    for setting in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "max_connections",
    ] {
        let row = admin
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .map_err(|err| format!("SHOW {setting}: {err}"))?;
        let value: String = row.get(0);
        if (setting == "fsync" || setting == "synchronous_commit") && value != "on" {
            eprintln!("warning: {setting} = {value}: not the default durability");
        }
        parts.push(format!("{setting}={value}"));
    }
    Ok(parts.join(" "))
}

fn json_line(
    subject: Subject,
    case: &Case,
    processes: usize,
    repeat: usize,
    seconds: &Result<f64, String>,
    commit: &str,
    server: &str,
) -> serde_json::Value {
    let (seconds, items_per_s, error) = match seconds {
        Ok(s) => (Some(*s), Some(case.items as f64 / s), None),
        Err(err) => (None, None, Some(err.as_str())),
    };
    serde_json::json!({
        "subject": subject.name(),
        "case": case.name,
        "items": case.items,
        "work_ms": case.work.as_millis() as u64,
        "jobs": if subject == Subject::Ours { Some(case.jobs) } else { None },
        "processes": processes,
        "workers_per_process": WORKERS_PER_PROCESS,
        "repeat": repeat,
        "seconds": seconds,
        "items_per_s": items_per_s,
        "error": error,
        "batch_commit": commit,
        "server": server,
    })
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// The markdown table: rows are subjects, columns the process counts of each case; cells are
/// the median items per second over the repeats that succeeded.
fn table(
    subjects: &[Subject],
    cases: &[Case],
    processes: &[usize],
    measurements: &[Measurement],
    repeats: usize,
    commit: &str,
    server: &str,
) -> String {
    let mut text = format!(
        "Items per second, median of {repeats}; {WORKERS_PER_PROCESS} workers per process.\n\
         batch: {commit}; server: {server}\n\n| subject |"
    );
    for case in cases {
        for processes in processes {
            text += &format!(" {} ×{processes} |", case.name);
        }
    }
    text += "\n|---|";
    text += &"---:|".repeat(cases.len() * processes.len());
    for &subject in subjects {
        text += &format!("\n| {subject} |");
        for case in cases {
            for &processes in processes {
                let cell: Vec<&Measurement> = measurements
                    .iter()
                    .filter(|m| {
                        m.subject == subject && m.case.name == case.name && m.processes == processes
                    })
                    .collect();
                let rates: Vec<f64> = cell
                    .iter()
                    .filter_map(|m| m.seconds.as_ref().ok().map(|s| case.items as f64 / s))
                    .collect();
                let failed = cell.len() - rates.len();
                text += &match (median(rates), failed) {
                    (Some(rate), 0) => format!(" {rate:.0} |"),
                    (Some(rate), failed) => format!(" {rate:.0} ({failed} failed) |"),
                    (None, _) => " error |".to_string(),
                };
            }
        }
    }
    text += "\n\nzero: ";
    text += &cases
        .iter()
        .map(|case| {
            format!(
                "{} items, {} ms of work each",
                case.items,
                case.work.as_millis()
            )
        })
        .collect::<Vec<_>>()
        .join("; io: ");
    text += &format!(
        "; ours gets them as {} jobs of one caller each.",
        cases[0].jobs
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dbname_is_replaced() {
        assert_eq!(
            with_dbname("postgres://u@h:5/postgres", "x").unwrap(),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            with_dbname("postgres://u@h:5", "x").unwrap(),
            "postgres://u@h:5/x"
        );
        assert_eq!(
            with_dbname("postgresql://u:p@h/db?sslmode=disable", "x").unwrap(),
            "postgresql://u:p@h/x?sslmode=disable"
        );
    }

    #[test]
    fn median_of_three() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
    }
}
