//! strands-cli's native tools and `context_policy` through the `strands`
//! binary: a fake model that asks for the tools (OpenAI `tool_calls`), a
//! fake web (a page, DuckDuckGo's HTML results, Tavily's API) on
//! 127.0.0.1, and a workspace whose files the tools read.
//!
//! Each scenario checks what the model was told (the tool results in its
//! next request) and what reached the fakes.

use crate::common::{
    assistant_turns, gate_calls, resume_json, run_json, serve_in_background, session_id, tool_call,
    tool_model, Behaviour, Exchange, FakeLlm, Sandbox, Say, FINAL,
};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------------------
// Specs and fakes
// ---------------------------------------------------------------------------

/// One agent step; `$TOOLS` are more keys of `tools:`, `$CONTEXT` a
/// top-level `context_policy`, `$AGENT` keys of the agent.
const ONE_STEP: &str = r#"
version: 0
name: native-tools
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: $WS
$TOOLS
$CONTEXT
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

struct Setup {
    sandbox: Sandbox,
    fake: FakeLlm,
    spec: PathBuf,
}

impl Setup {
    fn new(tools: &str, context: &str, agent: &str, fake: FakeLlm) -> Setup {
        let sandbox = Sandbox::new();
        let ws = sandbox.path().join("ws");
        std::fs::create_dir_all(&ws).expect("the workspace");
        let yaml = ONE_STEP
            .replace("$WS", &ws.display().to_string())
            .replace("$TOOLS", tools)
            .replace("$CONTEXT", context)
            .replace("$AGENT", agent);
        let spec = sandbox.spec("native.yaml", &yaml, &fake);
        Setup {
            sandbox,
            fake,
            spec,
        }
    }

    fn ws(&self) -> PathBuf {
        self.sandbox.path().join("ws")
    }

    fn spec(&self) -> &str {
        self.spec.to_str().expect("utf-8")
    }

    /// `strands run SPEC --json` with `env`, expecting `code`.
    fn run(&self, env: &[(&str, &str)], code: i32) -> (Value, String) {
        let out = self
            .sandbox
            .strands_as("tester", env, &["run", self.spec(), "--json"]);
        out.expect_code(code);
        (out.json(), out.stderr.clone())
    }

    /// The model's last request: it carries every tool result.
    fn last(&self) -> Exchange {
        self.fake.last()
    }
}

/// What the fake web received.
#[derive(Debug, Clone)]
struct Hit {
    method: String,
    path: String,
    query: String,
    authorization: Option<String>,
    body: String,
}

#[derive(Clone, Default)]
struct Web {
    hits: Arc<Mutex<Vec<Hit>>>,
}

const PAGE: &str = "<html><head><title>t</title><script>track()</script></head><body>\
    <nav>menu</nav><h1>Release notes</h1><p>Version <b>2.0</b> is out.</p></body></html>";

const DDG: &str = r#"<html><body><div class="results">
  <div class="result results_links result--ad"><a class="result__a" href="https://ads.example/">Sponsored</a></div>
  <div class="result results_links web-result">
    <h2><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=1">Rust Programming Language</a></h2>
    <a class="result__snippet">A language empowering everyone.</a>
  </div>
  <div class="result results_links web-result">
    <h2><a class="result__a" href="https://doc.rust-lang.org/book/">The Book</a></h2>
    <a class="result__snippet">Learn Rust.</a>
  </div>
</div></body></html>"#;

impl Web {
    /// Serves `/page` (HTML), `/html/` (DuckDuckGo's results page) and
    /// `POST /search` (Tavily: `Bearer tvly-test-key` or 401).
    fn start() -> (Web, String) {
        let web = Web::default();
        let app = Router::new()
            .route("/page", get(page))
            .route("/html/", get(ddg))
            .route("/search", post(tavily))
            .with_state(web.clone());
        let port = serve_in_background(app);
        (web, format!("http://127.0.0.1:{port}"))
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().expect("hits").clone()
    }

