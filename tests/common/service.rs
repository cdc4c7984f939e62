//! The real `strands serve` under test: [`Service`] spawns
//! `strands --store DIR serve` (configured by a [`ServeConfig`]), waits for
//! its `listening on http://127.0.0.1:PORT` line, keeps its output for
//! failure messages, and can be killed, stopped and restarted on the same
//! store; [`run_to_exit`] runs one that is expected to refuse to start.
//! Requests go over [`http`], a small blocking HTTP/1.1 client, so each
//! test thread can call on its own and measure the answer. The Slack bot
//! ([`super::fake_slack::Bot`]) and the API tests build on these.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{FakeLlm, Sandbox};

/// Every string of a JSON value, one per line.
pub fn all_text(v: &Value) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out.join("\n")
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// From sending the request to having the whole answer.
    pub elapsed: Duration,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
    /// The body as JSON (Null when empty, a string when not JSON).
    pub fn json(&self) -> Value {
        if self.body.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.body).unwrap_or_else(|_| Value::String(self.body.clone()))
    }
    /// Every string of a JSON body (or the body itself).
    pub fn text(&self) -> String {
        all_text(&self.json())
    }

    /// Asserts 200 within Slack's 3-second deadline.
    #[track_caller]
    pub fn expect_prompt_ok(&self, what: &str, svc: &Service) -> &Self {
        let deadline = crate::common::fake_slack::ACK_DEADLINE;
        assert_eq!(
            self.status,
            200,
            "{what}: expected 200, got {} {:?}\n--- serve output\n{}",
            self.status,
            self.body,
            svc.log()
        );
        assert!(
            self.elapsed < deadline,
            "{what}: answered after {:?}, Slack gives up after {deadline:?}",
            self.elapsed
        );
        self
    }
}

/// One blocking HTTP/1.1 request (`Connection: close`).
pub fn http(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<HttpReply> {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not an http:// URL: {url}"));
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let started = Instant::now();
    let mut stream = TcpStream::connect(host)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let elapsed = started.elapsed();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers in the answer"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut payload = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        payload = dechunk(&payload);
    }
    Ok(HttpReply {
        status,
        headers,
        body: String::from_utf8_lossy(&payload).into_owned(),
        elapsed,
    })
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size_line = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or(0);
        data = &data[eol + 2..];
        if size == 0 || data.len() < size {
            break;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[(size + 2).min(data.len())..];
    }
    out
}

/// Writes `workflows` (name, YAML with `$HOST`) as `<dir>/<name>.yaml`.
pub fn write_workflows(sandbox: &Sandbox, llm: &FakeLlm, workflows: &[(&str, &str)]) -> PathBuf {
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("create the workflows dir");
    for (name, yaml) in workflows {
        std::fs::write(
            dir.join(format!("{name}.yaml")),
            yaml.replace("$HOST", &llm.url),
        )
        .expect("write a workflow");
    }
    dir
}

/// How to start `strands --store DIR serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub store: PathBuf,
    pub cwd: PathBuf,
    /// Environment: `Some` sets, `None` removes.
    pub env: Vec<(String, Option<String>)>,
}

impl ServeConfig {
    /// The service without Slack: the API alone, on the sandbox's store.
    pub fn api(sandbox: &Sandbox, workflows: &Path) -> ServeConfig {
        let set = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
        let unset = |k: &str| (k.to_string(), None);
        ServeConfig {
            store: sandbox.store.clone(),
            cwd: sandbox.path().to_path_buf(),
            env: vec![
                set("STRANDS_BIND", "127.0.0.1:0"),
                set("STRANDS_WORKFLOWS", &workflows.display().to_string()),
                set("STRANDS_RETRY_BASE_MS", "10"),
                set("STRANDS_LLM_TIMEOUT_SECS", "30"),
                unset("STRANDS_STORE"),
                unset("STRANDS_LOG"),
                unset("STRANDS_LOG_FORMAT"),
                unset("STRANDS_MAX_RETRIES"),
                unset("OPENAI_API_KEY"),
                unset("OPENAI_BASE_URL"),
                unset("SLACK_APP_TOKEN"),
                unset("SLACK_BOT_TOKEN"),
                unset("SLACK_SIGNING_SECRET"),
                unset("STRANDS_SERVER"),
                unset("STRANDS_TOKEN"),
                unset("STRANDS_WEBHOOK_URL"),
                unset("STRANDS_WEBHOOK_SECRET"),
                unset("STRANDS_SMTP_URL"),
                unset("STRANDS_EMAIL_FROM"),
                unset("STRANDS_REMIND_BEFORE_MINUTES"),
                unset("OTEL_EXPORTER_OTLP_ENDPOINT"),
                unset("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            ],
        }
    }

    /// Sets (`Some`) or removes (`None`) one variable.
    pub fn with(mut self, key: &str, value: Option<&str>) -> ServeConfig {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.map(str::to_string)));
        self
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strands"));
        cmd.arg("--store")
            .arg(&self.store)
            .arg("serve")
            .current_dir(&self.cwd);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }
}

