//! The dashboard (feature `dashboard`): an axum 0.8 [`Router`] serving a board of jobs —
//! server-rendered pages that update live over server-sent events, cancel and resubmit — and
//! a JSON API beside it, for the callers of one [`Runner`].
//!
//! [`router`] (or [`Dashboard`], for an admin predicate or the stream bound) builds it; mount
//! it under any path, `/jobs` below. Everything it serves comes from the router itself (the
//! CSS and the script included): no CDN, no external font, no build step; the pages work
//! without JavaScript (they then do not update live).
//!
//! # Who is asking
//!
//! The `who` function decides the caller of each request from its [`Parts`] (a header, a
//! cookie, an extension your own auth layer set). A request it answers `None` for gets `401`
//! with an empty body, whatever the route. Nothing in a URL decides the caller. With
//! [`Dashboard::admin`], a caller the predicate admits sees (and cancels, and resubmits)
//! every caller's jobs; nobody else ever sees another caller's job: its id answers exactly
//! as an unknown id does (`404`, same body).
//!
//! # Routes
//!
//! Relative to where the router is mounted (`{base}`). Every route answers `401` (empty
//! body) when `who` refuses the request, and `405` for another method.
//!
//! | Method and path | What | Status codes |
//! |---|---|---|
//! | `GET {base}/` | The caller's jobs, newest first (HTML). Query: `status` (`queued`, `running`, `done`, `failed`, `partial`, `cancelled`), `before` (a job id: the next page's cursor), `limit` (clamped to `1..=`[`MAX_PAGE`](crate::page::MAX_PAGE), default 50) | `200`; `400` bad query |
//! | `GET {base}/{id}` | One job: its summary, then its targets a page at a time (HTML). Query: `state` (`pending`, `done`, `failed`), `after` (a target index: the next page's cursor), `limit` | `200`; `400` bad id or query; `404` unknown or another caller's job |
//! | `POST {base}/{id}/cancel` | Cancels the job (an HTML form) | `303` to the job's page; `400`; `403` cross-site; `404` |
//! | `POST {base}/{id}/resubmit` | Resubmits the failed targets of an ended job as a new job, once (an HTML form) | `303` to the new job's page; `400`; `403`; `404`; `409` the job is live, has no failed target, or the caller has another live job; `503` the runner is full or closed |
//! | `GET {base}/api/jobs` | A page of jobs (JSON `{jobs, next}`); query as `GET {base}/` | `200`; `400` |
//! | `GET {base}/api/jobs/{id}` | One job (JSON) | `200`; `400`; `404` |
//! | `GET {base}/api/jobs/{id}/targets` | A page of the job's targets (JSON `{job, targets, next}`); query as `GET {base}/{id}` | `200`; `400`; `404` |
//! | `GET {base}/api/jobs/{id}/events` | The job's events (`text/event-stream`, see "Events") | `200`; `400`; `404`; `503` too many open streams, or the runner is closed and the job live |
//! | `GET {base}/api/events?ids=1,2,3` | The events of up to [`MAX_PAGE`](crate::page::MAX_PAGE) jobs in one stream (what the list page opens); ids the caller cannot see are left out | `200`; `400` bad or too many ids; `503` too many open streams |
//! | `POST {base}/api/jobs/{id}/cancel` | Cancels the job (JSON: the job after the cancel) | `200`; `400`; `403`; `404`; `409` the job had ended already |
//! | `POST {base}/api/jobs/{id}/resubmit` | As the form; JSON `{"id": new}`, the same id for every repeat | `200`; `400`; `403`; `404`; `409`; `503` |
//! | `GET {base}/assets/board.css`, `GET {base}/assets/board.js` | The board's style and script, cached for a year | `200` |
//!
//! A store failure answers `500` with a message. Errors are HTML pages on the HTML routes and
//! `{"error": "…"}` on the API routes. Every response carries a Content-Security-Policy
//! (`default-src 'self'; script-src 'self'; …; frame-ancestors 'none'`): the board has no
//! inline script or style, and text from targets, outputs and errors is escaped everywhere.
//!
//! Links inside the pages are relative, so the board works under any path; the list is
//! served at `{base}` and, mounted with [`Router::nest_service`], at `{base}/` too
//! ([`Router::nest`] routes `{base}` only).
//!
//! # JSON
//!
//! A job is `{"id": 7, "caller": "ann", "key": null, "status": "running", "counts":
//! {"pending": 3, "done": 1, "failed": 0}, "created": "2026-01-02T03:04:05.678000Z", "updated":
//! …, "finished": null}` (times in RFC 3339, UTC; `finished` once the job ended). A target is
//! `{"index": 0, "state": "done", "target": <its JSON>, "output": <its JSON>, "output_bytes":
//! 7}`, or with `"error"` and `"hint"` for a failed one.
//!
//! # Events
//!
//! An event stream sends named events whose data is one JSON object `{"id", "status",
//! "counts": {"pending", "done", "failed"}, "target": {"index", "state"}}` (`target` only when
//! the event stored one): first `progress` with the job as it is, then `progress` as it
//! changes (at most one batch per [`Dashboard::min_interval`], each job's latest progress),
//! and `end` when the job ended (after which the stream closes) or the runner closed (the
//! status may then still be live). Each stream is one task driven by
//! [`Runner::watch`](crate::Runner::watch): no store read per event.
//!
//! # Guarantees
//!
//! - **Bounded streams.** A stream holds one job watch, a channel of
//!   [`STREAM_BUFFER`] events and, per job, at most one event it could not send yet: a
//!   client that reads slowly gets the latest progress, not a queue (intermediate `target`s
//!   are then skipped; a board re-reads the rows it shows). After each send a stream takes
//!   no change for [`Dashboard::min_interval`] (100 ms by default), so its cost to the runner
//!   does not grow with the rate of targets. A client that has taken no event
//!   while its job changed [`MAX_LAG`] times is dropped; one that disconnects frees its task
//!   at once. At most [`Dashboard::max_streams`] streams are open at a time (`503` past it).
//! - **Ends.** Closing the runner ends every stream, within one `min_interval` (each sends
//!   `end` first if it has room).
//! - **Cross-site requests.** Every `POST` must carry `Sec-Fetch-Site: same-origin`, or an
//!   `Origin` whose host and port are the request's `Host`; otherwise `403` and nothing
//!   changes. Browsers send these by themselves; a script calling the API sends `Origin`.
//!   Behind a reverse proxy, pass the client's `Host` through (or let the browser's
//!   `Sec-Fetch-Site` decide), or every `Origin` check fails. No `GET` changes anything.
//! - **Idempotent resubmit.** A resubmit is [`Runner::submit_keyed`](crate::Runner::submit_keyed)
//!   as the job's caller with the key `resubmit:{id}`: a second one answers the job the first
//!   made (while the store holds it).
//! - **Bounded pages.** Every page is a keyset page of at most
//!   [`MAX_PAGE`](crate::page::MAX_PAGE) rows (see [`crate::page`]).
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use axum::Router;
//! use lockgate_batch::store::MemoryStore;
//! use lockgate_batch::{Caller, Config, FetchError, Runner, dashboard, fetch_fn};
//!
//! let fetch = fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n * 2) });
//! let runner = Arc::new(Runner::new(Config::default(), MemoryStore::new(), fetch).await?);
//! // Here the caller is a header a trusted proxy sets; use your own auth.
//! let board = dashboard::router(Arc::clone(&runner), |parts: &axum::http::request::Parts| {
//!     let user = parts.headers.get("x-user")?.to_str().ok()?;
//!     Some(Caller::new(user))
//! });
//! let app: Router = Router::new().nest_service("/jobs", board);
//! # drop(app);
//! # runner.close().await;
//! # Ok(())
//! # }
//! ```