    fn record(
        &self,
        method: &str,
        path: &str,
        query: Option<String>,
        headers: &HeaderMap,
        body: &[u8],
    ) {
        self.hits.lock().expect("hits").push(Hit {
            method: method.into(),
            path: path.into(),
            query: query.unwrap_or_default(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: String::from_utf8_lossy(body).into_owned(),
        });
    }
}

async fn page(State(web): State<Web>, headers: HeaderMap) -> Response {
    web.record("GET", "/page", None, &headers, b"");
    ([("content-type", "text/html; charset=utf-8")], PAGE).into_response()
}

async fn ddg(State(web): State<Web>, RawQuery(q): RawQuery, headers: HeaderMap) -> Response {
    web.record("GET", "/html/", q, &headers, b"");
    ([("content-type", "text/html")], DDG).into_response()
}

async fn tavily(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    web.record("POST", "/search", None, &headers, &body);
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tvly-test-key") {
        return (
            StatusCode::UNAUTHORIZED,
            r#"{"detail": {"error": "Unauthorized: missing or invalid API key."}}"#,
        )
            .into_response();
    }
    let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    axum::Json(json!({
        "query": asked["query"],
        "answer": "Rust is a systems programming language.",
        "results": [{"title": "Rust", "url": "https://www.rust-lang.org", "content": "Fast and safe.", "score": 0.98}],
        "response_time": 0.5
    }))
    .into_response()
}

fn parsed(content: &str) -> Value {
    serde_json::from_str(content).unwrap_or_else(|e| panic!("not JSON ({e}): {content}"))
}

// ---------------------------------------------------------------------------
// calculator, current_time
// ---------------------------------------------------------------------------

#[test]
fn calculator_and_current_time_come_from_tools_python_and_run_without_asking() {
    let fake = tool_model(vec![vec![
        tool_call(
            "c1",
            "calculator",
            json!({"expression": "(6 + 1) * 2 ** 3 // 4"}),
        ),
        tool_call(
            "c2",
            "calculator",
            json!({"expression": "__import__('os').system('touch pwned')"}),
        ),
        tool_call("c3", "current_time", json!({"format": "unix"})),
        tool_call(
            "c4",
            "current_time",
            json!({"timezone": "utc", "format": "iso"}),
        ),
    ]]);
    // strands-cli's form: the tools under `tools.python`, the agent without
    // a `tools` list gets them all.
    let s = Setup::new(
        "  python:\n    - calculator\n    - strands_cli.tools.current_time",
        "",
        "",
        fake,
    );
    let before = chrono::Utc::now().timestamp();
    let (v, _) = s.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let first = s.fake.request(1);
    let mut offered = first.tools_offered();
    offered.sort();
    assert_eq!(offered, ["calculator", "current_time"]);
    let last = s.last();
    assert_eq!(last.tool_result("c1"), "(6 + 1) * 2 ** 3 // 4 = 14");
    assert_eq!(
        last.tool_result("c2"),
        "Error: Unsupported expression type: Call"
    );
    assert!(!s.sandbox.path().join("pwned").exists());
    assert!(!s.ws().join("pwned").exists());
    let unix: i64 = last.tool_result("c3").parse().expect("a unix timestamp");
    assert!(
        (before - 5..=chrono::Utc::now().timestamp() + 5).contains(&unix),
        "{unix}"
    );
    let iso = last.tool_result("c4");
    assert!(
        chrono::DateTime::parse_from_rfc3339(&iso).is_ok() && iso.ends_with("+00:00"),
        "{iso}"
    );
    assert_eq!(last.reply_text(), FINAL);
}

// ---------------------------------------------------------------------------
// grep, head, tail, search (context_policy.retrieval.jit_tools)
// ---------------------------------------------------------------------------

