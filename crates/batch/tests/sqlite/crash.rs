//! A runner killed with SIGKILL mid-job, and a new runner over the same SQLite file that
//! finishes it: every target is stored exactly once, with the right output, and only the
//! target in flight at the kill is fetched twice.
//!
//! The child is this test binary itself, running the ignored test `child_runs_until_killed`.
//! It fetches one target per line the parent writes to its stdin, so the parent decides
//! exactly where the kill lands: no timing is involved.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::SqliteStore;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobId, JobStatus, Runner, TargetState,
};

const DB_ENV: &str = "BATCH_CRASH_TEST_DB";
const TARGETS: u64 = 40;
/// Targets the child stores before it is killed while fetching the next one.
const STORED_BEFORE_KILL: u64 = 15;

fn caller() -> Caller {
    Caller::new("crash-test")
}

fn output_of(target: u64) -> u64 {
    target * target + 7
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
#[ignore = "the child process of crash_mid_job_resumes_on_restart; runs only when it starts it"]
fn child_runs_until_killed() {
    let db = std::env::var_os(DB_ENV).expect("started by the crash test");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(PathBuf::from(db)).unwrap();
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
        // The parent kills this process long before the job could end.
        std::future::pending::<()>().await;
    });
}

/// A fresh folder under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the child until it has stored `STORED_BEFORE_KILL` targets and started the next one,
/// then kills it with SIGKILL; returns the job's id.
fn run_child_and_kill(db: &Path) -> JobId {
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
        .env(DB_ENV, db)
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
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush, no checkpoint.
    child.wait().unwrap();
    assert_eq!(stored, STORED_BEFORE_KILL);
    job.expect("the child printed its job id before its first fetch")
}

/// Sends each terminal status to the test.
struct EndSignal(tokio::sync::mpsc::UnboundedSender<JobStatus>);

impl Hooks for EndSignal {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

#[test]
fn crash_mid_job_resumes_on_restart() {
    let dir = std::env::temp_dir().join(format!("batch-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _scratch = Scratch(dir.clone());
    let db = dir.join("jobs.db");

    let id = run_child_and_kill(&db);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(&db).unwrap();
        let before = store_status(&store, id).await;
        let stored = before
            .targets
            .iter()
            .filter(|t| t.state != TargetState::Pending)
            .count();
        assert_eq!(
            stored as u64, STORED_BEFORE_KILL,
            "every stored target survived the kill"
        );
        assert_eq!(before.status, JobStatus::Running);

        let fetched = Arc::new(Mutex::new(Vec::new()));
        let seen = fetched.clone();
        let fetch = move |_ctx: FetchContext, target: u64| {
            seen.lock().unwrap().push(target);
            async move { Ok::<u64, FetchError>(output_of(target)) }
        };
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let config = Config::default()
            .workers(2)
            .hooks(Arc::new(EndSignal(ended_tx)));
        let runner = Runner::new(config, store, fetch).await.unwrap();
        assert_eq!(ended.recv().await, Some(JobStatus::Done));

        let job = runner.status(&caller(), id).await.unwrap();
        runner.close().await;
        assert_eq!(job.status, JobStatus::Done);
        for (index, target) in job.targets.iter().enumerate() {
            assert_eq!(target.target_json, index.to_string());
            let output: u64 = target.state.output().expect("done").unwrap();
            assert_eq!(output, output_of(index as u64), "target {index}");
        }
        // Only the target in flight at the kill is fetched again; stored ones never are.
        let expected: Vec<u64> = (STORED_BEFORE_KILL..TARGETS).collect();
        assert_eq!(*fetched.lock().unwrap(), expected);
    });
}

async fn store_status(store: &SqliteStore, id: JobId) -> lockgate_batch::Job {
    use lockgate_batch::store::Store;
    store
        .status(id, &caller())
        .await
        .unwrap()
        .expect("the job survived the kill")
}
