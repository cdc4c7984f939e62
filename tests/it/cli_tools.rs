//! Tool-call approval through the `strands` binary: a fake model that asks
//! for tools (OpenAI `tool_calls`), a fake HTTP target that counts what
//! actually reached it, and a workspace whose files show what ran.
//!
//! Every scenario counts at both ends: requests at the target (did the call
//! run, and how often) and requests at the model (what it was told).

use crate::common::target::Target;
use crate::common::{
    gate_calls, history, session_id, tool_call, tool_model, Behaviour, FakeLlm, Sandbox, Say, FINAL,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

// ---------------------------------------------------------------------------
// Specs, models and small helpers
// ---------------------------------------------------------------------------

/// One agent step; `$AGENT` is the agent's tool configuration, `$TOOLS` more
/// keys of the top-level `tools` section, `$WS` the workspace.
const ONE_STEP: &str = r#"
version: 0
name: tool-approval
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: $WS
  network:
    allow: ["127.0.0.1"]
$TOOLS
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
    target: Target,
    spec: String,
}

impl Setup {
    /// A sandbox with a spec whose agent has `agent_yaml` (indented keys
    /// under the agent) and `tools_yaml` (keys of `tools:`); `$TARGET` in
    /// either is the target's URL.
    fn new(agent_yaml: &str, tools_yaml: &str, fake: FakeLlm, target: Target) -> Setup {
        let sandbox = Sandbox::new();
        let ws = sandbox.path().join("ws");
        let yaml = ONE_STEP
            .replace("$AGENT", agent_yaml)
            .replace("$TOOLS", tools_yaml)
            .replace("$WS", &ws.display().to_string())
            .replace("$TARGET", &target.url);
        let spec = sandbox
            .spec("tools.yaml", &yaml, &fake)
            .display()
            .to_string();
        Setup {
            sandbox,
            fake,
            target,
            spec,
        }
    }

    fn ws(&self) -> PathBuf {
        self.sandbox.path().join("ws")
    }

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.ws().join(name)).ok()
    }

    /// `run SPEC --json`, expecting `code`.
    fn run(&self, code: i32) -> Value {
        let out = self.sandbox.strands(&["run", &self.spec, "--json"]);
        out.expect_code(code);
        out.json()
    }

    /// `resume ID ARGS... --json`, expecting `code`.
    fn resume(&self, id: &str, args: &[&str], code: i32) -> crate::common::Outcome {
        let mut all = vec!["resume", id];
        all.extend_from_slice(args);
        all.push("--json");
        let out = self.sandbox.strands(&all);
        out.expect_code(code);
        out
    }

    /// The stored session (store revision, calls and their states).
    fn stored(&self, id: &str) -> strands::model::Session {
        let store =
            strands::store::sled::SledStore::open(&self.sandbox.store).expect("open the store");
        store.get(id).expect("the session")
    }
}

fn post(id: &str, target: &Target, path: &str, body: &str) -> Value {
    tool_call(
        id,
        "http_request",
        json!({"method": "POST", "url": format!("{}{path}", target.url), "body": body}),
    )
}

