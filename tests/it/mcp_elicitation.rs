//! An MCP server asks a person something while its tool runs
//! (elicitation), and a person answers it like any other gate: the fixture
//! `tests/fixtures/mcp_elicit_server.py` (the official Python `mcp`
//! package, from the agent SDKs' venv) asks for a form or a URL visit; a
//! fake model calls its tools. The run pauses at a gate showing the
//! question; filling the form (or approving a URL) accepts, rejecting
//! declines, and the tool's result — what the server made of the answer —
//! reaches the model. The fixture records each tool body that ran to
//! completion, so every scenario counts what really completed.
//!
//! Both protocols: 2026-07-28 (the question comes back as an
//! `input_required` result; the call is made again with the reply) and,
//! with the fixture answering `server/discover` "method not found", the
//! older one (an `elicitation/create` request during the call); over stdio
//! (a new server process each time the call is made) and Streamable HTTP
//! (one long-lived process). [`served`] takes the same questions through
//! `strands serve` and its rooms.
//!
//! Skipped without the venv (`clients/setup.sh`), except under
//! `STRANDS_REQUIRE_AGENT_SDKS=1`, where that fails.

use serde_json::{json, Value};

use crate::common::agent_sdks;
use crate::common::{history, session_id, tool_call, tool_model, FakeLlm, Sandbox, FINAL};

const SPEC: &str = r#"
version: 0
name: mcp-elicitation
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  timeout_seconds: 60
  mcp:
    - id: reports
      command: $PYTHON
      args: ["$FIXTURE"]
      env:
        MCP_ELICIT_LOG: $LOG
        MCP_ELICIT_LEGACY: "$LEGACY"
        MCP_ELICIT_ASKED: $ASKED
        MCP_ELICIT_STATE_KEY: ""
      require_approval: false
agents:
  worker:
    prompt: You are the WORKER.
    tools: [reports]
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: File the report.
"#;

struct Setup {
    sandbox: Sandbox,
    fake: FakeLlm,
    spec: String,
}

impl Setup {
    /// `None` (the test skips) without the venv.
    fn new(calls: Vec<Value>, legacy: bool) -> Option<Setup> {
        Setup::edited(calls, legacy, |yaml| yaml)
    }

    /// [`Setup::new`] with the spec changed by `edit`.
    fn edited(calls: Vec<Value>, legacy: bool, edit: impl Fn(String) -> String) -> Option<Setup> {
        let python = agent_sdks::python()?;
        let sandbox = Sandbox::new();
        let fake = tool_model(vec![calls]);
        let fixture = agent_sdks::root().join("tests/fixtures/mcp_elicit_server.py");
        let yaml = SPEC
            .replace("$PYTHON", &python.display().to_string())
            .replace("$FIXTURE", &fixture.display().to_string())
            .replace(
                "$LOG",
                &sandbox.path().join("done.log").display().to_string(),
            )
            .replace("$LEGACY", if legacy { "1" } else { "0" })
            .replace(
                "$ASKED",
                &sandbox.path().join("asked.log").display().to_string(),
            );
        let yaml = edit(yaml);
        let spec = sandbox
            .spec("elicit.yaml", &yaml, &fake)
            .display()
            .to_string();
        Some(Setup {
            sandbox,
            fake,
            spec,
        })
    }

