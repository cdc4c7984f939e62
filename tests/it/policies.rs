//! Approval rules through the real binary: who must answer a gate depends
//! on what is at stake. A payment's amount picks the rule on chain,
//! workflow and graph gates; a tool call's name and arguments pick it on
//! tool-call gates; an approval request's `details` pick it from a named
//! policy of the service file. A condition that cannot be evaluated picks
//! the strictest rule and says so. The rule shows in `sessions show`, the
//! API and the audit export; `strands policy explain` answers without
//! running anything.

use super::api::World;
use crate::common::api::{call, expect_error};
use crate::common::{session_id, tool_call, tool_model, FakeLlm, Sandbox, FINAL};
use serde_json::{json, Value};

/// The payment gate's rules; `$GATE` is where the pattern puts the gate.
const RULES: &str = r#"        approvers:
          - when: "{{ details.amount > 10000 }}"
            approvers: [cfo, controller]
            quorum: 2
            timeout: 8h business
          - approvers: [clerk1]
"#;

fn chain() -> String {
    format!(
        r#"version: 0
name: payments
runtime:
  provider: echo
inputs:
  required:
    amount: number
agents:
  clerk:
    prompt: You prepare payments.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: "Prepare a payment of {{{{ amount }}}}."
      - type: manual_gate
        id: release
        prompt: "Release {{{{ amount }}}}?"
{RULES}      - agent: clerk
        input: Pay it.
"#
    )
}

fn workflow() -> String {
    format!(
        r#"version: 0
name: payments-workflow
runtime:
  provider: echo
inputs:
  required:
    amount: number
agents:
  clerk:
    prompt: You prepare payments.
pattern:
  type: workflow
  config:
    tasks:
      - id: prepare
        agent: clerk
        input: "Prepare {{{{ amount }}}}."
      - id: release
        type: manual_gate
        deps: [prepare]
        prompt: "Release {{{{ amount }}}}?"
{RULES}      - id: pay
        agent: clerk
        deps: [release]
        input: Pay it.
"#
    )
}

fn graph() -> String {
    format!(
        r#"version: 0
name: payments-graph
runtime:
  provider: echo
inputs:
  required:
    amount: number
agents:
  clerk:
    prompt: You prepare payments.
pattern:
  type: graph
  config:
    nodes:
      prepare:
        agent: clerk
        input: "Prepare {{{{ amount }}}}."
      release:
        type: manual_gate
        prompt: "Release {{{{ amount }}}}?"
{RULES}      pay:
        agent: clerk
        input: Pay it.
    edges:
      - from: prepare
        to: [release]
      - from: release
        to: [pay]
"#
    )
}

/// Runs `yaml` as alice with `--var amount=N`; the paused run's JSON.
fn run_with(sandbox: &Sandbox, yaml: &str, amount: &str) -> Value {
    let path = sandbox.path().join("spec.yaml");
    std::fs::write(&path, yaml).expect("write spec");
    let var = format!("amount={amount}");
    let out = sandbox.strands_as(
        "alice",
        &[],
        &[
            "run",
            path.to_str().expect("utf-8"),
            "--var",
            &var,
            "--json",
        ],
    );
    out.expect_code(19);
    out.json()
}

fn resume_as(sandbox: &Sandbox, who: &str, id: &str, flags: &[&str]) -> crate::common::Outcome {
    let mut args = vec!["resume", id];
    args.extend_from_slice(flags);
    sandbox.strands_as(who, &[], &args)
}

/// The `request` entries of the audit export.
fn requests(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.strands(&["audit", "export"]);
    out.expect_code(0);
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "request")
        .collect()
}

