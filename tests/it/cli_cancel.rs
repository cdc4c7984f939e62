//! Cancelling runs (`strands sessions cancel`, `POST
//! /api/v1/sessions/{id}/cancel`): a run waiting on its model, in another
//! process (a `strands run` on PostgreSQL, a `strands serve` on sled), is
//! cancelled from outside → it ends `cancelled` promptly, the audit says
//! who, the model is not asked again and the step after never runs; a
//! finished run is refused naming its status, changing nothing; a paused
//! run still has its gate rejected; a tool call running at the cancel
//! finishes, is recorded and never runs again, and nothing runs after it.

use std::path::PathBuf;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::api::{call, expect_error, make_token};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::target::Target;
use crate::common::{session_id, tool_call, tool_model, Behaviour, FakeLlm, Sandbox};

/// planner → writer; the planner's model call (the first request) hangs
/// for a minute.
pub(crate) const TWO_STEPS: &str = r#"
version: 0
name: two-steps
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  planner:
    prompt: You are the PLANNER.
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: planner
        input: Plan it.
      - agent: writer
        input: "Write from: {{ steps[0].response }}"
"#;

/// researcher → manual_gate `review` → writer.
pub(crate) const GATED: &str = r#"
version: 0
name: gated
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  researcher:
    prompt: You are the RESEARCHER.
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: researcher
        input: Research.
      - type: manual_gate
        id: review
        prompt: Review the research.
      - agent: writer
        input: "Write from: {{ steps[0].response }}"
"#;

/// How long a cancelled run may take to stop (it polls every 250 ms).
const PROMPTLY: Duration = Duration::from_secs(5);

/// A fake whose first request hangs for a minute.
fn hanging_model() -> FakeLlm {
    FakeLlm::start_with(Behaviour {
        latency: Some(Arc::new(|n| {
            if n == 1 {
                Duration::from_secs(60)
            } else {
                Duration::ZERO
            }
        })),
        ..Behaviour::default()
    })
}

