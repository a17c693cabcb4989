//! Each job runs in a `pdfpool.job` span whose parent is the span current at `run`, also when
//! the job was queued and is started later from another job's task; the job's own events are
//! recorded inside that span.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{gated, settle};
use lockgate_pdfpool::Pool;
use tracing::Instrument;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What the subscriber saw: each new span with its parent's name, each event with its span's.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl<S> Layer<S> for Seen
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, _attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span.parent().map_or("none", |parent| parent.name());
        let line = format!("span {} in {parent}", span.name());
        self.0.lock().unwrap().push(line);
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target().starts_with("lockgate_pdfpool") {
            return; // the pool's own debug lines are not what this test is about
        }
        let span = ctx.event_span(event).map_or("none", |span| span.name());
        let line = format!("event {} in {span}", event.metadata().name());
        self.0.lock().unwrap().push(line);
    }
}

type TestPool = Pool<&'static str, &'static str, u32>;

#[tokio::test(start_paused = true)]
async fn a_job_runs_in_a_child_span_of_its_request() {
    let seen = Seen::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    let pool = TestPool::new(1, 0, Duration::from_secs(10));
    let job = || async {
        tracing::info!(name: "inside_the_job", "extracting");
        7
    };
    let outcome = pool
        .run("a", "alice", job)
        .instrument(tracing::info_span!("request"))
        .await;
    assert_eq!(outcome, Ok(7));
    assert_eq!(
        seen.lines(),
        vec![
            "span request in none",
            "span pdfpool.job in request",
            "event inside_the_job in pdfpool.job",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_queued_job_keeps_the_span_of_the_request_that_queued_it() {
    let seen = Seen::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    let pool = TestPool::new(1, 1, Duration::from_secs(10));
    let (mut first_gate, first_job) = gated();
    let first = {
        let pool = pool.clone();
        tokio::spawn(
            async move { pool.run("a", "alice", first_job).await }
                .instrument(tracing::info_span!("first")),
        )
    };
    settle().await;
    let second = {
        let pool = pool.clone();
        let job = || async {
            tracing::info!(name: "second_job_runs", "queued, then started");
            2
        };
        tokio::spawn(
            async move { pool.run("b", "bob", job).await }
                .instrument(tracing::info_span!("second")),
        )
    };
    settle().await;
    assert_eq!(pool.queued(), 1);
    // The first job's task starts the second job, inside the first job's span: the second
    // job's span was made at its own `run`, so its parent is still "second".
    first_gate.finish(1);
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(second.await.unwrap(), Ok(2));
    assert_eq!(
        seen.lines(),
        vec![
            "span first in none",
            "span pdfpool.job in first",
            "span second in none",
            "span pdfpool.job in second",
            "event second_job_runs in pdfpool.job",
        ]
    );
}
