//! The story the Slack tests of `tests/it` tell, in the pieces more than one
//! of them needs (`slack_bot`, `slack_tools`, `slack_approvers`): the
//! `deploy` workflow (planner → manual gate `review` → deployer), the people
//! and the channel in it, a human's pace, and the helpers that start a
//! deploy and wait for its approval message, wait for the model, check that
//! an approval closed, and read the answered gates from the store.
//!
//! Kept here, once, rather than copied into each test module; a helper one
//! module alone uses stays in that module.

use super::fake_slack::{started, ApprovalMessage, Bot, FakeSlack, SlackCall, WAIT};
use super::{history, FakeLlm};
use serde_json::Value;
use std::time::{Duration, Instant};

/// planner → manual_gate `review` → deployer.
pub const DEPLOY: &str = r#"
version: 0
name: deploy
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
inputs:
  values:
    service: web
agents:
  planner:
    prompt: You are the PLANNER.
  deployer:
    prompt: You are the DEPLOYER.
pattern:
  type: chain
  config:
    steps:
      - agent: planner
        input: "Plan the deploy of {{ service }}.{% if human_feedback %} Reviewer feedback: {{ human_feedback }}{% endif %}"
      - type: manual_gate
        id: review
        prompt: Approve the deploy of {{ service }}?
      - agent: deployer
        input: "Deploy per plan: {{ steps[0].response }}"
"#;

/// Starts the runs (`/strands run …`).
pub const REQUESTER: &str = "U01REQUESTER";
/// Decides the gates.
pub const APPROVER: &str = "U04APPROVER";
/// The channel the runs are started from.
pub const OPS: &str = "C0OPS";
/// How long to watch for something that must not happen.
pub const QUIET: Duration = Duration::from_millis(700);
/// The fastest a human clicks after a message appears.
pub const HUMAN: Duration = Duration::from_millis(300);

/// Waits until the model got `n` requests, showing Slack calls and bot log on failure.
#[track_caller]
pub fn wait_llm(llm: &FakeLlm, slack: &FakeSlack, n: usize) {
    let until = Instant::now() + WAIT;
    while llm.count() < n {
        assert!(
            Instant::now() < until,
            "the model got {} requests within {WAIT:?}, wanted {n}: {:#?}\n{}",
            llm.count(),
            llm.requests(),
            slack.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Asserts the model got exactly `n` requests, now and after a quiet while.
#[track_caller]
pub fn assert_llm_stays_at(llm: &FakeLlm, n: usize, why: &str) {
    std::thread::sleep(QUIET);
    assert_eq!(llm.count(), n, "{why}: {:#?}", llm.requests());
}

/// Asserts `update` closed the approval: no buttons left, `words` shown.
#[track_caller]
pub fn assert_closed(update: &SlackCall, words: &str) {
    assert!(update.ok(), "chat.update failed: {:#?}", update);
    assert!(
        update.text().contains(words),
        "the updated message says {words:?}: {:#}",
        update.body
    );
    assert!(
        !update.has_actions_block() && !update.has_buttons(),
        "a decided approval has no buttons left: {:#}",
        update.body
    );
}

/// Waits for the approval message of `handle`, then gives a human the time
/// to read it. (A click the very moment it appears has its own test.)
pub fn approval(slack: &FakeSlack, handle: &str) -> ApprovalMessage {
    let msg = slack.wait_for_approval_of(handle);
    std::thread::sleep(HUMAN);
    msg
}

/// Starts a deploy, returns (session id, approval message for `review#1`).
pub fn deploy_paused(bot: &Bot, slack: &FakeSlack) -> (String, ApprovalMessage) {
    let ack = bot.command(REQUESTER, OPS, "run deploy service=billing");
    ack.expect_prompt_ok("/strands run deploy", bot);
    let id = started(&ack, "deploy");
    (id, approval(slack, "review#1"))
}

/// The `answered` events of a session's history (`strands show`).
pub fn answered(show: &Value) -> Vec<Value> {
    history(show)
        .into_iter()
        .filter(|g| g["event"] == "answered")
        .collect()
}