/// Waits for `child` to exit (at most `within`); its exit code.
fn exit_within(child: &mut Child, within: Duration) -> i32 {
    let until = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for strands run") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the cancelled run was still going after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The audit entries of session `id`, as `audit export` gives them.
fn audit_of(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    let out = sandbox.strands(&["audit", "export", "--session", id]);
    out.expect_code(0);
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON entry per line"))
        .collect()
}

/// The model is asked nothing more for a while.
#[track_caller]
fn model_stays_at(llm: &FakeLlm, n: usize) {
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(
        llm.count(),
        n,
        "the model was asked again: {:#?}",
        llm.requests()
    );
}

#[test]
fn a_run_waiting_on_its_model_in_another_process_is_cancelled_at_once() {
    let Some(url) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(strands::store::postgres::testdb::database("cancel_running"))
    else {
        return;
    };
    let llm = hanging_model();
    let mut sandbox = Sandbox::new();
    sandbox.store = PathBuf::from(&url);
    let spec = sandbox.spec("two.yaml", TWO_STEPS, &llm);
    let mut run = sandbox.spawn(&["run", spec.to_str().expect("utf-8 path")]);
    llm.wait_for_requests(1, Duration::from_secs(20));
    let list = sandbox.list();
    let id = list["sessions"][0]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");

    // Another process, another person: the cancel is recorded at once.
    let asked = Instant::now();
    let out = sandbox.strands_as(
        "ops",
        &[],
        &[
            "sessions",
            "cancel",
            &id,
            "--reason",
            "wrong inputs",
            "--json",
        ],
    );
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["outcome"], "requested", "{v:#}");
    assert_eq!(v["cancel"]["by"], "ops", "{v:#}");

    // The run's own process stops: the hanging call abandoned, exit 23.
    assert_eq!(exit_within(&mut run, PROMPTLY), 23);
    assert!(asked.elapsed() < PROMPTLY);
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "cancelled", "{show:#}");
    assert_eq!(show["cancel"]["by"], "ops", "{show:#}");
    assert_eq!(show["cancel"]["reason"], "wrong inputs", "{show:#}");
    assert_eq!(show["steps_finished"], 0, "{show:#}");
    // Nothing after the cancel ran: the writer was never asked.
    model_stays_at(&llm, 1);
    assert!(llm.calls_of("WRITER").is_empty());

    // The audit says who asked and that the run ended for it.
    let details: Vec<String> = audit_of(&sandbox, &id)
        .iter()
        .filter(|e| e["event"]["kind"] == "outcome")
        .map(|e| {
            format!(
                "{} ({})",
                e["event"]["detail"].as_str().unwrap_or_default(),
                e["event"]["who"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert!(
        details
            .iter()
            .any(|d| d == "cancel requested by ops: wrong inputs (ops)"),
        "{details:#?}"
    );
    assert!(
        details
            .iter()
            .any(|d| d == "cancelled by ops: wrong inputs (ops)"),
        "{details:#?}"
    );
    assert!(
        details.iter().any(|d| d.contains("abandoned")),
        "{details:#?}"
    );
    sandbox.strands(&["audit", "verify"]).expect_code(0);

    let text = sandbox.strands(&["sessions", "show", &id]);
    text.expect_code(0);
    assert!(
        text.stdout.contains("Cancelled: by ops via cli at ")
            && text.stdout.contains(": wrong inputs"),
        "{}",
        text.stdout
    );

    // Asking again changes nothing.
    let again = sandbox.strands(&["sessions", "cancel", &id, "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["outcome"], "already_cancelled");
    assert_eq!(sandbox.show(&id)["cancel"]["by"], "ops");
}

#[test]
fn a_finished_run_is_refused_and_a_paused_run_is_rejected() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();

    // Completed: refused, naming the status; nothing changed.
    let spec = sandbox.spec("two.yaml", TWO_STEPS, &llm);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(0);
    let done = session_id(&run.json());
    let before = sandbox.show(&done);
    let out = sandbox.strands(&["sessions", "cancel", &done, "--reason", "late"]);
    out.expect_code(17);
    assert!(
        out.stderr.contains("is completed") && out.stderr.contains("cannot be cancelled")
            || out.stderr.contains("only a running or paused run"),
        "{}",
        out.stderr
    );
    let after = sandbox.show(&done);
    assert_eq!(after["updated_at"], before["updated_at"]);
    assert_eq!(after["status"], "completed");
    assert!(after.get("cancel").is_none(), "{after:#}");

    // Paused: its gate is rejected, the audit and history say by whom.
    let spec = sandbox.spec("gated.yaml", GATED, &llm);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let paused = session_id(&run.json());
    let asked = llm.count();
    let out = sandbox.strands_as(
        "ops",
        &[],
        &[
            "sessions", "cancel", &paused, "--reason", "not now", "--json",
        ],
    );
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["outcome"], "rejected", "{v:#}");
    assert_eq!(v["status"], "rejected", "{v:#}");
    let show = sandbox.show(&paused);
    assert_eq!(show["status"], "rejected");
    assert_eq!(
        show["gates"][0]["decision"]["reason"], "cancelled by ops: not now",
        "{show:#}"
    );
    assert_eq!(llm.count(), asked, "the writer never ran");
    // Now finished: refused.
    let out = sandbox.strands(&["sessions", "cancel", &paused]);
    out.expect_code(17);
    assert!(out.stderr.contains("is rejected"), "{}", out.stderr);
}

#[test]
fn serve_cancels_a_run_waiting_on_its_model_through_the_api_and_the_cli() {
    let llm = hanging_model();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("two", TWO_STEPS)]);
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let alice = make_token(&sandbox, "alice", "approver");
    let svc = Service::launch(ServeConfig::api(&sandbox, &dir));
    let started = call(
        &svc,
        "POST",
        "/api/v1/runs",
        Some(&ci),
        Some(&json!({ "workflow": "two" })),
    );
    assert_eq!(started.status, 201, "{}", started.body);
    let id = started.json()["session_id"]
        .as_str()
        .expect("an id")
        .to_string();
    llm.wait_for_requests(1, Duration::from_secs(20));
    let path = format!("/api/v1/sessions/{id}/cancel");

    // Approvers may not; nothing changes.
    expect_error(
        &call(&svc, "POST", &path, Some(&alice), None),
        403,
        "forbidden",
    );
    let r = call(
        &svc,
        "POST",
        &path,
        Some(&ci),
        Some(&json!({ "reason": "stop it" })),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "cancel_requested", "{}", r.body);
    let asked = Instant::now();
    let session = |svc: &Service| {
        let r = call(
            svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&ci),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    };
    while session(&svc)["status"] != "cancelled" {
        assert!(asked.elapsed() < PROMPTLY, "{}", session(&svc));
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = session(&svc);
    assert_eq!(s["cancel"]["by"], "ci-bot", "{s:#}");
    assert_eq!(s["cancel"]["via"], "api", "{s:#}");
    model_stays_at(&llm, 1);

    // Twice: nothing changes; the CLI (through the server holding the
    // store) says the same.
    let r = call(&svc, "POST", &path, Some(&ci), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "already_cancelled", "{}", r.body);
    let out = sandbox.strands(&["sessions", "cancel", &id, "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"], "already_cancelled", "{}", out.stdout);
    // The events say so too.
    let r = call(
        &svc,
        "GET",
        &format!("/api/v1/sessions/{id}/events"),
        Some(&ci),
        None,
    );
    assert!(r.body.contains("run.cancelled"), "{}", r.body);
    drop(svc);
}

/// One agent with `http_request` (asked before it runs).
const TOOL_STEP: &str = r#"
version: 0
name: tool-step
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  network:
    allow: ["127.0.0.1"]
agents:
  worker:
    prompt: You are the WORKER.
    tools: [http_request]
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: Do the job.
"#;

#[test]
fn a_tool_call_running_at_the_cancel_finishes_is_recorded_and_nothing_runs_after() {
    let Some(url) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(strands::store::postgres::testdb::database("cancel_tool"))
    else {
        return;
    };
    // The target holds the POST for two seconds: the cancel comes meanwhile.
    let target = Target::start_with(Some(("POST", "/slow", Duration::from_secs(2))));
    let llm = tool_model(vec![vec![tool_call(
        "call_slow",
        "http_request",
        json!({"method": "POST", "url": format!("{}/slow", target.url), "body": "x"}),
    )]]);
    let mut sandbox = Sandbox::new();
    sandbox.store = PathBuf::from(&url);
    let spec = sandbox.spec("tool.yaml", TOOL_STEP, &llm);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());

    let mut resume = sandbox.spawn(&["resume", &id, "--approve"]);
    target.wait_for("POST", "/slow", 1, Duration::from_secs(20));
    let out = sandbox.strands_as("ops", &[], &["sessions", "cancel", &id, "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["outcome"], "requested", "{}", out.stdout);

    // The call finishes (not interrupted), then the run stops: exit 23.
    assert_eq!(exit_within(&mut resume, PROMPTLY), 23);
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "cancelled", "{show:#}");
    // Its result is recorded: it ran once, and is never run again.
    let entries = audit_of(&sandbox, &id);
    let ran: Vec<&Value> = entries
        .iter()
        .filter(|e| e["event"]["kind"] == "tool_run" && e["event"]["call"] == "call_slow")
        .collect();
    assert_eq!(ran.len(), 1, "{entries:#?}");
    // Nothing after the cancel: the model never hears the result.
    model_stays_at(&llm, 1);
    sandbox.strands(&["resume", &id]).expect_code(17);
    assert_eq!(target.count("POST", "/slow"), 1, "exactly once");
    assert_eq!(llm.count(), 1);
}
