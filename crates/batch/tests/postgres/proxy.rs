//! A loopback TCP proxy between the store and the gate's cluster that a test can tell to
//! misbehave the way a network or a server does on a bad day:
//!
//! - [`Proxy::freeze`]: stop forwarding in both directions, keeping every socket open. Bytes
//!   sent are accepted (as a stopped server's kernel accepts them) and held; new connections
//!   are accepted and get nothing. Keepalive sees a healthy peer. [`Proxy::thaw`] forwards
//!   what was held and goes on.
//! - [`Proxy::delay`]: forward each chunk after a pause.
//! - [`Proxy::reset`]: end every open connection at once with a TCP reset (new ones are
//!   forwarded as before).
//!
//! Each connection is two pumps (client → server, server → client); a pump reads a chunk,
//! waits while the proxy is frozen, sleeps the delay, then writes it.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the pumps do with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Forward,
    Freeze,
    Delay(Duration),
}

/// The proxy; dropping it stops accepting and ends every connection.
pub struct Proxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    /// Bumped by [`Proxy::reset`]: every connection open then ends.
    resets: watch::Sender<u64>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// A proxy on a free loopback port, forwarding to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().unwrap();
        let (mode, _) = watch::channel(Mode::Forward);
        let (resets, _) = watch::channel(0u64);
        let accept = tokio::spawn({
            let (mode, resets) = (mode.clone(), resets.clone());
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        continue;
                    };
                    tokio::spawn(connection(
                        client,
                        server,
                        mode.subscribe(),
                        resets.subscribe(),
                    ));
                }
            }
        });
        Self {
            addr,
            mode,
            resets,
            accept,
        }
    }

    /// The proxy for the server `url` names: `url` itself with its host and port replaced by
    /// the proxy's.
    pub async fn for_url(url: &str) -> (Self, String) {
        let config: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(host) => host.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(_) => panic!("the proxy needs a TCP URL"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = tokio::net::lookup_host((host.as_str(), port))
            .await
            .unwrap()
            .next()
            .expect("the server's address");
        let proxy = Self::start(upstream).await;
        let user = config.get_user().unwrap_or("postgres");
        let dbname = config.get_dbname().unwrap_or(user);
        let url = format!("postgres://{user}@{}/{dbname}", proxy.addr);
        (proxy, url)
    }

    /// Stops forwarding, keeping every socket open.
    pub fn freeze(&self) {
        self.mode.send_replace(Mode::Freeze);
    }

    /// Forwards again, what was held first.
    pub fn thaw(&self) {
        self.mode.send_replace(Mode::Forward);
    }

    /// Forwards each chunk after `pause`.
    pub fn delay(&self, pause: Duration) {
        self.mode.send_replace(Mode::Delay(pause));
    }

    /// Ends every open connection with a TCP reset.
    pub fn reset(&self) {
        self.resets.send_modify(|n| *n += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset();
    }
}

/// Forwards both ways until either side closes or the proxy resets.
async fn connection(
    client: TcpStream,
    server: TcpStream,
    mode: watch::Receiver<Mode>,
    mut resets: watch::Receiver<u64>,
) {
    // Linger 0: dropping a socket sends a reset, not an orderly close. (Deprecated because a
    // non-zero linger blocks the thread on drop; zero never does.)
    for socket in [&client, &server] {
        let _ = socket.set_nodelay(true);
        #[allow(deprecated)]
        let _ = socket.set_linger(Some(Duration::ZERO));
    }
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::select! {
        () = pump(client_read, server_write, mode.clone()) => {}
        () = pump(server_read, client_write, mode) => {}
        _ = resets.changed() => {}
    }
}

/// Copies chunks from `from` to `to`, as the mode says.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = match mode.wait_for(|m| *m != Mode::Freeze).await {
            Ok(now) => *now,
            Err(_) => return,
        };
        if let Mode::Delay(pause) = now {
            tokio::time::sleep(pause).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
