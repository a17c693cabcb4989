//! One owner per SQLite file, across processes: a second open of a live file is refused with
//! `SqliteError::InUse` and changes nothing, the owner finishes its job with every target
//! stored once, and a SIGKILLed owner's file opens at once in its successor.
//!
//! The other process is this test binary itself, running one of the ignored `child_*` tests;
//! parent and child talk over the child's stdin and stdout, so no step depends on timing.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use lockgate_batch::hooks::Hooks;
use lockgate_batch::store::{SqliteError, SqliteStore};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobStatus, Runner};

use crate::scratch::Scratch;

const DB_ENV: &str = "BATCH_OWNER_TEST_DB";
const TARGETS: u64 = 200;

/// Starts this binary as a child running the ignored test `name` of this module over `db`.
fn start_child(name: &str, db: &Path) -> (Child, BufReader<ChildStdout>) {
    start_child_in(name, db, None)
}

/// [`start_child`], with the child's working folder `cwd` (for a relative `db`).
fn start_child_in(name: &str, db: &Path, cwd: Option<&Path>) -> (Child, BufReader<ChildStdout>) {
    // The test's name in this binary: its path without the crate's name.
    let module = module_path!().split_once("::").unwrap().1;
    let mut command = Command::new(std::env::current_exe().unwrap());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command
        .args([
            "--ignored",
            "--exact",
            &format!("{module}::{name}"),
            "--nocapture",
        ])
        .env(DB_ENV, db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// The next line the child printed that starts with `>` (the test harness prints its own).
fn next_report(stdout: &mut BufReader<ChildStdout>) -> String {
    loop {
        let mut line = String::new();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "the child ended early"
        );
        if let Some(report) = line.trim_end().strip_prefix('>') {
            return report.to_owned();
        }
    }
}

fn report(line: &str) {
    println!(">{line}");
    std::io::stdout().flush().unwrap();
}

fn child_db() -> PathBuf {
    PathBuf::from(std::env::var_os(DB_ENV).expect("started by a parent test"))
}

#[test]
#[ignore = "a child of a_live_file_is_refused_to_another_process; runs only when it starts it"]
fn child_tries_to_open() {
    match SqliteStore::open(child_db()) {
        Err(SqliteError::InUse { .. }) => report("in use"),
        Err(other) => report(&format!("error {other}")),
        Ok(_) => report("opened"),
    }
}

#[test]
#[ignore = "a child of a_killed_owners_file_opens_at_once; runs only when it starts it"]
fn child_holds_the_file() {
    let _store = SqliteStore::open(child_db()).unwrap();
    report("open");
    // Wait for the kill: the parent never writes.
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// Sends each terminal status to the test.
struct EndSignal(tokio::sync::mpsc::UnboundedSender<JobStatus>);

impl Hooks for EndSignal {
    fn job(&self, event: &lockgate_batch::hooks::JobEvent) {
        let status = event.status;
        let _ = self.0.send(status);
    }
}

/// Each file in `dir` with a hash of its bytes, to show that a refused open changed nothing.
/// The `-shm` file is left out: it is SQLite's shared-memory index of the WAL, which the
/// owner's own idle reads touch, and which SQLite rebuilds from the database and the WAL.
/// Folders are left out too.
fn snapshot(dir: &Path) -> Vec<(String, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().is_file())
        .filter(|entry| {
            !entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with("-shm")
        })
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(entry.path()).unwrap().hash(&mut hasher);
            (name, hasher.finish())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_live_file_is_refused_to_another_process() {
    let scratch = Scratch::new("owner", "refused");
    let db = scratch.db();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(&db).unwrap();
        // Fetches wait for the gate, so the job is mid-way while the other process tries.
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let fetched = Arc::new(Mutex::new(HashMap::<u64, u32>::new()));
        let fetch = {
            let (gate, fetched) = (Arc::clone(&gate), Arc::clone(&fetched));
            move |_ctx: FetchContext, target: u64| {
                *fetched.lock().unwrap().entry(target).or_default() += 1;
                let gate = Arc::clone(&gate);
                async move {
                    gate.acquire().await.unwrap().forget();
                    Ok::<u64, FetchError>(target * 3)
                }
            }
        };
        let (ended_tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
        let config = Config::default()
            .workers(2)
            .hooks(Arc::new(EndSignal(ended_tx)));
        let runner = Runner::new(config, store, fetch).await.unwrap();
        let caller = Caller::new("owner");
        let targets: Vec<u64> = (0..TARGETS).collect();
        let id = runner.submit(&caller, &targets).await.unwrap();
        gate.add_permits(10);
        // Targets 0..10 pass the gate; target 10's fetch has begun (its claim is committed)
        // and waits at the gate: from then on the runner writes nothing.
        while fetched.lock().unwrap().len() < 11 {
            tokio::task::yield_now().await;
        }

        let before = snapshot(&scratch.0);
        let (mut child, mut stdout) = start_child("child_tries_to_open", &db);
        let answer = tokio::task::spawn_blocking(move || {
            let answer = next_report(&mut stdout);
            // Read on to the end: a closed pipe would fail the child's own harness output.
            std::io::copy(&mut stdout, &mut std::io::sink()).unwrap();
            answer
        })
        .await
        .unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(answer, "in use");
        assert_eq!(
            snapshot(&scratch.0),
            before,
            "the refused open changed nothing"
        );

        gate.add_permits(TARGETS as usize);
        assert_eq!(ended.recv().await, Some(JobStatus::Done));
        let job = runner.status(&caller, id).await.unwrap();
        runner.close().await;
        for (index, target) in job.targets.iter().enumerate() {
            let output: u64 = target.state.output().expect("done").unwrap();
            assert_eq!(output, index as u64 * 3);
        }
        let fetched = fetched.lock().unwrap();
        assert_eq!(fetched.len() as u64, TARGETS);
        assert!(
            fetched.values().all(|&n| n == 1),
            "every target fetched once"
        );
    });
}

/// The lock follows the file, not its name: another process that opens a live store's file
/// through a symlink, a hard link, or a relative path through `..` is refused, and changes
/// nothing. (With the lock on a file named after the path, the symlink took the file over, and
/// the hard link lost every job once both processes had closed.)
#[cfg(unix)]
#[test]
fn another_process_is_refused_through_any_name_of_a_live_file() {
    let scratch = Scratch::new("owner", "names");
    let db = scratch.db();
    let dir = db.parent().unwrap().to_path_buf();
    let store = SqliteStore::open(&db).unwrap();
    std::os::unix::fs::symlink(&db, dir.join("link.db")).unwrap();
    std::fs::hard_link(&db, dir.join("hard.db")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let relative = Path::new("sub").join("..").join(db.file_name().unwrap());
    let before = snapshot(&dir);
    for (name, path, cwd) in [
        ("a symlink", dir.join("link.db"), None),
        ("a hard link", dir.join("hard.db"), None),
        ("a relative path", relative, Some(dir.as_path())),
    ] {
        let (mut child, mut stdout) = start_child_in("child_tries_to_open", &path, cwd);
        assert_eq!(next_report(&mut stdout), "in use", "through {name}");
        child.wait().unwrap();
    }
    assert_eq!(snapshot(&dir), before, "a refused open changed a file");
    drop(store);
}

#[test]
fn a_killed_owners_file_opens_at_once() {
    let scratch = Scratch::new("owner", "killed");
    let db = scratch.db();
    let (mut child, mut stdout) = start_child("child_holds_the_file", &db);
    assert_eq!(next_report(&mut stdout), "open");

    // Refused here too while the child lives: the lock is the kernel's, across processes.
    assert!(matches!(
        SqliteStore::open(&db),
        Err(SqliteError::InUse { .. })
    ));

    child.kill().unwrap(); // SIGKILL on Unix: no destructor runs in the child.
    child.wait().unwrap();
    // The kernel released the lock with the process: the first try succeeds.
    let store = SqliteStore::open(&db).unwrap();
    drop(store);
}

#[test]
fn a_dropped_stores_file_opens_again_at_once_in_this_process() {
    let scratch = Scratch::new("owner", "reopen");
    let db = scratch.db();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Each drop leaves the close to the store's thread; the next open waits for it instead of
    // answering InUse. Many rounds, so an open lands in every phase of a close.
    for round in 0..50u64 {
        let store = SqliteStore::open(&db).unwrap();
        rt.block_on(async {
            use lockgate_batch::store::CallerStore;
            let job = lockgate_batch::store::NewJob::new(
                Caller::new(format!("caller {round}")),
                vec![round.to_string()],
                lockgate_batch::store::Timestamp::from_micros(1),
                1000,
            );
            store.submit(job).await.unwrap();
        });
        drop(store);
    }
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(rt.block_on(store.live_jobs()).unwrap(), 50);
    rt.block_on(store.close());
}