/// What a one-shot run of `strands serve` did (for start-up failures).
#[derive(Debug)]
pub struct Exited {
    /// None when it had to be killed.
    pub code: Option<i32>,
    pub output: String,
}

/// Runs `strands serve` expecting it to exit by itself within `timeout`.
pub fn run_to_exit(cfg: &ServeConfig, timeout: Duration) -> Exited {
    let mut child = cfg
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strands serve");
    let log = Arc::new(Mutex::new(String::new()));
    let readers = [
        pump(child.stdout.take().expect("stdout"), log.clone(), None),
        pump(child.stderr.take().expect("stderr"), log.clone(), None),
    ];
    let until = Instant::now() + timeout;
    let code = loop {
        if let Some(status) = child.try_wait().expect("poll strands serve") {
            break status.code();
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for r in readers {
        let _ = r.join();
    }
    let output = log.lock().expect("log").clone();
    Exited { code, output }
}

/// Copies lines of `from` into `log`; sends the port of the first
/// `listening on http://127.0.0.1:PORT` line to `ready`.
fn pump(
    from: impl Read + Send + 'static,
    log: Arc<Mutex<String>>,
    ready: Option<mpsc::Sender<u16>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut ready = ready;
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            log.lock().expect("log").push_str(&format!("{line}\n"));
            if let Some(port) = listening_port(&line) {
                if let Some(tx) = ready.take() {
                    let _ = tx.send(port);
                }
            }
        }
    })
}

fn listening_port(line: &str) -> Option<u16> {
    let marker = "listening on http://127.0.0.1:";
    let at = line.find(marker)? + marker.len();
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// A running `strands serve`; killed when dropped.
pub struct Service {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub cfg: ServeConfig,
    child: Option<Child>,
    log: Arc<Mutex<String>>,
}

impl Service {
    /// Starts `strands serve` as `cfg` says, its output kept in `log`, and
    /// waits until it listens.
    pub fn launch_with_log(cfg: ServeConfig, log: Arc<Mutex<String>>) -> Service {
        let mut svc = Service {
            url: String::new(),
            cfg,
            child: None,
            log,
        };
        svc.spawn();
        svc
    }

    /// Starts `strands serve` as `cfg` says and waits until it listens.
    pub fn launch(cfg: ServeConfig) -> Service {
        Service::launch_with_log(cfg, Arc::new(Mutex::new(String::new())))
    }

    /// The log the service writes into (shared with fakes that log too).
    pub fn log_handle(&self) -> Arc<Mutex<String>> {
        self.log.clone()
    }

    fn spawn(&mut self) {
        self.log.lock().expect("log").push_str("--- (re)start\n");
        let mut child = self
            .cfg
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strands serve");
        let (tx, rx) = mpsc::channel();
        pump(child.stdout.take().expect("stdout"), self.log.clone(), None);
        pump(
            child.stderr.take().expect("stderr"),
            self.log.clone(),
            Some(tx),
        );
        let until = Instant::now() + Duration::from_secs(30);
        let port = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(port) => break port,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    panic!(
                        "strands serve ended before saying `listening on http://127.0.0.1:PORT`:\n{}",
                        self.log()
                    );
                }
            }
            if let Some(status) = child.try_wait().expect("poll strands serve") {
                std::thread::sleep(Duration::from_millis(100));
                panic!(
                    "strands serve exited ({status}) before listening:\n{}",
                    self.log()
                );
            }
            if Instant::now() >= until {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "strands serve printed no `listening on http://127.0.0.1:PORT` on stderr within 30s:\n{}",
                    self.log()
                );
            }
        };
        self.url = format!("http://127.0.0.1:{port}");
        self.child = Some(child);
    }

    /// Everything the bot printed so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running bot").id()
    }

    /// SIGKILL, no chance to clean up.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then SIGKILL if it is still there after 10 s. The store is
    /// free afterwards (`sandbox.list()` works).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let until = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same store and workflows (after `kill`/`stop`).
    pub fn restart(&mut self) {
        assert!(
            self.child.is_none(),
            "stop or kill the service before restarting"
        );
        self.spawn();
    }

    /// A request to the bot; panics when it cannot be sent.
    #[track_caller]
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> HttpReply {
        http(method, &format!("{}{path}", self.url), headers, body).unwrap_or_else(|e| {
            panic!(
                "{method} {path} to strands serve failed: {e}\n--- serve output\n{}",
                self.log()
            )
        })
    }

    pub fn get(&self, path: &str) -> HttpReply {
        self.request("GET", path, &[], b"")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}
