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

// ---------------------------------------------------------------------------
// Through `strands serve` and the API, the service killed while it waits
// ---------------------------------------------------------------------------

mod served {
    use super::*;
    use crate::common::api::{call, make_token};
    use crate::common::service::{write_workflows, ServeConfig, Service};
    use std::time::{Duration, Instant};

    const WAIT: Duration = Duration::from_secs(30);

    struct Served {
        setup: Setup,
        svc: Service,
        ci: String,
        alice: String,
    }

    impl Served {
        fn start() -> Option<Served> {
            Served::calling(file_report("call_1"))
        }

        /// The service, its model calling `call`.
        fn calling(call: Value) -> Option<Served> {
            let setup = Setup::new(vec![call], false)?;
            let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
            let yaml = yaml.replace("\nagents:", "\nsecurity:\n  approvers: [alice]\nagents:");
            let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
            let ci = make_token(&setup.sandbox, "ci-bot", "operator");
            let alice = make_token(&setup.sandbox, "alice", "approver");
            let svc = Service::launch(ServeConfig::api(&setup.sandbox, &dir));
            Some(Served {
                setup,
                svc,
                ci,
                alice,
            })
        }

        fn session(&self, id: &str) -> Value {
            let r = call(
                &self.svc,
                "GET",
                &format!("/api/v1/sessions/{id}"),
                Some(&self.ci),
                None,
            );
            assert_eq!(r.status, 200, "{}", r.body);
            r.json()
        }

