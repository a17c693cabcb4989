//! Each job runs in a `pdfpool.job` span opened when the job starts (a queued job's when a slot
//! frees for it, in another job's task), whose parent is the span current at `run`; it carries
//! the job's queue wait and records its outcome. Joins, queueings and refusals open no job span:
//! they are events on the request's span. The job's own events are recorded inside its span.

mod common;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{gated, settle};
use lockgate_pdfpool::{Error, Pool};
use tracing::Instrument;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What the subscriber saw: each new span with its parent's name and its fields, each field
/// recorded later, each event with its span's name and its fields (but the message).
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
}

/// Fields as ` name=value`, the message left out.
#[derive(Default)]
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() != "message" {
            write!(self.0, " {}={value:?}", field.name()).unwrap();
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        write!(self.0, " {}={value}", field.name()).unwrap();
    }
}

impl<S> Layer<S> for Seen
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span.parent().map_or("none", |parent| parent.name());
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        self.push(format!("span {} in {parent}{}", span.name(), fields.0));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is registered");
        let mut fields = Fields::default();
        values.record(&mut fields);
        self.push(format!("record {}{}", span.name(), fields.0));
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let name = event.metadata().name();
        if event.metadata().target().starts_with("lockgate_pdfpool")
            && !name.starts_with("pdfpool.")
        {
            return; // the pool's other lines (a job's panic) are not what these tests are about
        }
        let span = ctx.event_span(event).map_or("none", |span| span.name());
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.push(format!("event {name} in {span}{}", fields.0));
    }
}

/// Records what every span and event of this thread does, until the guard drops.
fn capture() -> (Seen, tracing::subscriber::DefaultGuard) {
    let seen = Seen::default();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(seen.clone()));
    (seen, guard)
}

type TestPool = Pool<&'static str, &'static str, u32>;

#[tokio::test(start_paused = true)]
async fn a_job_runs_in_a_child_span_of_its_request() {
    let (seen, _default) = capture();
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
            "span pdfpool.job in request queue_wait_ms=0",
            "event inside_the_job in pdfpool.job",
            "record pdfpool.job outcome=finished",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_queued_job_keeps_the_span_of_the_request_that_queued_it() {
    let (seen, _default) = capture();
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
    tokio::time::advance(Duration::from_millis(3_250)).await;
    assert_eq!(
        seen.lines(),
        vec![
            "span first in none",
            "span pdfpool.job in first queue_wait_ms=0",
            "span second in none",
            "event pdfpool.queued in second",
        ],
        "a queued job has no span until it starts"
    );
    // The first job's task starts the second job, inside the first job's span: the second
    // job's span is opened then, but its parent is still "second", the request that queued it.
    first_gate.finish(1);
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(second.await.unwrap(), Ok(2));
    assert_eq!(
        seen.lines()[4..],
        [
            "record pdfpool.job outcome=finished",
            "span pdfpool.job in second queue_wait_ms=3250",
            "event second_job_runs in pdfpool.job",
            "record pdfpool.job outcome=finished",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn joins_and_refusals_are_events_on_the_request_span_and_open_no_job_span() {
    let (seen, _default) = capture();
    let pool = TestPool::new(1, 0, Duration::from_secs(10));
    let (mut gate, job) = gated();
    let started = {
        let pool = pool.clone();
        tokio::spawn(
            async move { pool.run("a", "alice", job).await }
                .instrument(tracing::info_span!("starter")),
        )
    };
    settle().await;
    let joiner = {
        let pool = pool.clone();
        tokio::spawn(
            async move { pool.run("a", "bob", || async { 0 }).await }
                .instrument(tracing::info_span!("joiner")),
        )
    };
    let join_only = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.join("a").await }.instrument(tracing::info_span!("join")))
    };
    settle().await;
    let full = pool
        .run("c", "carol", || async { 0 })
        .instrument(tracing::info_span!("full"))
        .await;
    assert!(matches!(full, Err(Error::Busy { .. })));
    let busy = pool
        .run("d", "alice", || async { 0 })
        .instrument(tracing::info_span!("busy"))
        .await;
    assert_eq!(busy, Err(Error::CallerBusy));
    gate.finish(1);
    assert_eq!(started.await.unwrap(), Ok(1));
    assert_eq!(joiner.await.unwrap(), Ok(1));
    assert_eq!(join_only.await.unwrap(), Some(Ok(1)));
    pool.close();
    let closed = pool
        .run("e", "erin", || async { 0 })
        .instrument(tracing::info_span!("late"))
        .await;
    assert_eq!(closed, Err(Error::Closed));
    assert_eq!(
        seen.lines(),
        vec![
            "span starter in none",
            "span pdfpool.job in starter queue_wait_ms=0",
            "span joiner in none",
            "span join in none",
            "event pdfpool.joined in joiner",
            "event pdfpool.joined in join",
            "span full in none",
            "event pdfpool.refused in full cause=queue_full",
            "span busy in none",
            "event pdfpool.refused in busy cause=caller_busy",
            "record pdfpool.job outcome=finished",
            "span late in none",
            "event pdfpool.refused in late cause=closed",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_job_records_its_outcome_on_its_span() {
    let (seen, _default) = capture();
    let pool = TestPool::new(1, 0, Duration::from_secs(10));
    let (mut gate, job) = gated();
    let run = tokio::spawn({
        let pool = pool.clone();
        async move { pool.run("a", "alice", job).await }.instrument(tracing::info_span!("request"))
    });
    settle().await;
    gate.panic("boom");
    assert!(matches!(run.await.unwrap(), Err(Error::Panicked(_))));
    assert_eq!(
        seen.lines(),
        vec![
            "span request in none",
            "span pdfpool.job in request queue_wait_ms=0",
            "record pdfpool.job outcome=panicked",
        ]
    );
}

#[test]
fn a_job_whose_task_is_dropped_records_its_outcome_on_its_span() {
    let (seen, _default) = capture();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let pool = TestPool::new(1, 0, Duration::from_secs(10));
    let (_gate, job) = gated();
    runtime.block_on(async {
        let pool = pool.clone();
        drop(tokio::spawn(
            async move { pool.run("a", "alice", job).await }
                .instrument(tracing::info_span!("request")),
        ));
        settle().await;
    });
    assert_eq!(pool.running(), 1);
    // The runtime goes with the job's task still running: the job ends `dropped`.
    drop(runtime);
    assert_eq!(pool.running(), 0);
    assert_eq!(
        seen.lines(),
        vec![
            "span request in none",
            "span pdfpool.job in request queue_wait_ms=0",
            "record pdfpool.job outcome=dropped",
        ]
    );
}
