//! The real agent hosts, as the tests run them: Claude Code headless
//! (`claude -p PROMPT --output-format json`, pinned in
//! `tests/agent-hosts/package.json`) against the fake Anthropic API
//! ([`super::fake_anthropic`]), and the two MCP clients on the official
//! SDKs (`tests/agent-hosts/mcp-client.mjs`, TypeScript;
//! `tests/agent-hosts/mcp_client.py`, Python, in the agent SDKs' venv).
//! Plus [`HookServer`], a test-local endpoint for Claude Code's `"type":
//! "http"` hooks, so a test can decide a tool call without strands.
//!
//! A test needing a client that is missing skips, saying `SKIPPED` —
//! unless `STRANDS_REQUIRE_MCP_CLIENTS` is set (CI sets it after `npm ci`
//! in `tests/agent-hosts`), where it fails.
//!
//! Every Claude Code run gets a fresh `HOME` (no profile, no settings, no
//! MCP servers of the machine), an environment cleared of everything but
//! `PATH` and what the run is given, and
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`: it talks to 127.0.0.1
//! only.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::agent_sdks;

/// The environment variable that turns a missing client into a failure.
pub const REQUIRE: &str = "STRANDS_REQUIRE_MCP_CLIENTS";

/// `tests/agent-hosts`.
pub fn hosts_dir() -> PathBuf {
    agent_sdks::root().join("tests/agent-hosts")
}

/// Says the test skips because `what` is missing (or fails, when
/// [`REQUIRE`] is set); always `None`.
fn missing<T>(what: &str) -> Option<T> {
    assert!(
        std::env::var_os(REQUIRE).is_none(),
        "{what} is missing and {REQUIRE} is set (run `npm ci` in tests/agent-hosts, and clients/setup.sh)"
    );
    eprintln!(
        "SKIPPED: {what} is missing (run `npm ci` in tests/agent-hosts, and clients/setup.sh; {REQUIRE}=1 requires it)"
    );
    None
}

/// The pinned `claude` binary: `node_modules/.bin/claude` (what the
/// package's postinstall links), else the platform package's own binary;
/// `None` (the test skips) when neither runs.
pub fn binary() -> Option<PathBuf> {
    let modules = hosts_dir().join("node_modules");
    let candidates = [
        modules.join(".bin/claude"),
        modules.join("@anthropic-ai/claude-code-linux-x64/claude"),
    ];
    for bin in candidates {
        let runs = Command::new(&bin)
            .arg("--version")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success());
        if runs {
            return Some(bin);
        }
    }
    missing("Claude Code (tests/agent-hosts/node_modules)")
}

// ---------------------------------------------------------------------------
// Claude Code
// ---------------------------------------------------------------------------

/// One `claude -p` run to be made (see [`Claude::run`], [`Claude::spawn`]).
pub struct Claude {
    bin: PathBuf,
    cwd: PathBuf,
    prompt: String,
    api: String,
    home: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
    timeout: Duration,
}

impl Claude {
    /// `claude -p PROMPT --output-format json` in `cwd`, its model the
    /// fake Anthropic API at `api` (`http://127.0.0.1:PORT`), a fresh HOME,
    /// 120 s at most.
    pub fn new(bin: &Path, api: &str, cwd: &Path, prompt: &str) -> Claude {
        Claude {
            bin: bin.to_path_buf(),
            cwd: cwd.to_path_buf(),
            prompt: prompt.to_string(),
            api: api.to_string(),
            home: tempfile::tempdir().expect("a HOME for Claude Code"),
            args: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }

    /// The fresh HOME of this run.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `--settings FILE`.
    pub fn settings(self, file: &Path) -> Claude {
        self.arg("--settings").arg(&file.display().to_string())
    }

    /// `--settings` with `settings` written to a file in the run's HOME.
    pub fn settings_json(self, settings: &Value) -> Claude {
        let file = self.home.path().join("test-settings.json");
        std::fs::write(&file, settings.to_string()).expect("write the settings");
        self.settings(&file)
    }

    /// `--mcp-config FILE --strict-mcp-config` (no other MCP server).
    pub fn mcp_config(self, file: &Path) -> Claude {
        self.arg("--mcp-config")
            .arg(&file.display().to_string())
            .arg("--strict-mcp-config")
    }

    /// `--mcp-config` with one HTTP server `name` at `url` sending
    /// `headers`, written to a file in the run's HOME.
    pub fn mcp_http(self, name: &str, url: &str, headers: &[(&str, &str)]) -> Claude {
        let headers: BTreeMap<&str, &str> = headers.iter().copied().collect();
        let config =
            json!({"mcpServers": {name: {"type": "http", "url": url, "headers": headers}}});
        let file = self.home.path().join("test-mcp.json");
        std::fs::write(&file, config.to_string()).expect("write the MCP config");
        self.mcp_config(&file)
    }

    /// `--permission-prompt-tool NAME` (`mcp__<server>__<tool>`).
    pub fn permission_prompt_tool(self, name: &str) -> Claude {
        self.arg("--permission-prompt-tool").arg(name)
    }

    /// One more command-line argument.
    pub fn arg(mut self, arg: &str) -> Claude {
        self.args.push(arg.to_string());
        self
    }

    /// One more environment variable (e.g. `MCP_TOOL_TIMEOUT`).
    pub fn env(mut self, key: &str, value: &str) -> Claude {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Killed (and the run marked timed out) after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Claude {
        self.timeout = timeout;
        self
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("-p")
            .arg(&self.prompt)
            .args(["--output-format", "json"])
            .args(&self.args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("HOME", self.home.path())
            .env("SHELL", shell())
            .env("ANTHROPIC_BASE_URL", &self.api)
            .env("ANTHROPIC_API_KEY", "test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    /// Starts it; [`Running::wait`] collects it.
    pub fn spawn(self) -> Running {
        let mut child = self.command().spawn().expect("start claude");
        let stdout = read_all(child.stdout.take().expect("claude's stdout"));
        let stderr = read_all(child.stderr.take().expect("claude's stderr"));
        Running {
            child,
            stdout,
            stderr,
            started: Instant::now(),
            timeout: self.timeout,
            home: self.home,
        }
    }

    /// Runs it to its end (or its timeout).
    pub fn run(self) -> ClaudeRun {
        self.spawn().wait()
    }
}

fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// Reads a pipe to its end on a thread of its own.
fn read_all(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = from.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A Claude Code process under way.
pub struct Running {
    child: Child,
    stdout: std::thread::JoinHandle<String>,
    stderr: std::thread::JoinHandle<String>,
    started: Instant,
    timeout: Duration,
    home: tempfile::TempDir,
}

impl Running {
    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for its end; kills it at its timeout.
    pub fn wait(mut self) -> ClaudeRun {
        let until = self.started + self.timeout;
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll claude") {
                break Some(status);
            }
            if Instant::now() >= until {
                timed_out = true;
                let _ = self.child.kill();
                break self.child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let elapsed = self.started.elapsed();
        let stdout = self.stdout.join().unwrap_or_default();
        let stderr = self.stderr.join().unwrap_or_default();
        let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
        ClaudeRun {
            code: if timed_out {
                None
            } else {
                status.and_then(|s| s.code())
            },
            stdout,
            stderr,
            json,
            elapsed,
            timed_out,
            home: self.home,
        }
    }
}

/// What one Claude Code run did.
#[derive(Debug)]
pub struct ClaudeRun {
    /// None when it was killed (or died of a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// stdout as JSON (`--output-format json`: one object); Null when it
    /// was not.
    pub json: Value,
    pub elapsed: Duration,
    pub timed_out: bool,
    /// The run's HOME (its `.claude/` holds the transcript).
    pub home: tempfile::TempDir,
}

impl ClaudeRun {
    /// Everything it printed, for a failure message.
    pub fn both(&self) -> String {
        format!(
            "claude exit {:?} after {:?}{}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.elapsed,
            if self.timed_out { " (timed out)" } else { "" },
            self.stdout,
            self.stderr
        )
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "{}", self.both());
        assert!(self.json.is_object(), "stdout is not JSON: {}", self.both());
        self
    }

    /// The final text (`result`).
    pub fn result(&self) -> String {
        self.json["result"].as_str().unwrap_or_default().to_string()
    }

    /// Whether the run ended in error (`is_error`).
    pub fn is_error(&self) -> bool {
        self.json["is_error"] == json!(true)
    }

    /// The calls denied permission (`permission_denials`: `{tool_name,
    /// tool_use_id, tool_input}` each).
    pub fn permission_denials(&self) -> Vec<Value> {
        self.json["permission_denials"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// A file's lines (none when it does not exist): what the `Bash` commands
/// the tests have the model ask for wrote.
pub fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The `Bash` input the tests have the model ask for: appends `word` to
/// `marker.txt` in the working directory.
pub fn bash_marker(word: &str) -> Value {
    json!({"command": format!("echo {word} >> marker.txt"), "description": "x"})
}

// ---------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------

/// Settings with one `"type": "http"` hook on `event` (`PreToolUse`,
/// `PermissionRequest`) for tools matching `matcher`, POSTing to `url`
/// with `headers`; Claude Code waits 120 s for the answer (then the
/// normal flow decides: in `-p` mode, a call that would ask is denied).
pub fn http_hook_settings(
    event: &str,
    matcher: &str,
    url: &str,
    headers: &[(&str, &str)],
) -> Value {
    let headers: BTreeMap<&str, &str> = headers.iter().copied().collect();
    json!({"hooks": {event: [{
        "matcher": matcher,
        "hooks": [{"type": "http", "url": url, "headers": headers, "timeout": 120}]
    }]}})
}

/// `PreToolUse` hook output: `decision` is `allow`, `deny` or `ask`.
pub fn pre_tool_use(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason
    }})
}

/// One delivery to a [`HookServer`].
#[derive(Debug, Clone)]
pub struct HookCall {
    /// Lowercased names.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// What the server answered.
    pub answer: Value,
}

type Decide = dyn Fn(&Value) -> Value + Send + Sync;

struct HookShared {
    decide: Box<Decide>,
    calls: Mutex<Vec<HookCall>>,
}

/// A test-local endpoint for Claude Code's HTTP hooks on 127.0.0.1: every
/// POST's JSON body is recorded and answered with `decide(body)`.
pub struct HookServer {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    shared: Arc<HookShared>,
}

impl HookServer {
    pub fn start(decide: impl Fn(&Value) -> Value + Send + Sync + 'static) -> HookServer {
        let shared = Arc::new(HookShared {
            decide: Box::new(decide),
            calls: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(hook).with_state(shared.clone());
        let port = super::serve_in_background(app);
        HookServer {
            url: format!("http://127.0.0.1:{port}/hook"),
            shared,
        }
    }

    /// Every delivery so far.
    pub fn calls(&self) -> Vec<HookCall> {
        self.shared.calls.lock().expect("hook calls").clone()
    }
}

async fn hook(State(shared): State<Arc<HookShared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let answer = (shared.decide)(&body);
    shared.calls.lock().expect("hook calls").push(HookCall {
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    v.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        body,
        answer: answer.clone(),
    });
    Json(answer).into_response()
}

// ---------------------------------------------------------------------------
// The MCP clients
// ---------------------------------------------------------------------------

/// Which SDK a client is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    TypeScript,
    Python,
}

/// One of the two MCP client scripts, ready to run.
#[derive(Debug, Clone)]
pub struct McpClient {
    pub sdk: Sdk,
    program: PathBuf,
    script: PathBuf,
}

/// The client on `sdk`, or `None` (the test skips) when its SDK is not
/// installed: `@modelcontextprotocol/sdk` in `tests/agent-hosts`, or
/// `mcp` in the agent SDKs' venv.
pub fn mcp_client(sdk: Sdk) -> Option<McpClient> {
    let dir = hosts_dir();
    match sdk {
        Sdk::TypeScript => {
            let ok = dir
                .join("node_modules/@modelcontextprotocol/sdk/package.json")
                .is_file()
                && Command::new("node")
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success());
            if !ok {
                return missing("the MCP TypeScript SDK (tests/agent-hosts/node_modules)");
            }
            Some(McpClient {
                sdk,
                program: PathBuf::from("node"),
                script: dir.join("mcp-client.mjs"),
            })
        }
        Sdk::Python => {
            let py = agent_sdks::out_dir().join("venv/bin/python");
            let ok = Command::new(&py)
                .args(["-c", "import mcp.client, httpx2"])
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                return missing("the MCP Python SDK (target/agent-sdks/venv)");
            }
            Some(McpClient {
                sdk,
                program: py,
                script: dir.join("mcp_client.py"),
            })
        }
    }
}

/// What to ask of an MCP server: connect to `url` (with a bearer token),
/// list the tools, and maybe call one.
#[derive(Debug, Clone, Default)]
pub struct McpCall {
    pub url: String,
    pub token: Option<String>,
    /// The tool and its arguments.
    pub call: Option<(String, Value)>,
    pub cancel_after_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    /// The Python SDK's `mode` (`auto`, `legacy`, a version).
    pub mode: Option<String>,
    /// A command serving MCP on stdio, instead of `url` (the Python client).
    pub stdio: Option<Vec<String>>,
    /// More environment for the client (and so for a stdio server).
    pub env: Vec<(String, String)>,
}

impl McpCall {
    pub fn new(url: &str, token: Option<&str>) -> McpCall {
        McpCall {
            url: url.to_string(),
            token: token.map(str::to_string),
            ..McpCall::default()
        }
    }

    pub fn call(mut self, tool: &str, args: Value) -> McpCall {
        self.call = Some((tool.to_string(), args));
        self
    }

    pub fn cancel_after(mut self, after: Duration) -> McpCall {
        self.cancel_after_ms = Some(after.as_millis() as u64);
        self
    }

    pub fn mode(mut self, mode: &str) -> McpCall {
        self.mode = Some(mode.to_string());
        self
    }

    /// Starts `command` as a stdio MCP server instead of connecting to a URL.
    pub fn stdio(mut self, command: &[&str]) -> McpCall {
        self.stdio = Some(command.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> McpCall {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
}

impl McpClient {
    pub fn command(&self, what: &McpCall) -> Command {
        let mut c = Command::new(&self.program);
        c.arg(&self.script);
        if what.stdio.is_none() {
            c.args(["--url", &what.url]);
        }
        if let Some((tool, args)) = &what.call {
            c.args(["--call", tool, "--args", &args.to_string()]);
        }
        if let Some(ms) = what.cancel_after_ms {
            c.args(["--cancel-after-ms", &ms.to_string()]);
        }
        if let Some(ms) = what.timeout_ms {
            c.args(["--timeout-ms", &ms.to_string()]);
        }
        if let Some(mode) = &what.mode {
            c.args(["--mode", mode]);
        }
        if let Some(command) = &what.stdio {
            c.arg("--stdio").args(command);
        }
        for (k, v) in &what.env {
            c.env(k, v);
        }
        c.current_dir(hosts_dir())
            .env_remove("STRANDS_TOKEN")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The token goes in the environment, not on a command line.
        if let Some(token) = &what.token {
            c.env("STRANDS_TOKEN", token);
        }
        c
    }

    /// Runs it to its end.
    pub fn run(&self, what: &McpCall) -> McpRun {
        McpRun::wait(self.spawn(what))
    }

    /// Starts it; [`McpRun::wait`] collects it.
    pub fn spawn(&self, what: &McpCall) -> Child {
        self.command(what).spawn().expect("start the MCP client")
    }
}

/// What an MCP client run printed.
#[derive(Debug, Clone)]
pub struct McpRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// One JSON object per stdout line.
    pub events: Vec<Value>,
}

impl McpRun {
    /// Waits for `child` to end (two minutes at most, then it is killed).
    pub fn wait(mut child: Child) -> McpRun {
        let stdout = read_all(child.stdout.take().expect("the client's stdout"));
        let stderr = read_all(child.stderr.take().expect("the client's stderr"));
        let until = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().expect("poll the MCP client") {
                break Some(status);
            }
            if Instant::now() >= until {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = stdout.join().unwrap_or_default();
        let events = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        McpRun {
            code: status.and_then(|s| s.code()),
            stderr: stderr.join().unwrap_or_default(),
            stdout,
            events,
        }
    }

    pub fn both(&self) -> String {
        format!(
            "MCP client exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The events named `event`.
    pub fn all(&self, event: &str) -> Vec<Value> {
        self.events
            .iter()
            .filter(|e| e["event"] == event)
            .cloned()
            .collect()
    }

    /// The one event named `event`; panics unless there is exactly one.
    #[track_caller]
    pub fn one(&self, event: &str) -> Value {
        let all = self.all(event);
        assert_eq!(all.len(), 1, "one `{event}` event wanted: {}", self.both());
        all[0].clone()
    }

    /// The tools listed.
    #[track_caller]
    pub fn tools(&self) -> Vec<String> {
        self.one("tools")["names"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The progress notifications seen.
    pub fn progress(&self) -> Vec<Value> {
        self.all("progress")
    }

    /// The text of the result's content blocks, joined by newlines.
    #[track_caller]
    pub fn result_text(&self) -> String {
        self.one("result")["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}