fn call_state(v: &Value, id: &str) -> String {
    gate_calls(v)
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no call {id} in {v:#}"))["state"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn assert_tool_gate(v: &Value) {
    assert_eq!(v["status"], "paused", "{v:#}");
    assert_eq!(v["exit_code"], 19, "{v:#}");
    assert_eq!(v["gate"]["kind"], "tool_call", "{v:#}");
    assert_eq!(v["gate"]["id"], "tools", "{v:#}");
}

const HTTP_AGENT: &str = "    tools: [http_request]";

// ---------------------------------------------------------------------------
// 1. A denied call never runs
// ---------------------------------------------------------------------------

#[test]
fn a_rejected_call_never_reaches_the_target_and_the_model_reads_why() {
    let target = Target::start();
    let pay = post("call_pay", &target, "/pay", r#"{"amount":5}"#);
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![vec![pay]]), target);

    let out = s.sandbox.strands(&["run", &s.spec, "--json"]);
    out.expect_code(19);
    let v = out.json();
    assert_tool_gate(&v);
    assert_eq!(v["gate"]["handle"], "tools#1", "{v:#}");
    let id = session_id(&v);
    let listed = gate_calls(&v);
    assert_eq!(listed.len(), 1, "{v:#}");
    let c = &listed[0];
    assert_eq!(c["id"], "call_pay");
    assert_eq!(c["tool"], "http_request");
    assert_eq!(c["arguments"]["method"], "POST");
    assert_eq!(c["state"]["state"], "waiting");
    assert!(c["digest"].as_str().is_some_and(|d| d.len() == 64), "{c:#}");
    let prompt = c["request"]["prompt"].as_str().expect("a prompt");
    assert!(
        prompt.contains("http_request") && prompt.contains("/pay"),
        "the prompt names the tool and what it would do: {prompt}"
    );
    assert_eq!(c["request"]["risk"], "medium", "{c:#}");
    assert_eq!(c["request"]["reversible"], false, "{c:#}");
    // The human text (stderr under --json) says how to answer this call.
    assert!(
        out.stderr.contains("--call call_pay --approve"),
        "{}",
        out.stderr
    );
    assert_eq!(s.fake.count(), 1);
    assert!(
        s.fake
            .request(1)
            .tools_offered()
            .contains(&"http_request".to_string()),
        "the tool is offered: {:#}",
        s.fake.request(1).body
    );
    assert_eq!(s.target.writes(), 0, "nothing ran before the answer");

    let done = s.resume(&id, &["--reject", "--reason", "not today"], 0);
    let v = done.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(v["output"], FINAL);
    assert_eq!(
        s.target.count("POST", "/pay"),
        0,
        "a rejected call never runs"
    );
    assert_eq!(s.target.hits().len(), 0, "{:?}", s.target.hits());
    assert_eq!(s.fake.count(), 2, "the model was asked once more");
    assert_eq!(
        s.fake.request(2).tool_result("call_pay"),
        "denied by tester: not today"
    );
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["decision"]["action"], "reject");
    assert_eq!(gates[0]["call"], "call_pay");
    assert_eq!(gates[0]["by"], "tester");
}

// ---------------------------------------------------------------------------
// 2. An approved call runs exactly once
// ---------------------------------------------------------------------------

#[test]
fn an_approved_call_runs_exactly_once_across_resumes() {
    let target = Target::start();
    let pay = post("call_pay", &target, "/pay", r#"{"amount":5}"#);
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![vec![pay]]), target);
    let id = session_id(&s.run(19));

    let v = s.resume(&id, &["--approve"], 0).json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(s.target.count("POST", "/pay"), 1);
    assert_eq!(s.target.hits()[0].body, r#"{"amount":5}"#);
    let result = s.fake.request(2).tool_result("call_pay");
    assert!(
        result.contains("200") && result.contains("target got POST /pay"),
        "the model reads the real response: {result}"
    );

    // A finished session takes no more answers and runs nothing again.
    let again = s.sandbox.strands(&["resume", &id]);
    again.expect_code(17);
    let again = s.sandbox.strands(&["resume", &id, "--approve"]);
    again.expect_code(17);
    let show = s.sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    assert_eq!(s.target.count("POST", "/pay"), 1, "still exactly one POST");
    assert_eq!(s.fake.count(), 2, "and no more model calls");
}

#[test]
fn a_call_running_when_the_process_is_killed_is_not_run_again() {
    // The target holds the POST long enough to kill the process mid-call.
    let target = Target::start_with(Some(("POST", "/slow", Duration::from_secs(30))));
    let slow = post("call_slow", &target, "/slow", "x");
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![vec![slow]]), target);
    let id = session_id(&s.run(19));

    let mut child = s.sandbox.spawn(&["resume", &id, "--approve"]);
    s.target
        .wait_for("POST", "/slow", 1, Duration::from_secs(20));
    child.kill().expect("SIGKILL strands");
    let _ = child.wait();

    let stored = s.stored(&id);
    assert_eq!(stored.status, strands::model::Status::Running);
    let turn = stored
        .agent_turn
        .as_ref()
        .expect("the step is mid-conversation");
    assert_eq!(
        turn.calls[0].state,
        strands::model::CallState::Running,
        "{turn:#?}"
    );

    // Continuing the interrupted run does not send the POST again.
    let out = s.sandbox.strands(&["resume", &id, "--json"]);
    out.expect_code(0);
    assert_eq!(s.target.count("POST", "/slow"), 1, "at most once");
    assert_eq!(s.fake.count(), 2);
    let result = s.fake.request(2).tool_result("call_slow");
    assert!(
        result.contains("interrupted while running"),
        "the model is told the call may or may not have happened: {result}"
    );
    s.sandbox.strands(&["resume", &id]).expect_code(17);
    assert_eq!(s.target.count("POST", "/slow"), 1);
}

