//! Test support for the CLI flows: a fake OpenAI-compatible model server and
//! a sandbox that runs the real `strands` binary against it.
//!
//! The fake runs axum on its own tokio runtime in a background thread, so
//! tests are plain `#[test]` functions that spawn the binary with
//! `std::process::Command` and then read what the "model" was asked.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The benches' workflow: agent → manual_gate → agent; every rendered text
/// carries the run's `[bench-id:N]` marker (input `id`).
pub const BENCH_CHAIN: &str = r#"
version: 0
name: bench
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
inputs:
  values:
    id: unset
agents:
  preparer:
    prompt: You are the PREPARER.
  finisher:
    prompt: You are the FINISHER.
pattern:
  type: chain
  config:
    steps:
      - agent: preparer
        input: "Prepare [bench-id:{{ id }}]"
      - type: manual_gate
        id: review
        prompt: "Approve [bench-id:{{ id }}]?"
      - agent: finisher
        input: "Finish [bench-id:{{ id }}]"
"#;

// ---------------------------------------------------------------------------
// Background servers
// ---------------------------------------------------------------------------

/// Serves `app` on `listener` (non-blocking) from a thread of its own with
/// its own tokio runtime, for as long as the test process lives.
pub fn serve_on(listener: std::net::TcpListener, app: Router) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for a background server");
        rt.block_on(async move {
            let listener =
                tokio::net::TcpListener::from_std(listener).expect("a background listener");
            axum::serve(listener, app)
                .await
                .expect("the background server serves");
        });
    });
}

/// Serves `app` on a fresh port of 127.0.0.1; the port.
pub fn serve_in_background(app: Router) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("an address").port();
    serve_on(listener, app);
    port
}

// ---------------------------------------------------------------------------
// The fake model server
// ---------------------------------------------------------------------------

/// What the fake answers to request number `n` (1-based, counted over every
/// request that arrived, rate-limited ones included).
pub type ReplyFn = dyn Fn(usize, &Value) -> String + Send + Sync;

/// The OpenAI-style `tool_calls` the fake puts in its answer to request `n`
/// (build entries with [`tool_call`]); empty: a plain text answer.
pub type ToolCallsFn = dyn Fn(usize, &Value) -> Vec<Value> + Send + Sync;

/// How the fake behaves. `Behaviour::default()` answers every request at once
/// with `REPLY <n> to: <last user message>`.
pub struct Behaviour {
    /// The first `rate_limited` requests get HTTP 429 with `Retry-After: 0`.
    pub rate_limited: usize,
    /// Request number `.0` is answered only after `.1`.
    pub delay: Option<(usize, Duration)>,
    /// `usage.prompt_tokens` and `usage.completion_tokens` of every reply.
    pub usage: (u64, u64),
    pub reply: Arc<ReplyFn>,
    /// Tool calls that come with the reply text (none by default). A reply
    /// with tool calls has `finish_reason: "tool_calls"`.
    pub tool_calls: Arc<ToolCallsFn>,
    /// How long request `n` waits before its answer (none by default).
    pub latency: Option<Arc<LatencyFn>>,
}

/// The wait before answering request `n`.
pub type LatencyFn = dyn Fn(usize) -> Duration + Send + Sync;

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            rate_limited: 0,
            delay: None,
            usage: (12, 7),
            reply: Arc::new(|n, body| format!("REPLY {n} to: {}", last_user_message(body))),
            tool_calls: Arc::new(|_, _| Vec::new()),
            latency: None,
        }
    }
}

/// One answer of a scripted fake (see [`Behaviour::scripted`]).
#[derive(Debug, Clone)]
pub enum Say {
    /// A plain text answer.
    Text(String),
    /// An assistant turn that only calls tools ([`tool_call`] entries).
    Calls(Vec<Value>),
}