    /// The tool bodies that ran to completion, as the fixture recorded them.
    fn done(&self) -> Vec<Value> {
        std::fs::read_to_string(self.sandbox.path().join("done.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// How many times the fixture's resolver asked (once per round).
    fn asked(&self) -> usize {
        std::fs::read_to_string(self.sandbox.path().join("asked.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    fn strands(&self, args: &[&str], code: i32) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.sandbox.strands(&all);
        out.expect_code(code);
        out.json()
    }
}

fn file_report(id: &str) -> Value {
    tool_call(id, "reports__file_report", json!({"title": "Q3"}))
}

/// The open gate of a paused run, checked to ask the fixture's form.
#[track_caller]
fn assert_asks_the_form(v: &Value) {
    assert_eq!(v["status"], "paused", "{v:#}");
    let gate = &v["gate"];
    assert_eq!(gate["id"], "elicit_call_1", "{v:#}");
    let prompt = gate["prompt"].as_str().unwrap_or_default();
    assert!(
        prompt.contains("`reports`") && prompt.contains("Why should the report be filed"),
        "the gate shows the server's message: {v:#}"
    );
    let form = &gate["form"];
    assert_eq!(form["properties"]["reason"]["type"], "string", "{v:#}");
    assert_eq!(form["properties"]["count"]["type"], "integer", "{v:#}");
    assert_eq!(form["required"], json!(["reason"]), "{v:#}");
}

fn answered_form(legacy: bool) {
    let Some(s) = Setup::new(vec![file_report("call_1")], legacy) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_asks_the_form(&v);
    let id = session_id(&v);
    let handle = v["gate"]["handle"].clone();
    assert_eq!(handle, "elicit_call_1#1", "{v:#}");
    assert!(s.done().is_empty(), "nothing completed before the answer");
    assert_eq!(s.fake.count(), 1);
    assert_eq!(s.asked(), 1);

    // The process is gone (and the server with it): the session still
    // waits on the same gate.
    let shown = s.sandbox.show(&id);
    let open: Vec<&Value> = shown["open_gates"]
        .as_array()
        .map(|g| g.iter().collect())
        .unwrap_or_default();
    assert_eq!(open.len(), 1, "{shown:#}");
    assert_eq!(open[0]["handle"], handle, "the same gate: {shown:#}");
    assert!(s.done().is_empty());

    let v = s.strands(
        &[
            "resume",
            &id,
            "--approve",
            "--value",
            "reason=quarterly audit",
            "--value",
            "count=3",
        ],
        0,
    );
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(v["output"], FINAL);
    let done = s.done();
    assert_eq!(done.len(), 1, "the tool completed once: {done:?}");
    assert_eq!(
        done[0]["content"],
        json!({"reason": "quarterly audit", "count": 3}),
        "the server got the typed values: {done:?}"
    );
    assert_eq!(s.fake.count(), 2, "the model was asked once more");
    let result = s.fake.request(2).tool_result("call_1");
    assert!(
        result.contains(r#"accept: {"count": 3, "reason": "quarterly audit"}"#),
        "the model reads the tool's result: {result}"
    );
    // Made again in a new server process: on 2026-07-28 the state sealed
    // by the first one is refused, so the call starts over and the
    // question, asked again, gets the recorded answer (then the retry
    // with it); on the older protocol the re-made call asks during the
    // call and is answered at once.
    assert_eq!(s.asked(), if legacy { 2 } else { 3 });
    let h = history(&v);
    assert_eq!(h.len(), 1, "one answer: {v:#}");
    assert_eq!(h[0]["decision"]["action"], "fill", "{v:#}");

    // Finished: nothing asks or runs again.
    s.sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(17);
    assert_eq!(s.done().len(), 1);
}

#[test]
fn a_servers_form_pauses_the_run_and_the_values_reach_the_tool() {
    answered_form(false);
}

#[test]
fn on_the_older_protocol_the_question_comes_during_the_call_and_is_answered_once() {
    answered_form(true);
}

#[test]
fn a_server_whose_state_outlives_its_process_goes_on_from_it_with_the_answer() {
    let key = |y: String| {
        y.replace(
            r#"MCP_ELICIT_STATE_KEY: """#,
            r#"MCP_ELICIT_STATE_KEY: "0123456789abcdef0123456789abcdef""#,
        )
    };
    let Some(s) = Setup::edited(vec![file_report("call_1")], false, key) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_asks_the_form(&v);
    let id = session_id(&v);
    let v = s.strands(&["resume", &id, "--approve", "--value", "reason=kept"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    // One retry with the answer and the state: the question is not asked
    // again (the resolver ran once per round: two rounds).
    assert_eq!(s.asked(), 2);
    assert_eq!(
        s.done()[0]["content"],
        json!({"reason": "kept", "count": 1})
    );
}

/// The fixture serving Streamable HTTP on a free port, killed on drop.
struct HttpFixture {
    child: std::process::Child,
    url: String,
}

impl HttpFixture {
    fn start(python: &std::path::Path, setup: &Setup) -> HttpFixture {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let fixture = agent_sdks::root().join("tests/fixtures/mcp_elicit_server.py");
        let child = std::process::Command::new(python)
            .arg(fixture)
            .env("MCP_ELICIT_HTTP_PORT", port.to_string())
            .env("MCP_ELICIT_LOG", setup.sandbox.path().join("done.log"))
            .env("MCP_ELICIT_ASKED", setup.sandbox.path().join("asked.log"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the HTTP fixture");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < until,
                "the HTTP fixture never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        HttpFixture {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_long_lived_http_server_goes_on_from_its_state_with_the_answer() {
    let Some(python) = agent_sdks::python() else {
        return;
    };
    // The server entry becomes a URL, filled in once the fixture listens.
    let Some(s) = Setup::edited(vec![file_report("call_1")], false, |y| {
        let start = y.find("      command:").expect("the command");
        let end = y.find("      require_approval").expect("the policy");
        format!("{}      url: $URL\n{}", &y[..start], &y[end..])
    }) else {
        return;
    };
    let http = HttpFixture::start(&python, &s);
    let yaml = std::fs::read_to_string(&s.spec)
        .expect("the spec")
        .replace("$URL", &http.url);
    std::fs::write(&s.spec, yaml).expect("write the spec");
    let v = s.strands(&["run", &s.spec], 19);
    assert_asks_the_form(&v);
    assert_eq!(s.asked(), 1);
    let id = session_id(&v);
    let v = s.strands(
        &["resume", &id, "--approve", "--value", "reason=over HTTP"],
        0,
    );
    assert_eq!(v["status"], "completed", "{v:#}");
    // The same server process opens its own state: one retry, not asked again.
    assert_eq!(s.asked(), 2);
    assert_eq!(
        s.done()[0]["content"],
        json!({"reason": "over HTTP", "count": 1})
    );
    assert!(s
        .fake
        .request(2)
        .tool_result("call_1")
        .contains(r#"accept: {"count": 1, "reason": "over HTTP"}"#));
}

#[test]
fn a_rejected_question_declines_and_the_tool_says_so() {
    let Some(s) = Setup::new(vec![file_report("call_1")], false) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_asks_the_form(&v);
    let id = session_id(&v);
    // A plain approve does not fill the form: refused, nothing changes.
    s.sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(2);
    let v = s.strands(&["resume", &id, "--reject", "--reason", "not now"], 0);
    assert_eq!(
        v["status"], "completed",
        "a decline does not end the run: {v:#}"
    );
    let done = s.done();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["action"], "decline", "{done:?}");
    let result = s.fake.request(2).tool_result("call_1");
    assert!(result.contains("not filed 'Q3': decline"), "{result}");
}

#[test]
fn a_call_that_waits_for_approval_then_asks_and_each_call_of_a_turn_asks_in_turn() {
    let calls = vec![
        file_report("call_1"),
        tool_call("call_2", "reports__connect_account", json!({})),
    ];
    // The server's tools ask for approval first.
    let Some(s) = Setup::edited(calls, false, |y| {
        y.replace("      require_approval: false\n", "")
    }) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_eq!(v["gate"]["kind"], "tool_call", "{v:#}");
    let id = session_id(&v);
    s.strands(&["resume", &id, "--call", "call_1", "--approve"], 19);
    let v = s.strands(&["resume", &id, "--call", "call_2", "--approve"], 19);
    // Approved, the first call runs and its server asks.
    assert_asks_the_form(&v);
    let v = s.strands(&["resume", &id, "--approve", "--value", "reason=first"], 19);
    // Its answer went back; the second call ran and asks on its own gate.
    assert_eq!(v["gate"]["id"], "elicit_call_2", "{v:#}");
    assert_eq!(s.done().len(), 1, "{:?}", s.done());
    let v = s.strands(&["resume", &id, "--reject"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.done(),
        vec![
            json!({"tool": "file_report", "title": "Q3", "action": "accept", "content": {"reason": "first", "count": 1}}),
            json!({"tool": "connect_account", "action": "decline"}),
        ]
    );
    let next = s.fake.request(2);
    assert!(
        next.tool_result("call_1").contains("accept"),
        "{:?}",
        next.tool_results()
    );
    assert_eq!(next.tool_result("call_2"), "connect: decline");
    assert_eq!(
        s.fake.count(),
        2,
        "the model was asked once more, with both results"
    );
}

#[test]
fn a_question_whose_time_runs_out_is_cancelled() {
    let rules = "\nsecurity:\n  approvers:\n    - approvers: [tester]\n      timeout: 1s\nagents:";
    let Some(s) = Setup::edited(vec![file_report("call_1")], false, |y| {
        y.replace("\nagents:", rules)
    }) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_asks_the_form(&v);
    assert!(
        v["gate"]["timeout_at"].is_string(),
        "the rule's timeout: {v:#}"
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let id = session_id(&v);
    let v = s.strands(&["resume", &id], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.done(),
        vec![json!({"tool": "file_report", "title": "Q3", "action": "cancel"})]
    );
    assert!(s.fake.request(2).tool_result("call_1").contains("cancel"));
}

#[test]
fn a_plain_ctx_elicit_is_asked_on_the_older_protocol_and_fails_on_the_newer() {
    let call = || tool_call("call_1", "reports__ask_directly", json!({}));
    // Older protocol: an `elicitation/create` during the call, a gate.
    let Some(s) = Setup::new(vec![call()], true) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_eq!(v["gate"]["id"], "elicit_call_1", "{v:#}");
    let id = session_id(&v);
    let v = s.strands(&["resume", &id, "--approve", "--value", "reason=direct"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.done(),
        vec![json!({"tool": "ask_directly", "action": "accept"})]
    );
    assert_eq!(s.fake.request(2).tool_result("call_1"), "directly: accept");

    // 2026-07-28: the server cannot ask that way; the model reads why.
    let Some(s) = Setup::new(vec![call()], false) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 0);
    assert_eq!(v["status"], "completed", "no gate: {v:#}");
    assert!(s.done().is_empty());
    let result = s.fake.request(2).tool_result("call_1");
    assert!(
        result.contains("`reports` failed the call") && result.contains("no back-channel"),
        "{result}"
    );
}

#[test]
fn a_question_no_form_can_show_ends_its_call_and_the_next_call_still_runs() {
    let calls = vec![
        tool_call("call_1", "reports__ask_too_much", json!({})),
        file_report("call_2"),
    ];
    let Some(s) = Setup::new(calls, false) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    // The first call ended with an error result; the second asks.
    assert_eq!(v["gate"]["id"], "elicit_call_2", "{v:#}");
    let id = session_id(&v);
    let v = s.strands(&["resume", &id, "--reject"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    let next = s.fake.request(2);
    let first = next.tool_result("call_1");
    assert!(
        first.contains("cannot show as a form") && first.contains("`reports`"),
        "{first}"
    );
    assert!(next.tool_result("call_2").contains("decline"));
    assert_eq!(
        s.done(),
        vec![json!({"tool": "file_report", "title": "Q3", "action": "decline"})]
    );
}

#[test]
fn a_url_question_shows_the_link_and_an_approval_accepts_it() {
    let call = tool_call("call_1", "reports__connect_account", json!({}));
    let Some(s) = Setup::new(vec![call], false) else {
        return;
    };
    let v = s.strands(&["run", &s.spec], 19);
    assert_eq!(v["status"], "paused", "{v:#}");
    let shown = format!("{} {}", v["gate"]["prompt"], v["gate"]["preview"]);
    assert!(
        shown.contains("https://accounts.example/connect?session=42")
            && shown.contains("does not follow"),
        "the link is shown, not followed: {v:#}"
    );
    assert_eq!(v["gate"]["form"], Value::Null, "{v:#}");
    let id = session_id(&v);
    let v = s.strands(&["resume", &id, "--approve"], 0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(
        s.done(),
        vec![json!({"tool": "connect_account", "action": "accept"})]
    );
    assert_eq!(s.fake.request(2).tool_result("call_1"), "connect: accept");
}

/// Through `strands serve`: the API, the web inbox, Slack and Teams.
mod served;
