//! MCP servers as agent tools, through the `strands` binary: a fake model
//! that asks for MCP tools (OpenAI `tool_calls`), the stdio fixture server
//! `tests/fixtures/mcp_server.py` (which records each `send_email` call in a
//! file, so every scenario counts what really ran), and a small Streamable
//! HTTP MCP server in this file.

use crate::common::{
    gate_calls, history, session_id, tool_call, tool_model, FakeLlm, Sandbox, FINAL,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server.py")
        .display()
        .to_string()
}

/// One agent step. `$SERVER` is the keys of the `mail` server entry after
/// `id` (indented six spaces), `$AGENT` the agent's tool configuration.
const SPEC: &str = r#"
version: 0
name: mcp-tools
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  timeout_seconds: $TIMEOUT
  mcp:
    - id: mail
$SERVER
agents:
  worker:
    prompt: You are the WORKER.
$AGENT
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: Do the job.
"#;

/// The fixture as the `mail` server, recording into `$LOG`.
const STDIO_SERVER: &str = r#"      command: python3
      args: ["$FIXTURE"]
      env:
        MCP_FIXTURE_LOG: $LOG
        MCP_FIXTURE_PIDFILE: $PIDS"#;

const MAIL_AGENT: &str = "    tools: [mail]";

struct Setup {
    sandbox: Sandbox,
    fake: FakeLlm,
    spec: String,
}

impl Setup {
    fn new(server: &str, agent: &str, fake: FakeLlm) -> Setup {
        Setup::with_timeout(server, agent, fake, 20)
    }

    fn with_timeout(server: &str, agent: &str, fake: FakeLlm, timeout: u64) -> Setup {
        let sandbox = Sandbox::new();
        let yaml = SPEC
            .replace("$SERVER", server)
            .replace("$AGENT", agent)
            .replace("$TIMEOUT", &timeout.to_string())
            .replace("$FIXTURE", &fixture())
            .replace(
                "$LOG",
                &sandbox.path().join("sent.log").display().to_string(),
            )
            .replace("$PIDS", &sandbox.path().join("pids").display().to_string());
        let spec = sandbox.spec("mcp.yaml", &yaml, &fake).display().to_string();
        Setup {
            sandbox,
            fake,
            spec,
        }
    }

