//! A real headless Chromium for the web inbox tests, driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`, which `.ci/run` installs)
//! with `fantoccini`. Each [`Browser`] runs its own chromedriver on a free
//! 127.0.0.1 port and its own throw-away profile; Chromium's background
//! networking is off (the machine has no internet, and tests never use it).
//!
//! Without the two programs the browser tests are skipped with a notice,
//! unless `STRANDS_REQUIRE_BROWSER=1` (CI sets it): then they fail.

#![allow(dead_code)]

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const WAIT: Duration = Duration::from_secs(20);

fn find(env: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(env) {
        return Some(PathBuf::from(p));
    }
    candidates.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// The browser and its driver, when this machine has them.
pub fn programs() -> Option<(PathBuf, PathBuf)> {
    let chromium = find(
        "STRANDS_CHROMIUM",
        &[
            "/usr/bin/chromium",
            "/usr/bin/chromium-browser",
            "/usr/bin/google-chrome",
        ],
    )?;
    let driver = find("STRANDS_CHROMEDRIVER", &["/usr/bin/chromedriver"])?;
    Some((chromium, driver))
}

/// Whether browser tests run here; panics when CI requires them and the
/// programs are missing.
pub fn available(test: &str) -> bool {
    if programs().is_some() {
        return true;
    }
    assert!(
        std::env::var("STRANDS_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "{test}: STRANDS_REQUIRE_BROWSER=1 but /usr/bin/chromium or /usr/bin/chromedriver is missing \
         (apt-get install chromium chromium-driver)"
    );
    eprintln!("{test}: SKIPPED — no /usr/bin/chromium + /usr/bin/chromedriver (apt-get install chromium chromium-driver)");
    false
}

/// A chromedriver and one WebDriver session in headless Chromium.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts the driver and a browser whose window is `width`×`height`.
    pub async fn start(width: u32, height: u32) -> Browser {
        let (chromium, driver_bin) = programs().expect("chromium and chromedriver");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // A process group of its own: the Chromium it starts joins it, so
        // a test that fails (and drops the browser unclosed) takes the
        // browser down too, not only the driver.
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let profile = tempfile::tempdir().expect("a profile directory");
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-extensions",
                    "--hide-scrollbars",
                    format!("--user-data-dir={}", profile.path().display()),
                    format!("--window-size={width},{height}"),
                ],
            },
        });
        let caps = match caps {
            serde_json::Value::Object(m) => m,
            _ => unreachable!("a JSON object"),
        };
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let mut builder =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
            builder.capabilities(caps.clone());
            match builder.connect(&url).await {
                Ok(c) => break c,
                Err(e) if started.elapsed() < WAIT => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no WebDriver session from {}: {e}", driver_bin.display()),
            }
        };
        client
            .set_window_size(width, height)
            .await
            .expect("size the window");
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// Waits for an element matching `css`.
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` on the page within {WAIT:?}: {e}"))
    }

    /// The page's visible text.
    pub async fn text(&self) -> String {
        self.find("body").await.text().await.unwrap_or_default()
    }

    /// Waits until the page's text contains `needle` (live updates, the
    /// run finishing), reloading every `reload` if given.
    pub async fn wait_for_text(&self, needle: &str, reload: Option<Duration>) -> String {
        let started = Instant::now();
        let mut last_reload = Instant::now();
        loop {
            let text = self.text().await;
            if text.contains(needle) {
                return text;
            }
            assert!(
                started.elapsed() < WAIT,
                "the page never showed {needle:?}; it shows:\n{text}"
            );
            if reload.is_some_and(|r| last_reload.elapsed() >= r) {
                self.client.refresh().await.expect("reload");
                last_reload = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Types `text` into the field `css` (replacing what it holds).
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.expect("clear the field");
        field.send_keys(text).await.expect("type into the field");
    }

    pub async fn click(&self, css: &str) {
        self.find(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("click `{css}`: {e}"));
    }

    /// Adds a virtual authenticator to the browser (WebDriver's WebAuthn
    /// extension: ctap2, internal, resident keys, user verification on):
    /// passkeys registered and asserted with it, no device needed.
    pub async fn add_virtual_authenticator(&self) {
        self.client
            .issue_cmd(AddAuthenticator)
            .await
            .expect("a virtual authenticator (WebDriver WebAuthn)");
    }

    /// A script's result (for layout checks).
    pub async fn eval(&self, script: &str) -> serde_json::Value {
        self.client
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|e| panic!("run {script}: {e}"))
    }

    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        self.kill();
    }

    /// The browser's profile directory (on every Chromium process's
    /// command line).
    pub fn profile(&self) -> PathBuf {
        self._profile.path().to_path_buf()
    }

    /// Kills the driver and every process of its group (the browser).
    fn kill(&mut self) {
        if let Ok(pid) = i32::try_from(self.driver.id()) {
            // SAFETY: kill(2) on the driver's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

/// WebDriver's `Add Virtual Authenticator` (W3C WebAuthn §11.3).
#[derive(Debug)]
struct AddAuthenticator;

impl fantoccini::wd::WebDriverCompatibleCommand for AddAuthenticator {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/webauthn/authenticator",
            session_id.unwrap_or_default()
        ))
    }
    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        let body = serde_json::json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserVerified": true,
        });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}
