//! The crash harness the SQLite and PostgreSQL binaries share: a runner process killed with
//! SIGKILL mid-fetch, and a new runner over the same store that finishes its job.
//!
//! The child is the test binary itself, re-run ([`spawn`]) to run one ignored test that calls
//! [`child`]: a runner with one worker over the store under test, submitting one job of
//! targets `0..targets` and fetching one target per line the parent writes to its stdin, so
//! the parent ([`run_child_and_kill`]) decides exactly where the kill lands: no timing is
//! involved. [`resume`] then checks that every target stored before the kill survived it,
//! finishes the job with a new runner, and checks that every target is stored exactly once
//! with the right output, and that only the target in flight at the kill is fetched again.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockgate_batch::hooks::{Hooks, JobEvent, RescueEvent, TargetEvent};
use lockgate_batch::store::Store;
use lockgate_batch::{
    Caller, Config, FetchContext, FetchError, JobId, JobStatus, Runner, TargetState,
};

/// Where the kill lands: the job has targets `0..targets`, and the child is killed while
/// fetching target `stored_before_kill`, the ones before it stored.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub targets: u64,
    pub stored_before_kill: u64,
}

/// A generous bound for the new runner to finish the job on a shared 2-core machine.
const PATIENCE: Duration = Duration::from_secs(120);

fn caller() -> Caller {
    Caller::new("crash-test")
}

fn output_of(target: u64) -> u64 {
    target * target + 7
}

/// Starts this test binary again as a child that runs only the ignored test `test`, with the
/// variable `var` set to `value` and its stdin and stdout piped. `test` is the test's path
/// from `module_path!()`, which starts with the crate's name where the harness's test names
/// do not: `concat!(module_path!(), "::child_runs_until_killed")`.
pub fn spawn(test: &str, var: &str, value: impl AsRef<OsStr>) -> Child {
    let (_crate, name) = test.split_once("::").expect("a path inside the test crate");
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", name, "--nocapture"])
        .env(var, value)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Prints each stored target, so the parent can count them.
struct PrintStored;

impl Hooks for PrintStored {
    fn target(&self, event: &TargetEvent) {
        println!("stored {:?}", event.outcome);
        std::io::stdout().flush().unwrap();
    }
}

/// The child's body, on a runtime of its own: a runner with one worker over the store `open`
/// makes submits a job of `targets` targets, prints its id and each fetch and stored target,
/// fetches a target each time a line comes on stdin, and waits for the kill.
pub fn child<S: Store>(open: impl Future<Output = S>, targets: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = open.await;
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
        let targets: Vec<u64> = (0..targets).collect();
        let id = runner.submit(&caller(), &targets).await.unwrap();
        println!("job {id}");
        std::io::stdout().flush().unwrap();
        // The parent kills this process long before the job could end.
        std::future::pending::<()>().await;
    });
}

/// Lets the child (from [`spawn`]) store `plan.stored_before_kill` targets and start the
/// next one, then kills it with SIGKILL (on Unix: no destructor, no flush, no checkpoint, and
/// a claim left to its lease); returns the job's id.
pub fn run_child_and_kill(mut child: Child, plan: Plan) -> JobId {
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
            if stored == plan.stored_before_kill {
                break;
            }
            writeln!(stdin, "go").unwrap();
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(stored, plan.stored_before_kill);
    job.expect("the child printed its job id before its first fetch")
}

/// Sends each terminal status to the test and counts rescues.
struct Signals {
    ended: tokio::sync::mpsc::UnboundedSender<JobStatus>,
    rescued: AtomicUsize,
}

impl Hooks for Signals {
    fn job(&self, event: &JobEvent) {
        let status = event.status;
        let _ = self.ended.send(status);
    }
    fn rescued(&self, _: &RescueEvent) {
        self.rescued.fetch_add(1, Ordering::SeqCst);
    }
}

/// After the kill, on a runtime of its own: checks that the job `id` in the store `open` makes
/// is still running with every target stored before the kill, finishes it with a new runner
/// of two workers, and checks that every target is stored once with its output and that only
/// the targets from the one in flight at the kill on are fetched. Returns the rescues the new
/// runner reported.
pub fn resume<S: Store>(open: impl Future<Output = S>, id: JobId, plan: Plan) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = open.await;
        let before = store
            .status(id, &caller())
            .await
            .unwrap()
            .expect("the job survived the kill");
        let stored = before
            .targets
            .iter()
            .filter(|t| t.state != TargetState::Pending)
            .count();
        assert_eq!(
            stored as u64, plan.stored_before_kill,
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
        let hooks = Arc::new(Signals {
            ended: ended_tx,
            rescued: AtomicUsize::new(0),
        });
        let config = Config::default().workers(2).hooks(hooks.clone());
        let runner = Runner::new(config, store, fetch).await.unwrap();
        let end = tokio::time::timeout(PATIENCE, ended.recv()).await;
        assert_eq!(end.expect("the job ends"), Some(JobStatus::Done));

        let job = runner.status(&caller(), id).await.unwrap();
        runner.close().await;
        assert_eq!(job.status, JobStatus::Done);
        for (index, target) in job.targets.iter().enumerate() {
            assert_eq!(target.target_json, index.to_string());
            let output: u64 = target.state.output().expect("done").unwrap();
            assert_eq!(output, output_of(index as u64), "target {index}");
        }
        // Only the target in flight at the kill is fetched again; stored ones never are.
        let expected: Vec<u64> = (plan.stored_before_kill..plan.targets).collect();
        assert_eq!(*fetched.lock().unwrap(), expected);
        hooks.rescued.load(Ordering::SeqCst)
    })
}