    /// The `send_email` calls the fixture recorded, as JSON.
    fn sent(&self) -> Vec<Value> {
        std::fs::read_to_string(self.sandbox.path().join("sent.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// The pids of every fixture process started so far.
    fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.sandbox.path().join("pids"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().parse().expect("a pid"))
            .collect()
    }

    fn run(&self, code: i32) -> crate::common::Outcome {
        let out = self.sandbox.strands(&["run", &self.spec, "--json"]);
        out.expect_code(code);
        out
    }

    fn resume(&self, id: &str, args: &[&str], code: i32) -> crate::common::Outcome {
        let mut all = vec!["resume", id];
        all.extend_from_slice(args);
        all.push("--json");
        let out = self.sandbox.strands(&all);
        out.expect_code(code);
        out
    }

    fn stored(&self, id: &str) -> strands::model::Session {
        let store =
            strands::store::sled::SledStore::open(&self.sandbox.store).expect("open the store");
        store.get(id).expect("the session")
    }
}

fn send_email(id: &str) -> Value {
    tool_call(
        id,
        "mail__send_email",
        json!({"to": "ceo@example.com", "subject": "Quarterly numbers"}),
    )
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[track_caller]
fn assert_servers_stopped(s: &Setup) {
    let pids = s.pids();
    assert!(!pids.is_empty(), "the fixture never started");
    let until = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|p| gone(*p)) {
        assert!(
            Instant::now() < until,
            "MCP server processes outlived strands: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------
// Approval: MCP tools ask by default
// ---------------------------------------------------------------------------

#[test]
fn an_mcp_call_waits_for_a_human_and_a_rejected_one_never_runs() {
    let s = Setup::new(
        STDIO_SERVER,
        MAIL_AGENT,
        tool_model(vec![vec![send_email("call_1")]]),
    );
    let out = s.run(19);
    let v = out.json();
    assert_eq!(v["status"], "paused", "{v:#}");
    assert_eq!(v["gate"]["kind"], "tool_call", "{v:#}");
    let listed = gate_calls(&v);
    assert_eq!(listed.len(), 1, "{v:#}");
    let c = &listed[0];
    assert_eq!(c["tool"], "mail__send_email");
    assert_eq!(c["state"]["state"], "waiting");
    let what = c["request"]["description"].as_str().unwrap_or_default();
    assert!(
        what.contains("send_email") && what.contains("`mail`") && what.contains("ceo@example.com"),
        "the request says what the call would do: {c:#}"
    );
    assert_eq!(c["request"]["reversible"], false, "{c:#}");
    assert_eq!(c["request"]["risk"], "medium", "{c:#}");
    // Every tool the server lists is offered, under `mail__`.
    let offered = s.fake.request(1).tools_offered();
    for t in [
        "mail__add",
        "mail__send_email",
        "mail__getenv",
        "mail__fail",
    ] {
        assert!(offered.contains(&t.to_string()), "{t} offered: {offered:?}");
    }
    let first = s.fake.request(1);
    let add = &first.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "mail__add")
        .expect("mail__add")["function"];
    assert_eq!(add["description"], "Adds two numbers.");
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
    assert_eq!(s.sent().len(), 0, "nothing ran before the answer");
    assert_servers_stopped(&s);

    let id = session_id(&v);
    let v = s
        .resume(&id, &["--reject", "--reason", "not today"], 0)
        .json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(v["output"], FINAL);
    assert_eq!(s.sent().len(), 0, "a rejected call never runs");
    assert_eq!(s.fake.count(), 2);
    assert_eq!(
        s.fake.request(2).tool_result("call_1"),
        "denied by tester: not today"
    );
    assert_servers_stopped(&s);
}

#[test]
fn an_approved_mcp_call_runs_exactly_once_and_the_model_reads_its_result() {
    let s = Setup::new(
        STDIO_SERVER,
        MAIL_AGENT,
        tool_model(vec![vec![send_email("call_1")]]),
    );
    let id = session_id(&s.run(19).json());
    assert_eq!(s.sent().len(), 0);

    let done = s.resume(&id, &["--approve"], 0);
    assert!(
        !done.stderr.contains("WARN") && !done.stderr.contains("rmcp"),
        "no SDK noise on stderr: {}",
        done.stderr
    );
    let v = done.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    let sent = s.sent();
    assert_eq!(sent.len(), 1, "exactly one email: {sent:?}");
    assert_eq!(
        sent[0],
        json!({"to": "ceo@example.com", "subject": "Quarterly numbers"})
    );
    assert_eq!(
        s.fake.request(2).tool_result("call_1"),
        "sent to ceo@example.com"
    );
    assert_eq!(history(&v)[0]["decision"]["action"], "approve");

    // Finished: no answer or resume runs it again.
    s.sandbox.strands(&["resume", &id]).expect_code(17);
    s.sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(17);
    assert_eq!(s.sent().len(), 1, "still exactly one");
    assert_servers_stopped(&s);
}

#[test]
fn edited_mcp_arguments_are_checked_against_the_servers_schema_after_a_restart() {
    let s = Setup::new(
        STDIO_SERVER,
        MAIL_AGENT,
        tool_model(vec![vec![send_email("call_1")]]),
    );
    let id = session_id(&s.run(19).json());
    let before = s.stored(&id);

    // This process never listed the server: it connects again to check.
    for bad in [
        r#"{"to": 5, "subject": "x"}"#,
        r#"{"to": "a@example.com"}"#,
        r#"{"to": "a@example.com", "subject": "x", "bcc": "spy@example.com"}"#,
    ] {
        let out = s.resume(&id, &["--edit-args", bad], 2);
        assert!(
            out.stderr.contains("do not fit its schema"),
            "{bad}: {}",
            out.stderr
        );
        let after = s.stored(&id);
        assert_eq!(
            after.rev, before.rev,
            "{bad}: a refused edit writes nothing"
        );
    }
    assert_eq!(s.sent().len(), 0);
    // Another tool's name cannot sneak in through an edit.
    let out = s.resume(
        &id,
        &[
            "--edit-args",
            r#"{"name": "mail__add", "arguments": {"a": 1, "b": 2}}"#,
        ],
        2,
    );
    assert!(
        out.stderr.contains("cannot change which tool runs"),
        "{}",
        out.stderr
    );

    let v = s
        .resume(
            &id,
            &[
                "--edit-args",
                r#"{"to": "board@example.com", "subject": "Final numbers", "body": "see attached"}"#,
            ],
            0,
        )
        .json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.sent(),
        vec![
            json!({"to": "board@example.com", "subject": "Final numbers", "body": "see attached"})
        ]
    );
    // (The engine may tell the model that a human edited the call.)
    let result = s.fake.request(2).tool_result("call_1");
    assert!(result.ends_with("sent to board@example.com"), "{result}");
    assert_servers_stopped(&s);
}

#[test]
fn allowed_tools_run_an_mcp_tool_without_asking_and_the_result_reaches_the_model() {
    let agent = "    tools: [mail]\n    allowed_tools: [\"mail__add\"]";
    let add = tool_call("call_add", "mail__add", json!({"a": 2, "b": 3}));
    let fail = tool_call("call_fail", "mail__fail", json!({}));
    let s = Setup::new(STDIO_SERVER, agent, tool_model(vec![vec![add], vec![fail]]));
    let v = s.run(19).json();
    // `mail__add` ran at once; `mail__fail` is not listed, so it asks.
    assert_eq!(s.fake.count(), 2, "{v:#}");
    assert_eq!(s.fake.request(2).tool_result("call_add"), "2 + 3 = 5");
    let listed = gate_calls(&v);
    assert_eq!(listed.len(), 1, "{v:#}");
    assert_eq!(listed[0]["tool"], "mail__fail");
    let id = session_id(&v);
    let v = s.resume(&id, &["--approve"], 0).json();
    assert_eq!(v["status"], "completed", "{v:#}");
    // The server's isError reaches the model as an error result.
    let req = s.fake.request(3);
    assert!(
        req.tool_result("call_fail").contains("the mailbox is full"),
        "{:#}",
        req.body["messages"]
    );
    assert_eq!(s.sent().len(), 0);
    assert_servers_stopped(&s);
}

#[test]
fn require_approval_false_on_the_server_runs_its_tools_without_asking() {
    let server = format!("{STDIO_SERVER}\n      require_approval: false");
    let s = Setup::new(
        &server,
        MAIL_AGENT,
        tool_model(vec![vec![send_email("call_1")]]),
    );
    let v = s.run(0).json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(s.sent().len(), 1);
    assert_eq!(history(&v).len(), 0, "no gate opened: {v:#}");
    // The agent's own entry wins over the server's.
    let agent = "    tools:\n      - name: mail\n        require_approval: true";
    let s = Setup::new(&server, agent, tool_model(vec![vec![send_email("call_1")]]));
    s.run(19);
    assert_eq!(s.sent().len(), 0);
}

#[test]
fn a_server_gets_its_env_but_not_strands_credentials() {
    let server = format!("{STDIO_SERVER}\n        GREETING: hello");
    let agent = "    tools: [mail]\n    allowed_tools: [\"*\"]";
    let calls = vec![
        tool_call("c1", "mail__getenv", json!({"name": "GREETING"})),
        tool_call("c2", "mail__getenv", json!({"name": "OPENAI_API_KEY"})),
        tool_call("c3", "mail__getenv", json!({"name": "STRANDS_TEST_SECRET"})),
    ];
    let s = Setup::new(&server, agent, tool_model(vec![calls]));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strands"))
        .args([
            "--store",
            &s.sandbox.store.display().to_string(),
            "--as",
            "tester",
        ])
        .args(["run", &s.spec, "--json"])
        .current_dir(s.sandbox.path())
        .env("OPENAI_API_KEY", "sk-should-stay-home")
        .env("STRANDS_TEST_SECRET", "do-not-pass")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run strands");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let req = s.fake.request(2);
    assert_eq!(req.tool_result("c1"), "hello");
    assert_eq!(req.tool_result("c2"), "(unset)");
    assert_eq!(req.tool_result("c3"), "(unset)");
}

// ---------------------------------------------------------------------------
// Servers that fail
// ---------------------------------------------------------------------------

#[test]
fn a_server_command_that_does_not_exist_fails_the_run_naming_the_server() {
    let server = "      command: strands-no-such-mcp-server-here\n      args: [\"--stdio\"]";
    let s = Setup::new(
        server,
        MAIL_AGENT,
        tool_model(vec![vec![send_email("call_1")]]),
    );
    let out = s.run(10);
    let v = out.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    let error = v["error"].to_string();
    assert!(
        error.contains("MCP server `mail`") && error.contains("strands-no-such-mcp-server-here"),
        "{error}"
    );
    assert!(out.stderr.contains("MCP server `mail`"), "{}", out.stderr);
    assert_eq!(
        s.fake.count(),
        0,
        "the model is not asked without its tools"
    );
}

#[test]
fn a_server_that_exits_or_never_answers_fails_within_the_timeout() {
    // Exits at once, saying why on stderr.
    let server = "      command: python3\n      args: [\"-c\", \"import sys; sys.stderr.write('missing config file'); sys.exit(3)\"]";
    let s = Setup::new(server, MAIL_AGENT, tool_model(vec![]));
    let v = s.run(10).json();
    let error = v["error"].to_string();
    assert!(
        error.contains("MCP server `mail`") && error.contains("missing config file"),
        "{error}"
    );

    // Never answers the handshake.
    let server = "      command: sleep\n      args: [\"30\"]";
    let s = Setup::with_timeout(server, MAIL_AGENT, tool_model(vec![]), 1);
    let started = Instant::now();
    let v = s.run(10).json();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let error = v["error"].to_string();
    assert!(
        error.contains("MCP server `mail`") && error.contains("within 1s"),
        "{error}"
    );
}

#[test]
fn tools_whose_names_collide_after_sanitizing_are_refused() {
    let server = format!("{STDIO_SERVER}\n        MCP_FIXTURE_EXTRA_TOOLS: send.email");
    let s = Setup::new(&server, MAIL_AGENT, tool_model(vec![]));
    let v = s.run(10).json();
    let error = v["error"].to_string();
    assert!(
        error.contains("`send_email`")
            && error.contains("`send.email`")
            && error.contains("mail__send_email"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

fn validate(yaml: &str) -> crate::common::Outcome {
    let sandbox = Sandbox::new();
    let fake = FakeLlm::start();
    let path = sandbox.spec("v.yaml", yaml, &fake);
    sandbox.strands(&["validate", &path.display().to_string()])
}

fn spec_with(server: &str, agent: &str) -> String {
    SPEC.replace("$SERVER", server)
        .replace("$AGENT", agent)
        .replace("$TIMEOUT", "5")
}

#[test]
fn mcp_entries_validate_with_locations() {
    let ok = validate(&spec_with(
        "      command: python3 server.py --stdio\n      env: {PORT: 8080, DEBUG: true}\n      risk: high",
        "    tools: [mail]\n    allowed_tools: [\"mail__send_email\", \"!mail__delete\"]",
    ));
    ok.expect_code(0);
    let ok = validate(&spec_with(
        "      url: https://mcp.example.com/mcp\n      headers: {Authorization: \"Bearer s3cret-token\"}",
        "    tools:\n      - name: mail\n        approval_prompt: \"Send {{ args.to }}?\"",
    ));
    ok.expect_code(0);

    // The spec's line numbers: `- id: mail` is line 11, its keys from 12.
    let cases: Vec<(String, &str, &str)> = vec![
        (
            spec_with("      command: x\n      comand: y", MAIL_AGENT),
            ":13:",
            "comand",
        ),
        (
            spec_with("      command: x\n      url: https://a.example/mcp", MAIL_AGENT),
            ":13:",
            "both `command` and `url`",
        ),
        (
            spec_with("      description: nothing to run", MAIL_AGENT),
            ":11:",
            "neither `command` nor `url`",
        ),
        (
            spec_with("      url: ftp://a.example/mcp", MAIL_AGENT),
            ":12:",
            "not an http(s) URL",
        ),
        (
            spec_with(
                "      url: https://a.example/mcp\n      headers: {\"Mcp-Session-Id\": \"s3cret-token\"}",
                MAIL_AGENT,
            ),
            ":13:",
            "set by the MCP transport",
        ),
        (
            spec_with("      command: x\n      risk: extreme", MAIL_AGENT),
            ":11:",
            "risk `extreme`",
        ),
        (
            spec_with("      command: x", "    tools: [mail]\n    allowed_tools: [mail]"),
            ":17:",
            "names MCP server `mail`",
        ),
        (
            spec_with(
                "      command: x",
                "    tools: [mail]\n    allowed_tools: [\"mail__send.email\"]",
            ),
            ":17:",
            "mail__send.email",
        ),
        (
            spec_with("      command: x", "    tools: [post]"),
            ":16:",
            "unknown tool `post`",
        ),
        (
            SPEC.replace("- id: mail", "- id: my__mail")
                .replace("$SERVER", "      command: x")
                .replace("$AGENT", "")
                .replace("$TIMEOUT", "5"),
            ":11:",
            "`my__mail`",
        ),
        (
            SPEC.replace("- id: mail", "- id: file_read")
                .replace("$SERVER", "      command: x")
                .replace("$AGENT", "")
                .replace("$TIMEOUT", "5"),
            ":11:",
            "names a built-in tool",
        ),
    ];
    for (yaml, at, what) in cases {
        let out = validate(&yaml);
        assert_eq!(out.code, 3, "{what}: {}\n{yaml}", out.stderr);
        assert!(
            out.stderr.contains(at) && out.stderr.contains(what),
            "expected {at} and {what:?} in:\n{}\n--- spec\n{yaml}",
            out.stderr
        );
        assert!(!out.stderr.contains("s3cret"), "{}", out.stderr);
    }
}

// ---------------------------------------------------------------------------
// A Streamable HTTP server
// ---------------------------------------------------------------------------

struct HttpShared {
    /// Every request: method, JSON-RPC method (if any), Authorization header.
    seen: Mutex<Vec<(String, String, Option<String>)>>,
    sent: Mutex<Vec<Value>>,
}

/// A stateless Streamable HTTP MCP server on 127.0.0.1 with one tool,
/// `send_email`; it answers every JSON-RPC request with a JSON body.
struct HttpMcp {
    url: String,
    shared: Arc<HttpShared>,
}

impl HttpMcp {
    fn start() -> HttpMcp {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("address").port();
        let shared = Arc::new(HttpShared {
            seen: Mutex::new(Vec::new()),
            sent: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(http_mcp).with_state(shared.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        HttpMcp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            shared,
        }
    }
}

async fn http_mcp(
    State(shared): State<Arc<HttpShared>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rpc = msg["method"].as_str().unwrap_or_default().to_string();
    shared
        .seen
        .lock()
        .expect("seen")
        .push((method.to_string(), rpc.clone(), auth));
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match rpc.as_str() {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "http-fixture", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{
            "name": "send_email",
            "description": "Sends an email over HTTP.",
            "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
        }]}),
        "tools/call" => {
            shared
                .sent
                .lock()
                .expect("sent")
                .push(msg["params"]["arguments"].clone());
            json!({"content": [{"type": "text", "text": format!("sent over HTTP to {}", msg["params"]["arguments"]["to"].as_str().unwrap_or_default())}]})
        }
        _ => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}))
                .into_response()
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

#[test]
fn an_http_server_gets_its_headers_and_its_calls_wait_for_approval_too() {
    let mcp = HttpMcp::start();
    let server = format!(
        "      url: {}\n      headers:\n        Authorization: Bearer s3cret-token",
        mcp.url
    );
    let call = tool_call(
        "call_h",
        "mail__send_email",
        json!({"to": "ops@example.com"}),
    );
    let s = Setup::new(&server, MAIL_AGENT, tool_model(vec![vec![call]]));
    let out = s.run(19);
    let v = out.json();
    assert_eq!(gate_calls(&v)[0]["tool"], "mail__send_email", "{v:#}");
    assert_eq!(mcp.shared.sent.lock().expect("sent").len(), 0);
    let id = session_id(&v);
    let done = s.resume(&id, &["--approve"], 0);
    assert_eq!(
        *mcp.shared.sent.lock().expect("sent"),
        vec![json!({"to": "ops@example.com"})]
    );
    assert_eq!(
        s.fake.request(2).tool_result("call_h"),
        "sent over HTTP to ops@example.com"
    );
    let seen = mcp.shared.seen.lock().expect("seen").clone();
    let posts: Vec<_> = seen.iter().filter(|(m, _, _)| m == "POST").collect();
    assert!(
        posts.iter().any(|(_, rpc, _)| rpc == "initialize")
            && posts.iter().any(|(_, rpc, _)| rpc == "tools/call"),
        "{seen:?}"
    );
    assert!(
        posts
            .iter()
            .all(|(_, _, auth)| auth.as_deref() == Some("Bearer s3cret-token")),
        "every request carries the header: {seen:?}"
    );
    // The secret appears nowhere strands writes.
    for text in [&out.stdout, &out.stderr, &done.stdout, &done.stderr] {
        assert!(!text.contains("s3cret-token"), "{text}");
    }
}
