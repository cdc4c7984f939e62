//! The bot's guards on interactive entries, end to end: a modal never opens
//! for someone who may not answer, human text is capped whatever the form
//! allows, and a body signed by Slack that is not UTF-8 is a bad request
//! (400), not a forgery (401). Real binary, fake Slack, fake model.

use crate::common::fake_slack::{
    started, ApprovalMessage, Bot, FakeSlack, Signing, SIGNING_SECRET,
};
use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::time::Duration;

/// planner → manual_gate `review` (approvers named) → deployer.
const DEPLOY: &str = r#"
version: 0
name: deploy
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
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
        input: Plan the deploy.
      - type: manual_gate
        id: review
        prompt: Approve the deploy?
        require_reason: true
        approvers: [U04APPROVER]
      - agent: deployer
        input: "Deploy per plan: {{ steps[0].response }}"
"#;

const REQUESTER: &str = "U01REQUESTER";
const APPROVER: &str = "U04APPROVER";
const STRANGER: &str = "U09STRANGER";
const OPS: &str = "C0OPS";
const QUIET: Duration = Duration::from_millis(700);

fn paused(bot: &Bot, slack: &FakeSlack) -> (String, ApprovalMessage) {
    let ack = bot.command(REQUESTER, OPS, "run deploy");
    ack.expect_prompt_ok("/strands run deploy", bot);
    let id = started(&ack, "deploy");
    (id, slack.wait_for_approval_of("review#1"))
}

#[test]
fn a_non_approver_never_gets_a_modal_and_is_told_why() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = paused(&bot, &slack);

    // Modify, and Reject (this gate asks for a reason in a modal): refused
    // with an ephemeral before any views.open.
    for action in ["strands_modify", "strands_reject"] {
        let click = bot.click(&msg, action, STRANGER);
        click.reply.expect_prompt_ok(action, &bot);
        let note = slack.wait_for_ephemeral(&click);
        assert!(
            note.text.contains("not an approver"),
            "{action}: {}",
            note.text
        );
    }
    std::thread::sleep(QUIET);
    assert!(
        slack.calls_to("views.open").is_empty(),
        "no modal opened for a non-approver: {}",
        slack.describe()
    );

    // The approver gets the form.
    let click = bot.click(&msg, "strands_modify", APPROVER);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "{}", opened.response);

    // Text over the limit is refused in the modal; nothing is recorded.
    let input = &opened.body["view"]["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["type"] == "input"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(input["element"]["max_length"], 3000, "{input:#}");
    let long = "x".repeat(3001);
    let r = bot.submit_modal(&opened, APPROVER, &long);
    let body = r.json();
    assert_eq!(body["response_action"], "errors", "{body:#}");
    let error = body["errors"]["feedback"].as_str().unwrap_or_default();
    assert!(
        error.contains("3001 characters") && error.contains("at most 3000"),
        "{error}"
    );
    std::thread::sleep(QUIET);
    assert_eq!(llm.count(), 1, "nothing re-ran: {:#?}", llm.requests());

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "paused", "{show:#}");
    let audit = sandbox.strands(&["audit", "export"]);
    let refused = audit
        .stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"refusal\"") && l.contains(STRANGER))
        .count();
    assert_eq!(
        refused, 2,
        "both refused modals are audited: {}",
        audit.stdout
    );
}

#[test]
fn a_signed_body_that_is_not_utf8_is_a_400_and_a_forged_one_a_401() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (_id, _msg) = paused(&bot, &slack);
    let calls = slack.len();
    let body: &[u8] = b"payload=\xff\xfe\xfd";
    for path in ["/slack/interactions", "/slack/commands", "/slack/events"] {
        let r = bot.post(
            path,
            "application/x-www-form-urlencoded",
            body,
            Signing::Valid,
            &[],
        );
        assert_eq!(r.status, 400, "{path}: {:?}", r.body);
        assert!(r.body.contains("not UTF-8"), "{path}: {:?}", r.body);
        for forged in [Signing::WrongSecret, Signing::Missing, Signing::BodyAltered] {
            let r = bot.post(path, "application/x-www-form-urlencoded", body, forged, &[]);
            assert_eq!(r.status, 401, "{path} {forged:?}: {:?}", r.body);
        }
    }
    slack.assert_no_calls_since(calls, QUIET, "refused requests");
    assert_eq!(llm.count(), 1);
    bot.stop();
    assert!(
        !bot.log().contains(SIGNING_SECRET),
        "the secret is never logged"
    );
}
