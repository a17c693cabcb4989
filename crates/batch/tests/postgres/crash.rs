//! A runner process killed with SIGKILL mid-fetch over a shared PostgreSQL store: another
//! replica takes its lapsed claim, fetches that target again and finishes the job; every
//! target is stored exactly once, and the rescue is reported.
//!
//! The child is this test binary itself, running the ignored test `child_runs_until_killed`.
//! It fetches one target per line the parent writes to its stdin, so the parent decides
//! exactly where the kill lands.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::Store;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobId, JobStatus, Runner, TargetState,
};

use crate::pg;

const SCHEMA_ENV: &str = "BATCH_CRASH_TEST_SCHEMA";
const TARGETS: u64 = 20;
/// Targets the child stores before it is killed while fetching the next one.
const STORED_BEFORE_KILL: u64 = 7;
/// Short, so the surviving replica takes over quickly; the child renews every third of it.
const LEASE: Duration = Duration::from_secs(1);

fn caller() -> Caller {
    Caller::new("crash-test")
}

fn output_of(target: u64) -> u64 {
    target * target + 7
}

fn options(schema: &str) -> lockgate_batch::store::PostgresOptions {
    lockgate_batch::store::PostgresStore::options()
        .schema(schema)
        .lease_ttl(LEASE)
        .poll_interval(Duration::from_secs(1))
}

/// Prints each stored target, so the parent can count them.
struct PrintStored;

impl Hooks for PrintStored {
    fn target(&self, event: &lockgate_batch::hooks::TargetEvent) {
        println!("stored {:?}", event.outcome);
        std::io::stdout().flush().unwrap();
    }
}

#[test]
#[ignore = "the child process of sigkill_mid_fetch_is_rescued_by_another_replica"]
fn child_runs_until_killed() {
    let schema = std::env::var(SCHEMA_ENV).expect("started by the crash test");
    let url = pg::url().expect("the parent passes the database");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = options(&schema).connect(&url).await.unwrap();
        let fetch = |_ctx: FetchContext, target: u64| async move {
            println!("fetching {target}");
            std::io::stdout().flush().unwrap();
            let go = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            });
            go.await.unwrap().unwrap();
            Ok::<u64, FetchError>(output_of(target))
        };
        let config = Config::default().workers(1).hooks(Arc::new(PrintStored));
        let runner = Runner::new(config, store, fetch).await.unwrap();
        let targets: Vec<u64> = (0..TARGETS).collect();
        let id = runner.submit(&caller(), &targets).await.unwrap();
        println!("job {id}");
        std::io::stdout().flush().unwrap();
        std::future::pending::<()>().await;
    });
}

/// Runs the child until it has stored `STORED_BEFORE_KILL` targets and started the next one,
/// then kills it with SIGKILL; returns the job's id.
fn run_child_and_kill(schema: &str) -> JobId {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            // The test's name in this binary: its path without the crate's name.
            concat!(module_path!(), "::child_runs_until_killed")
                .split_once("::")
                .unwrap()
                .1,
            "--nocapture",
        ])
        .env(SCHEMA_ENV, schema)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut job, mut stored) = (None, 0);
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("job ") {
            job = Some(JobId::new(id.parse().unwrap()));
        } else if line.starts_with("stored ") {
            stored += 1;
        } else if let Some(target) = line.strip_prefix("fetching ") {
            let target: u64 = target.parse().unwrap();
            assert_eq!(target, stored, "the child fetches in order, one at a time");
            if stored == STORED_BEFORE_KILL {
                break;
            }
            writeln!(stdin, "go").unwrap();
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix: the child's claim is left to its lease.
    child.wait().unwrap();
    assert_eq!(stored, STORED_BEFORE_KILL);
    job.expect("the child printed its job id before its first fetch")
}

/// Sends each terminal status to the test and counts rescues.
struct Signals {
    ended: tokio::sync::mpsc::UnboundedSender<JobStatus>,
    rescued: AtomicUsize,
}

impl Hooks for Signals {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.ended.send(status);
    }
    fn rescued(&self, _: &lockgate_batch::hooks::RescueEvent) {
        self.rescued.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn sigkill_mid_fetch_is_rescued_by_another_replica() {
    if !pg::available() {
        return;
    }
    let schema = pg::fresh_schema();
    let store = pg::open(options(&schema));
    let id = run_child_and_kill(&schema);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let before = store.status(id, &caller()).await.unwrap().expect("the job");
        let stored = before
            .targets
            .iter()
            .filter(|t| t.state != TargetState::Pending)
            .count();
        assert_eq!(stored as u64, STORED_BEFORE_KILL);
        assert_eq!(before.status, JobStatus::Running);

        let fetched = Arc::new(Mutex::new(Vec::new()));
        let seen = fetched.clone();
        let fetch = move |_ctx: FetchContext, target: u64| {
            seen.lock().unwrap().push(target);
            async move { Ok::<u64, FetchError>(output_of(target)) }
        };
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let hooks = Arc::new(Signals {
            ended: ended_tx,
            rescued: AtomicUsize::new(0),
        });
        let config = Config::default().workers(2).hooks(hooks.clone());
        let runner = Runner::new(config, store, fetch).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(120), ended.recv()).await;
        assert_eq!(end.expect("the job ends"), Some(JobStatus::Done));

        let job = runner.status(&caller(), id).await.unwrap();
        runner.close().await;
        for (index, target) in job.targets.iter().enumerate() {
            let output: u64 = target.state.output().expect("done").unwrap();
            assert_eq!(output, output_of(index as u64), "target {index}");
        }
        // The killed fetch's target is fetched again (at least once), stored ones never.
        let expected: Vec<u64> = (STORED_BEFORE_KILL..TARGETS).collect();
        assert_eq!(*fetched.lock().unwrap(), expected);
        assert_eq!(
            hooks.rescued.load(Ordering::SeqCst),
            1,
            "the rescue is reported"
        );
    });
}
