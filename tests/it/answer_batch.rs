//! `strands answer ID…`: one decision for many paused runs, each gate
//! answered and audited on its own, a gate that needs a quorum left out
//! saying why — on the store, and through the server (`POST
//! /api/v1/answers`).

use crate::common::{session_id, Sandbox};
use serde_json::{json, Value};

const SPEC: &str = r#"
version: 0
name: payout
runtime:
  provider: echo
security:
  approvers: [alice, bob, carol]
agents:
  clerk:
    prompt: You prepare payouts.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: Prepare the payout.
      - type: manual_gate
        id: release
        prompt: Release the payout?
        approvals_required: 1
      - agent: clerk
        input: "Pay per {{ steps[0].response }}"
"#;

fn start(sb: &Sandbox, spec: &str) -> String {
    let out = sb.strands_as("starter", &[], &["run", spec, "--json"]);
    out.expect_code(19);
    session_id(&out.json())
}

fn status(sb: &Sandbox, id: &str) -> Value {
    let out = sb.strands(&["sessions", "show", id, "--json"]);
    out.expect_code(0);
    out.json()["status"].clone()
}

#[test]
fn ten_approved_in_one_command_and_the_quorum_gate_left_out() {
    let sb = Sandbox::new();
    let one = sb.path().join("payout.yaml");
    std::fs::write(&one, SPEC).expect("write spec");
    let two = sb.path().join("payout-quorum.yaml");
    std::fs::write(
        &two,
        SPEC.replace("approvals_required: 1", "approvals_required: 2"),
    )
    .expect("write spec");
    let (one, two) = (one.display().to_string(), two.display().to_string());
    let mut ids: Vec<String> = (0..10).map(|_| start(&sb, &one)).collect();
    let quorum = start(&sb, &two);
    ids.insert(4, quorum.clone());

    let mut args = vec!["answer"];
    args.extend(ids.iter().map(String::as_str));
    args.extend(["--approve", "--json"]);
    let out = sb.strands_as("alice", &[], &args);
    out.expect_code(17);
    let r = out.json();
    assert_eq!(r["recorded"], 10, "{r}");
    assert_eq!(r["left_out"], 1, "{r}");
    assert_eq!(r["refused"], 0, "{r}");
    let left = &r["outcomes"][4];
    assert_eq!(left["session"], quorum.as_str(), "{r}");
    assert_eq!(left["result"], "left_out", "{r}");
    assert!(
        left["message"]
            .as_str()
            .unwrap_or_default()
            .contains("needs 2 more approvals (a quorum of 2)"),
        "{r}"
    );
    for (i, id) in ids.iter().enumerate() {
        let want = if *id == quorum { "paused" } else { "completed" };
        assert_eq!(status(&sb, id), want, "session {i} {id}");
    }

    // Ten answers, each its own audit entry; nothing for the one left out.
    let export = sb.strands(&["audit", "export"]);
    export.expect_code(0);
    let answers: Vec<Value> = export
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "answer")
        .collect();
    assert_eq!(answers.len(), 10, "{}", export.stdout);
    assert!(answers.iter().all(|e| e["event"]["who"] == "alice"
        && e["event"]["via"] == "cli"
        && e["event"]["session"] != quorum.as_str()));

    // The quorum gate, answered on its own, counts one approval.
    let out = sb.strands_as("alice", &[], &["resume", &quorum, "--approve"]);
    out.expect_code(19);
    // Rejecting in a batch: one reason for all; one approver's reject
    // decides a quorum gate, so nothing is left out.
    let a = start(&sb, &one);
    let out = sb.strands_as(
        "bob",
        &[],
        &[
            "answer",
            &a,
            &quorum,
            "--reject",
            "--reason",
            "duplicate payouts",
        ],
    );
    out.expect_code(0);
    assert!(
        out.stdout.contains("2 answered, 0 left out, 0 refused"),
        "{}",
        out.stdout
    );
    for id in [&a, &quorum] {
        let s = sb.strands(&["sessions", "show", id, "--json"]).json();
        assert_eq!(s["status"], "rejected", "{s}");
    }
    // A refusal is one line among the others, and changes nothing.
    let b = start(&sb, &one);
    let out = sb.strands_as("mallory", &[], &["answer", &b, "--approve"]);
    out.expect_code(17);
    assert!(out.stdout.contains("refused"), "{}", out.stdout);
    assert_eq!(status(&sb, &b), "paused");
}

#[test]
fn through_the_server_a_batch_is_each_gate_on_its_own() {
    let w = super::api::World::start();
    let ids: Vec<String> = ["a", "b", "c"].iter().map(|s| w.start_run(s)).collect();
    for id in &ids {
        w.wait_paused(id);
    }
    // One is decided elsewhere first: it is refused in the batch.
    let r = w.answer(
        &ids[2],
        &w.alice,
        json!({ "decision": "reject", "reason": "no" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let out = w.sandbox.strands_as(
        "x",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", w.alice.as_str()),
        ],
        &["answer", &ids[0], &ids[1], &ids[2], "--approve", "--json"],
    );
    out.expect_code(17);
    let r = out.json();
    assert_eq!(
        (r["recorded"].as_u64(), r["refused"].as_u64()),
        (Some(2), Some(1)),
        "{r}"
    );
    for id in &ids[..2] {
        crate::web::wait_status(&w, id, "completed");
    }
    // A batch takes approve or reject only, and some gates.
    let bad = crate::common::api::call(
        &w.svc,
        "POST",
        "/api/v1/answers",
        Some(&w.alice),
        Some(&json!({ "decision": "modify", "gates": [{ "session": ids[0] }] })),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    let empty = crate::common::api::call(
        &w.svc,
        "POST",
        "/api/v1/answers",
        Some(&w.alice),
        Some(&json!({ "decision": "approve", "gates": [] })),
    );
    assert_eq!(empty.status, 400, "{}", empty.body);
}
