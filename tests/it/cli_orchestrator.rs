//! The `orchestrator_workers` pattern through the real binary and a fake
//! model: plan → decomposition review → workers in parallel → reduce review
//! → reduce / writeup; edited plans, re-plans after feedback, bad plans,
//! `max_workers`, and resumes (later processes, a killed one) that never run
//! a finished step twice.

use crate::common::{
    compat, resume_json, run_json, session_id, system_of, Behaviour, FakeLlm, Sandbox,
};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A fake whose orchestrator answers `plans[k]` on its k-th call (the last
/// one again after that); every other agent answers `<ROLE> n: <input>`.
fn fake(plans: &[&str], delay: Option<(usize, Duration)>) -> FakeLlm {
    let plans: Vec<String> = plans.iter().map(|p| p.to_string()).collect();
    let calls = Arc::new(AtomicUsize::new(0));
    FakeLlm::start_with(Behaviour {
        delay,
        reply: Arc::new(move |n, body| {
            let system = system_of(body);
            let user = crate::common::last_user_message(body);
            if system.contains("ORCHESTRATOR") {
                let k = calls.fetch_add(1, Ordering::SeqCst);
                return plans[k.min(plans.len() - 1)].clone();
            }
            // The role is on the prompt's first line (the rest may quote replies).
            let first = system.lines().next().unwrap_or_default();
            let role = ["WORKER", "SPECIALIST", "REDUCER", "SYNTHESIS", "WRITER"]
                .into_iter()
                .find(|r| first.contains(r))
                .unwrap_or("OTHER");
            format!("{role} {n}: {user}")
        }),
        ..Behaviour::default()
    })
}

const THREE: &str =
    r#"[{"task": "research costs"}, {"task": "research users"}, {"task": "research risks"}]"#;

/// The user messages of one agent's calls (by a word of its system prompt).
fn inputs_of(fake: &FakeLlm, role: &str) -> Vec<String> {
    calls(fake, role).iter().map(|e| e.user()).collect()
}

/// One agent's calls, by a word of the first line of its system prompt.
fn calls(fake: &FakeLlm, role: &str) -> Vec<crate::common::Exchange> {
    fake.requests()
        .into_iter()
        .filter(|e| e.system().lines().next().unwrap_or_default().contains(role))
        .collect()
}

fn only(fake: &FakeLlm, role: &str) -> crate::common::Exchange {
    let c = calls(fake, role);
    assert_eq!(c.len(), 1, "{role}: {c:#?}");
    c[0].clone()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn plan_review_then_workers_then_reduce_review_then_reduce() {
    let fake = fake(&[THREE], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);

    let v = run_json(&sandbox, &spec, 19);
    let id = session_id(&v);
    assert_eq!(v["gate"]["id"], "decomposition_review", "{v:#}");
    assert_eq!(v["gate"]["position"], "rounds[0].decomposition_review");
    let preview = v["gate"]["preview"].as_str().expect("preview");
    assert!(preview.contains("research users"), "{preview}");
    assert!(preview.contains("**Number of subtasks:** 3"), "{preview}");
    assert_eq!(fake.count(), 1);

    // A later process without an answer is refused and runs nothing.
    sandbox.strands(&["resume", &id]).expect_code(2);
    assert_eq!(fake.count(), 1);

    let v = resume_json(&sandbox, &id, &["--response", "approve"], 19);
    assert_eq!(v["gate"]["id"], "reduce_review", "{v:#}");
    assert_eq!(v["gate"]["prompt"], "Review 3 worker results before final aggregation.\n\nRespond with:\n- 'approved' to proceed with reduce step\n- 'reject' to stop workflow\n- Provide specific feedback for revision\n");
    // Exactly one request per subtask, each given its subtask.
    assert_eq!(fake.count(), 4);
    assert_eq!(
        sorted(inputs_of(&fake, "WORKER")),
        ["research costs", "research risks", "research users"]
    );
    let preview = v["gate"]["preview"].as_str().expect("preview");
    assert!(preview.contains("**Task:** research risks"), "{preview}");
    assert!(preview.contains("WORKER"), "{preview}");

    let done = resume_json(&sandbox, &id, &["--response", "focus on costs"], 0);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(fake.count(), 5, "nothing ran twice");
    let reduce = only(&fake, "REDUCER").user();
    assert!(
        reduce.starts_with("User review: focus on costs"),
        "{reduce}"
    );
    assert!(
        reduce.contains("Aggregate these 3 worker results"),
        "{reduce}"
    );
    assert!(reduce.contains("## Worker 1: research costs"), "{reduce}");
    for w in calls(&fake, "WORKER") {
        assert!(reduce.contains(&w.reply_text()), "{reduce}");
    }
    assert_eq!(
        done["output"],
        Value::String(only(&fake, "REDUCER").reply_text())
    );
    let art = std::fs::read_to_string(sandbox.path().join("artifacts/orchestrated-output.md"))
        .expect("artifact");
    assert!(art.starts_with("REDUCER 5"), "{art}");
}

#[test]
fn an_edited_plan_runs_exactly_the_edited_tasks_as_plain_text() {
    let fake = fake(&[THREE], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    // The human's plan replaces the orchestrator's; a task that looks like a
    // template stays text (no template injection).
    let edited = r#"[{"task": "only costs"}, "total: {{ 6 * 7 }}"]"#;
    let v = resume_json(&sandbox, &id, &["--response", edited], 19);
    assert_eq!(v["gate"]["id"], "reduce_review", "{v:#}");
    assert_eq!(fake.count(), 3);
    assert_eq!(
        sorted(inputs_of(&fake, "WORKER")),
        ["only costs", "total: {{ 6 * 7 }}"]
    );
    let state = &sandbox.show(&id)["state"];
    assert_eq!(state["rounds"][0]["edited"], true, "{state:#}");
    // JSON that is not a task list is refused and changes nothing.
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    let before = fake.count();
    let out = sandbox.strands(&["resume", &id, "--response", r#"[{"name": "x"}]"#]);
    out.expect_code(2);
    assert!(out.stderr.contains("subtask 1"), "{}", out.stderr);
    assert_eq!(fake.count(), before);
    assert_eq!(sandbox.show(&id)["status"], "paused");
}

/// orchestrator-reviews with two plans allowed.
fn two_rounds() -> String {
    compat("orchestrator-reviews.yaml").replace("max_rounds: 1", "max_rounds: 2")
}

#[test]
fn feedback_replans_with_the_previous_plan_and_then_no_round_is_left() {
    let second = r#"[{"task": "costs of hosting"}, {"task": "costs of staff"}]"#;
    let fake = fake(&[THREE, second], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &two_rounds(), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));

    let v = resume_json(&sandbox, &id, &["--response", "split costs in two"], 19);
    assert_eq!(
        v["gate"]["position"], "rounds[1].decomposition_review",
        "{v:#}"
    );
    assert_eq!(fake.count(), 2);
    let replan = fake.request(2).user();
    assert!(
        replan.contains("research risks"),
        "the previous plan: {replan}"
    );
    assert!(
        replan.contains("split costs in two"),
        "the feedback: {replan}"
    );
    assert!(
        v["gate"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains("costs of staff") && p.contains("subtasks:** 2")),
        "{v:#}"
    );

    // max_rounds is 2: more feedback (or a modify) is refused, nothing recorded.
    let out = sandbox.strands(&["resume", &id, "--response", "again"]);
    out.expect_code(2);
    assert!(out.stderr.contains("max_rounds"), "{}", out.stderr);
    let out = sandbox.strands(&["resume", &id, "--modify", "--feedback", "again"]);
    out.expect_code(2);
    assert!(out.stderr.contains("max_rounds"), "{}", out.stderr);
    assert_eq!(fake.count(), 2);

    let v = resume_json(&sandbox, &id, &["--response", "yes"], 19);
    assert_eq!(v["gate"]["id"], "reduce_review");
    assert_eq!(
        sorted(inputs_of(&fake, "WORKER")),
        ["costs of hosting", "costs of staff"]
    );
    let done = resume_json(&sandbox, &id, &["--response", "approved"], 0);
    assert_eq!(fake.count(), 5);
    assert!(only(&fake, "REDUCER")
        .user()
        .starts_with("User review: approved"));
    assert_eq!(done["status"], "completed");
}

#[test]
fn modify_at_the_decomposition_review_replans_with_the_feedback() {
    let fake = fake(&[THREE, r#"["one thing"]"#], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &two_rounds(), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    let v = resume_json(
        &sandbox,
        &id,
        &["--modify", "--feedback", "fewer tasks"],
        19,
    );
    assert_eq!(
        v["gate"]["position"], "rounds[1].decomposition_review",
        "{v:#}"
    );
    assert!(fake.request(2).user().contains("fewer tasks"));
    resume_json(&sandbox, &id, &["--approve"], 19);
    assert_eq!(inputs_of(&fake, "WORKER"), ["one thing"]);
}

#[test]
fn reject_at_either_review_rejects_the_run() {
    let fake = fake(&[THREE], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    let v = resume_json(&sandbox, &id, &["--response", "reject"], 21);
    assert_eq!(v["status"], "rejected");
    assert_eq!(fake.count(), 1, "no worker ran");

    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    resume_json(&sandbox, &id, &["--response", "approve"], 19);
    let before = fake.count();
    let v = resume_json(&sandbox, &id, &["--reject", "--reason", "thin"], 21);
    assert_eq!(v["status"], "rejected");
    assert_eq!(fake.count(), before, "the reduce never ran");
}

#[test]
fn a_reply_that_is_not_a_task_list_fails_the_run_naming_the_problem() {
    let fake = fake(&["I would rather not plan today."], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("orch.yaml", &compat("orchestrator-reviews.yaml"), &fake);
    let v = run_json(&sandbox, &spec, 10);
    assert_eq!(v["status"], "failed", "{v:#}");
    let msg = v["error"]["message"].as_str().expect("message");
    assert!(msg.contains("not a task list"), "{msg}");
    assert!(msg.contains("I would rather not plan today."), "{msg}");
    assert_eq!(fake.count(), 1);
}

/// No gates, no reduce: the output is every worker's result.
const BARE: &str = r#"
version: 0
name: orchestrator-bare
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  boss:
    prompt: You are the ORCHESTRATOR.
  hand:
    prompt: You are a WORKER.
pattern:
  type: orchestrator_workers
  config:
    orchestrator:
      agent: boss
      limits:
        max_workers: 2
    worker_template:
      agent: hand
"#;

#[test]
fn max_workers_takes_the_first_subtasks_and_the_output_says_what_was_dropped() {
    let plan = "Sure! ```json\n{\"subtasks\": [\"a\", \"b\", \"c\", \"d\"]}\n```";
    let fake = fake(&[plan], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("bare.yaml", BARE, &fake);
    let done = run_json(&sandbox, &spec, 0);
    assert_eq!(fake.count(), 3);
    assert_eq!(sorted(inputs_of(&fake, "WORKER")), ["a", "b"]);
    let out = done["output"].as_str().expect("output");
    assert!(out.contains("## 1. a") && out.contains("## 2. b"), "{out}");
    assert!(
        out.contains("2 more subtasks were not run: limits.max_workers is 2"),
        "{out}"
    );
    let state = &sandbox.show(&session_id(&done))["state"];
    assert_eq!(state["rounds"][0]["dropped"], 2, "{state:#}");
}

#[test]
fn the_plain_compat_spec_runs_plan_workers_reduce_and_writeup() {
    let fake = fake(&[THREE], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", &compat("orchestrator-plain.yaml"), &fake);
    let done = run_json(&sandbox, &spec, 0);
    assert_eq!(fake.count(), 6, "plan + 3 workers + reduce + writeup");
    let plan = only(&fake, "ORCHESTRATOR");
    assert!(plan
        .system()
        .contains("\"impact of AI on software development\""));
    let synth = only(&fake, "SYNTHESIS");
    assert_eq!(synth.user(), "Synthesize findings from all 3 workers");
    for w in calls(&fake, "SPECIALIST") {
        assert!(
            synth.system().contains(&w.reply_text()),
            "{}",
            synth.system()
        );
    }
    let writer = only(&fake, "WRITER");
    assert!(writer
        .system()
        .contains(&format!("Synthesis: {}", synth.reply_text())));
    assert_eq!(done["output"], Value::String(writer.reply_text()));
    let synthesis =
        std::fs::read_to_string(sandbox.path().join("artifacts/synthesis.md")).expect("artifact");
    assert_eq!(synthesis, synth.reply_text());
}

#[test]
fn a_run_killed_while_workers_run_resumes_without_rerunning_finished_ones() {
    // Request 3 (the second worker) hangs; the others finish and are saved.
    let fake = fake(&[THREE], Some((3, Duration::from_secs(30))));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", &compat("orchestrator-plain.yaml"), &fake);
    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8")]);
    fake.wait_for_requests(4, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill strands");
    let _ = child.wait();
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");
    let hung = fake.request(3).user();

    let done = resume_json(&sandbox, &id, &[], 0);
    assert_eq!(done["status"], "completed", "{done:#}");
    // Only the hung worker ran again, then reduce and writeup.
    assert_eq!(fake.count(), 7);
    assert_eq!(calls(&fake, "ORCHESTRATOR").len(), 1);
    let workers = inputs_of(&fake, "SPECIALIST");
    for task in ["research costs", "research users", "research risks"] {
        let want = if task == hung { 2 } else { 1 };
        assert_eq!(
            workers.iter().filter(|w| *w == task).count(),
            want,
            "{task}: {workers:#?}"
        );
    }
}

/// Manual gates at both reviews; modify at the reduce review re-runs the workers.
const MANUAL: &str = r#"
version: 0
name: orchestrator-manual
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  boss:
    prompt: You are the ORCHESTRATOR.
  hand:
    prompt: You are a WORKER.
  merge:
    prompt: You are the REDUCER.
pattern:
  type: orchestrator_workers
  config:
    orchestrator:
      agent: boss
    decomposition_review:
      type: manual_gate
      prompt: "Run {{ task_count }} subtasks?"
    worker_template:
      agent: hand
    reduce_review:
      type: manual_gate
      prompt: Merge?
    reduce:
      agent: merge
"#;

#[test]
fn manual_reviews_approve_and_modify_reruns_the_workers_with_feedback() {
    let fake = fake(&[r#"["x", "y"]"#], None);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("manual.yaml", MANUAL, &fake);
    let v = run_json(&sandbox, &spec, 19);
    let id = session_id(&v);
    assert_eq!(v["gate"]["prompt"], "Run 2 subtasks?");
    // Free text on a manual gate is a usage error.
    sandbox
        .strands(&["resume", &id, "--response", "sure"])
        .expect_code(2);
    let v = resume_json(&sandbox, &id, &["--approve"], 19);
    assert_eq!(v["gate"]["id"], "reduce_review", "{v:#}");
    assert_eq!(fake.count(), 3);
    let v = resume_json(
        &sandbox,
        &id,
        &["--modify", "--feedback", "cite sources"],
        19,
    );
    assert_eq!(v["gate"]["id"], "reduce_review", "asked again: {v:#}");
    assert_eq!(fake.count(), 5);
    assert_eq!(
        sorted(inputs_of(&fake, "WORKER")[2..].to_vec()),
        [
            "x\n\nReviewer feedback: cite sources",
            "y\n\nReviewer feedback: cite sources"
        ]
    );
    let done = resume_json(&sandbox, &id, &["--approve"], 0);
    assert_eq!(fake.count(), 6);
    // The default reduce input lists every subtask with its latest result.
    let reduce = only(&fake, "REDUCER").user();
    assert!(reduce.contains("## Subtask 1: x"), "{reduce}");
    assert!(reduce.contains("## Subtask 2: y"), "{reduce}");
    assert!(!reduce.contains("Reviewer notes"), "{reduce}");
    for w in &calls(&fake, "WORKER")[2..] {
        assert!(reduce.contains(&w.reply_text()), "{reduce}");
    }
    assert_eq!(
        done["output"],
        Value::String(only(&fake, "REDUCER").reply_text())
    );
}

#[test]
fn invalid_orchestrator_specs_are_spec_errors_at_their_lines() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = r#"version: 0
name: bad-orchestrator
runtime:
  provider: openai
  host: $HOST
agents:
  boss:
    prompt: B
  hand:
    prompt: H
pattern:
  type: orchestrator_workers
  config:
    orchestrator:
      agent: chief
      limits:
        max_workers: 0
    decomposition_review:
      prompt: Approve the plan?
    worker_template:
      agent: hand
      tools: [no_such_tool]
    reduce:
      type: hitl
      prompt: merge?
"#;
    let spec = sandbox.spec("bad.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    for (line, text) in [
        ("bad.yaml:15:", "undefined agent `chief`"),
        ("bad.yaml:17:", "max_workers must be at least 1"),
        ("bad.yaml:19:", "decomposition_review"),
        ("bad.yaml:22:", "unknown tool `no_such_tool`"),
        ("bad.yaml:24:", "reduce is an agent step"),
    ] {
        assert!(all.contains(line), "{line} in {all}");
        assert!(all.contains(text), "{text} in {all}");
    }
    assert!(all.contains("hint:"), "{all}");
    sandbox
        .strands(&["run", spec.to_str().expect("utf-8")])
        .expect_code(3);
    assert_eq!(fake.count(), 0);

    // An unknown key is located too.
    let yaml = "version: 0\nname: x\nruntime:\n  provider: openai\nagents:\n  a:\n    prompt: A\npattern:\n  type: orchestrator_workers\n  config:\n    orchestrator:\n      agent: a\n      max_workers: 3\n    worker_template:\n      agent: a\n";
    let spec = sandbox.spec("bad2.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("bad2.yaml:13:"), "{all}");
    assert!(all.contains("max_workers"), "{all}");
}

#[test]
fn compat_orchestrator_specs_validate() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    for name in ["orchestrator-plain.yaml", "orchestrator-reviews.yaml"] {
        let spec = sandbox.spec(name, &compat(name), &fake);
        sandbox
            .strands(&["validate", spec.to_str().expect("utf-8")])
            .expect_code(0);
    }
}
