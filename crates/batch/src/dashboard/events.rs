//! Event streams (SSE): `GET {base}/api/jobs/{id}/events` for one job, and
//! `GET {base}/api/events?ids=…` for the live jobs a list page shows.
//!
//! # Protocol
//!
//! Each stream is one task ([`pump`]) holding one [`JobWatch`] per job, and a bounded
//! channel of [`STREAM_BUFFER`] events to the response body.
//!
//! 1. **First, the job as it is.** A live job's first event is `progress` with the watch's
//!    first progress; an ended job's is `end`. So a client never misses a change between
//!    rendering its page and opening its stream: the page may be older than the first event,
//!    never newer.
//! 2. **At most one unsent event per job.** The task waits for room in the channel *and* for
//!    the next change at once. A change that arrives while the channel is full replaces the
//!    job's unsent event (the latest progress wins, as in [`JobWatch`] itself), so a slow
//!    client costs a fixed amount of memory, not a queue. A client that stops reading is
//!    dropped once [`MAX_LAG`] changes were coalesced without it taking one event; a client
//!    that disconnects closes the channel, which ends the task at once, even while its jobs
//!    are idle.
//! 3. **At most one batch per `min_interval`.** Once everything was sent, the task takes no
//!    change for [`Dashboard::min_interval`](super::Dashboard::min_interval) (its waits on
//!    the watches are not polled meanwhile, so the workers' publishes wake it at most once);
//!    after it, every change that came meanwhile is taken at once, merged into the latest
//!    progress of each job. So a stream costs the runner at most a few wake-ups per interval, whatever the
//!    rate of targets: what keeps 1,000 streams on one job cheap (`benches/streams.rs`).
//!    A `target` in an event is then the latest stored one; those between are not named.
//! 4. **Ends.** A job's `end` is its terminal progress or, if the runner closed first
//!    ([`JobWatch::changed`] answers `None`), its last known one. Once every job ended, what
//!    is left is sent only if the channel has room (nothing more can come to wait for: a
//!    client with a full channel stopped reading and is dropped; a browser's reconnect then
//!    gets the `end` at once); then the task drops its sender and the response body ends.
//! 5. **Bounded count.** A [`Slot`] is taken before the watch and held by the task: at most
//!    `max_streams` tasks exist, and [`Dashboard::open_streams`](super::Dashboard::open_streams)
//!    counts them.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};

use super::error::{Api, Error};
use super::json::EventJson;
use super::{Board, MAX_LAG, STREAM_BUFFER, query};
use crate::error::StatusError;
use crate::job::JobId;
use crate::summary::Progress;
use crate::watch::JobWatch;

/// One open stream's place in the dashboard's count; given back on drop.
pub(crate) struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// A place if fewer than `max` streams are open, else `503`.
    fn take(open: &Arc<AtomicUsize>, max: usize) -> Result<Self, Error> {
        let before = open.fetch_add(1, Ordering::SeqCst);
        let slot = Self(Arc::clone(open));
        if before >= max {
            return Err(Error::Unavailable(format!(
                "too many event streams open (at most {max})"
            )));
        }
        Ok(slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `GET {base}/api/jobs/{id}/events`.
pub(crate) async fn job<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    Path(raw): Path<String>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let id = query::job_id(&raw)?;
    let listing = board.listing(&viewer, id).await?;
    let slot = Slot::take(&board.streams, board.max_streams)?;
    let watch = board.runner.watch(&listing.caller, id).await?;
    Ok(stream(vec![(id, watch)], slot, board.min_interval))
}

/// `GET {base}/api/events?ids=1,2,3`: the jobs among `ids` the viewer sees.
pub(crate) async fn jobs<T, O>(
    State(board): State<Arc<Board<T, O>>>,
    request: Request,
) -> Result<Response, Api>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    let (parts, _) = request.into_parts();
    let viewer = board.viewer(&parts)?;
    let ids = query::ids(parts.uri.query())?;
    let slot = Slot::take(&board.streams, board.max_streams)?;
    let mut watches = Vec::with_capacity(ids.len());
    for id in ids {
        let listing = match board.listing(&viewer, id).await {
            Ok(listing) => listing,
            Err(Error::NotFound) => continue,
            Err(error) => return Err(error.into()),
        };
        match board.runner.watch(&listing.caller, id).await {
            Ok(watch) => watches.push((id, watch)),
            // Evicted meanwhile, or live after the runner closed: nothing to report.
            Err(StatusError::NotFound | StatusError::Closed) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(stream(watches, slot, board.min_interval))
}

/// The response: an SSE body fed by a [`pump`] task over `watches`.
fn stream(watches: Vec<(JobId, JobWatch)>, slot: Slot, interval: Duration) -> Response {
    let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
    tokio::spawn(pump(watches, sender, slot, interval));
    let mut response = Sse::new(Events(receiver)).into_response();
    // A reverse proxy that buffers responses (nginx) would hold the events back.
    response.headers_mut().insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

/// The body's side of the channel.
struct Events(mpsc::Receiver<Event>);

impl futures_core::Stream for Events {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|event| event.map(Ok))
    }
}

/// A watch waiting for its next change, owning the watch meanwhile.
type Waiting = Pin<Box<dyn Future<Output = (usize, Option<Progress>, JobWatch)> + Send>>;

fn wait(index: usize, mut watch: JobWatch) -> Waiting {
    Box::pin(async move {
        let change = watch.changed().await;
        (index, change, watch)
    })
}

/// Every change ready among `waiting`, once at least one is; their slots are emptied (the
/// caller refills them).
async fn next_changes(waiting: &mut [Option<Waiting>]) -> Vec<(usize, Option<Progress>, JobWatch)> {
    std::future::poll_fn(|cx| {
        let mut ready = Vec::new();
        for slot in waiting.iter_mut() {
            if let Some(future) = slot
                && let Poll::Ready(out) = future.as_mut().poll(cx)
            {
                *slot = None;
                ready.push(out);
            }
        }
        if ready.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(ready)
        }
    })
    .await
}

