//! Why, who and what, in Slack: a rejection's reason typed in a modal (a
//! gate's own, required by `require_reason` or offered by "Reject with
//! reason…", and a tool call's, which the model reads as "denied by
//! <@U…>: REASON") reaches the updated message, the run's thread, the audit
//! trail and the API's session object; a gate with `notify: dm` asks each
//! named approver in a direct message whose buttons work like the channel's,
//! and every copy shows the decision; the message says who started the run
//! and when the gate times out in the reader's time zone; a cut preview
//! offers "View full output", a modal with the whole redacted text, to the
//! gate's readers only.
//!
//! Real binary, fake Slack, fake model; the deploy story is in
//! `tests/common/slack_story.rs`.

use crate::common::api::{call, make_token};
use crate::common::fake_slack::{
    check_blocks, context_lines, dm_channel, started, ApprovalMessage, Bot, FakeSlack, FakeTarget,
    SlackCall, APPROVAL_CHANNEL, WAIT,
};
use crate::common::slack_story::{
    answered, approval, assert_closed, assert_llm_stays_at, deploy_paused, wait_llm, APPROVER,
    DEPLOY, HUMAN, OPS, QUIET, REQUESTER,
};
use crate::common::{assistant_turns, per_agent, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};

const REASON: &str = "change freeze until Monday";
const SECOND: &str = "U05SECOND";
const STRANGER: &str = "U09STRANGER";

/// The deploy story with `lines` added to its gate.
fn deploy_with(lines: &str) -> String {
    DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        &format!("        prompt: Approve the deploy of {{{{ service }}}}?\n{lines}"),
    )
}

