//! The child side: one worker process of one subject.
//!
//! Protocol on stdin/stdout, one word a line: the child connects and builds its workers,
//! prints `ready`, waits for `go` on stdin, starts working, prints `count N` (items its work
//! function finished so far) whenever N changed in the last 5 ms, and on `stop` shuts its
//! workers down gracefully and prints `final N`. Anything else goes to stderr.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::subjects::Subject;

/// Items this process's work function finished (every subject's work calls [`work`]).
static FINISHED: AtomicU64 = AtomicU64::new(0);

/// The work of one item, the same for every subject: sleep `work` (nothing when zero), then
/// count the item as finished by this process.
pub async fn work(work: Duration) {
    if !work.is_zero() {
        tokio::time::sleep(work).await;
    }
    FINISHED.fetch_add(1, Ordering::Relaxed);
}

/// The parent's commands, read from stdin.
pub struct Control {
    lines: Lines<BufReader<Stdin>>,
}

impl Control {
    /// Prints `ready`, waits for `go`, and starts reporting counts.
    pub async fn ready_then_go(&mut self) -> Result<(), String> {
        println!("ready");
        self.expect("go").await?;
        tokio::spawn(report_counts());
        Ok(())
    }

    /// Waits for `stop`.
    pub async fn stop(&mut self) -> Result<(), String> {
        self.expect("stop").await
    }

    async fn expect(&mut self, word: &str) -> Result<(), String> {
        match self.lines.next_line().await {
            Ok(Some(line)) if line.trim() == word => Ok(()),
            Ok(Some(line)) => Err(format!("expected {word:?} from the parent, got {line:?}")),
            Ok(None) => Err(format!("stdin closed while waiting for {word:?}")),
            Err(err) => Err(format!("reading stdin: {err}")),
        }
    }
}

async fn report_counts() {
    let mut last = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = FINISHED.load(Ordering::Relaxed);
        if now != last {
            println!("count {now}");
            last = now;
        }
    }
}

/// `child SUBJECT URL WORK_MS INDEX`: runs one worker process until the parent says `stop`.
pub fn main(args: &[String]) -> Result<(), String> {
    let [subject, url, work_ms, index] = args else {
        return Err(format!(
            "child needs SUBJECT URL WORK_MS INDEX, got {args:?}"
        ));
    };
    let subject: Subject = subject.parse()?;
    let work = Duration::from_millis(work_ms.parse().map_err(|_| "WORK_MS: not a number")?);
    let index: usize = index.parse().map_err(|_| "INDEX: not a number")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let mut control = Control {
            lines: BufReader::new(tokio::io::stdin()).lines(),
        };
        subject.child(url, work, index, &mut control).await?;
        println!("final {}", FINISHED.load(Ordering::Relaxed));
        Ok(())
    })
}
