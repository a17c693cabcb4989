//! Headless Chromium over WebDriver: finding the two programs, one chromedriver per test
//! process, one browser session on it, and the checks every page gets.
//!
//! - [`find`] looks for `chromedriver` and `chromium` (the gate names them in
//!   [`CHROMEDRIVER_VAR`] and [`CHROMIUM_VAR`]; otherwise `PATH`, then `/usr/bin`).
//! - [`Browser::start`] runs chromedriver on a free loopback port in a process group of its
//!   own, and opens one session: headless, fixed window size (stable screenshots), a fresh
//!   profile folder, every console message kept (`goog:loggingPrefs`), and alerts left open
//!   (`unhandledPromptBehavior: ignore`) so a test can see one. The whole group (chromedriver
//!   and the Chromium it started) is killed when the browser is dropped, also when a test
//!   panicked, and when the test process dies without running destructors ([`WATCHDOG`]);
//!   the profile is removed on drop.
//! - [`Browser::console_errors`] drains the browser log through chromedriver's `se/log`
//!   endpoint: everything Chromium printed at level `SEVERE` since the last call, which covers
//!   `console.error`, uncaught exceptions during load or later, failed loads and Content
//!   Security Policy violations.
//! - [`Browser::until`] polls a condition in the page with a generous overall limit: the only
//!   way these tests wait. There is no fixed sleep.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use fantoccini::error::CmdError;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};

/// The gate names the chromedriver it found here.
pub const CHROMEDRIVER_VAR: &str = "BATCH_TEST_CHROMEDRIVER";
/// And the Chromium.
pub const CHROMIUM_VAR: &str = "BATCH_TEST_CHROMIUM";
/// Set to `update` to also write the screenshots to `docs/` (the committed ones).
pub const SCREENSHOTS_VAR: &str = "BATCH_SCREENSHOTS";

/// How long any one condition may take to hold: generous, for a loaded two-core machine.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);
/// How often a condition is polled.
pub const POLL_EVERY: Duration = Duration::from_millis(25);
/// The window, so that screenshots come out the same size on every machine.
pub const WINDOW: (u32, u32) = (1200, 860);

/// The two programs a browser needs.
#[derive(Debug, Clone)]
pub struct Programs {
    pub chromedriver: PathBuf,
    pub chromium: PathBuf,
}

/// Finds chromedriver and Chromium; `Err` says what is missing and how to install it.
pub fn find() -> Result<Programs, String> {
    let chromedriver = program(CHROMEDRIVER_VAR, &["chromedriver"]);
    let chromium = program(
        CHROMIUM_VAR,
        &["chromium", "chromium-browser", "google-chrome"],
    );
    match (chromedriver, chromium) {
        (Some(chromedriver), Some(chromium)) => Ok(Programs {
            chromedriver,
            chromium,
        }),
        (driver, browser) => {
            let missing: Vec<&str> = [
                driver.is_none().then_some("chromedriver"),
                browser.is_none().then_some("chromium"),
            ]
            .into_iter()
            .flatten()
            .collect();
            Err(format!(
                "{} not found (set {CHROMEDRIVER_VAR}/{CHROMIUM_VAR}, or put them on PATH; \
                 Debian: apt-get install chromium chromium-driver)",
                missing.join(" and ")
            ))
        }
    }
}

