//! The real bot under test and the way tests talk to it: [`Bot`] spawns
//! `strands --store DIR serve` (configured by a [`BotConfig`]), waits for its
//! `listening on http://127.0.0.1:PORT` line, keeps its output for failure
//! messages, and sends it signed slash commands, clicks ([`Click`]), modal
//! submissions and events; it can be killed, stopped and restarted on the
//! same store. [`run_to_exit`] runs a bot that is expected to refuse to
//! start.
//!
//! Requests go over [`http`], a small blocking HTTP/1.1 client, so that
//! each test thread can click on its own and measure the answer
//! ([`HttpReply::expect_prompt_ok`] holds it to Slack's 3-second deadline).

use super::{
    all_text, block_actions_payload, interaction_body, signed, slash_command_body,
    view_submission_payload, ApprovalMessage, Button, FakeSlack, Signing, SlackCall, ACK_DEADLINE,
    APPROVAL_CHANNEL, BOT_TOKEN, SIGNING_SECRET,
};
use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// A tiny HTTP client
// ---------------------------------------------------------------------------

/// The session id in a "started NAME as SESSION" acknowledgement.
#[track_caller]
pub fn started(ack: &HttpReply, name: &str) -> String {
    let text = ack.text();
    let marker = format!("started {name} as ");
    let at = text.find(&marker).unwrap_or_else(|| {
        panic!(
            "the acknowledgement does not say {marker:?}: {:?}",
            ack.body
        )
    });
    let id: String = text[at + marker.len()..]
        .trim_start_matches(['`', '*', '_'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    assert!(!id.is_empty(), "no session id after {marker:?}: {text:?}");
    id
}

/// An HTTP answer from the bot.
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
    pub fn expect_prompt_ok(&self, what: &str, bot: &Bot) -> &Self {
        assert_eq!(
            self.status,
            200,
            "{what}: expected 200, got {} {:?}\n--- bot output\n{}",
            self.status,
            self.body,
            bot.log()
        );
        assert!(
            self.elapsed < ACK_DEADLINE,
            "{what}: answered after {:?}, Slack gives up after {ACK_DEADLINE:?}",
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

// ---------------------------------------------------------------------------
// The bot process
// ---------------------------------------------------------------------------

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
pub struct BotConfig {
    pub store: PathBuf,
    pub cwd: PathBuf,
    /// Environment: `Some` sets, `None` removes.
    pub env: Vec<(String, Option<String>)>,
}

impl BotConfig {
    pub fn new(sandbox: &Sandbox, slack: &FakeSlack, workflows: &Path) -> BotConfig {
        let set = |k: &str, v: &str| (k.to_string(), Some(v.to_string()));
        let unset = |k: &str| (k.to_string(), None);
        BotConfig {
            store: sandbox.store.clone(),
            cwd: sandbox.path().to_path_buf(),
            env: vec![
                set("SLACK_BOT_TOKEN", BOT_TOKEN),
                set("SLACK_SIGNING_SECRET", SIGNING_SECRET),
                set("SLACK_API_URL", &slack.api_url),
                set("STRANDS_BIND", "127.0.0.1:0"),
                set("STRANDS_WORKFLOWS", &workflows.display().to_string()),
                set("STRANDS_APPROVAL_CHANNEL", APPROVAL_CHANNEL),
                set("STRANDS_RETRY_BASE_MS", "10"),
                set("STRANDS_LLM_TIMEOUT_SECS", "30"),
                unset("STRANDS_STORE"),
                unset("STRANDS_LOG"),
                unset("STRANDS_LOG_FORMAT"),
                unset("STRANDS_MAX_RETRIES"),
                unset("OPENAI_API_KEY"),
                unset("OPENAI_BASE_URL"),
                unset("SLACK_APP_TOKEN"),
            ],
        }
    }

    /// Sets (`Some`) or removes (`None`) one variable.
    pub fn with(mut self, key: &str, value: Option<&str>) -> BotConfig {
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

/// Runs the bot expecting it to exit by itself within `timeout`.
pub fn run_to_exit(cfg: &BotConfig, timeout: Duration) -> Exited {
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

/// A click sent to the bot.
#[derive(Debug, Clone)]
pub struct Click {
    pub reply: HttpReply,
    pub user: String,
    pub action_id: String,
    pub trigger_id: String,
    pub response_url: String,
    pub payload: Value,
    /// When it was sent.
    pub sent: Instant,
}

/// A running `strands serve`; killed when dropped.
pub struct Bot {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub cfg: BotConfig,
    slack: FakeSlack,
    child: Option<Child>,
    log: Arc<Mutex<String>>,
}

impl Bot {
    /// Writes `workflows` into the sandbox and starts the bot on its store.
    pub fn start(
        sandbox: &Sandbox,
        slack: &FakeSlack,
        llm: &FakeLlm,
        workflows: &[(&str, &str)],
    ) -> Bot {
        let dir = write_workflows(sandbox, llm, workflows);
        Bot::launch(slack, BotConfig::new(sandbox, slack, &dir))
    }

    /// Starts the bot as `cfg` says and waits until it listens.
    pub fn launch(slack: &FakeSlack, cfg: BotConfig) -> Bot {
        let log = Arc::new(Mutex::new(String::new()));
        slack.attach_log(log.clone());
        let mut bot = Bot {
            url: String::new(),
            cfg,
            slack: slack.clone(),
            child: None,
            log,
        };
        bot.spawn();
        bot
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
            "stop or kill the bot before restarting"
        );
        self.slack.attach_log(self.log.clone());
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
                "{method} {path} to the bot failed: {e}\n--- bot output\n{}",
                self.log()
            )
        })
    }

    pub fn get(&self, path: &str) -> HttpReply {
        self.request("GET", path, &[], b"")
    }

    /// POSTs `body` signed as `signing`, plus `extra` headers.
    pub fn post(
        &self,
        path: &str,
        content_type: &str,
        body: &[u8],
        signing: Signing,
        extra: &[(&str, &str)],
    ) -> HttpReply {
        let (mut headers, sent) = signed(signing, body);
        headers.push(("Content-Type".into(), content_type.into()));
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.request("POST", path, &headers, &sent)
    }

    /// `/strands TEXT` typed by `user` in `channel`, signed.
    pub fn command(&self, user: &str, channel: &str, text: &str) -> HttpReply {
        self.command_signed(user, channel, text, Signing::Valid)
    }

    pub fn command_signed(
        &self,
        user: &str,
        channel: &str,
        text: &str,
        signing: Signing,
    ) -> HttpReply {
        let body = slash_command_body(user, channel, text, &self.slack.response_url());
        self.post(
            "/slack/commands",
            "application/x-www-form-urlencoded",
            body.as_bytes(),
            signing,
            &[],
        )
    }

    /// `user` clicks the `action_id` button of `msg`, signed.
    pub fn click(&self, msg: &ApprovalMessage, action_id: &str, user: &str) -> Click {
        self.click_with(msg, action_id, user, Signing::Valid, |_| {})
    }

    /// A click whose payload `patch` may change first.
    pub fn click_with(
        &self,
        msg: &ApprovalMessage,
        action_id: &str,
        user: &str,
        signing: Signing,
        patch: impl FnOnce(&mut Value),
    ) -> Click {
        let button = msg.button(action_id);
        let trigger_id = self.slack.issue_trigger_id();
        let response_url = self.slack.response_url();
        let mut payload = block_actions_payload(msg, &button, user, &trigger_id, &response_url);
        patch(&mut payload);
        let sent = Instant::now();
        let reply = self.interaction(&payload, signing);
        Click {
            sent,
            reply,
            user: user.to_string(),
            action_id: action_id.to_string(),
            trigger_id,
            response_url,
            payload,
        }
    }

    /// Submits the modal `opened` (a `views.open` call) with `text`, signed.
    pub fn submit_modal(&self, opened: &SlackCall, user: &str, text: &str) -> HttpReply {
        self.submit_modal_with(opened, user, text, |_| {})
    }

    pub fn submit_modal_with(
        &self,
        opened: &SlackCall,
        user: &str,
        text: &str,
        patch: impl FnOnce(&mut Value),
    ) -> HttpReply {
        let mut payload = view_submission_payload(opened, user, text);
        patch(&mut payload);
        self.interaction(&payload, Signing::Valid)
    }

    /// POSTs an interaction payload to /slack/interactions.
    pub fn interaction(&self, payload: &Value, signing: Signing) -> HttpReply {
        self.post(
            "/slack/interactions",
            "application/x-www-form-urlencoded",
            interaction_body(payload).as_bytes(),
            signing,
            &[],
        )
    }

    /// POSTs an Events API body, with `X-Slack-Retry-Num` when `retry` is set.
    pub fn event(&self, body: &Value, retry: Option<u32>, signing: Signing) -> HttpReply {
        let n = retry.map(|n| n.to_string());
        let mut extra: Vec<(&str, &str)> = Vec::new();
        if let Some(n) = &n {
            extra.push(("X-Slack-Retry-Num", n));
            extra.push(("X-Slack-Retry-Reason", "http_timeout"));
        }
        self.post(
            "/slack/events",
            "application/json",
            body.to_string().as_bytes(),
            signing,
            &extra,
        )
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------
// Clicks on one call of a tool-call approval
// ---------------------------------------------------------------------------

impl Bot {
    /// `user` clicks `button` of `msg` (e.g. one call's button), signed.
    pub fn click_button(&self, msg: &ApprovalMessage, button: &Button, user: &str) -> Click {
        let trigger_id = self.slack.issue_trigger_id();
        let response_url = self.slack.response_url();
        let payload = block_actions_payload(msg, button, user, &trigger_id, &response_url);
        let sent = Instant::now();
        let reply = self.interaction(&payload, Signing::Valid);
        Click {
            sent,
            reply,
            user: user.to_string(),
            action_id: button.action_id.clone(),
            trigger_id,
            response_url,
            payload,
        }
    }

    /// `user` clicks the `action_id` button of call `call_id` of `msg`.
    pub fn click_call(
        &self,
        msg: &ApprovalMessage,
        action_id: &str,
        call_id: &str,
        user: &str,
    ) -> Click {
        self.click_button(msg, &msg.call_button(action_id, call_id), user)
    }
}