        #[track_caller]
        fn wait_for(&self, id: &str, status: &str) -> Value {
            let until = Instant::now() + WAIT;
            loop {
                let s = self.session(id);
                if s["status"] == status {
                    return s;
                }
                assert!(
                    Instant::now() < until,
                    "never {status}: {s:#}\n{}",
                    self.svc.log()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        /// Starts the workflow as ci-bot; the session id.
        #[track_caller]
        fn start_run(&self) -> String {
            let r = call(
                &self.svc,
                "POST",
                "/api/v1/runs",
                Some(&self.ci),
                Some(&json!({"workflow": "mcp-elicitation"})),
            );
            assert_eq!(r.status, 201, "{}\n{}", r.body, self.svc.log());
            r.json()["session_id"]
                .as_str()
                .expect("a session id")
                .to_string()
        }

        fn answer(&self, id: &str, body: Value) -> crate::common::service::HttpReply {
            call(
                &self.svc,
                "POST",
                &format!("/api/v1/sessions/{id}/answers"),
                Some(&self.alice),
                Some(&body),
            )
        }
    }

    /// The handles of the open gates in the API's view of a session.
    fn open_handles(v: &Value) -> Vec<String> {
        v["open_gates"]
            .as_array()
            .or_else(|| v["gates"].as_array())
            .map(|g| {
                g.iter()
                    .filter_map(|g| g["handle"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn killed_while_it_waits_the_service_asks_on_the_same_gate_and_the_tool_completes_once() {
        let Some(mut w) = Served::start() else {
            return;
        };
        let id = w.start_run();
        let paused = w.wait_for(&id, "paused");
        let handles = open_handles(&paused);
        assert_eq!(handles, ["elicit_call_1#1"], "{paused:#}");

        // Killed while it waits, started again: the same gate asks.
        w.svc.kill();
        w.svc.restart();
        let paused = w.wait_for(&id, "paused");
        assert_eq!(open_handles(&paused), handles, "{paused:#}");
        assert!(w.setup.done().is_empty(), "nothing completed yet");

        // A value that does not fit the form is refused, naming the field.
        let bad = w.answer(
            &id,
            json!({"decision": "approve", "values": {"reason": "audit", "count": "many"}}),
        );
        assert_eq!(bad.status, 422, "{}", bad.body);
        assert!(bad.body.contains("count"), "{}", bad.body);

        let ok = w.answer(
            &id,
            json!({"decision": "approve", "values": {"reason": "audit", "count": "2"}}),
        );
        assert!(
            ok.status == 200 || ok.status == 202,
            "{} {}",
            ok.status,
            ok.body
        );
        let done = w.wait_for(&id, "completed");
        assert_eq!(done["output"], FINAL, "{done:#}");
        let completed = w.setup.done();
        assert_eq!(completed.len(), 1, "the tool completed once: {completed:?}");
        assert_eq!(
            completed[0]["content"],
            json!({"reason": "audit", "count": 2})
        );
        let result = w.setup.fake.request(2).tool_result("call_1");
        assert!(
            result.contains(r#"accept: {"count": 2, "reason": "audit"}"#),
            "{result}"
        );

        // Answered once: a second answer is told, nothing runs again.
        let again = w.answer(&id, json!({"decision": "reject"}));
        assert_eq!(again.status, 409, "{}", again.body);
        assert_eq!(w.setup.done().len(), 1);
    }

    #[test]
    fn the_web_inbox_shows_the_question_as_typed_inputs_and_takes_the_answer() {
        use crate::web::Visitor;
        let Some(w) = Served::start() else {
            return;
        };
        let id = w.start_run();
        w.wait_for(&id, "paused");
        let alice = Visitor::sign_in(&w.svc, &w.alice);
        let page = alice.get(&format!("/sessions/{id}"));
        assert_eq!(page.status, 200, "{}", page.body);
        for want in [
            "Why should the report be filed",
            r#"type="text" id="field-1-2" name="value.reason""#,
            "Reason <span class=\"req\">(required)</span>",
            r#"type="number" id="field-1-1" name="value.count" step="1" value="1""#,
            "Approve with these values",
        ] {
            assert!(page.body.contains(want), "{want} in\n{}", page.body);
        }
        let csrf = alice.csrf();
        let ok = alice.post(
            &format!("/sessions/{id}/answer"),
            &[
                ("csrf", &csrf),
                ("gate", "elicit_call_1#1"),
                ("decision", "approve"),
                ("value.reason", "from the web"),
            ],
        );
        assert!(ok.status < 400, "{} {}", ok.status, ok.body);
        w.wait_for(&id, "completed");
        let completed = w.setup.done();
        assert_eq!(
            completed,
            vec![
                json!({"tool": "file_report", "title": "Q3", "action": "accept",
                        "content": {"reason": "from the web", "count": 1}})
            ],
            "the default filled in: {completed:?}"
        );
    }

    #[test]
    fn in_slack_the_question_opens_a_modal_of_typed_inputs_and_the_values_reach_the_tool() {
        use crate::common::fake_slack::{Bot, BotConfig, FakeSlack};
        let Some(setup) = Setup::new(vec![file_report("call_1")], false) else {
            return;
        };
        let slack = FakeSlack::start();
        let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
        let yaml = yaml.replace(
            "\nagents:",
            "\nsecurity:\n  approvers: [U04APPROVER]\nagents:",
        );
        let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
        let ci = make_token(&setup.sandbox, "ci-bot", "operator");
        let bot = Bot::launch(&slack, BotConfig::new(&setup.sandbox, &slack, &dir));
        let r = call(
            &bot,
            "POST",
            "/api/v1/runs",
            Some(&ci),
            Some(&json!({"workflow": "mcp-elicitation"})),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        let msg = slack.wait_for_approval();
        let posted = msg.call.body.to_string();
        assert!(
            posted.contains("Why should the report be filed")
                && posted.contains("Approving fills in: Count, Reason"),
            "{:#}",
            msg.call.body
        );
        let click = bot.click(&msg, "strands_approve", "U04APPROVER");
        click.reply.expect_prompt_ok("the approve click", &bot);
        let opened = slack.wait_for_modal(&click);
        let view = &opened.body["view"];
        assert_eq!(view["callback_id"], "strands_fill", "{view:#}");
        let blocks = view["blocks"].as_array().expect("blocks");
        let input = |name: &str| {
            blocks
                .iter()
                .find(|b| b["block_id"] == format!("field:{name}"))
                .unwrap_or_else(|| panic!("no input for {name}: {view:#}"))
                .clone()
        };
        assert_eq!(input("count")["element"]["type"], "number_input");
        assert_eq!(input("reason")["element"]["type"], "plain_text_input");
        let ok = bot.submit_modal_with(&opened, "U04APPROVER", "", |p| {
            p["view"]["state"] = json!({"values": {
                "field:reason": {"value": {"type": "plain_text_input", "value": "from Slack"}},
                "field:count": {"value": {"type": "number_input", "value": "4"}},
            }});
        });
        assert_eq!(ok.status, 200, "{}", ok.body);
        assert!(!ok.body.contains("errors"), "{}", ok.body);
        let until = Instant::now() + WAIT;
        while setup.done().is_empty() {
            assert!(Instant::now() < until, "the tool never completed");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            setup.done(),
            vec![
                json!({"tool": "file_report", "title": "Q3", "action": "accept",
                        "content": {"reason": "from Slack", "count": 4}})
            ]
        );
    }

    #[test]
    fn in_the_web_inbox_a_url_question_shows_its_link_is_never_bulk_approved_and_an_approval_accepts(
    ) {
        use crate::web::Visitor;
        let Some(w) = Served::calling(tool_call("call_1", "reports__connect_account", json!({})))
        else {
            return;
        };
        let id = w.start_run();
        w.wait_for(&id, "paused");
        let alice = Visitor::sign_in(&w.svc, &w.alice);
        let inbox = alice.get("/inbox/list");
        assert_eq!(inbox.status, 200, "{}", inbox.body);
        assert!(inbox.body.contains(&id), "listed: {}", inbox.body);
        assert!(
            !inbox.body.contains(&format!("{id} elicit_call_1#1")),
            "not offered for bulk approval: {}",
            inbox.body
        );
        let page = alice.get(&format!("/sessions/{id}"));
        assert!(
            page.body
                .contains("accounts.example&#x2f;connect?session=42")
                && page.body.contains("does not follow"),
            "{}",
            page.body
        );
        let csrf = alice.csrf();
        let ok = alice.post(
            &format!("/sessions/{id}/answer"),
            &[
                ("csrf", &csrf),
                ("gate", "elicit_call_1#1"),
                ("decision", "approve"),
            ],
        );
        assert!(ok.status < 400, "{} {}", ok.status, ok.body);
        w.wait_for(&id, "completed");
        assert_eq!(
            w.setup.done(),
            vec![json!({"tool": "connect_account", "action": "accept"})]
        );
    }

    #[test]
    fn in_teams_the_question_is_a_card_with_typed_inputs_and_approve_sends_them() {
        use crate::common::fake_teams::FakeTeams;
        use crate::common::teams_driver::{token, verbs, BOT, CHANNEL, TENANT};
        use crate::teams_room::post_activity;
        const ANN: &str = "aad-0000-ann";
        const BOB: &str = "aad-0000-bob";
        let Some(setup) = Setup::new(vec![file_report("call_1")], false) else {
            return;
        };
        let fake = FakeTeams::start();
        let yaml = std::fs::read_to_string(&setup.spec).expect("the spec");
        let yaml = yaml.replace(
            "\nagents:",
            &format!("\nsecurity:\n  approvers: [\"teams:{ANN}\"]\nagents:"),
        );
        let dir = write_workflows(&setup.sandbox, &setup.fake, &[("mcp-elicitation", &yaml)]);
        let mut cfg = ServeConfig::api(&setup.sandbox, &dir);
        for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
            cfg = cfg.with(&k, Some(&v));
        }
        let svc = Service::launch(cfg);
        let activity = |who: &str, rest: Value| {
            let mut a = json!({
                "channelId": "msteams",
                "serviceUrl": fake.service_url(),
                "from": {"id": format!("29:{who}"), "aadObjectId": who, "name": "Someone"},
                "recipient": {"id": BOT, "name": "strands"},
                "conversation": {"id": CHANNEL, "conversationType": "channel", "isGroup": true},
                "channelData": {"tenant": {"id": TENANT}},
            });
            if let (Some(a), Value::Object(rest)) = (a.as_object_mut(), rest) {
                a.extend(rest);
            }
            a
        };
        let send = |a: Value| {
            let r = post_activity(&svc, &token(&fake.service_url(), "signing.key.pem"), &a);
            assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, svc.log());
            if r.body.trim().is_empty() {
                Value::Null
            } else {
                r.json()
            }
        };
        // Bob starts the run; Ann, the approver, answers.
        send(activity(
            BOB,
            json!({"type": "message", "id": "m:run",
            "text": "<at>strands</at> run mcp-elicitation",
            "entities": [{"type": "mention", "mentioned": {"id": BOT, "name": "strands"}, "text": "<at>strands</at>"}]}),
        ));
        let until = Instant::now() + WAIT;
        let card = loop {
            if let Some(h) = fake.hits().into_iter().find(|h| {
                h.method == "POST"
                    && h.body.get("attachments").is_some()
                    && h.body
                        .to_string()
                        .contains("Why should the report be filed")
            }) {
                break h.body["attachments"][0]["content"].clone();
            }
            assert!(Instant::now() < until, "no card\n{}", svc.log());
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(verbs(&card).contains(&"approve".to_string()), "{card:#}");
        let approve_card = card["actions"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["title"] == "Approve…"))
            .unwrap_or_else(|| panic!("Approve… with the inputs: {card:#}"));
        let inputs: Vec<(String, String)> = approve_card["card"]["body"]
            .as_array()
            .expect("inputs")
            .iter()
            .filter(|i| i["id"].is_string())
            .map(|i| {
                (
                    i["id"].as_str().unwrap_or_default().to_string(),
                    i["type"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        assert_eq!(
            inputs,
            [
                ("value.count".to_string(), "Input.Number".to_string()),
                ("value.reason".to_string(), "Input.Text".to_string()),
            ]
        );
        let text = card.to_string();
        let id = text
            .split("/sessions/")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the run's page")
            .to_string();
        let answer = send(activity(
            ANN,
            json!({"type": "invoke", "name": "adaptiveCard/action", "id": "i:1",
            "replyToId": "card",
            "value": {"action": {"type": "Action.Execute", "verb": "approve", "data": {
                "session": id, "gate": "elicit_call_1#1",
                "value.reason": "from Teams", "value.count": "5"}}}}),
        ));
        assert!(!answer.to_string().contains("cannot approve"), "{answer:#}");
        let until = Instant::now() + WAIT;
        while setup.done().is_empty() {
            assert!(
                Instant::now() < until,
                "the tool never completed\n{}",
                svc.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            setup.done(),
            vec![
                json!({"tool": "file_report", "title": "Q3", "action": "accept",
                        "content": {"reason": "from Teams", "count": 5}})
            ]
        );
        fake.assert_cards_valid();
    }
}
