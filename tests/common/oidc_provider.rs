//! A real OpenID provider for the web inbox's sign-in tests: panva's
//! `oidc-provider` (pinned in `tests/oidc-provider/package.json`, installed
//! by `npm ci` there, which `.ci/run` does), started by
//! `tests/oidc-provider/provider.mjs` on a free 127.0.0.1 port, with a test-only
//! control endpoint to make it misbehave ([`Provider::misbehave`]).
//!
//! Without Node.js or the installed package the tests are skipped with a
//! notice, unless `STRANDS_REQUIRE_OIDC=1` (CI sets it): then they fail.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The folder of the provider's script and its npm packages.
pub fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oidc-provider")
}

/// Whether the provider can run here; panics when CI requires it and it
/// cannot.
pub fn available(test: &str) -> bool {
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let installed = folder()
        .join("node_modules/oidc-provider/package.json")
        .is_file();
    if node && installed {
        return true;
    }
    assert!(
        std::env::var("STRANDS_REQUIRE_OIDC").as_deref() != Ok("1"),
        "{test}: STRANDS_REQUIRE_OIDC=1 but the OpenID provider cannot run \
         (node: {node}, installed: {installed}; run `npm ci` in tests/oidc-provider)"
    );
    eprintln!(
        "{test}: SKIPPED — no OpenID provider (needs node and `npm ci` in tests/oidc-provider)"
    );
    false
}

/// A free port on 127.0.0.1 (for a server that must know its URL before
/// it starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The client strands is registered as.
pub const CLIENT_ID: &str = "strands-inbox";
pub const CLIENT_SECRET: &str = "a-test-client-secret";

/// A running provider; killed when dropped.
pub struct Provider {
    /// The issuer, `http://127.0.0.1:PORT`.
    pub issuer: String,
    child: Child,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Provider {
    /// Starts the provider with strands' client sending browsers back to
    /// `strands_url` (`http://127.0.0.1:PORT`, no trailing slash). A port
    /// taken meanwhile by someone else is retried on another.
    pub fn start(strands_url: &str) -> Provider {
        let mut last = String::new();
        for _ in 0..5 {
            match Provider::try_start(strands_url) {
                Ok(p) => return p,
                Err(log) => last = log,
            }
        }
        panic!("the OpenID provider did not start:\n{last}");
    }

    fn try_start(strands_url: &str) -> Result<Provider, String> {
        let port = free_port();
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .args(["--port", &port.to_string()])
            .args(["--client-id", CLIENT_ID])
            .args(["--client-secret", CLIENT_SECRET])
            .args([
                "--redirect-uri",
                &format!("{strands_url}/auth/oidc/callback"),
            ])
            .args(["--post-logout-uri", &format!("{strands_url}/login")])
            .current_dir(folder())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("node provider.mjs");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("listening ") {
                    let _ = tx.send(());
                }
                keep.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                keep.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let until = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
                break;
            }
            let exited = child.try_wait().ok().flatten().is_some();
            if exited || std::time::Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                // What it said on its way out.
                std::thread::sleep(Duration::from_millis(100));
                return Err(log.lock().unwrap().clone());
            }
        }
        Ok(Provider {
            issuer: format!("http://127.0.0.1:{port}"),
            child,
            log,
        })
    }

    /// Makes the provider misbehave: `normal`, `audience`, `expired`,
    /// `unpublished`, or `rotate` (see `provider.mjs`).
    pub fn misbehave(&self, mode: &str) {
        let r = crate::common::service::http(
            "GET",
            &format!("{}/test-control?mode={mode}", self.issuer),
            &[],
            b"",
        )
        .expect("the provider's control endpoint");
        assert_eq!(r.status, 200, "{}", r.body);
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