#[test]
fn a_large_amount_needs_two_of_finance_and_the_rule_is_shown_and_audited() {
    let sandbox = Sandbox::new();
    let v = run_with(&sandbox, &chain(), "20000");
    let id = session_id(&v);
    let gate = &v["gate"];
    assert_eq!(gate["approvers"], json!(["cfo", "controller"]), "{gate:#}");
    assert_eq!(gate["approvals_required"], 2, "{gate:#}");
    assert_eq!(gate["rule"]["index"], 1, "{gate:#}");
    assert_eq!(
        gate["rule"]["summary"],
        "needs 2 of cfo, controller because amount > 10000"
    );
    // The rule's own timeout (8h) replaced the gate's none.
    assert!(gate["timeout_at"].is_string(), "{gate:#}");
    let shown = sandbox.show(&id);
    assert_eq!(
        shown["open_gates"][0]["rule"]["summary"],
        gate["rule"]["summary"]
    );

    // The default rule's approver may not answer this one.
    let out = resume_as(&sandbox, "clerk1", &id, &["--approve"]);
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);
    resume_as(&sandbox, "cfo", &id, &["--approve"]).expect_code(19);
    resume_as(&sandbox, "controller", &id, &["--approve"]).expect_code(0);

    let asked = requests(&sandbox);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(
        asked[0]["event"]["rule"],
        "rule 1: needs 2 of cfo, controller because amount > 10000"
    );
    // The chain still verifies with the new field in it.
    sandbox.strands(&["audit", "verify"]).expect_code(0);
    let csv = sandbox.strands(&["audit", "export", "--format", "csv"]);
    csv.expect_code(0);
    assert!(
        csv.stdout.lines().next().unwrap_or("").contains(",rule,"),
        "{}",
        csv.stdout
    );
    assert!(
        csv.stdout.contains("because amount > 10000"),
        "{}",
        csv.stdout
    );
}

#[test]
fn a_small_amount_falls_to_the_default_rule() {
    let sandbox = Sandbox::new();
    let v = run_with(&sandbox, &chain(), "50");
    let gate = &v["gate"];
    assert_eq!(gate["approvers"], json!(["clerk1"]), "{gate:#}");
    assert_eq!(gate["approvals_required"], 1);
    assert_eq!(gate["rule"]["index"], 2);
    assert_eq!(gate["rule"]["summary"], "needs 1 of clerk1 (default rule)");
    assert!(gate["timeout_at"].is_null(), "{gate:#}");
    resume_as(&sandbox, "clerk1", &session_id(&v), &["--approve"]).expect_code(0);
}

#[test]
fn workflow_tasks_and_graph_nodes_choose_their_rule_the_same_way() {
    for (name, yaml) in [("workflow", workflow()), ("graph", graph())] {
        let sandbox = Sandbox::new();
        let big = run_with(&sandbox, &yaml, "20000");
        assert_eq!(big["gate"]["rule"]["index"], 1, "{name}: {big:#}");
        assert_eq!(big["gate"]["approvals_required"], 2, "{name}");
        let small = run_with(&sandbox, &yaml, "10");
        assert_eq!(small["gate"]["rule"]["index"], 2, "{name}: {small:#}");
        assert_eq!(small["gate"]["approvers"], json!(["clerk1"]), "{name}");
    }
}

#[test]
fn a_condition_that_fails_picks_the_strictest_rule_and_says_why() {
    let sandbox = Sandbox::new();
    // `limit` is no input: the first condition cannot be evaluated. The
    // strictest rule (2 approvals) applies even though its own condition
    // is false, not the lax default.
    let yaml = chain().replace(
        RULES,
        r#"        approvers:
          - when: "{{ details.limit > 10 }}"
            approvers: [clerk1]
          - when: "{{ details.amount > 1000000 }}"
            approvers: [cfo, controller]
            quorum: 2
          - approvers: [clerk1]
"#,
    );
    let v = run_with(&sandbox, &yaml, "5");
    let rule = &v["gate"]["rule"];
    assert_eq!(rule["index"], 2, "{rule:#}");
    assert_eq!(v["gate"]["approvals_required"], 2);
    let failed = rule["failed"].as_str().expect("what failed");
    assert!(
        failed.contains("rule 1") && failed.contains("undefined"),
        "{failed}"
    );
    let summary = rule["summary"].as_str().expect("summary");
    assert!(
        summary.starts_with("needs 2 of cfo, controller (strictest rule applied:"),
        "{summary}"
    );
    let asked = requests(&sandbox);
    let audited = asked[0]["event"]["rule"].as_str().unwrap_or_default();
    assert!(audited.contains("fail closed"), "{audited}");
}