impl Behaviour {
    /// A fake whose answer to request `n` with body `b` is `script(n, b)`:
    /// text, or tool calls. The script is called more than once per request
    /// and must give the same answer each time.
    pub fn scripted(script: impl Fn(usize, &Value) -> Say + Send + Sync + 'static) -> Behaviour {
        let script = Arc::new(script);
        let for_calls = script.clone();
        Behaviour {
            reply: Arc::new(move |n, b| match script(n, b) {
                Say::Text(t) => t,
                Say::Calls(_) => String::new(),
            }),
            tool_calls: Arc::new(move |n, b| match for_calls(n, b) {
                Say::Text(_) => Vec::new(),
                Say::Calls(c) => c,
            }),
            ..Behaviour::default()
        }
    }
}

/// How many assistant turns a request's conversation already has (0 for
/// the first model call of an agent step).
pub fn assistant_turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// 1-based arrival number.
    pub n: usize,
    pub at: Instant,
    pub path: String,
    pub body: Value,
    /// HTTP status the fake answered with.
    pub status: u16,
    /// The text it answered (None for 429s and unknown paths).
    pub reply: Option<String>,
    /// The `tool_calls` it answered with (empty for plain text answers).
    pub tool_calls: Vec<Value>,
}

impl Exchange {
    /// The system message (the rendered agent prompt), or "".
    pub fn system(&self) -> String {
        message_of_role(&self.body, "system")
    }
    /// The last user message (the rendered step input), or "".
    pub fn user(&self) -> String {
        last_user_message(&self.body)
    }
    /// The reply text; panics for requests that were not answered with text.
    pub fn reply_text(&self) -> String {
        self.reply
            .clone()
            .unwrap_or_else(|| panic!("request #{} got no reply text", self.n))
    }
    /// The tool results in the conversation (`role: tool` messages), in
    /// order, as `(tool_call_id, content)`.
    pub fn tool_results(&self) -> Vec<(String, String)> {
        tool_results(&self.body)
    }
    /// The content of the tool result answering `call_id`; panics when the
    /// conversation has none.
    pub fn tool_result(&self, call_id: &str) -> String {
        self.tool_results()
            .into_iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, c)| c)
            .unwrap_or_else(|| {
                panic!(
                    "request #{} has no tool result for {call_id}: {:#}",
                    self.n, self.body["messages"]
                )
            })
    }
    /// The names of the tools offered in the request's `tools` field.
    pub fn tools_offered(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub fn last_user_message(body: &Value) -> String {
    message_of_role(body, "user")
}

/// The role of the last message of a request body ("" when there is none).
pub fn last_role(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["role"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The `role: tool` messages of a request body as `(tool_call_id, content)`.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    (
                        m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                        m["content"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What [`tool_model`] answers once its scripted turns are used up.
pub const FINAL: &str = "FINAL: all done";

/// A model that answers the k-th model call of a step (counted by the
/// assistant turns already in the conversation, so a resume does not shift
/// it) with `turns[k]`'s tool calls, and with [`FINAL`] after the last.
pub fn tool_model(turns: Vec<Vec<Value>>) -> FakeLlm {
    FakeLlm::start_with(Behaviour::scripted(move |_, body| {
        match turns.get(assistant_turns(body)) {
            Some(calls) => Say::Calls(calls.clone()),
            None => Say::Text(FINAL.into()),
        }
    }))
}

/// The tool calls of the open gate in a `--json` result.
pub fn gate_calls(v: &Value) -> Vec<Value> {
    v["gate"]["calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no gate.calls in {v:#}"))
        .clone()
}

/// One OpenAI `tool_calls` entry: `arguments` goes on the wire as a JSON string.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}
    })
}

fn message_of_role(body: &Value, role: &str) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == role))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