// ---------------------------------------------------------------------------
// 3. Edited arguments run as edited
// ---------------------------------------------------------------------------

const WRITE_AGENT: &str = "    tools: [file_write, delete_files]";

fn write_draft() -> FakeLlm {
    tool_model(vec![vec![tool_call(
        "call_w",
        "file_write",
        json!({"path": "a.txt", "content": "draft"}),
    )]])
}

#[test]
fn edited_arguments_run_as_edited_and_a_bad_edit_changes_nothing() {
    let s = Setup::new(WRITE_AGENT, "", write_draft(), Target::start());
    let v = s.run(19);
    assert_tool_gate(&v);
    let id = session_id(&v);
    let before = s.stored(&id);

    // Missing `content`: refused against the schema, nothing recorded.
    let bad = s.resume(&id, &["--edit-args", r#"{"path":"a.txt"}"#], 2);
    assert!(bad.stderr.contains("content"), "{}", bad.stderr);
    let after = s.stored(&id);
    assert_eq!(after.rev, before.rev, "a refused edit writes nothing");
    assert_eq!(after.status, strands::model::Status::Paused);
    assert_eq!(s.file("a.txt"), None);
    // Not JSON at all: the same.
    s.resume(&id, &["--edit-args", "{path"], 2);
    assert_eq!(s.stored(&id).rev, before.rev);

    let v = s
        .resume(
            &id,
            &["--edit-args", r#"{"path":"a.txt","content":"final"}"#],
            0,
        )
        .json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(s.file("a.txt").as_deref(), Some("final"));
    assert_eq!(s.fake.count(), 2);
    let result = s.fake.request(2).tool_result("call_w");
    assert!(!result.contains("invalid"), "{result}");
    let gates = history(&v);
    assert_eq!(gates[0]["decision"]["action"], "edit", "{gates:#?}");
    assert_eq!(gates[0]["decision"]["arguments"]["content"], "final");
}

#[test]
fn an_edit_in_name_and_arguments_form_for_the_same_tool_runs_the_arguments() {
    // check_tool_answer accepts `{name, arguments}` naming the call's own
    // tool; what runs must be the inner arguments.
    let s = Setup::new(WRITE_AGENT, "", write_draft(), Target::start());
    let id = session_id(&s.run(19));
    let v = s
        .resume(
            &id,
            &[
                "--edit-args",
                r#"{"name":"file_write","arguments":{"path":"a.txt","content":"final"}}"#,
            ],
            0,
        )
        .json();
    assert_eq!(v["status"], "completed", "{v:#}");
    let result = s.fake.request(2).tool_result("call_w");
    assert_eq!(
        s.file("a.txt").as_deref(),
        Some("final"),
        "the edited call should have written the file; the model read: {result}"
    );
}

// ---------------------------------------------------------------------------
// 4. An edit cannot change which tool runs
// ---------------------------------------------------------------------------

#[test]
fn an_edit_that_names_another_tool_is_refused_and_changes_nothing() {
    let s = Setup::new(WRITE_AGENT, "", write_draft(), Target::start());
    std::fs::create_dir_all(s.ws()).expect("ws");
    std::fs::write(s.ws().join("keep.txt"), "precious").expect("keep.txt");
    let v = s.run(19);
    let id = session_id(&v);
    let before = s.stored(&id);
    let show_before = s.sandbox.show(&id);

    for edit in [
        r#"{"name":"delete_files","arguments":{"paths":["keep.txt"]}}"#,
        r#"{"tool":"delete_files","arguments":{"paths":["keep.txt"]}}"#,
        r#"{"name":"delete_files","paths":["keep.txt"]}"#,
    ] {
        let out = s.resume(&id, &["--edit-args", edit], 2);
        assert!(
            out.stderr.contains("an edit cannot change which tool runs"),
            "{edit}: {}",
            out.stderr
        );
        let after = s.stored(&id);
        assert_eq!(after.rev, before.rev, "{edit}: nothing written");
        assert_eq!(after.status, strands::model::Status::Paused);
        assert_eq!(s.sandbox.show(&id), show_before, "{edit}");
    }
    assert_eq!(s.file("keep.txt").as_deref(), Some("precious"));
    assert_eq!(s.file("a.txt"), None);
    assert_eq!(s.fake.count(), 1);
    // The call is still waiting and takes a plain approval.
    s.resume(&id, &["--approve"], 0);
    assert_eq!(s.file("a.txt").as_deref(), Some("draft"));
    assert_eq!(s.file("keep.txt").as_deref(), Some("precious"));
}

// ---------------------------------------------------------------------------
// 5. Trust
// ---------------------------------------------------------------------------

#[test]
fn trust_silences_later_prompts_for_that_tool_in_that_session_only() {
    let fake = tool_model(vec![
        vec![tool_call(
            "w1",
            "file_write",
            json!({"path": "one.txt", "content": "1"}),
        )],
        vec![tool_call(
            "w2",
            "file_write",
            json!({"path": "two.txt", "content": "2"}),
        )],
    ]);
    let agent = "    tools: [file_write]\n    enable_trust: true";
    let s = Setup::new(agent, "", fake, Target::start());
    let v = s.run(19);
    let id = session_id(&v);
    assert_eq!(gate_calls(&v)[0]["request"]["trustable"], true, "{v:#}");
    assert_eq!(s.file("one.txt"), None);

    let v = s.resume(&id, &["--trust"], 0).json();
    assert_eq!(
        v["status"], "completed",
        "the second write did not pause: {v:#}"
    );
    assert_eq!(v["gates_asked"], 1, "{v:#}");
    assert_eq!(s.file("one.txt").as_deref(), Some("1"));
    assert_eq!(s.file("two.txt").as_deref(), Some("2"));
    assert_eq!(s.fake.count(), 3);
    assert!(!s.fake.request(3).tool_result("w2").contains("denied"));
    assert_eq!(history(&v)[0]["decision"]["action"], "trust");

    // A new run of the same spec asks again.
    std::fs::remove_file(s.ws().join("one.txt")).expect("rm one.txt");
    let v = s.run(19);
    assert_tool_gate(&v);
    assert_ne!(session_id(&v), id);
    assert_eq!(gate_calls(&v)[0]["id"], "w1");
    assert_eq!(s.file("one.txt"), None, "not run in the new session");
    assert_eq!(s.fake.count(), 4);
}

#[test]
fn a_negated_tool_or_an_agent_without_enable_trust_cannot_be_trusted() {
    let fake = || {
        tool_model(vec![vec![tool_call(
            "del",
            "delete_files",
            json!({"paths": ["x.txt"]}),
        )]])
    };
    let negated = "    tools: [file_write, delete_files]\n    allowed_tools: [\"*\", \"!delete_files\"]\n    enable_trust: true";
    let no_trust = "    tools: [file_write, delete_files]";
    for agent in [negated, no_trust] {
        let s = Setup::new(agent, "", fake(), Target::start());
        std::fs::create_dir_all(s.ws()).expect("ws");
        std::fs::write(s.ws().join("x.txt"), "x").expect("x.txt");
        let v = s.run(19);
        let id = session_id(&v);
        assert_eq!(gate_calls(&v)[0]["request"]["trustable"], false, "{v:#}");
        let rev = s.stored(&id).rev;
        let out = s.resume(&id, &["--trust"], 2);
        assert!(out.stderr.contains("cannot be trusted"), "{}", out.stderr);
        let after = s.stored(&id);
        assert_eq!(after.rev, rev);
        assert!(after.trusted_tools.is_empty());
        assert_eq!(s.file("x.txt").as_deref(), Some("x"));
        assert_eq!(s.fake.count(), 1);
    }
}

#[test]
fn trust_approves_the_same_tools_other_calls_in_the_batch_but_not_other_tools() {
    let fake = tool_model(vec![vec![
        tool_call(
            "w1",
            "file_write",
            json!({"path": "one.txt", "content": "1"}),
        ),
        tool_call(
            "w2",
            "file_write",
            json!({"path": "two.txt", "content": "2"}),
        ),
        tool_call("d", "delete_files", json!({"paths": ["x.txt"]})),
    ]]);
    let agent = "    tools: [file_write, delete_files]\n    enable_trust: true";
    let s = Setup::new(agent, "", fake, Target::start());
    std::fs::create_dir_all(s.ws()).expect("ws");
    std::fs::write(s.ws().join("x.txt"), "x").expect("x.txt");
    let id = session_id(&s.run(19));

    let v = s.resume(&id, &["--call", "w1", "--trust"], 19).json();
    assert_eq!(call_state(&v, "w1"), "approved");
    assert_eq!(call_state(&v, "w2"), "approved", "trust covers the batch");
    assert_eq!(call_state(&v, "d"), "waiting", "but only for file_write");
    let v = s.resume(&id, &["--call", "d", "--reject"], 0).json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(s.file("one.txt").as_deref(), Some("1"));
    assert_eq!(s.file("two.txt").as_deref(), Some("2"));
    assert_eq!(s.file("x.txt").as_deref(), Some("x"));
    assert_eq!(s.fake.request(2).tool_result("d"), "denied by tester");
}

// ---------------------------------------------------------------------------
// 6. One decision per call
// ---------------------------------------------------------------------------

#[test]
fn a_batch_with_one_approved_and_one_rejected_call() {
    let target = Target::start();
    let batch = vec![
        post("c_pay", &target, "/pay", "p"),
        post("c_refund", &target, "/refund", "r"),
    ];
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![batch]), target);
    let v = s.run(19);
    let id = session_id(&v);
    assert_eq!(gate_calls(&v).len(), 2, "{v:#}");
    assert_eq!(call_state(&v, "c_pay"), "waiting");
    assert_eq!(call_state(&v, "c_refund"), "waiting");

    // Two calls wait: an answer must say which.
    let out = s.resume(&id, &["--approve"], 2);
    assert!(out.stderr.contains("--call"), "{}", out.stderr);
    s.resume(&id, &["--call", "nope", "--approve"], 2);

    let v = s.resume(&id, &["--call", "c_pay", "--approve"], 19).json();
    assert_tool_gate(&v);
    assert_eq!(v["gate"]["handle"], "tools#1", "{v:#}");
    assert_eq!(call_state(&v, "c_pay"), "approved");
    assert_eq!(call_state(&v, "c_refund"), "waiting");
    assert_eq!(s.fake.count(), 1);

    let v = s
        .resume(
            &id,
            &["--call", "c_refund", "--reject", "--reason", "nope"],
            0,
        )
        .json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(s.target.count("POST", "/pay"), 1);
    assert_eq!(s.target.count("POST", "/refund"), 0);
    assert_eq!(s.target.hits().len(), 1, "{:?}", s.target.hits());
    assert_eq!(s.fake.count(), 2);
    let next = s.fake.request(2);
    assert_eq!(next.tool_results().len(), 2, "{:#}", next.body);
    assert!(next.tool_result("c_pay").contains("target got POST /pay"));
    assert_eq!(next.tool_result("c_refund"), "denied by tester: nope");
    let gates = history(&v);
    assert_eq!(gates.len(), 2, "{gates:#?}");
    assert_eq!(gates[0]["call"], "c_pay");
    assert_eq!(gates[1]["call"], "c_refund");
}

// ---------------------------------------------------------------------------
// 7. A rejected call is not proposed to a human again
// ---------------------------------------------------------------------------

#[test]
fn the_same_rejected_call_is_not_asked_again() {
    let target = Target::start();
    let turns = vec![
        vec![post("c1", &target, "/pay", "same")],
        vec![post("c2", &target, "/pay", "same")],
    ];
    let s = Setup::new(HTTP_AGENT, "", tool_model(turns), target);
    let id = session_id(&s.run(19));

    let v = s.resume(&id, &["--reject", "--reason", "no"], 0).json();
    assert_eq!(v["status"], "completed", "not asked again: {v:#}");
    assert_eq!(v["gates_asked"], 1, "{v:#}");
    assert_eq!(s.target.writes(), 0);
    assert_eq!(s.fake.count(), 3);
    assert_eq!(s.fake.request(2).tool_result("c1"), "denied by tester: no");
    let again = s.fake.request(3).tool_result("c2");
    assert!(
        again.contains("already denied by tester: no"),
        "the model is told it was already denied: {again}"
    );
}

// ---------------------------------------------------------------------------
// 8. Policy
// ---------------------------------------------------------------------------

#[test]
fn require_approval_false_runs_a_write_without_asking_and_get_needs_no_approval() {
    let target = Target::start();
    let turns = vec![vec![
        tool_call("w", "file_write", json!({"path": "a.txt", "content": "hi"})),
        tool_call(
            "g",
            "http_request",
            json!({"method": "GET", "url": format!("{}/status", target.url)}),
        ),
    ]];
    let agent = "    tools:\n      - name: file_write\n        require_approval: false\n      - http_request";
    let s = Setup::new(agent, "", tool_model(turns), target);
    let v = s.run(0);
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(v["gates_asked"], 0);
    assert_eq!(s.file("a.txt").as_deref(), Some("hi"));
    assert_eq!(s.target.count("GET", "/status"), 1);
    assert!(s
        .fake
        .request(2)
        .tool_result("g")
        .contains("target got GET /status"));
}

#[test]
fn approval_condition_and_approval_prompt_of_an_http_executor() {
    let target = Target::start();
    let pay = |id: &str, amount: u64, to: &str| {
        tool_call(
            id,
            "payments",
            json!({"method": "POST", "path": "/pay", "body": {"amount": amount, "to": to}}),
        )
    };
    let turns = vec![vec![pay("small", 10, "bob")], vec![pay("big", 5000, "eve")]];
    let tools = "  http_executors:\n    - id: payments\n      base_url: $TARGET/api\n      require_approval: true\n      approval_condition: \"{{ args.body.amount > 1000 }}\"\n      approval_prompt: \"Pay {{ args.body.amount }} to {{ args.body.to }}?\"\n      risk: high";
    let s = Setup::new("    tools: [payments]", tools, tool_model(turns), target);

    let out = s.sandbox.strands(&["run", &s.spec, "--json"]);
    out.expect_code(19);
    let v = out.json();
    assert_tool_gate(&v);
    // 10 is under the condition: it ran without asking.
    assert_eq!(
        s.target.count("POST", "/api/pay"),
        1,
        "{:?}",
        s.target.hits()
    );
    let first: Value = serde_json::from_str(&s.target.hits()[0].body).expect("a JSON body");
    assert_eq!(first["amount"], 10);
    // 5000 waits, with the rendered prompt.
    let c = &gate_calls(&v)[0];
    assert_eq!(c["id"], "big");
    assert_eq!(c["request"]["prompt"], "Pay 5000 to eve?", "{c:#}");
    assert_eq!(c["request"]["risk"], "high");
    assert!(out.stderr.contains("Pay 5000 to eve?"), "{}", out.stderr);
    let shown = s.sandbox.strands(&["sessions", "show", &session_id(&v)]);
    assert!(
        shown.stdout.contains("Pay 5000 to eve?"),
        "{}",
        shown.stdout
    );

    s.resume(&session_id(&v), &["--approve"], 0);
    assert_eq!(s.target.count("POST", "/api/pay"), 2);
    let second: Value = serde_json::from_str(&s.target.hits()[1].body).expect("a JSON body");
    assert_eq!(second["amount"], 5000);
}

#[test]
fn an_approval_condition_that_cannot_be_evaluated_fails_closed() {
    // The schema allows a string body; `args.body.amount` is then undefined
    // (strict templates): the call must not run without a human.
    let target = Target::start();
    let turns = vec![vec![tool_call(
        "sneaky",
        "payments",
        json!({"method": "POST", "path": "/pay", "body": "{\"amount\": 5000}"}),
    )]];
    let tools = "  http_executors:\n    - id: payments\n      base_url: $TARGET\n      require_approval: true\n      approval_condition: \"{{ args.body.amount > 1000 }}\"";
    let s = Setup::new("    tools: [payments]", tools, tool_model(turns), target);
    // Every policy error denies: the model reads a refusal, nobody is asked.
    let v = s.run(0);
    assert_eq!(v["gates_asked"], 0, "{v:#}");
    assert_eq!(s.target.writes(), 0, "{:?}", s.target.hits());
    let result = s.fake.request(2).tool_result("sneaky");
    assert!(
        result.starts_with("not run: the approval policy failed"),
        "{result}"
    );
}

#[test]
fn allowed_tools_run_listed_tools_and_ask_for_the_rest() {
    let fake = tool_model(vec![vec![
        tool_call("w", "file_write", json!({"path": "a.txt", "content": "a"})),
        tool_call("d", "delete_files", json!({"paths": ["x.txt"]})),
        tool_call("l", "list_files", json!({})),
    ]]);
    let agent =
        "    tools: [file_write, delete_files, list_files]\n    allowed_tools: [file_write]";
    let s = Setup::new(agent, "", fake, Target::start());
    std::fs::create_dir_all(s.ws()).expect("ws");
    std::fs::write(s.ws().join("x.txt"), "x").expect("x.txt");
    let v = s.run(19);
    assert_eq!(call_state(&v, "w"), "approved", "listed: runs");
    assert_eq!(call_state(&v, "d"), "waiting", "not listed: asks");
    assert_eq!(
        call_state(&v, "l"),
        "waiting",
        "not listed, even a read: asks"
    );
    let id = session_id(&v);
    s.resume(&id, &["--call", "d", "--approve"], 19);
    assert_eq!(
        s.file("x.txt").as_deref(),
        Some("x"),
        "nothing runs while a call waits"
    );
    s.resume(&id, &["--call", "l", "--approve"], 0);
    assert_eq!(s.file("a.txt").as_deref(), Some("a"));
    assert_eq!(s.file("x.txt"), None, "the approved delete ran");
}

#[test]
fn a_python_tool_is_refused_by_validate() {
    let fake = FakeLlm::start();
    let tools = "  python:\n    - callable: my_pkg.transfer_money";
    let s = Setup::new("    tools: [file_read]", tools, fake, Target::start());
    let out = s.sandbox.strands(&["validate", &s.spec]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("my_pkg.transfer_money"),
        "{}",
        out.stderr
    );
    let out = s.sandbox.strands(&["run", &s.spec]);
    out.expect_code(3);
    assert_eq!(s.fake.count(), 0);
}

// ---------------------------------------------------------------------------
// 9. Turn limit
// ---------------------------------------------------------------------------

#[test]
fn a_model_that_keeps_calling_tools_hits_the_turn_limit() {
    let fake = FakeLlm::start_with(Behaviour::scripted(|n, _| {
        Say::Calls(vec![tool_call(
            &format!("r{n}"),
            "file_read",
            json!({"path": "a.txt"}),
        )])
    }));
    let agent = "    tools: [file_read]\n    max_turns: 2";
    let s = Setup::new(agent, "", fake, Target::start());
    let out = s.sandbox.strands(&["run", &s.spec, "--json"]);
    out.expect_code(10);
    let v = out.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("turn limit"), "{v:#}");
    assert_eq!(s.fake.count(), 2, "exactly max_turns model calls");
}