/// The input block of a modal `views.open` call.
fn modal_input(opened: &SlackCall) -> Value {
    opened.body["view"]["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["type"] == "input"))
        .cloned()
        .unwrap_or_else(|| panic!("the modal has no input: {:#}", opened.body))
}

/// The `response_action: errors` text of a refused modal submission.
fn modal_refusal(reply: &crate::common::fake_slack::HttpReply) -> String {
    let v = reply.json();
    assert_eq!(v["response_action"], "errors", "{}", reply.body);
    v["errors"]["feedback"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_reason_given_in_the_modal_shows_on_the_message_the_thread_the_audit_and_the_api() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let reader = make_token(&sandbox, "ci-bot", "operator");
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    // Without `require_reason` both ways stay: Reject (with its confirm
    // dialog) decides at once; "Reject with reason…" opens the form.
    let reject = msg.button("strands_reject");
    let with_reason = msg.button("strands_reject_reason");
    assert_eq!(reject.value, "review#1");
    assert_eq!(with_reason.value, "review#1");
    let els = msg.call.blocks();
    let row = els
        .iter()
        .find(|b| b["type"] == "actions")
        .expect("buttons");
    let confirm = row["elements"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["action_id"] == "strands_reject"))
        .map(|e| e["confirm"].clone())
        .unwrap_or_default();
    assert!(
        confirm.is_object(),
        "Reject keeps its confirm dialog: {row:#}"
    );

    let click = bot.click(&msg, "strands_reject_reason", APPROVER);
    click.reply.expect_prompt_ok("Reject with reason…", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "views.open failed: {opened:#?}");
    assert_eq!(opened.body["view"]["callback_id"], "strands_reject");
    assert_eq!(
        modal_input(&opened)["optional"],
        true,
        "the reason is optional on a gate without require_reason"
    );
    assert!(
        slack.updates_of(&msg).is_empty(),
        "opening the form decides nothing"
    );
    bot.submit_modal(&opened, APPROVER, REASON)
        .expect_prompt_ok("the reason", &bot);

    // The updated message.
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Rejected by"));
    assert_closed(&update, REASON);
    assert!(
        update.text().contains("<@U04APPROVER>"),
        "{:#}",
        update.body
    );
    // The thread.
    let line = slack.wait_for_thread_reply(&msg, |c| c.text().contains("rejected"));
    assert!(line.text().contains(REASON), "{:#}", line.body);
    assert_llm_stays_at(&llm, 1, "the deployer never runs after a reject");
    // The API's session object.
    let reply = call(
        &bot,
        "GET",
        &format!("/api/v1/sessions/{id}"),
        Some(&reader),
        None,
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let view = reply.json();
    assert_eq!(view["status"], "rejected", "{view:#}");
    let answer = &answered(&view)[0];
    assert_eq!(answer["decision"]["reason"], REASON, "{view:#}");
    assert_eq!(answer["by"], APPROVER, "{view:#}");

    // The audit trail.
    bot.stop();
    let out = sandbox.strands(&["audit", "export", "--session", &id]);
    out.expect_code(0);
    let answers: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["event"].clone())
        .filter(|e| e["kind"] == "answer")
        .collect();
    assert_eq!(answers.len(), 1, "{}", out.stdout);
    assert_eq!(answers[0]["decision"]["reason"], REASON, "{}", out.stdout);
    assert_eq!(answers[0]["who"], APPROVER);
    assert_eq!(answers[0]["via"], "slack");
}

#[test]
fn a_required_reason_opens_the_form_at_once_and_an_empty_one_is_refused() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = deploy_with("        require_reason: true\n        approvers: [U04APPROVER]\n");
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    // Reject is the form itself: no confirm dialog, no second reject button.
    assert_eq!(
        msg.action_ids(),
        [
            "strands_approve",
            "strands_reject",
            "strands_modify",
            "strands_open_web"
        ],
        "{:#}",
        msg.call.body
    );
    assert!(!msg.call.body.to_string().contains("\"confirm\""));

    // Someone who may not answer is told so; no form opens.
    let stranger = bot.click(&msg, "strands_reject", STRANGER);
    stranger.reply.expect_prompt_ok("a stranger's reject", &bot);
    let note = slack.wait_for_ephemeral(&stranger);
    assert!(note.text.contains("not an approver"), "{}", note.text);
    assert!(slack
        .calls_to("views.open")
        .iter()
        .all(|c| c.field("trigger_id") != stranger.trigger_id));

    let click = bot.click(&msg, "strands_reject", APPROVER);
    click.reply.expect_prompt_ok("the reject click", &bot);
    let opened = slack.wait_for_modal(&click);
    assert_eq!(opened.body["view"]["callback_id"], "strands_reject");
    assert_eq!(modal_input(&opened)["optional"], false, "required here");

    // Slack requires the box, but a payload can still come empty (or
    // blank): the bot refuses it in the modal and nothing changes.
    for empty in ["", "   \n "] {
        let reply = bot.submit_modal(&opened, APPROVER, empty);
        reply.expect_prompt_ok("an empty reason", &bot);
        let why = modal_refusal(&reply);
        assert!(why.contains("needs a reason"), "{why}");
    }
    assert!(slack.updates_of(&msg).is_empty(), "nothing decided");
    assert_llm_stays_at(&llm, 1, "an empty reason resumes nothing");

    bot.submit_modal(&opened, APPROVER, REASON)
        .expect_prompt_ok("the reason", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Rejected by"));
    assert_closed(&update, REASON);

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_eq!(answered(&show)[0]["decision"]["reason"], REASON);
    let out = sandbox.strands(&["audit", "export", "--session", &id]);
    assert!(
        out.stdout.contains("\"kind\":\"refusal\""),
        "the stranger's click is audited: {}",
        out.stdout
    );
}

/// One agent with an HTTP tool; its POST waits for a human. The model asks
/// once, then repeats what the tool said.
const OPS_SPEC: &str = r#"
version: 0
name: ops
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  http_executors:
    - id: deploy_api
      base_url: $TARGET
      description: The deploy API.
agents:
  operator:
    prompt: You are the OPERATOR.
    tools: [deploy_api]
pattern:
  type: chain
  config:
    steps:
      - agent: operator
        input: Roll out web.
"#;

#[test]
fn a_tool_call_rejected_with_a_reason_tells_the_model_who_and_why() {
    let llm = FakeLlm::start_with(Behaviour::scripted(|_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![tool_call(
                "call_web",
                "deploy_api",
                json!({"method": "POST", "path": "/rollout/web"}),
            )])
        } else {
            let said: Vec<String> = crate::common::tool_results(body)
                .into_iter()
                .map(|(id, content)| format!("{id}: {content}"))
                .collect();
            Say::Text(format!("FINISHED with {}", said.join(" / ")))
        }
    }));
    let slack = FakeSlack::start();
    let target = FakeTarget::start();
    let sandbox = Sandbox::new();
    let spec = OPS_SPEC.replace("$TARGET", &target.url);
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("ops", &spec)]);
    let ack = bot.command(REQUESTER, OPS, "run ops");
    ack.expect_prompt_ok("/strands run ops", &bot);
    let id = started(&ack, "ops");
    let msg = slack.wait_for_tool_approval("tools#1");
    std::thread::sleep(HUMAN);

    // Each call offers a reason next to its plain (confirmed) Reject.
    let button = msg.call_button("strands_reject_reason", "call_web");
    assert_eq!(button.value, "tools#1|call_web");
    let click = bot.click_button(&msg, &button, APPROVER);
    click
        .reply
        .expect_prompt_ok("Reject with reason… on a call", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "views.open failed: {opened:#?}");
    assert_eq!(opened.body["view"]["callback_id"], "strands_reject");
    assert_eq!(modal_input(&opened)["optional"], true);
    let meta: Value = serde_json::from_str(
        opened.body["view"]["private_metadata"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("private_metadata is JSON");
    assert_eq!(meta["call"], "call_web", "the form is about the call");
    assert!(
        opened.text().contains("deploy_api"),
        "the form names the call: {:#}",
        opened.body
    );
    assert_llm_stays_at(&llm, 1, "opening the form decides nothing");

    bot.submit_modal(&opened, APPROVER, "not during the freeze")
        .expect_prompt_ok("the call's reason", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("rejected by"));
    let lines = context_lines(&update).join("\n");
    assert!(
        lines.contains("rejected by <@U04APPROVER>") && lines.contains("not during the freeze"),
        "{lines}"
    );
    wait_llm(&llm, &slack, 2);
    let told = llm.request(2).tool_result("call_web");
    assert_eq!(
        told, "denied by <@U04APPROVER>: not during the freeze",
        "the model reads who said no, and why"
    );
    assert!(target.hits().is_empty(), "the call never ran");
    slack.wait_for_thread_reply(&msg, |c| c.text().contains("FINISHED"));

    bot.stop();
    let out = sandbox.strands(&["audit", "export", "--session", &id]);
    let answer = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["event"].clone())
        .find(|e| e["kind"] == "answer")
        .unwrap_or_else(|| panic!("no answer audited: {}", out.stdout));
    assert_eq!(answer["call"], "call_web");
    assert_eq!(answer["decision"]["reason"], "not during the freeze");
}