/// An event named `name` about job `id`.
fn event(name: &'static str, id: JobId, progress: &Progress) -> Event {
    let data = serde_json::to_string(&EventJson::new(id.get(), progress))
        .unwrap_or_else(|_| String::from("{}"));
    Event::default().event(name).data(data)
}

/// The next job with an unsent event from `turn` on: round-robin over the jobs, so one busy
/// job cannot starve the others.
fn next_unsent(unsent: &[Option<(&'static str, Progress)>], turn: usize) -> Option<usize> {
    let count = unsent.len();
    (0..count)
        .map(|k| (turn + k) % count)
        .find(|&i| unsent[i].is_some())
}

/// One stream's task (see the module's protocol).
async fn pump(
    watches: Vec<(JobId, JobWatch)>,
    sender: mpsc::Sender<Event>,
    slot: Slot,
    interval: Duration,
) {
    let _slot = slot;
    let count = watches.len();
    let mut ids = Vec::with_capacity(count);
    let mut unsent: Vec<Option<(&'static str, Progress)>> = Vec::with_capacity(count);
    let mut waiting: Vec<Option<Waiting>> = Vec::with_capacity(count);
    for (index, (id, watch)) in watches.into_iter().enumerate() {
        let progress = watch.progress();
        ids.push(id);
        if progress.status.is_live() {
            unsent.push(Some(("progress", progress)));
            waiting.push(Some(wait(index, watch)));
        } else {
            unsent.push(Some(("end", progress)));
            waiting.push(None);
        }
    }
    let (mut lag, mut turn) = (0, 0);
    // Set when everything was sent: no change is taken until then (rule 3).
    let mut quiet: Option<Instant> = None;
    loop {
        let any_unsent = unsent.iter().any(Option::is_some);
        let any_live = waiting.iter().any(Option::is_some);
        if !any_unsent && !any_live {
            return;
        }
        if !any_live {
            // Every job ended: what is left goes out if there is room; a client with none
            // stopped reading, and is dropped (rule 4).
            let Ok(permit) = sender.try_reserve() else {
                return;
            };
            if let Some(index) = next_unsent(&unsent, turn) {
                turn = (index + 1) % count;
                if let Some((name, progress)) = unsent[index].take() {
                    permit.send(event(name, ids[index], &progress));
                }
            }
            continue;
        }
        let until = quiet.unwrap_or_else(Instant::now);
        tokio::select! {
            biased;
            () = sender.closed() => return,
            permit = sender.reserve(), if any_unsent => {
                let Ok(permit) = permit else { return };
                let Some(index) = next_unsent(&unsent, turn) else {
                    continue;
                };
                turn = (index + 1) % count;
                if let Some((name, progress)) = unsent[index].take() {
                    permit.send(event(name, ids[index], &progress));
                }
                lag = 0;
                if !interval.is_zero() && unsent.iter().all(Option::is_none) {
                    quiet = Some(Instant::now() + interval);
                }
            }
            () = tokio::time::sleep_until(until), if quiet.is_some() => quiet = None,
            changes = next_changes(&mut waiting), if quiet.is_none() => {
                for (index, change, watch) in changes {
                    let (name, progress, live) = match change {
                        Some(progress) if progress.status.is_live() => ("progress", progress, true),
                        Some(progress) => ("end", progress, false),
                        None => ("end", watch.progress(), false),
                    };
                    if unsent[index].replace((name, progress)).is_some() {
                        lag += 1;
                        if lag > MAX_LAG {
                            return;
                        }
                    }
                    if live {
                        waiting[index] = Some(wait(index, watch));
                    }
                }
            }
        }
    }
}