#[test]
fn jit_retrieval_tools_read_the_workspace_and_nothing_else() {
    let fake = tool_model(vec![vec![
        tool_call("c1", "head", json!({"path": "logs/app.log", "lines": 2})),
        tool_call("c2", "tail", json!({"path": "logs/app.log", "lines": 1})),
        tool_call(
            "c3",
            "grep",
            json!({"pattern": "^ERROR", "path": "logs/app.log", "context_lines": 0}),
        ),
        tool_call(
            "c4",
            "search",
            json!({"query": "TIMEOUT", "path": "logs/app.log"}),
        ),
        tool_call("c5", "head", json!({"path": "../secret.txt"})),
        tool_call("c6", "grep", json!({"pattern": "top", "path": "leak"})),
    ]]);
    let s = Setup::new(
        "",
        "context_policy:\n  retrieval:\n    jit_tools: [grep, head, tail, search]",
        "",
        fake,
    );
    std::fs::create_dir_all(s.ws().join("logs")).expect("logs");
    std::fs::write(
        s.ws().join("logs/app.log"),
        "boot ok\nERROR disk full\nretry\nERROR timeout talking to db\ndone\n",
    )
    .expect("the log");
    std::fs::write(s.sandbox.path().join("secret.txt"), "top secret").expect("secret");
    std::os::unix::fs::symlink(s.sandbox.path().join("secret.txt"), s.ws().join("leak"))
        .expect("a link out");
    let (v, _) = s.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let mut offered = s.fake.request(1).tools_offered();
    offered.sort();
    assert_eq!(offered, ["grep", "head", "search", "tail"]);
    let last = s.last();
    assert_eq!(
        last.tool_result("c1"),
        "First 2 line(s) from logs/app.log:\n\n   1 | boot ok\n   2 | ERROR disk full"
    );
    assert_eq!(
        last.tool_result("c2"),
        "Last 1 line(s) from logs/app.log:\n\n   5 | done"
    );
    let grep = last.tool_result("c3");
    assert!(
        grep.starts_with("Found 2 match(es) in logs/app.log:"),
        "{grep}"
    );
    assert!(
        grep.contains(">    4 | ERROR timeout talking to db"),
        "{grep}"
    );
    assert_eq!(
        last.tool_result("c4"),
        "Found 1 match(es) for 'TIMEOUT' in logs/app.log:\n\n   4 | ERROR >>>timeout<<< talking to db"
    );
    for id in ["c5", "c6"] {
        let r = last.tool_result(id);
        assert!(r.contains("is refused"), "{id}: {r}");
        assert!(!r.contains("top secret"), "{id}: {r}");
    }
}

// ---------------------------------------------------------------------------
// web_fetch
// ---------------------------------------------------------------------------

#[test]
fn web_fetch_reads_a_page_the_spec_allows_as_markdown() {
    let (web, base) = Web::start();
    let fake = tool_model(vec![vec![tool_call(
        "c1",
        "web_fetch",
        json!({"url": format!("{base}/page"), "mode": "markdown"}),
    )]]);
    let s = Setup::new(
        "  network:\n    allow: [\"127.0.0.1\"]",
        "",
        "    tools: [web_fetch]",
        fake,
    );
    let (v, _) = s.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let r = parsed(&s.last().tool_result("c1"));
    assert_eq!(r["status"], 200);
    assert_eq!(r["url"], format!("{base}/page"));
    let md = r["markdown"].as_str().expect("markdown");
    assert!(md.contains("# Release notes"), "{md}");
    assert!(md.contains("Version **2.0** is out."), "{md}");
    assert!(!md.contains("menu") && !md.contains("track()"), "{md}");
    assert_eq!(web.hits().len(), 1);
}

