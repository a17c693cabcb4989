//! Each fetch runs inside a `batch.fetch` span naming its job, target index and caller, so the
//! fetch's own logs carry them without the user wrapping anything.

use std::io::Write;
use std::sync::{Arc, Mutex};

use lockgate_batch::store::MemoryStore;
use lockgate_batch::{Caller, Config, FetchContext, FetchError, Runner};

/// A writer into a shared buffer, for the fmt subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The subscriber is the process's global default, installed once: a thread's own default
/// (`set_default`) raced with the other tests of this binary, which run runners on threads
/// of their own while no subscriber listens, and the `batch.fetch` span was then missing
/// from about half of the runs under `cargo test` (one process for every test; nextest,
/// one process per test, never showed it). The filter keeps out what those tests log; the
/// caller's name is this test's own.
#[test]
fn a_fetchs_logs_carry_its_job_index_and_caller() {
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    let captured = CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let subscriber = tracing_subscriber::fmt()
                .with_writer({
                    let captured = captured.clone();
                    move || captured.clone()
                })
                .with_env_filter("in_process::spans=info,lockgate_batch::worker::fetch=info")
                .with_ansi(false)
                .without_time()
                .with_target(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber).expect("the only global default");
            captured
        })
        .clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fetch = |_ctx: FetchContext, n: u32| async move {
            tracing::info!(n, "fetching");
            tokio::task::yield_now().await;
            tracing::info!(n, "fetched");
            Ok::<u32, FetchError>(n)
        };
        let runner = Runner::new(Config::default().workers(1), MemoryStore::new(), fetch)
            .await
            .unwrap();
        let ann = Caller::new("spans-test");
        let id = runner.submit(&ann, &[10, 11]).await.unwrap();
        runner.wait(&ann, id).await.unwrap();
        runner.close().await;
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        for (index, n) in [(0, 10), (1, 11)] {
            for what in ["fetching", "fetched"] {
                let line = format!(
                    "batch.fetch{{job={id} index={index} caller=spans-test}}: {what} n={n}"
                );
                assert!(text.contains(&line), "no line {line:?} in:\n{text}");
            }
        }
    });
}