mod actions;
mod api;
mod assets;
mod auth;
mod error;
mod events;
mod html;
mod json;
mod pages;
mod query;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::request::Parts;
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::job::Caller;
use crate::runner::Runner;

pub use error::Error;

/// Events a stream buffers for a client before it coalesces (see "Guarantees").
pub const STREAM_BUFFER: usize = 16;

/// Changes of its job a stream's client may leave unread before it is dropped.
pub const MAX_LAG: usize = 256;

/// Open event streams a dashboard allows at a time unless [`Dashboard::max_streams`] says.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

/// How long a stream waits after sending before it takes the next changes, unless
/// [`Dashboard::min_interval`] says.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_millis(100);

type WhoFn = dyn Fn(&Parts) -> Option<Caller> + Send + Sync;
type AdminFn = dyn Fn(&Caller) -> bool + Send + Sync;

/// The board's router for `runner`'s callers, `who` deciding the caller of each request:
/// [`Dashboard::new`] with no admin, then [`Dashboard::router`].
///
/// # Examples
///
/// See the [module docs](self).
pub fn router<T, O>(
    runner: Arc<Runner<T, O>>,
    who: impl Fn(&Parts) -> Option<Caller> + Send + Sync + 'static,
) -> Router
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    Dashboard::new(runner, who).router()
}

