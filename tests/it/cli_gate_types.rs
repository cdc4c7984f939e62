//! seed 001's gate types and presets, through the real binary: gates the
//! run itself triggers (final response, budget, confidence, custom
//! condition) and presets that tighten the tool policy.

use crate::common::{history, session_id, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::json;

fn spec(sandbox: &Sandbox, fake: &FakeLlm, hitl: &str) -> String {
    let yaml = format!(
        r#"
version: 0
name: triggered
runtime:
  provider: openai
  model_id: fake
  host: $HOST
agents:
  drafter:
    prompt: You are the DRAFTER.
  checker:
    prompt: You are the CHECKER.
pattern:
  type: chain
  config:
    steps:
      - agent: drafter
        input: "Draft.{{% if human_feedback %}} Feedback: {{{{ human_feedback }}}}{{% endif %}}"
      - agent: checker
        input: "Check: {{{{ steps[0].response }}}}"
hitl:
{hitl}
"#
    );
    sandbox
        .spec("triggered.yaml", &yaml, fake)
        .to_str()
        .expect("utf-8")
        .to_string()
}

fn run(sandbox: &Sandbox, path: &str) -> (i32, serde_json::Value) {
    let out = sandbox.strands(&["run", path, "--json"]);
    (out.code, out.json())
}

#[test]
fn the_final_answer_waits_for_approval_and_modify_reruns_the_last_step() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let path = spec(
        &sandbox,
        &fake,
        "  gates:\n    - type: final_response\n      prompt: Publish this answer?\n",
    );
    let (code, v) = run(&sandbox, &path);
    assert_eq!(code, 19, "{v:#}");
    assert_eq!(v["gate"]["id"], "final_response");
    assert_eq!(v["gate"]["prompt"], "Publish this answer?");
    assert!(
        v["gate"]["preview"]
            .as_str()
            .unwrap_or_default()
            .contains("REPLY 2"),
        "{v:#}"
    );
    let id = session_id(&v);

    sandbox
        .strands(&["resume", &id, "--modify", "--feedback", "shorter"])
        .expect_code(19);
    assert_eq!(fake.count(), 3, "only the last step ran again");
    assert!(
        fake.request(3).user().starts_with("Check:"),
        "{:?}",
        fake.request(3).user()
    );
    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["output"], fake.request(3).reply_text());
    assert_eq!(
        fake.count(),
        3,
        "approval completes without calling the model"
    );
}

#[test]
fn a_budget_gate_pauses_once_when_the_run_passes_it() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    // The fake reports 19 tokens per call: the first step passes 10.
    let path = spec(
        &sandbox,
        &fake,
        "  gates:\n    - type: budget_based\n      cost_threshold: 10\n",
    );
    let (code, v) = run(&sandbox, &path);
    assert_eq!(code, 19, "{v:#}");
    assert_eq!(v["gate"]["id"], "budget_based");
    assert_eq!(
        fake.count(),
        1,
        "paused right after the step that passed the budget"
    );
    let id = session_id(&v);
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert_eq!(fake.count(), 2, "the budget gate does not ask twice");
}

#[test]
fn a_confidence_gate_pauses_only_for_low_confidence() {
    let low = FakeLlm::start_with(Behaviour::scripted(|n, _| {
        Say::Text(if n == 1 {
            r#"{"answer": "x", "confidence": 0.3}"#.into()
        } else {
            "done".into()
        })
    }));
    let sandbox = Sandbox::new();
    let hitl = "  gates:\n    - type: threshold_based\n      confidence_threshold: 0.7\n      agents: [drafter]\n";
    let path = spec(&sandbox, &low, hitl);
    let (code, v) = run(&sandbox, &path);
    assert_eq!(code, 19, "{v:#}");
    assert!(
        v["gate"]["preview"]
            .as_str()
            .unwrap_or_default()
            .contains("0.3"),
        "{v:#}"
    );
    sandbox
        .strands(&["resume", &session_id(&v), "--approve"])
        .expect_code(0);

    let high = FakeLlm::start_with(Behaviour::scripted(|_, _| {
        Say::Text(r#"{"confidence": 0.95}"#.into())
    }));
    let other = Sandbox::new();
    let path = spec(&other, &high, hitl);
    let (code, v) = run(&other, &path);
    assert_eq!(code, 0, "confident steps pass: {v:#}");
}

#[test]
fn a_custom_condition_pauses_when_it_holds() {
    let fake = FakeLlm::start_with(Behaviour::scripted(|n, _| {
        Say::Text(if n == 2 {
            "URGENT: refund everyone".into()
        } else {
            "fine".into()
        })
    }));
    let sandbox = Sandbox::new();
    let path = spec(
        &sandbox,
        &fake,
        "  gates:\n    - type: custom\n      id: urgent\n      condition: \"{{ 'URGENT' in response }}\"\n",
    );
    let (code, v) = run(&sandbox, &path);
    assert_eq!(code, 19, "{v:#}");
    assert_eq!(v["gate"]["id"], "urgent");
    assert_eq!(
        fake.count(),
        2,
        "the first step did not trip it; the second did"
    );
    let id = session_id(&v);
    sandbox
        .strands(&["resume", &id, "--reject", "--reason", "no refunds"])
        .expect_code(21);
    assert_eq!(
        history(&sandbox.show(&id))[0]["decision"]["reason"],
        "no refunds"
    );
}

#[test]
fn the_strict_preset_asks_before_any_tool_and_an_unknown_preset_is_refused() {
    let fake = FakeLlm::start_with(Behaviour::scripted(|n, _| {
        if n == 1 {
            Say::Calls(vec![tool_call(
                "c1",
                "file_read",
                json!({"path": "notes.txt"}),
            )])
        } else {
            Say::Text("read it".into())
        }
    }));
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path().join("ws")).expect("workspace");
    std::fs::write(sandbox.path().join("ws/notes.txt"), "hello").expect("file");
    let yaml = r#"
version: 0
name: strict
runtime:
  provider: openai
  model_id: fake
  host: $HOST
tools:
  workspace: ws
agents:
  reader:
    prompt: You read.
    tools: [file_read]
pattern:
  type: chain
  config:
    steps:
      - agent: reader
        input: Read notes.txt
hitl:
  preset: strict
"#;
    let path = sandbox.spec("strict.yaml", yaml, &fake);
    let out = sandbox.strands(&["run", path.to_str().expect("utf-8"), "--json"]);
    out.expect_code(19);
    let v = out.json();
    assert_eq!(
        v["gate"]["kind"], "tool_call",
        "a read asks under strict: {v:#}"
    );
    let id = session_id(&v);
    // Then the final answer asks too (strict = all tools + final response).
    let next = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    next.expect_code(19);
    assert_eq!(next.json()["gate"]["id"], "final_response");
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);

    let bad = sandbox.spec(
        "bad.yaml",
        &yaml.replace("preset: strict", "preset: lax"),
        &fake,
    );
    let out = sandbox.strands(&["validate", bad.to_str().expect("utf-8")]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("unknown hitl preset `lax`"),
        "{}",
        out.stderr
    );
}