/// `var` if set, else the first of `names` on `PATH` or in `/usr/bin`.
fn program(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).filter(|path| !path.is_empty()) {
        // Named but absent: missing, whatever PATH holds (the gate names only what it found).
        return Some(PathBuf::from(path)).filter(|path| path.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .collect();
    names.iter().find_map(|name| {
        dirs.iter()
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// Runs chromedriver (`$0`, arguments `$@`) in the background, then waits for its standard
/// input to close and kills its whole process group: chromedriver and the Chromium it
/// started. The test holds the other end of the pipe, so the browser goes when the test
/// process goes, however it goes: a drop, a panic, or a signal that runs no destructor (a
/// test runner's timeout).
/// (`kill -9 -PGID`: the one spelling dash and bash both take.)
const WATCHDOG: &str = r#"exec 3<&0 </dev/null; "$0" "$@" 3<&- & read -r _ <&3; kill -9 -$$"#;

/// chromedriver under [`WATCHDOG`], in a process group of its own.
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start(program: &Path, log: &Path) -> Driver {
        // A free port: the kernel picks one, which is free again once the listener is dropped.
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new("sh")
            .args(["-c", WATCHDOG])
            .arg(program)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // A group of its own, which the watchdog kills whole.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|err| panic!("could not start {}: {err}", program.display()));
        let mut driver = Driver { child, port };
        let deadline = Instant::now() + WAIT_LIMIT;
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = driver.child.try_wait() {
                panic!(
                    "chromedriver exited with {status} before listening on port {port}; see {}",
                    log.display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on port {port} within {WAIT_LIMIT:?}"
            );
            std::thread::sleep(POLL_EVERY);
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Closing the pipe makes the watchdog kill the group; then it is reaped. The group is
        // killed from here too, in case the watchdog itself was killed.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
    }
}

/// chromedriver's log endpoint (not in the W3C protocol): the entries of the `browser` log
/// since the previous call.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

/// One headless Chromium session; see the module docs.
pub struct Browser {
    client: Client,
    profile: PathBuf,
    shots: PathBuf,
    /// Taken (so killed) on drop before the profile is removed.
    driver: Option<Driver>,
}

impl Browser {
    /// Starts chromedriver and a session.
    pub async fn start(programs: &Programs) -> Browser {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let shots = screenshot_dir();
        std::fs::create_dir_all(&shots).expect("the screenshot folder");
        let profile = std::env::temp_dir().join(format!(
            "lockgate-browser-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).expect("the profile folder");
        let driver = {
            let program = programs.chromedriver.clone();
            let log = shots.join("chromedriver.log");
            tokio::task::spawn_blocking(move || Driver::start(&program, &log))
                .await
                .expect("chromedriver starts")
        };
        let (width, height) = WINDOW;
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": programs.chromium,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--disable-extensions",
                    "--no-first-run",
                    // No crash handler: it leaves the process group, so it would outlive
                    // the test.
                    "--disable-breakpad",
                    "--disable-crash-reporter",
                    "--hide-scrollbars",
                    "--force-device-scale-factor=1",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
            "unhandledPromptBehavior": "ignore",
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .expect("a chromedriver session");
        Browser {
            client,
            profile,
            shots,
            driver: Some(driver),
        }
    }

    /// Ends the session (Chromium quits); the processes are killed anyway on drop.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }

    /// The WebDriver client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Opens `url` and returns once it has loaded (WebDriver's navigation waits for `load`).
    pub async fn open(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|err| panic!("opening {url}: {err}"));
    }

    /// Runs `script` in the page (WebDriver scripts are not subject to the page's CSP).
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|err| panic!("script `{script}`: {err}"))
    }

    /// Waits until `probe` (a script whose value is `null` or `false` while the condition does
    /// not hold) returns something else, and returns that. Panics after [`WAIT_LIMIT`],
    /// naming `what`, the page's URL and the probe's last error if it had one.
    ///
    /// A probe that fails is tried again: right after a click that navigates, the script may
    /// run while the old document is being unloaded.
    pub async fn until(&self, what: &str, probe: &str, args: Vec<Value>) -> Value {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let error = match self.client.execute(probe, args.clone()).await {
                Ok(Value::Null | Value::Bool(false)) => None,
                Ok(value) => return value,
                Err(err) => Some(err),
            };
            if Instant::now() >= deadline {
                let url = self.client.current_url().await.map(String::from);
                let kept = self.keep_failure().await;
                panic!(
                    "waited {WAIT_LIMIT:?} for {what} on {url:?} (last error: {error:?}; \
                     page kept in {kept})"
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Saves the page as it is (`failure.html`, `failure.png`) for a failing test's reader;
    /// returns where.
    async fn keep_failure(&self) -> String {
        if let Ok(html) = self.client.source().await {
            let _ = std::fs::write(self.shots.join("failure.html"), html);
        }
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::write(self.shots.join("failure.png"), png);
        }
        self.shots.display().to_string()
    }

    /// The text of the first element `selector` matches, or `None` when nothing matches.
    pub async fn text(&self, selector: &str) -> Option<String> {
        let value = self
            .js(
                "const el = document.querySelector(arguments[0]); \
                 return el === null ? null : el.textContent;",
                vec![json!(selector)],
            )
            .await;
        value.as_str().map(str::to_owned)
    }

    /// How many elements `selector` matches.
    pub async fn count(&self, selector: &str) -> u64 {
        self.js(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(selector)],
        )
        .await
        .as_u64()
        .expect("a count")
    }

    /// Waits until the text of `selector` is `expected`.
    pub async fn until_text(&self, selector: &str, expected: &str) {
        self.until(
            &format!("`{selector}` to read {expected:?}"),
            "const el = document.querySelector(arguments[0]); \
             return el !== null && el.textContent === arguments[1];",
            vec![json!(selector), json!(expected)],
        )
        .await;
    }

    /// The `value` and `max` of the `progress` element `selector` matches.
    pub async fn bar(&self, selector: &str) -> (f64, f64) {
        let value = self
            .js(
                "const el = document.querySelector(arguments[0]); \
                 return el === null ? null : [el.value, el.max];",
                vec![json!(selector)],
            )
            .await;
        let pair = value
            .as_array()
            .unwrap_or_else(|| panic!("no progress bar `{selector}`"));
        (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap())
    }

    /// Marks the page, so that [`Self::assert_not_reloaded`] can tell it is still the same
    /// document: a reload or a navigation would drop the mark.
    pub async fn mark(&self) {
        self.js("window.__lockgateMark = 'kept';", vec![]).await;
    }

    /// Asserts the page marked by [`Self::mark`] was not reloaded since.
    pub async fn assert_not_reloaded(&self, page: &str) {
        let mark = self
            .js("return window.__lockgateMark || null;", vec![])
            .await;
        assert_eq!(mark, "kept", "{page} was reloaded or left");
    }

    /// Clicks the first element `selector` matches.
    pub async fn click(&self, selector: &str) {
        self.client
            .find(fantoccini::Locator::Css(selector))
            .await
            .unwrap_or_else(|err| panic!("no `{selector}` to click: {err}"))
            .click()
            .await
            .unwrap_or_else(|err| panic!("clicking `{selector}`: {err}"));
    }

    /// The messages Chromium logged at level `SEVERE` since the previous call.
    pub async fn console_errors(&self) -> Vec<String> {
        // A task queued by the page before this call (an event handler, a timer at 0) has run
        // by the time a script that waits for the next task returns, so what it logs is in.
        let _ = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1]; setTimeout(done, 0);",
                vec![],
            )
            .await;
        let entries = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .expect("chromedriver's browser log");
        entries
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| {
                let source = entry["source"].as_str().unwrap_or("?");
                let message = entry["message"].as_str().unwrap_or("?");
                format!("[{source}] {message}")
            })
            .collect()
    }

    /// Asserts nothing was logged at level `SEVERE` since the previous check.
    pub async fn assert_no_console_errors(&self, page: &str) {
        let errors = self.console_errors().await;
        assert!(
            errors.is_empty(),
            "the console has errors on {page}:\n{}",
            errors.join("\n")
        );
    }

    /// Asserts no alert (nor confirm, nor prompt) is open.
    pub async fn assert_no_alert(&self) {
        match self.client.get_alert_text().await {
            Err(CmdError::Standard(err))
                if err.error == fantoccini::error::ErrorStatus::NoSuchAlert => {}
            Err(err) => panic!("asking for an alert: {err}"),
            Ok(text) => panic!("an alert is open: {text:?}"),
        }
    }

    /// Saves a screenshot of the window as `<name>.png` in the test's folder under the target
    /// dir, and as `docs/<docs_name>.png` too with `BATCH_SCREENSHOTS=update`. Returns where
    /// it went.
    pub async fn screenshot(&self, name: &str, docs_name: Option<&str>) -> Vec<PathBuf> {
        let png = self.client.screenshot().await.expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let mut paths = vec![self.shots.join(format!("{name}.png"))];
        if let Some(docs_name) = docs_name
            && std::env::var(SCREENSHOTS_VAR).is_ok_and(|value| value == "update")
        {
            paths.push(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../docs")
                    .join(format!("{docs_name}.png")),
            );
        }
        for path in &paths {
            std::fs::write(path, &png)
                .unwrap_or_else(|err| panic!("writing {}: {err}", path.display()));
        }
        paths
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        drop(self.driver.take());
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Where screenshots and chromedriver's log go: under the target dir, never in the tree.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser")
}