struct Shared {
    behaviour: Behaviour,
    log: Mutex<Vec<Exchange>>,
    /// Requests being answered now, and the most there ever were.
    in_flight: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

/// Counts a request in flight for as long as it lives.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = shared.in_flight.fetch_add(1, SeqCst) + 1;
        shared.peak.fetch_max(now, SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A running fake server; it lives until the test process exits.
pub struct FakeLlm {
    /// `http://127.0.0.1:PORT/v1`, for `runtime.host`.
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeLlm {
    pub fn start() -> FakeLlm {
        FakeLlm::start_with(Behaviour::default())
    }

    pub fn start_with(behaviour: Behaviour) -> FakeLlm {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake model server");
        listener
            .set_nonblocking(true)
            .expect("make the fake's listener non-blocking");
        let port = listener.local_addr().expect("fake's address").port();
        let shared = Arc::new(Shared {
            behaviour,
            log: Mutex::new(Vec::new()),
            in_flight: Default::default(),
            peak: Default::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .fallback(unknown_path)
            .with_state(shared.clone());
        serve_on(listener, app);
        FakeLlm {
            url: format!("http://127.0.0.1:{port}/v1"),
            shared,
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Exchange> {
        self.shared.log.lock().expect("fake log").clone()
    }

    pub fn count(&self) -> usize {
        self.shared.log.lock().expect("fake log").len()
    }

    /// The most requests the fake was answering at one time.
    pub fn peak_in_flight(&self) -> usize {
        self.shared.peak.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Request number `n` (1-based).
    pub fn request(&self, n: usize) -> Exchange {
        let log = self.requests();
        log.get(n - 1)
            .cloned()
            .unwrap_or_else(|| panic!("the fake got {} requests, not #{n}", log.len()))
    }

    pub fn last(&self) -> Exchange {
        let log = self.requests();
        log.last().cloned().expect("the fake got no request")
    }

    /// The requests whose system prompt contains `needle` (one agent's calls).
    pub fn calls_of(&self, needle: &str) -> Vec<Exchange> {
        self.requests()
            .into_iter()
            .filter(|e| e.system().contains(needle))
            .collect()
    }

    /// The one request of an agent; panics unless there is exactly one.
    pub fn only_call_of(&self, needle: &str) -> Exchange {
        let calls = self.calls_of(needle);
        assert_eq!(
            calls.len(),
            1,
            "expected exactly one request with system prompt containing {needle:?}, got {}: {:#?}",
            calls.len(),
            self.requests()
        );
        calls[0].clone()
    }

    /// Waits until at least `n` requests have arrived.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) {
        let until = Instant::now() + timeout;
        while self.count() < n {
            assert!(
                Instant::now() < until,
                "the fake got {} requests within {timeout:?}, wanted {n}",
                self.count()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

async fn chat(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let _counted = InFlight::enter(&shared);
    let at = Instant::now();
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let b = &shared.behaviour;
    let n = {
        let mut log = shared.log.lock().expect("fake log");
        let n = log.len() + 1;
        let (status, reply, tool_calls) = if n <= b.rate_limited {
            (429, None, Vec::new())
        } else {
            (200, Some((b.reply)(n, &body)), (b.tool_calls)(n, &body))
        };
        log.push(Exchange {
            n,
            at,
            path: "/v1/chat/completions".into(),
            body,
            status,
            reply,
            tool_calls,
        });
        n
    };
    if let Some((which, d)) = b.delay {
        if which == n {
            tokio::time::sleep(d).await;
        }
    }
    if let Some(latency) = &b.latency {
        tokio::time::sleep(latency(n)).await;
    }
    if n <= b.rate_limited {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "0")],
            Json(json!({"error": {"message": "rate limited", "type": "rate_limit"}})),
        )
            .into_response();
    }
    let (text, tool_calls) = {
        let log = shared.log.lock().expect("fake log");
        (
            log[n - 1].reply.clone().unwrap_or_default(),
            log[n - 1].tool_calls.clone(),
        )
    };
    if body_streams(&shared, n) {
        return streamed(n, &text, &tool_calls, b.usage);
    }
    let (message, finish) = if tool_calls.is_empty() {
        (json!({"role": "assistant", "content": text}), "stop")
    } else {
        (
            json!({"role": "assistant", "content": text, "tool_calls": tool_calls}),
            "tool_calls",
        )
    };
    Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish
        }],
        "usage": {
            "prompt_tokens": b.usage.0,
            "completion_tokens": b.usage.1,
            "total_tokens": b.usage.0 + b.usage.1
        }
    }))
    .into_response()
}

/// Whether request `n` asked for a streamed answer (`"stream": true`, as
/// the agent SDKs' OpenAI models send by default).
fn body_streams(shared: &Shared, n: usize) -> bool {
    let log = shared.log.lock().expect("fake log");
    log[n - 1].body["stream"] == json!(true)
}

/// The answer to request `n` as OpenAI streams it: Server-Sent Events of
/// `chat.completion.chunk`s (the role and text, each tool call whole in
/// one delta, the finish reason, the usage), then `data: [DONE]`.
fn streamed(n: usize, text: &str, tool_calls: &[Value], usage: (u64, u64)) -> Response {
    let chunk = |choices: Value, usage: Value| {
        let mut c = json!({
            "id": format!("chatcmpl-{n}"),
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-model",
            "choices": choices,
        });
        if !usage.is_null() {
            c["usage"] = usage;
        }
        format!("data: {c}\n\n")
    };
    let delta = |d: Value| json!([{"index": 0, "delta": d, "finish_reason": null}]);
    let mut out = chunk(
        delta(json!({"role": "assistant", "content": ""})),
        Value::Null,
    );
    if !text.is_empty() {
        out.push_str(&chunk(delta(json!({"content": text})), Value::Null));
    }
    for (i, call) in tool_calls.iter().enumerate() {
        let mut call = call.clone();
        call["index"] = json!(i);
        out.push_str(&chunk(delta(json!({"tool_calls": [call]})), Value::Null));
    }
    let finish = if tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push_str(&chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        Value::Null,
    ));
    out.push_str(&chunk(
        json!([]),
        json!({
            "prompt_tokens": usage.0,
            "completion_tokens": usage.1,
            "total_tokens": usage.0 + usage.1
        }),
    ));
    out.push_str("data: [DONE]\n\n");
    (
        StatusCode::OK,
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ],
        out,
    )
        .into_response()
}

async fn unknown_path(State(shared): State<Arc<Shared>>, uri: axum::http::Uri) -> Response {
    let mut log = shared.log.lock().expect("fake log");
    let n = log.len() + 1;
    log.push(Exchange {
        n,
        at: Instant::now(),
        path: uri.path().to_string(),
        body: Value::Null,
        status: 404,
        reply: None,
        tool_calls: Vec::new(),
    });
    (StatusCode::NOT_FOUND, "no such endpoint on the fake").into_response()
}

// ---------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------

/// What one `strands` invocation did.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The one JSON object `--json` prints on stdout.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}):\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit code, showing the output when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Provider settings removed from every `strands` the tests run.
const PROVIDER_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_API_VERSION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
];