#[test]
fn a_rule_list_without_a_default_is_refused_at_its_line() {
    let sandbox = Sandbox::new();
    let yaml = chain().replace(
        "          - approvers: [clerk1]\n",
        "          - when: \"{{ details.amount > 0 }}\"\n            approvers: [clerk1]\n",
    );
    let path = sandbox.path().join("bad.yaml");
    std::fs::write(&path, &yaml).expect("write");
    let out = sandbox.strands(&["validate", path.to_str().expect("utf-8")]);
    out.expect_code(3);
    let line = yaml
        .lines()
        .position(|l| l.contains("details.amount > 0"))
        .expect("the line")
        + 1;
    assert!(
        out.stderr.contains(&format!("bad.yaml:{line}:")),
        "{line}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("the last rule is the default"),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------
// Tool calls
// ---------------------------------------------------------------------------

const TOOLS: &str = r#"version: 0
name: tool-rules
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: $WS
security:
  approvers:
    - when: "{{ tool.name == 'delete_files' }}"
      approvers: [dba]
    - when: "{{ tool.args.path == 'ledger.csv' }}"
      label: it writes the ledger
      approvers: [cfo]
      require_reason: true
    - approvers: [support]
agents:
  worker:
    prompt: You are the WORKER.
    tools: [file_write, delete_files]
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: Do the job.
"#;

fn tool_run(calls: Vec<Value>) -> (Sandbox, FakeLlm, Value) {
    let fake = tool_model(vec![calls]);
    let sandbox = Sandbox::new();
    let ws = sandbox.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let yaml = TOOLS.replace("$WS", &ws.display().to_string());
    let spec = sandbox.spec("tools.yaml", &yaml, &fake);
    let out = sandbox.strands_as(
        "alice",
        &[],
        &["run", spec.to_str().expect("utf-8"), "--json"],
    );
    out.expect_code(19);
    let v = out.json();
    assert_eq!(v["gate"]["kind"], "tool_call", "{v:#}");
    (sandbox, fake, v)
}

fn write(id: &str, path: &str) -> Value {
    tool_call(id, "file_write", json!({"path": path, "content": "x"}))
}

#[test]
fn a_tool_calls_arguments_choose_who_approves_it() {
    let (_s, _f, v) = tool_run(vec![write("c1", "notes.txt")]);
    assert_eq!(v["gate"]["approvers"], json!(["support"]), "{v:#}");
    assert_eq!(v["gate"]["rule"]["index"], 3);

    let (sandbox, _fake, v) = tool_run(vec![write("c1", "ledger.csv")]);
    let id = session_id(&v);
    let gate = &v["gate"];
    assert_eq!(gate["approvers"], json!(["cfo"]), "{gate:#}");
    assert_eq!(gate["require_reason"], true);
    assert_eq!(
        gate["rule"]["summary"],
        "needs 1 of cfo because it writes the ledger"
    );
    resume_as(&sandbox, "support", &id, &["--approve"]).expect_code(17);
    let out = resume_as(&sandbox, "cfo", &id, &["--approve", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["output"], FINAL);
    assert_eq!(
        std::fs::read_to_string(sandbox.path().join("ws/ledger.csv")).expect("written"),
        "x"
    );
}

#[test]
fn several_calls_in_one_turn_take_the_strictest_rule_the_earliest_on_a_tie() {
    let (_s, _f, v) = tool_run(vec![
        write("c1", "ledger.csv"),
        tool_call("c2", "delete_files", json!({"paths": ["old.txt"]})),
    ]);
    // Both rules need one approval: the earlier listed (delete_files → dba) wins.
    assert_eq!(v["gate"]["rule"]["index"], 1, "{v:#}");
    assert_eq!(v["gate"]["approvers"], json!(["dba"]));
}

// ---------------------------------------------------------------------------
// Approval requests and named policies
// ---------------------------------------------------------------------------

const SERVICE: &str = r#"policies:
  payments:
    - when: "{{ details.amount > 10000 }}"
      approvers: [cfo, controller]
      quorum: 2
    - approvers: [clerk1]
"#;

fn service_file(sandbox: &Sandbox) -> String {
    let path = sandbox.path().join("service.yaml");
    std::fs::write(&path, SERVICE).expect("write the service file");
    path.display().to_string()
}

#[test]
fn strands_ask_takes_a_named_policy_judged_on_its_details() {
    let sandbox = Sandbox::new();
    let file = service_file(&sandbox);
    let env = [("STRANDS_SERVICE_FILE", file.as_str())];
    let ask = |extra: &[&str]| {
        let mut args = vec!["ask", "Pay ACME?", "--policy", "payments", "--no-wait"];
        args.extend_from_slice(extra);
        let out = sandbox.strands_as("ci", &env, &args);
        out.expect_code(0);
        out.stdout.trim().to_string()
    };
    let big = ask(&["--detail", "amount=20000"]);
    let gate = &sandbox.show(&big)["gate"];
    assert_eq!(gate["approvers"], json!(["cfo", "controller"]), "{gate:#}");
    assert_eq!(gate["approvals_required"], 2);
    assert_eq!(
        gate["rule"]["summary"],
        "needs 2 of cfo, controller because amount > 10000"
    );
    let small = ask(&["--detail", "amount=20"]);
    assert_eq!(sandbox.show(&small)["gate"]["rule"]["index"], 2);
    // No amount: the condition fails, the strictest rule applies.
    let none = ask(&[]);
    let rule = &sandbox.show(&none)["gate"]["rule"];
    assert_eq!(rule["index"], 1, "{rule:#}");
    assert!(
        rule["failed"].as_str().unwrap_or("").contains("undefined"),
        "{rule:#}"
    );

    // An unknown policy is refused and creates nothing.
    let before = sandbox.list()["sessions"].as_array().map(Vec::len);
    let out = sandbox.strands_as(
        "ci",
        &env,
        &["ask", "Pay?", "--policy", "refunds", "--no-wait"],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("no policy `refunds`"), "{}", out.stderr);
    assert_eq!(sandbox.list()["sessions"].as_array().map(Vec::len), before);
    // A policy and approvers do not mix.
    let out = sandbox.strands_as(
        "ci",
        &env,
        &["ask", "Pay?", "--policy", "payments", "--approvers", "bob"],
    );
    out.expect_code(2);
}

#[test]
fn a_bad_policy_in_the_service_file_stops_the_command_naming_it() {
    let sandbox = Sandbox::new();
    let path = sandbox.path().join("service.yaml");
    std::fs::write(
        &path,
        "policies:\n  payments:\n    - when: \"{{ details.amount > 10 }}\"\n      approvers: [cfo]\n",
    )
    .expect("write");
    let file = path.display().to_string();
    let out = sandbox.strands_as(
        "ci",
        &[("STRANDS_SERVICE_FILE", file.as_str())],
        &["ask", "Pay?", "--policy", "payments", "--no-wait"],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("policy `payments`") && out.stderr.contains("default"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_api_takes_a_policy_and_refuses_an_unknown_one_creating_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("service.yaml");
    std::fs::write(&file, SERVICE).expect("write");
    let file = file.display().to_string();
    let w = World::start_with(|cfg| cfg.with("STRANDS_SERVICE_FILE", Some(file.as_str())));
    let post = |body: Value| {
        call(
            &w.svc,
            "POST",
            "/api/v1/approvals",
            Some(&w.ci),
            Some(&body),
        )
    };
    let count = || {
        let r = call(
            &w.svc,
            "GET",
            "/api/v1/sessions?workflow=approval&limit=500",
            Some(&w.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["sessions"].as_array().map_or(0, Vec::len)
    };
    let r = post(json!({"title": "Pay?", "policy": "refunds"}));
    let msg = expect_error(&r, 422, "invalid_request");
    assert_eq!(r.json()["error"]["field"], "policy", "{}", r.body);
    assert!(msg.contains("payments"), "{msg}");
    let r = post(json!({"title": "Pay?", "policy": "payments", "approvers": ["bob"]}));
    expect_error(&r, 422, "invalid_request");
    assert_eq!(r.json()["error"]["field"], "approvers", "{}", r.body);
    assert_eq!(count(), 0);

    let r = post(json!({"title": "Pay?", "policy": "payments", "details": {"amount": "25000"}}));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while w.session(&id)["status"] != "paused" {
        assert!(std::time::Instant::now() < until, "never paused");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let gate = &w.session(&id)["gate"];
    assert_eq!(gate["approvers"], json!(["cfo", "controller"]), "{gate:#}");
    assert_eq!(gate["rule"]["index"], 1);
}

// ---------------------------------------------------------------------------
// strands policy explain
// ---------------------------------------------------------------------------

#[test]
fn policy_explain_names_the_rule_who_answers_and_the_deadline() {
    let sandbox = Sandbox::new();
    let path = sandbox.path().join("spec.yaml");
    std::fs::write(&path, chain()).expect("write");
    let spec = path.to_str().expect("utf-8");
    let out = sandbox.strands(&[
        "policy",
        "explain",
        spec,
        "--var",
        "amount=20000",
        "--at",
        "2026-12-24 22:00",
    ]);
    out.expect_code(0);
    let text = &out.stdout;
    assert!(
        text.contains("gate `release`: rule 1 of 2 applies"),
        "{text}"
    );
    assert!(
        text.contains("needs 2 of cfo, controller because amount > 10000"),
        "{text}"
    );
    assert!(
        text.contains("who may answer: cfo, controller (2 approvals needed)"),
        "{text}"
    );
    assert!(
        text.contains("deadline: 2026-12-25 06:00 UTC (8h business"),
        "{text}"
    );

    let out = sandbox.strands(&[
        "policy",
        "explain",
        spec,
        "--var",
        "amount=3",
        "--at",
        "2026-12-24 22:00 +01:00",
        "--json",
    ]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["at"], "2026-12-24T21:00:00Z", "{v:#}");
    let e = &v["explained"][0];
    assert_eq!(e["rule"], 2, "{v:#}");
    assert_eq!(e["approvers"], json!(["clerk1"]));
    assert!(e["deadline"].is_null(), "{v:#}");

    let out = sandbox.strands(&["policy", "explain", spec, "--gate", "nope"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no gate `nope`"), "{}", out.stderr);
    let out = sandbox.strands(&["policy", "explain", spec, "--at", "tomorrow"]);
    out.expect_code(2);
}

#[test]
fn policy_explain_dry_runs_a_named_policy_of_the_service_file() {
    let sandbox = Sandbox::new();
    let file = service_file(&sandbox);
    let env = [("STRANDS_SERVICE_FILE", file.as_str())];
    let out = sandbox.strands_env(
        &env,
        &[
            "policy",
            "explain",
            "--policy",
            "payments",
            "--detail",
            "amount=20000",
        ],
    );
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("policy `payments`: rule 1 of 2 applies"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("who may answer: cfo, controller (2 approvals needed)"),
        "{}",
        out.stdout
    );
    let out = sandbox.strands_env(
        &env,
        &["policy", "explain", "--policy", "payments", "--json"],
    );
    out.expect_code(0);
    let e = &out.json()["explained"][0];
    assert_eq!(e["rule"], 1, "no amount: fail closed to the strictest");
    assert!(
        e["failed"].as_str().unwrap_or("").contains("undefined"),
        "{e:#}"
    );
    let out = sandbox.strands_env(&env, &["policy", "explain", "--policy", "refunds"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no policy `refunds`"), "{}", out.stderr);
}