#[test]
fn named_approvers_are_asked_by_direct_message_and_every_copy_shows_the_decision() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = deploy_with(
        "        approvers: [U04APPROVER, U05SECOND, S0LEADS1]\n        notify: dm\n        timeout_minutes: 90\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    assert_eq!(msg.channel, APPROVAL_CHANNEL);

    // One DM per approver named by user id (the group is not DMed).
    let dms = direct_copies(&slack, 2);
    let mut places: Vec<String> = dms.iter().map(|m| m.channel.clone()).collect();
    places.sort();
    assert_eq!(
        places,
        [dm_channel(APPROVER), dm_channel(SECOND)],
        "{}",
        slack.describe()
    );
    let opened = slack.calls_to("conversations.open");
    assert_eq!(opened.len(), 2, "{}", slack.describe());
    assert!(opened.iter().all(SlackCall::ok));
    for dm in &dms {
        assert_eq!(dm.handle(), "review#1", "the same working buttons");
        assert_eq!(dm.action_ids(), msg.action_ids());
        assert!(dm.text().contains("You are an approver"), "{}", dm.text());
        check_blocks(&dm.call.body["blocks"], 50).expect("valid blocks");
    }
    // Who started the run, and the timeout in the reader's own time zone.
    for m in std::iter::once(&msg).chain(dms.iter()) {
        let text = m.text();
        assert!(text.contains("Started by <@U01REQUESTER>"), "{text}");
        assert!(
            text.contains("<!date^") && text.contains("{date_short_pretty} at {time}|"),
            "{text}"
        );
    }

    // A stranger's click on a copy is refused like one in the channel.
    let second_dm = dms
        .iter()
        .find(|m| m.channel == dm_channel(SECOND))
        .expect("the second approver's DM")
        .clone();
    std::thread::sleep(HUMAN);
    let stranger = bot.click(&second_dm, "strands_approve", STRANGER);
    let note = slack.wait_for_ephemeral(&stranger);
    assert!(note.text.contains("not an approver"), "{}", note.text);

    // The second approver decides in their DM: every copy shows it.
    bot.click(&second_dm, "strands_approve", SECOND)
        .reply
        .expect_prompt_ok("approving in a DM", &bot);
    for m in std::iter::once(&msg).chain(dms.iter()) {
        let update = slack.wait_for_update(m, |c| c.text().contains("Approved by"));
        assert_closed(&update, "<@U05SECOND>");
    }
    wait_llm(&llm, &slack, 2);
    slack.wait_for_thread_reply(&msg, |c| c.text().contains("completed"));
    // A late click on the other copy is told who decided.
    let first_dm = dms
        .iter()
        .find(|m| m.channel == dm_channel(APPROVER))
        .expect("the first approver's DM");
    let late = bot.click(first_dm, "strands_reject", APPROVER);
    let note = slack.wait_for_ephemeral(&late);
    assert!(
        note.text.contains("already approved by <@U05SECOND>"),
        "{}",
        note.text
    );

    bot.stop();
    assert_eq!(sandbox.show(&id)["status"], "completed");
}

