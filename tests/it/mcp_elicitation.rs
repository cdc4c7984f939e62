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
//! with the fixture told not to answer `server/discover`, the older one
//! (an `elicitation/create` request during the call).
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
            .replace("$LEGACY", if legacy { "1" } else { "0" });
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