/// A dashboard being set up: the runner, who asks, who is an admin, how many streams; then
/// [`router`](Self::router).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use axum::http::request::Parts;
/// use lockgate_batch::dashboard::Dashboard;
/// use lockgate_batch::store::MemoryStore;
/// use lockgate_batch::{Caller, Config, FetchError, Runner, fetch_fn};
///
/// let fetch = fetch_fn(|_ctx, n: u32| async move { Ok::<u32, FetchError>(n) });
/// let runner = Arc::new(Runner::new(Config::default(), MemoryStore::new(), fetch).await?);
/// let who = |parts: &Parts| Some(Caller::new(parts.headers.get("x-user")?.to_str().ok()?));
/// let board = Dashboard::new(Arc::clone(&runner), who)
///     .admin(|caller: &Caller| caller.as_str() == "root")
///     .max_streams(1_000);
/// let app: axum::Router = axum::Router::new().nest_service("/jobs", board.router());
/// assert_eq!(board.open_streams(), 0);
/// # drop(app);
/// # runner.close().await;
/// # Ok(())
/// # }
/// ```
pub struct Dashboard<T, O> {
    runner: Arc<Runner<T, O>>,
    who: Arc<WhoFn>,
    admin: Option<Arc<AdminFn>>,
    max_streams: usize,
    min_interval: Duration,
    streams: Arc<AtomicUsize>,
}

impl<T, O> std::fmt::Debug for Dashboard<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("admin", &self.admin.is_some())
            .field("max_streams", &self.max_streams)
            .field("min_interval", &self.min_interval)
            .field("open_streams", &self.streams.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T, O> Dashboard<T, O>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    O: Serialize + Send + 'static,
{
    /// A dashboard of `runner`'s jobs; `who` decides each request's caller (`None`: `401`).
    pub fn new(
        runner: Arc<Runner<T, O>>,
        who: impl Fn(&Parts) -> Option<Caller> + Send + Sync + 'static,
    ) -> Self {
        Self {
            runner,
            who: Arc::new(who),
            admin: None,
            max_streams: DEFAULT_MAX_STREAMS,
            min_interval: DEFAULT_MIN_INTERVAL,
            streams: Arc::default(),
        }
    }

    /// Callers for whom `is_admin` answers `true` see every caller's jobs.
    #[must_use]
    pub fn admin(mut self, is_admin: impl Fn(&Caller) -> bool + Send + Sync + 'static) -> Self {
        self.admin = Some(Arc::new(is_admin));
        self
    }

    /// At most `max` event streams open at a time; one more answers `503`.
    #[must_use]
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = max;
        self
    }

    /// After a stream sent what it had, it takes no change for `interval` (default
    /// [`DEFAULT_MIN_INTERVAL`]); the changes of that time then go out merged, as each job's
    /// latest progress. `Duration::ZERO` sends every change the stream sees.
    #[must_use]
    pub fn min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// How many event streams are open now (each is one task).
    pub fn open_streams(&self) -> usize {
        self.streams.load(Ordering::SeqCst)
    }

    /// The router: mount it under any path (see the [module docs](self)'s routes).
    pub fn router(&self) -> Router {
        let board = Arc::new(Board {
            runner: Arc::clone(&self.runner),
            who: Arc::clone(&self.who),
            admin: self.admin.clone(),
            max_streams: self.max_streams,
            min_interval: self.min_interval,
            streams: Arc::clone(&self.streams),
        });
        Router::new()
            .route("/", get(pages::list::<T, O>))
            .route("/{id}", get(pages::job::<T, O>))
            .route("/{id}/cancel", post(actions::cancel_form::<T, O>))
            .route("/{id}/resubmit", post(actions::resubmit_form::<T, O>))
            .route("/api/jobs", get(api::jobs::<T, O>))
            .route("/api/jobs/{id}", get(api::job::<T, O>))
            .route("/api/jobs/{id}/targets", get(api::targets::<T, O>))
            .route("/api/jobs/{id}/events", get(events::job::<T, O>))
            .route("/api/events", get(events::jobs::<T, O>))
            .route("/api/jobs/{id}/cancel", post(actions::cancel_api::<T, O>))
            .route(
                "/api/jobs/{id}/resubmit",
                post(actions::resubmit_api::<T, O>),
            )
            .route("/assets/board.css", get(assets::css))
            .route("/assets/board.js", get(assets::js))
            .layer(axum::middleware::map_response(html::secure_headers))
            .with_state(board)
    }
}

/// What every handler reads: the runner and the dashboard's settings.
pub(crate) struct Board<T, O> {
    runner: Arc<Runner<T, O>>,
    who: Arc<WhoFn>,
    admin: Option<Arc<AdminFn>>,
    max_streams: usize,
    min_interval: Duration,
    streams: Arc<AtomicUsize>,
}