/// A temporary directory with a session store, spec files, and a working
/// directory for the binary.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = dir.path().join("store");
        Sandbox { dir, store }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a spec, replacing `$HOST` with the fake's base URL.
    pub fn spec(&self, name: &str, yaml: &str, fake: &FakeLlm) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, yaml.replace("$HOST", &fake.url)).expect("write the spec");
        path
    }

    /// `strands --store <store> --as tester ARGS`, run in the sandbox, stdin empty.
    pub fn strands(&self, args: &[&str]) -> Outcome {
        self.strands_in(self.path(), args, "")
    }

    /// The same, with `stdin` fed to the process.
    pub fn strands_stdin(&self, args: &[&str], stdin: &str) -> Outcome {
        self.strands_in(self.path(), args, stdin)
    }

    /// The same, in working directory `cwd`.
    pub fn strands_in(&self, cwd: &Path, args: &[&str], stdin: &str) -> Outcome {
        collect(self.command(cwd, args), stdin)
    }

    /// `strands ARGS` exactly as given (no `--store` added), e.g. a command
    /// line the binary printed itself.
    pub fn strands_verbatim(&self, args: &[&str]) -> Outcome {
        let cmd = self.base_command(self.path(), args);
        collect(cmd, "")
    }

    /// Starts `strands --store <store> --as tester ARGS` without waiting for it.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(self.path(), args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn strands")
    }

    /// `strands --store <store> --as WHO ARGS` with extra environment.
    pub fn strands_as(&self, who: &str, env: &[(&str, &str)], args: &[&str]) -> Outcome {
        let store = self.store.display().to_string();
        let mut all = vec!["--store", store.as_str(), "--as", who];
        all.extend_from_slice(args);
        let mut cmd = self.base_command(self.path(), &all);
        for (k, v) in env {
            cmd.env(k, v);
        }
        collect(cmd, "")
    }

    /// `strands --store <store> --as tester ARGS` with extra environment.
    pub fn strands_env(&self, env: &[(&str, &str)], args: &[&str]) -> Outcome {
        self.strands_as("tester", env, args)
    }

    /// `strands --store <store> --as tester ARGS` with its stdin a terminal
    /// (a pseudo-terminal) that is fed `input`, as a person would type it,
    /// then Ctrl-D (end of input), so a question nobody typed an answer
    /// for never hangs the test.
    pub fn strands_tty(&self, args: &[&str], input: &str) -> Outcome {
        use std::os::fd::{FromRawFd, OwnedFd};
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two new descriptors into the integers
        // given; name, termios and winsize may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here only.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut master = std::fs::File::from(master);
        let child = self
            .command(self.path(), args)
            .stdin(Stdio::from(slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strands");
        master
            .write_all(format!("{input}\x04").as_bytes())
            .expect("type into the terminal");
        let out = child.wait_with_output().expect("wait for strands");
        drop(master);
        Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let store = self.store.display().to_string();
        let mut all = vec!["--store", store.as_str(), "--as", "tester"];
        all.extend_from_slice(args);
        self.base_command(cwd, &all)
    }

    fn base_command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strands"));
        cmd.args(args)
            .current_dir(cwd)
            .env("STRANDS_RETRY_BASE_MS", "10")
            .env("STRANDS_LLM_TIMEOUT_SECS", "30")
            .env_remove("STRANDS_STORE")
            .env_remove("STRANDS_CONFIG")
            .env_remove("STRANDS_LOG")
            .env_remove("STRANDS_LOG_FORMAT")
            .env_remove("STRANDS_MAX_RETRIES")
            .env_remove("STRANDS_ADMINS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            // No collector of the machine gets the tests' traces.
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        // No provider setting of the machine reaches a test; the AWS SDK
        // reads no profile and never asks an instance metadata service.
        for var in PROVIDER_VARS {
            cmd.env_remove(var);
        }
        let empty = self.path().join("aws-config-empty");
        if !empty.exists() {
            std::fs::write(&empty, "").expect("an empty AWS config file");
        }
        cmd.env("AWS_CONFIG_FILE", &empty)
            .env("AWS_SHARED_CREDENTIALS_FILE", &empty)
            .env("AWS_EC2_METADATA_DISABLED", "true");
        cmd
    }

    /// `sessions show ID --json`.
    pub fn show(&self, id: &str) -> Value {
        let out = self.strands(&["sessions", "show", id, "--json"]);
        out.expect_code(0);
        out.json()
    }

    /// `sessions list --json`.
    pub fn list(&self) -> Value {
        let out = self.strands(&["sessions", "list", "--json"]);
        out.expect_code(0);
        out.json()
    }
}

fn collect(mut cmd: Command, stdin: &str) -> Outcome {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strands");
    {
        let mut input = child.stdin.take().expect("child stdin");
        // The child may exit without reading everything; that is fine.
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("wait for strands");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `session_id` of a `--json` result.
pub fn session_id(v: &Value) -> String {
    v["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no session_id in {v:#}"))
        .to_string()
}

/// The gate history (`gates`) of a `--json` result.
pub fn history(v: &Value) -> Vec<Value> {
    v["gates"]
        .as_array()
        .unwrap_or_else(|| panic!("no gates array in {v:#}"))
        .clone()
}

// ---------------------------------------------------------------------------
// Helpers shared by the pattern tests
// ---------------------------------------------------------------------------

/// The system message of a request body.
pub fn system_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Replies scripted per agent (matched by a word of the system prompt): the
/// k-th request of that agent gets the k-th reply, the last one again when
/// the script runs out. Other agents get the default `REPLY n to: <input>`.
pub fn per_agent(script: &[(&str, &[&str])]) -> Behaviour {
    let script: Vec<(String, Vec<String>)> = script
        .iter()
        .map(|(who, replies)| {
            (
                who.to_string(),
                replies.iter().map(|r| r.to_string()).collect(),
            )
        })
        .collect();
    let seen: Arc<Mutex<std::collections::HashMap<String, usize>>> = Arc::default();
    Behaviour {
        reply: Arc::new(move |n, body| {
            let system = system_of(body);
            for (who, replies) in &script {
                if system.contains(who.as_str()) {
                    let mut seen = seen.lock().expect("script counter");
                    let k = seen.entry(who.clone()).or_insert(0);
                    let reply = replies
                        .get(*k)
                        .or(replies.last())
                        .cloned()
                        .unwrap_or_default();
                    *k += 1;
                    return reply;
                }
            }
            format!("REPLY {n} to: {}", last_user_message(body))
        }),
        ..Behaviour::default()
    }
}

/// A spec of the compatibility suite (`tests/specs/compat/NAME`).
pub fn compat(name: &str) -> String {
    let path = format!("{}/tests/specs/compat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// `strands run SPEC --json`, expecting exit `code`.
#[track_caller]
pub fn run_json(sandbox: &Sandbox, spec: &Path, code: i32) -> Value {
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    out.expect_code(code);
    out.json()
}

/// Runs SPEC to its first pause and returns the session id.
#[track_caller]
pub fn run_paused(sandbox: &Sandbox, spec: &Path) -> String {
    let v = run_json(sandbox, spec, 19);
    assert_eq!(v["status"], "paused", "{v:#}");
    session_id(&v)
}

/// `strands resume ID ARGS --json`, expecting exit `code`.
#[track_caller]
pub fn resume_json(sandbox: &Sandbox, id: &str, args: &[&str], code: i32) -> Value {
    let mut all = vec!["resume", id];
    all.extend_from_slice(args);
    all.push("--json");
    let out = sandbox.strands(&all);
    out.expect_code(code);
    out.json()
}

/// `strands validate` on YAML must exit 3 with each `(line, message)`
/// reported at `bad.yaml:line` and a hint.
#[track_caller]
pub fn invalid_spec(yaml: &str, expect: &[(&str, &str)]) {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("bad.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    for (at, message) in expect {
        let line = all
            .lines()
            .find(|l| l.contains(&format!("bad.yaml:{at}")))
            .unwrap_or_else(|| panic!("nothing at bad.yaml:{at} in:\n{all}"));
        assert!(line.contains(message), "{line}\n--- all\n{all}");
    }
    assert!(all.contains("hint:"), "{all}");
}

pub mod agent_sdks;
pub mod api;
pub mod browser;
pub mod card_schema;
pub mod claude_code;
pub mod crash;
pub mod fake_anthropic;
pub mod fake_mcp;
pub mod fake_slack;
pub mod fake_smtp;
pub mod fake_teams;
pub mod figures;
pub mod oidc_provider;
pub mod otlp;
pub mod playground;
pub mod rabbitmq;
pub mod service;
pub mod slack_story;
pub mod syscall_kill;
pub mod target;
pub mod teams_driver;
pub mod wire_fakes;

/// Waits until `fact` holds, checking every 20 ms; fails naming `what` (and
/// what `describe` says then) when it does not hold within `within`. For a
/// test that waits on what it expects rather than sleeping a guess.
#[track_caller]
pub fn wait_until(
    within: Duration,
    what: &str,
    mut fact: impl FnMut() -> bool,
    describe: impl Fn() -> String,
) {
    let until = Instant::now() + within;
    while !fact() {
        assert!(
            Instant::now() < until,
            "{what}: not within {within:?}\n{}",
            describe()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the wall clock is past `deadline` (an RFC 3339 instant, as a
/// gate's `timeout_at`), and a little more so that a process reading its
/// own clock sees it passed too.
#[track_caller]
pub fn wait_past(deadline: &Value) {
    let at = deadline
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .unwrap_or_else(|| panic!("an RFC 3339 instant, not {deadline}"));
    let left = (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    assert!(left < Duration::from_secs(60), "{deadline} is far off");
    std::thread::sleep(left + Duration::from_millis(50));
}