#[test]
fn web_fetch_to_a_host_the_spec_does_not_name_asks_and_loopback_stays_refused() {
    let (web, base) = Web::start();
    let fake = tool_model(vec![vec![tool_call(
        "c1",
        "web_fetch",
        json!({"url": format!("{base}/page")}),
    )]]);
    let s = Setup::new("", "", "    tools: [web_fetch]", fake);
    let (v, _) = s.run(&[], 19);
    let calls = gate_calls(&v);
    assert_eq!(calls.len(), 1, "{v:#}");
    assert_eq!(calls[0]["tool"], "web_fetch");
    let shown = v.to_string();
    assert!(shown.contains("a host the workflow does not name"), "{v:#}");
    // A human approves; the egress policy still refuses loopback.
    let id = session_id(&v);
    let v = resume_json(&s.sandbox, &id, &["--approve"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.last().tool_result("c1"),
        "blocked: 127.0.0.1 is a loopback address; allow it in tools.network.allow"
    );
    assert!(
        web.hits().is_empty(),
        "nothing reached the page: {:?}",
        web.hits()
    );
}

// ---------------------------------------------------------------------------
// duckduckgo_search, tavily_search
// ---------------------------------------------------------------------------

#[test]
fn duckduckgo_and_tavily_search_through_local_fakes() {
    let (web, base) = Web::start();
    let fake = tool_model(vec![vec![
        tool_call(
            "c1",
            "duckduckgo_search",
            json!({"query": "rust language", "max_results": 1}),
        ),
        tool_call(
            "c2",
            "tavily_search",
            json!({"query": "rust", "include_answer": true}),
        ),
    ]]);
    let s = Setup::new(
        "  network:\n    allow: [\"127.0.0.1\"]\n  python: [duckduckgo_search, tavily_search]",
        "",
        "",
        fake,
    );
    let env = [
        ("STRANDS_DUCKDUCKGO_URL", base.as_str()),
        ("STRANDS_TAVILY_URL", base.as_str()),
        ("TAVILY_API_KEY", "tvly-test-key"),
    ];
    let (v, stderr) = s.run(&env, 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert!(
        !stderr.contains("TAVILY_API_KEY"),
        "no warning with a key: {stderr}"
    );
    let last = s.last();
    let d = parsed(&last.tool_result("c1"));
    assert_eq!(
        d,
        json!({
            "query": "rust language",
            "search_type": "text",
            "result_count": 1,
            "results": [{"title": "Rust Programming Language", "href": "https://www.rust-lang.org/", "body": "A language empowering everyone."}]
        })
    );
    let t = parsed(&last.tool_result("c2"));
    assert_eq!(t["answer"], "Rust is a systems programming language.");
    assert_eq!(t["results"][0]["url"], "https://www.rust-lang.org");
    let hits = web.hits();
    let ddg = hits
        .iter()
        .find(|h| h.path == "/html/")
        .expect("DuckDuckGo was asked");
    assert!(
        ddg.query.contains("q=rust+language") && ddg.query.contains("kl=us-en"),
        "{ddg:?}"
    );
    let tv = hits
        .iter()
        .find(|h| h.path == "/search")
        .expect("Tavily was asked");
    assert_eq!(tv.method, "POST");
    assert_eq!(
        parsed(&tv.body),
        json!({"query": "rust", "max_results": 5, "include_answer": true})
    );
    // The key went to Tavily and nowhere else.
    assert_eq!(tv.authorization.as_deref(), Some("Bearer tvly-test-key"));
    for e in s.fake.requests() {
        assert!(!e.body.to_string().contains("tvly-test-key"));
    }
    let shown = s
        .sandbox
        .strands(&["sessions", "show", &session_id(&v), "--json"]);
    assert!(!shown.stdout.contains("tvly-test-key"));
}

#[test]
fn tavily_without_a_key_warns_at_validation_and_the_model_reads_why() {
    let (web, base) = Web::start();
    let fake = tool_model(vec![vec![tool_call(
        "c1",
        "tavily_search",
        json!({"query": "rust"}),
    )]]);
    let s = Setup::new(
        "  network:\n    allow: [\"127.0.0.1\"]\n  python:\n    - tavily_search",
        "",
        "",
        fake,
    );
    let env = [
        ("STRANDS_TAVILY_URL", base.as_str()),
        ("TAVILY_API_KEY", ""),
    ];
    let out = s
        .sandbox
        .strands_as("tester", &env, &["validate", s.spec()]);
    out.expect_code(0);
    // `python:` is on line 12 of the spec, `- tavily_search` on 13.
    assert!(
        out.stderr
            .contains("native.yaml:13: tavily_search needs TAVILY_API_KEY, which is not set"),
        "{}",
        out.stderr
    );
    let (v, stderr) = s.run(&env, 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert!(stderr.contains("needs TAVILY_API_KEY"), "{stderr}");
    let r = s.last().tool_result("c1");
    assert!(
        r.starts_with("TAVILY_API_KEY environment variable not set."),
        "{r}"
    );
    assert!(web.hits().is_empty(), "{:?}", web.hits());
}

#[test]
fn the_standard_preset_asks_before_a_web_search() {
    let fake = tool_model(vec![vec![tool_call(
        "c1",
        "duckduckgo_search",
        json!({"query": "quarterly numbers"}),
    )]]);
    let s = Setup::new(
        "  python: [duckduckgo_search]\nhitl:\n  preset: standard",
        "",
        "",
        fake,
    );
    let (v, _) = s.run(&[], 19);
    let calls = gate_calls(&v);
    assert_eq!(calls[0]["tool"], "duckduckgo_search", "{v:#}");
    assert!(
        v.to_string()
            .contains("search DuckDuckGo for \\\"quarterly numbers\\\""),
        "{v:#}"
    );
}

// ---------------------------------------------------------------------------
// context_policy.notes
// ---------------------------------------------------------------------------

const NOTES: &str = r#"
version: 0
name: notes
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
context_policy:
  notes:
    file: ./artifacts/run-notes.md
    include_last: 2
inputs:
  values:
    topic: bees
agents:
  first:
    prompt: You are the FIRST.
  second:
    prompt: You are the SECOND.
    tools: [calculator]
pattern:
  type: chain
  config:
    steps:
      - agent: first
        input: "Research the topic: {{ topic }}"
      - agent: second
        input: "Count what {{ steps[0].response }} found"
"#;

#[test]
fn notes_are_appended_after_each_step_and_the_latest_go_into_the_next_prompt() {
    let fake = FakeLlm::start_with(Behaviour::scripted(|n, body| {
        let e = crate::common::system_of(body);
        if e.contains("SECOND") && assistant_turns(body) == 0 {
            Say::Calls(vec![tool_call(
                "k1",
                "calculator",
                json!({"expression": "2 + 2"}),
            )])
        } else {
            Say::Text(format!("reply {n}"))
        }
    }));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("notes.yaml", NOTES, &fake);
    let v = run_json(&sandbox, &spec, 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let file = sandbox.path().join("artifacts/run-notes.md");
    let notes = std::fs::read_to_string(&file).expect("the notes file");
    assert_eq!(
        notes.matches("\n## [").count() + usize::from(notes.starts_with("## [")),
        2,
        "{notes}"
    );
    assert!(notes.contains("— Agent: first (Step 1)\n- **Input**: Research the topic: bees\n- **Tools used**: None\n- **Outcome**: reply 1\n"), "{notes}");
    assert!(notes.contains("— Agent: second (Step 2)\n- **Input**: Count what reply 1 found\n- **Tools used**: calculator\n- **Outcome**: reply 3\n"), "{notes}");
    // The first agent saw no notes; the second saw the first's.
    let first = fake.only_call_of("FIRST");
    assert!(
        !first.system().contains("Previous Workflow Steps"),
        "{}",
        first.system()
    );
    let second = fake.request(2).system();
    assert!(
        second.starts_with("You are the SECOND.\n\n# Previous Workflow Steps\n## ["),
        "{second}"
    );
    assert!(
        second.contains("Agent: first (Step 1)") && !second.contains("Step 2"),
        "{second}"
    );

    // A second run: at most `include_last: 2` notes are injected.
    let v = run_json(&sandbox, &spec, 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let notes = std::fs::read_to_string(&file).expect("the notes file");
    assert_eq!(notes.matches("## [").count(), 4, "{notes}");
    let system = fake.last().system();
    let injected = system
        .split("# Previous Workflow Steps\n")
        .nth(1)
        .expect("notes injected");
    assert_eq!(injected.matches("## [").count(), 2, "{injected}");
}

// ---------------------------------------------------------------------------
// context_policy.compaction
// ---------------------------------------------------------------------------

/// The id of the conversation's last tool result (`c1`, `c2`, …).
fn last_result(body: &Value) -> Option<String> {
    crate::common::tool_results(body)
        .last()
        .map(|(id, _)| id.clone())
}

#[test]
fn compaction_summarises_older_turns_once_the_conversation_passes_its_budget() {
    let fake = FakeLlm::start_with(Behaviour::scripted(|_, body| {
        if crate::common::system_of(body).contains("creates concise summaries") {
            return Say::Text("SUMMARY-OF-EARLIER-TURNS".into());
        }
        let read = |id: &str, path: &str| {
            Say::Calls(vec![tool_call(id, "file_read", json!({"path": path}))])
        };
        match last_result(body).as_deref() {
            None => read("c1", "big.txt"),
            Some("c1") => read("c2", "small.txt"),
            Some("c2") => read("c3", "small.txt"),
            _ => Say::Text(FINAL.into()),
        }
    }));
    let s = Setup::new(
        "",
        "context_policy:\n  compaction:\n    enabled: true\n    when_tokens_over: 1000\n    summary_ratio: 0.5\n    preserve_recent_messages: 2",
        "    tools: [file_read]",
        fake,
    );
    std::fs::write(s.ws().join("big.txt"), "BIGDATA ".repeat(1000)).expect("big");
    std::fs::write(s.ws().join("small.txt"), "small").expect("small");
    let (v, _) = s.run(&[], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let all = s.fake.requests();
    let summaries: Vec<&Exchange> = all
        .iter()
        .filter(|e| e.system().contains("creates concise summaries"))
        .collect();
    assert_eq!(summaries.len(), 1, "one summarisation request: {all:#?}");
    let summary = summaries[0];
    assert!(summary.tools_offered().is_empty());
    assert!(
        summary.user().contains("Tool `file_read` result: BIGDATA"),
        "{}",
        summary.user()
    );
    // The requests before and after it.
    let before = &all[summary.n - 2];
    let after = &all[summary.n];
    assert_eq!(last_result(&before.body).as_deref(), Some("c1"));
    let first_message = after.body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        first_message,
        "Summary of the earlier conversation:\nSUMMARY-OF-EARLIER-TURNS"
    );
    assert!(!after.body.to_string().contains("BIGDATA"));
    assert!(
        after.body.to_string().len() < before.body.to_string().len() / 4,
        "the conversation after the summary is shorter"
    );
    assert_eq!(last_result(&after.body).as_deref(), Some("c2"));
    assert_eq!(s.last().reply_text(), FINAL);
}

// ---------------------------------------------------------------------------
// Validation: python_exec, keys accepted and ignored
// ---------------------------------------------------------------------------

#[test]
fn python_exec_is_refused_and_ignored_keys_are_warned_about_with_their_lines() {
    crate::common::invalid_spec(
        concat!(
            "version: 0\n",         // 1
            "name: t\n",            // 2
            "runtime:\n",           // 3
            "  provider: openai\n", // 4
            "  host: $HOST\n",      // 5
            "tools:\n",             // 6
            "  python:\n",          // 7
            "    - python_exec\n",  // 8
            "agents:\n",            // 9
            "  a:\n",               // 10
            "    prompt: p\n",      // 11
            "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n",
        ),
        &[("8", "`python_exec` runs Python code the model writes")],
    );
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec(
        "warn.yaml",
        concat!(
            "version: 0\n",                   // 1
            "name: t\n",                      // 2
            "runtime:\n",                     // 3
            "  provider: openai\n",           // 4
            "  host: $HOST\n",                // 5
            "telemetry:\n",                   // 6
            "  otel: {endpoint: http://x}\n", // 7
            "context_policy:\n",              // 8
            "  retrieval:\n",                 // 9
            "    mcp_servers: [fs]\n",        // 10
            "agents:\n",                      // 11
            "  a:\n",                         // 12
            "    prompt: p\n",                // 13
            "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n",
        ),
        &fake,
    );
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8"), "--json"]);
    out.expect_code(0);
    let warnings = out.json()["warnings"].to_string();
    assert!(
        warnings.contains(
            "warn.yaml:6: `telemetry` is accepted for strands-cli compatibility and ignored"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains("warn.yaml:10: `context_policy.retrieval.mcp_servers` is accepted"),
        "{warnings}"
    );
    assert!(out.stderr.contains("warning: "), "{}", out.stderr);
}
