//! A runner of string targets behind a dashboard mounted at `/jobs`, and helpers to send it
//! requests and read its answers and event streams.
//!
//! Targets script the fetch: `fail:<text>` fails with `<text>` (hint `hint <text>`),
//! `sleep:<ms>:<text>` sleeps that long (virtual time) then succeeds, `hold:<text>` waits for
//! a permit from [`Board::release`] (or the runner's close), anything else succeeds with
//! `out <text>` at once.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use lockgate_batch::dashboard::{DEFAULT_MIN_INTERVAL, Dashboard};
use lockgate_batch::store::{MemoryStore, Store};
use lockgate_batch::{Caller, Config, FetchContext, FetchError, JobId, JobStatus, Runner};
use serde_json::Value;
use tokio::sync::Semaphore;
use tower::ServiceExt;

pub type Run = Runner<String, String>;

/// The host every request names; a same-origin `Origin` is `http://` + this.
pub const HOST: &str = "board.test";

pub struct Board {
    pub runner: Arc<Run>,
    pub dashboard: Dashboard<String, String>,
    pub app: Router,
    gate: Arc<Semaphore>,
}

async fn fetch(
    gate: Arc<Semaphore>,
    ctx: FetchContext,
    target: String,
) -> Result<String, FetchError> {
    if let Some(text) = target.strip_prefix("fail:") {
        return Err(FetchError::target_with_hint(text, format!("hint {text}")));
    }
    if let Some(rest) = target.strip_prefix("sleep:") {
        let (ms, text) = rest.split_once(':').unwrap_or((rest, ""));
        tokio::time::sleep(Duration::from_millis(ms.parse().unwrap_or(1))).await;
        return Ok(format!("out {text}"));
    }
    if target.starts_with("hold:") {
        tokio::select! {
            permit = gate.acquire() => permit.expect("the gate stays open").forget(),
            () = ctx.cancelled() => return Err(FetchError::retry_later("closing")),
        }
    }
    Ok(format!("out {target}"))
}

impl Board {
    /// A board whose admin is `root`, over a memory store.
    pub async fn new() -> Self {
        Self::with(
            Config::default().workers(2),
            usize::MAX,
            DEFAULT_MIN_INTERVAL,
        )
        .await
    }

    /// A board over a runner of `config`, with these stream settings.
    pub async fn with(config: Config, max_streams: usize, min_interval: Duration) -> Self {
        Self::on(MemoryStore::new(), config, max_streams, min_interval).await
    }

    /// A board over a runner of `config` on `store`.
    pub async fn on(
        store: impl Store,
        config: Config,
        max_streams: usize,
        min_interval: Duration,
    ) -> Self {
        let gate = Arc::new(Semaphore::new(0));
        let fetch = {
            let gate = Arc::clone(&gate);
            move |ctx: FetchContext, target: String| fetch(Arc::clone(&gate), ctx, target)
        };
        let runner = Arc::new(Runner::new(config, store, fetch).await.expect("a runner"));
        let dashboard =
            Dashboard::new(Arc::clone(&runner), |parts: &axum::http::request::Parts| {
                let user = parts.headers.get("x-user")?.to_str().ok()?;
                Some(Caller::new(user))
            })
            .admin(|caller: &Caller| caller.as_str() == "root")
            .max_streams(max_streams)
            .min_interval(min_interval);
        let app = Router::new().nest_service("/jobs", dashboard.router());
        Self {
            runner,
            dashboard,
            app,
            gate,
        }
    }

    /// Lets `n` held targets finish.
    pub fn release(&self, n: usize) {
        self.gate.add_permits(n);
    }

    /// Submits `targets` for `user`, as strings.
    pub async fn submit(&self, user: &str, targets: &[&str]) -> JobId {
        let targets: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
        self.runner
            .submit(&Caller::new(user), &targets)
            .await
            .expect("submitted")
    }

    /// Waits for `user`'s job `id` to end; its status.
    pub async fn wait(&self, user: &str, id: JobId) -> JobStatus {
        self.runner
            .wait(&Caller::new(user), id)
            .await
            .expect("the job ends")
            .status
    }

    /// Sends `request` (with `Host` set) to the app.
    pub async fn send(&self, mut request: Request<Body>) -> Reply {
        request
            .headers_mut()
            .insert("host", HOST.parse().expect("a host"));
        let response = self.app.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        Reply {
            status,
            headers,
            body: String::from_utf8(bytes.to_vec()).expect("UTF-8"),
        }
    }

    /// `GET path` as `user` (`None`: no `x-user` header).
    pub async fn get(&self, user: Option<&str>, path: &str) -> Reply {
        self.send(request("GET", user, path, &[])).await
    }

    /// `POST path` as `user`, from the board's own origin.
    pub async fn post(&self, user: &str, path: &str) -> Reply {
        let origin = format!("http://{HOST}");
        self.send(request("POST", Some(user), path, &[("origin", &origin)]))
            .await
    }

    /// Opens an event stream at `path` as `user`.
    pub async fn stream(&self, user: &str, path: &str) -> Stream {
        let mut request = request("GET", Some(user), path, &[]);
        request
            .headers_mut()
            .insert("host", HOST.parse().expect("a host"));
        let response = self.app.clone().oneshot(request).await.expect("infallible");
        Stream {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.into_body(),
            buffer: String::new(),
        }
    }
}

/// A request with an optional `x-user` and extra headers.
pub fn request(
    method: &str,
    user: Option<&str>,
    path: &str,
    headers: &[(&str, &str)],
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(user) = user {
        builder = builder.header("x-user", user);
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::empty()).expect("a request")
}

#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

/// An open event stream, read one event at a time.
pub struct Stream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: Body,
    buffer: String,
}

/// One server-sent event: its name and its JSON data.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: String,
    pub data: Value,
}

impl Stream {
    /// The next event; `None` once the stream ended.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim());
                    }
                }
                if data.is_empty() {
                    continue; // a comment or keep-alive
                }
                let data = serde_json::from_str(&data).expect("event data is JSON");
                return Some(Event { name, data });
            }
            let frame = self.body.frame().await?.expect("a frame");
            if let Ok(bytes) = frame.into_data() {
                self.buffer
                    .push_str(std::str::from_utf8(&bytes).expect("UTF-8"));
            }
        }
    }

    /// Every event left, to the stream's end.
    pub async fn rest(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// Yields until `done` holds (other tasks run meanwhile); panics after many rounds.
pub async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the condition never held");
}
