//! Who may approve, from the command line: approver lists, admins,
//! self-approval and an N-of-M quorum. Refusals change nothing and are
//! audited.

use crate::common::{history, session_id, Sandbox};
use serde_json::Value;

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
  payer:
    prompt: You pay.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: Prepare the payout.
      - type: manual_gate
        id: release
        prompt: Release the payout?
        approvals_required: 2
        allow_self_approval: false
      - agent: payer
        input: "Pay per {{ steps[0].response }}"
"#;

/// Starts the run as `starter`; returns the session id.
fn started_by(sandbox: &Sandbox, starter: &str, spec: &str) -> String {
    let path = sandbox.path().join("payout.yaml");
    std::fs::write(&path, spec).expect("write spec");
    let out = sandbox.strands_as(
        starter,
        &[],
        &["run", path.to_str().expect("utf-8"), "--json"],
    );
    out.expect_code(19);
    session_id(&out.json())
}

fn answer_as(sandbox: &Sandbox, who: &str, id: &str, flags: &[&str]) -> crate::common::Outcome {
    let mut args = vec!["resume", id];
    args.extend_from_slice(flags);
    sandbox.strands_as(who, &[], &args)
}

fn refusals(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.strands(&["audit", "export"]);
    out.expect_code(0);
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "refusal")
        .collect()
}

#[test]
fn a_stranger_is_refused_audited_and_nothing_changes() {
    let sandbox = Sandbox::new();
    let id = started_by(&sandbox, "alice", SPEC);
    let before = sandbox.show(&id);

    let out = answer_as(&sandbox, "mallory", &id, &["--approve"]);
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);
    assert!(out.stderr.contains("alice, bob, carol"), "{}", out.stderr);
    assert_eq!(sandbox.show(&id), before, "the gate stays open, unchanged");
    let refused = refusals(&sandbox);
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0]["event"]["who"], "mallory");
}

#[test]
fn whoever_started_the_run_cannot_approve_it() {
    let sandbox = Sandbox::new();
    let id = started_by(&sandbox, "alice", SPEC);
    let out = answer_as(&sandbox, "alice", &id, &["--approve"]);
    out.expect_code(17);
    assert!(
        out.stderr.contains("you started this run"),
        "{}",
        out.stderr
    );
    assert_eq!(sandbox.show(&id)["status"], "paused");
    // Rejecting one's own run is allowed.
    answer_as(
        &sandbox,
        "alice",
        &id,
        &["--reject", "--reason", "changed my mind"],
    )
    .expect_code(21);
}

#[test]
fn two_of_three_approvals_release_the_gate_and_one_person_counts_once() {
    let sandbox = Sandbox::new();
    let id = started_by(&sandbox, "carol", SPEC);

    let first = answer_as(&sandbox, "alice", &id, &["--approve", "--json"]);
    first.expect_code(19);
    let gate = &first.json()["gate"];
    assert_eq!(gate["approvals_required"], 2, "{gate:#}");
    assert_eq!(gate["approvals"][0]["by"], "alice");
    assert!(
        first.stderr.contains("1 of 2 approvals: alice"),
        "{}",
        first.stderr
    );

    let again = answer_as(&sandbox, "alice", &id, &["--approve"]);
    again.expect_code(17);
    assert!(
        again.stderr.contains("already approved"),
        "{}",
        again.stderr
    );

    let second = answer_as(&sandbox, "bob", &id, &["--approve", "--json"]);
    second.expect_code(0);
    let done = second.json();
    assert_eq!(done["status"], "completed");
    let events = history(&sandbox.show(&id));
    let who: Vec<&str> = events.iter().filter_map(|e| e["by"].as_str()).collect();
    assert_eq!(who, ["alice", "bob"]);
}

#[test]
fn a_single_reject_by_an_approver_rejects_and_admins_may_answer() {
    let sandbox = Sandbox::new();
    let id = started_by(&sandbox, "carol", SPEC);
    answer_as(&sandbox, "alice", &id, &["--approve"]).expect_code(19);
    answer_as(
        &sandbox,
        "bob",
        &id,
        &["--reject", "--reason", "wrong amount"],
    )
    .expect_code(21);

    // An admin outside the list may answer another run.
    let id = started_by(
        &sandbox,
        "carol",
        &SPEC.replace("approvals_required: 2", "approvals_required: 1"),
    );
    let out = sandbox.strands_as(
        "root-admin",
        &[("STRANDS_ADMINS", "root-admin")],
        &["resume", &id, "--approve"],
    );
    out.expect_code(0);
}

#[test]
fn a_gate_can_require_two_rejections() {
    let sandbox = Sandbox::new();
    let spec = SPEC.replace(
        "        approvals_required: 2\n",
        "        approvals_required: 2\n        rejections_required: 2\n",
    );
    let id = started_by(&sandbox, "carol", &spec);
    answer_as(&sandbox, "alice", &id, &["--reject", "--reason", "no"]).expect_code(19);
    assert_eq!(
        sandbox.show(&id)["status"],
        "paused",
        "one rejection of two changes only the tally"
    );
    answer_as(&sandbox, "bob", &id, &["--reject", "--reason", "no"]).expect_code(21);
}

#[test]
fn auto_approve_by_someone_who_may_not_approve_leaves_the_session_paused() {
    let sandbox = Sandbox::new();
    let path = sandbox.path().join("payout.yaml");
    std::fs::write(&path, SPEC).expect("write spec");
    let out = sandbox.strands_as(
        "mallory",
        &[],
        &[
            "run",
            path.to_str().expect("utf-8"),
            "--auto-approve",
            "--json",
        ],
    );
    out.expect_code(19);
    // mallory started it (self-approval is off) and is not an approver either.
    assert!(
        out.stderr.contains("refused: you started this run"),
        "{}",
        out.stderr
    );
    let v = out.json();
    assert_eq!(
        v["status"], "paused",
        "a refused answer never fails the run: {v:#}"
    );
}