// ---------------------------------------------------------------------------
// 10. --interactive
// ---------------------------------------------------------------------------

#[test]
fn interactive_approve_and_reject_on_stdin() {
    let target = Target::start();
    let pay = post("call_pay", &target, "/pay", "p");
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![vec![pay]]), target);

    let out = s
        .sandbox
        .strands_stdin(&["run", &s.spec, "--interactive", "--json"], "a\n");
    out.expect_code(0);
    assert!(out.stderr.contains("call_pay"), "{}", out.stderr);
    assert_eq!(s.target.count("POST", "/pay"), 1);
    let v = out.json();
    assert_eq!(history(&v)[0]["via"], "terminal");

    let out = s
        .sandbox
        .strands_stdin(&["run", &s.spec, "--interactive", "--json"], "r\nno\n");
    out.expect_code(0);
    assert_eq!(
        s.target.count("POST", "/pay"),
        1,
        "the rejected call did not run"
    );
    assert_eq!(s.fake.count(), 4);
    assert_eq!(
        s.fake.request(4).tool_result("call_pay"),
        "denied by tester: no"
    );

    // Input that ends unanswered: nobody could be asked (exit 2); the
    // session stays paused and nothing runs.
    let out = s
        .sandbox
        .strands_stdin(&["run", &s.spec, "--interactive", "--json"], "");
    out.expect_code(2);
    assert_eq!(s.target.count("POST", "/pay"), 1);
}

#[test]
fn interactive_answers_a_batch_call_by_call() {
    let target = Target::start();
    let batch = vec![
        post("c_pay", &target, "/pay", "p"),
        post("c_refund", &target, "/refund", "r"),
    ];
    let s = Setup::new(HTTP_AGENT, "", tool_model(vec![batch]), target);
    let out = s
        .sandbox
        .strands_stdin(&["run", &s.spec, "--interactive", "--json"], "a\nr\nnope\n");
    out.expect_code(0);
    assert_eq!(s.target.count("POST", "/pay"), 1);
    assert_eq!(s.target.count("POST", "/refund"), 0);
    assert_eq!(
        s.fake.request(2).tool_result("c_refund"),
        "denied by tester: nope"
    );
}