/// The approval messages posted in direct-message channels, once `n` are.
fn direct_copies(slack: &FakeSlack, n: usize) -> Vec<ApprovalMessage> {
    let copies = |s: &FakeSlack| -> Vec<ApprovalMessage> {
        s.approvals()
            .into_iter()
            .filter(|m| m.channel.starts_with('D'))
            .collect()
    };
    slack.wait_until(WAIT, |s| copies(s).len() >= n);
    copies(slack)
}

#[test]
fn a_timeout_shows_on_every_direct_copy() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY
        .replace("type: manual_gate", "type: hitl")
        .replace(
            "        prompt: Approve the deploy of {{ service }}?\n",
            "        prompt: Approve the deploy of {{ service }}?\n        approvers: [U04APPROVER, U05SECOND]\n        notify: dm\n        timeout_seconds: 2\n        fallback_action: reject\n",
        );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    let dms = direct_copies(&slack, 2);
    assert_eq!(dms.len(), 2, "{}", slack.describe());
    for m in std::iter::once(&msg).chain(dms.iter()) {
        let update = slack.wait_for_update(m, |c| c.text().contains("Timed out"));
        assert_closed(&update, "Timed out → rejected by fallback");
    }
    bot.stop();
    assert_eq!(sandbox.show(&id)["status"], "rejected");
}

#[test]
fn a_cut_preview_offers_the_full_redacted_output_to_readers_only() {
    let long_plan = format!(
        "PLAN START {} password=hunter2 PLAN END",
        "step; ".repeat(2_000)
    );
    let llm = FakeLlm::start_with(per_agent(&[("PLANNER", &[long_plan.as_str()])]));
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = deploy_with("        approvers: [U04APPROVER]\n        preview_length: 200\n");
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let ack = bot.command(REQUESTER, OPS, "run deploy");
    ack.expect_prompt_ok("/strands run deploy", &bot);
    let msg = approval(&slack, "review#1");
    assert!(msg.text().contains("Preview cut"), "{}", msg.text());
    let button = msg.button("strands_view_full");
    assert_eq!(button.text, "View full output");
    assert!(!msg.text().contains("PLAN END"), "the preview is cut");

    // An approver, and whoever started the run, read it all — redacted.
    for reader in [APPROVER, REQUESTER] {
        let click = bot.click(&msg, "strands_view_full", reader);
        click.reply.expect_prompt_ok("View full output", &bot);
        let opened = slack.wait_for_modal(&click);
        assert!(opened.ok(), "views.open failed: {opened:#?}");
        assert_eq!(opened.body["view"]["callback_id"], "strands_view_full");
        let text = opened.text();
        assert!(
            text.contains("PLAN START") && text.contains("PLAN END"),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "redacted: {text}");
        assert!(
            opened.body["view"]["blocks"].as_array().map(Vec::len) > Some(3),
            "the text comes in several sections: {:#}",
            opened.body
        );
    }
    // Anyone else is told why, and no modal opens.
    let n = slack.calls_to("views.open").len();
    let stranger = bot.click(&msg, "strands_view_full", STRANGER);
    stranger
        .reply
        .expect_prompt_ok("a stranger's View full output", &bot);
    let note = slack.wait_for_ephemeral(&stranger);
    assert!(
        note.text.contains("may not read the full output"),
        "{}",
        note.text
    );
    std::thread::sleep(QUIET);
    assert_eq!(
        slack.calls_to("views.open").len(),
        n,
        "no modal for a stranger"
    );
    // Reading decides nothing.
    assert!(slack.updates_of(&msg).is_empty());
    assert_llm_stays_at(&llm, 1, "reading resumes nothing");
    bot.stop();
}
