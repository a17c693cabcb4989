//! An axum router on a loopback port, for the browser to open.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running server; stopped on drop. Not gracefully: a page's event stream would hold a
/// graceful shutdown open, and the browser has left the page by then.
pub struct Server {
    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub origin: String,
    task: JoinHandle<()>,
}

impl Server {
    /// Serves `app`, plus an empty `/favicon.ico` as the application embedding a router would
    /// (Chromium asks for one on every page, and a 404 is a console error).
    pub async fn start(app: Router) -> Server {
        let app = app.route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("the server runs");
        });
        Server { origin, task }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}
