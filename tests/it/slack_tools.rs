//! Tool-call approvals in `strands serve`, end to end: an agent asks for two
//! HTTP tool calls that change state, the bot posts one message with a row
//! of buttons per call, and each call is decided on its own — approved,
//! rejected, trusted for the run (only with `enable_trust`), or approved
//! with arguments edited in a modal (bad edits are refused in the modal).
//! The run resumes once every call is decided, and only approved calls
//! reach the [`FakeTarget`]; two calls decided at the same moment both
//! show in the message.
//!
//! Real binary, fake Slack, fake model; the shared deploy story and its
//! helpers are in `tests/common/slack_story.rs`.

use crate::common::fake_slack::{
    call_button, calls_with_buttons, context_lines, started, ApprovalMessage, Bot, Click,
    FakeSlack, FakeTarget, ACK_DEADLINE, APPROVAL_CHANNEL, WAIT,
};
use crate::common::slack_story::{
    answered, assert_llm_stays_at, wait_llm, APPROVER, HUMAN, OPS, QUIET, REQUESTER,
};
use crate::common::{assistant_turns, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};

/// One agent with an HTTP API tool; POST calls change state, so each one
/// waits for a human. `$TRUST` is `enable_trust`.
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
    enable_trust: $TRUST
pattern:
  type: chain
  config:
    steps:
      - agent: operator
        input: Roll out web and api.
"#;

const WEB: &str = "call_web";
const API: &str = "call_api";

/// The model asks for two POSTs at once, then answers with what it was told.
fn two_rollouts() -> Behaviour {
    Behaviour::scripted(|_, body| {
        if assistant_turns(body) == 0 {
            Say::Calls(vec![
                tool_call(
                    WEB,
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/web"}),
                ),
                tool_call(
                    API,
                    "deploy_api",
                    json!({"method": "POST", "path": "/rollout/api"}),
                ),
            ])
        } else {
            let results: Vec<String> = crate::common::tool_results(body)
                .into_iter()
                .map(|(id, content)| format!("{id}: {content}"))
                .collect();
            Say::Text(format!("FINISHED with {}", results.join(" / ")))
        }
    })
}

struct ToolRun {
    llm: FakeLlm,
    slack: FakeSlack,
    target: FakeTarget,
    sandbox: Sandbox,
    bot: Bot,
    id: String,
    msg: ApprovalMessage,
}

/// Starts `ops` from Slack and waits for its tool-approval message.
fn ops_paused(trust: bool) -> ToolRun {
    let llm = FakeLlm::start_with(two_rollouts());
    let slack = FakeSlack::start();
    let target = FakeTarget::start();
    let sandbox = Sandbox::new();
    let spec = OPS_SPEC
        .replace("$TARGET", &target.url)
        .replace("$TRUST", if trust { "true" } else { "false" });
    let bot = Bot::start(&sandbox, &slack, &llm, &[("ops", &spec)]);
    let ack = bot.command(REQUESTER, OPS, "run ops");
    ack.expect_prompt_ok("/strands run ops", &bot);
    let id = started(&ack, "ops");
    let msg = slack.wait_for_tool_approval("tools#1");
    std::thread::sleep(HUMAN);
    ToolRun {
        llm,
        slack,
        target,
        sandbox,
        bot,
        id,
        msg,
    }
}

/// Waits for the update of `msg` that says `words`.
#[track_caller]
fn tool_update(
    slack: &FakeSlack,
    msg: &ApprovalMessage,
    words: &str,
) -> crate::common::fake_slack::SlackCall {
    let update = slack.wait_for_update(msg, |c| c.text().contains(words));
    assert!(update.ok(), "chat.update failed: {update:#?}");
    update
}

#[test]
fn a_tool_call_gate_posts_one_message_with_buttons_per_call_and_resumes_when_all_are_decided() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox,
        mut bot,
        id,
        msg,
    } = ops_paused(false);

    // One message for both calls, each with its own row of buttons.
    assert_eq!(slack.approvals().len(), 1, "{}", slack.describe());
    assert_eq!(msg.channel, APPROVAL_CHANNEL);
    assert!(
        msg.text().contains("Tool approval: ops / operator"),
        "{:#}",
        msg.call.body
    );
    for path in ["/rollout/web", "/rollout/api"] {
        assert!(
            msg.text().contains(path),
            "the message shows the arguments: {:#}",
            msg.call.body
        );
    }
    assert_eq!(calls_with_buttons(&msg.call), [WEB, API]);
    let mut rows: Vec<String> = msg.buttons().iter().map(|b| b.block_id.clone()).collect();
    rows.dedup();
    // One row for the whole turn ("Approve all 2"), then one per call.
    assert_eq!(
        rows,
        ["strands_all_calls", "call:tools#1:1", "call:tools#1:2"]
    );
    for b in msg
        .buttons()
        .iter()
        .filter(|b| b.block_id.starts_with("call:"))
    {
        assert!(
            b.value == format!("tools#1|{WEB}") || b.value == format!("tools#1|{API}"),
            "every button carries handle|call id: {b:?}"
        );
        assert_ne!(
            b.action_id, "strands_trust",
            "no trust without enable_trust"
        );
    }
    for call in [WEB, API] {
        for action in ["strands_approve", "strands_reject", "strands_edit"] {
            msg.call_button(action, call);
        }
    }
    assert_eq!(msg.call_button("strands_approve", WEB).style, "primary");
    assert_eq!(msg.call_button("strands_reject", WEB).style, "danger");
    assert_eq!(llm.count(), 1, "only the first model turn before the gate");
    assert!(target.hits().is_empty(), "nothing runs before a decision");

    // Approving one call updates the message; the other keeps its buttons.
    let click = bot.click_call(&msg, "strands_approve", WEB, APPROVER);
    click.reply.expect_prompt_ok("approving one call", &bot);
    let first = tool_update(&slack, &msg, "approved by <@U04APPROVER>");
    assert_eq!(calls_with_buttons(&first), [API], "{:#}", first.body);
    assert!(call_button(&first, "strands_approve", WEB).is_none());
    assert_llm_stays_at(&llm, 1, "one call of two decided: the run does not resume");
    assert!(target.hits().is_empty(), "nothing runs while a call waits");

    // Rejecting the other closes the gate and resumes the run.
    let click = bot.click_call(&msg, "strands_reject", API, APPROVER);
    click
        .reply
        .expect_prompt_ok("rejecting the other call", &bot);
    let closed = tool_update(&slack, &msg, "rejected by <@U04APPROVER>");
    assert!(
        !closed.has_buttons(),
        "every call decided: no buttons left: {:#}",
        closed.body
    );
    let lines = context_lines(&closed);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("✅ approved by <@U04APPROVER>"))
            && lines
                .iter()
                .any(|l| l.starts_with("❌ rejected by <@U04APPROVER>")),
        "{lines:#?}"
    );
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web"), 1);
    assert_eq!(
        target.count("POST", "/rollout/api"),
        0,
        "a rejected call never runs"
    );
    assert_eq!(target.hits().len(), 1, "{:?}", target.hits());
    let next = llm.request(2);
    assert!(
        next.tool_result(WEB)
            .contains("target got POST /rollout/web"),
        "{:#}",
        next.body
    );
    assert!(
        next.tool_result(API).contains("denied by <@U04APPROVER>"),
        "the model is told who denied the call: {:#}",
        next.body
    );
    let output = slack.wait_for_thread_reply(&msg, |c| c.text().contains("FINISHED"));
    assert_eq!(output.channel(), APPROVAL_CHANNEL);

    // A second click on a decided call is told who decided; nothing changes.
    let updates = slack.updates_of(&msg).len();
    let late = bot.click_call(&msg, "strands_approve", API, "U05LATECOMER");
    late.reply.expect_prompt_ok("a late click", &bot);
    let note = slack.wait_for_ephemeral(&late);
    assert!(
        note.text.contains("already rejected by <@U04APPROVER> at "),
        "{}",
        note.text
    );
    assert_llm_stays_at(&llm, 2, "a late click resumes nothing");
    assert_eq!(
        slack.updates_of(&msg).len(),
        updates,
        "{}",
        slack.describe()
    );
    assert_eq!(target.hits().len(), 1);

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 2, "{show:#}");
    assert_eq!(gates[0]["call"], WEB);
    assert_eq!(gates[0]["decision"]["action"], "approve");
    assert_eq!(gates[1]["call"], API);
    assert_eq!(gates[1]["decision"]["action"], "reject");
}

#[test]
fn trust_is_offered_only_with_enable_trust_and_approves_the_tool_for_the_run() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox,
        mut bot,
        id,
        msg,
    } = ops_paused(true);
    for call in [WEB, API] {
        let trust = msg.call_button("strands_trust", call);
        assert_eq!(trust.value, format!("tools#1|{call}"));
    }

    // Trusting the tool on one call approves the other call of that tool too.
    let click = bot.click_call(&msg, "strands_trust", WEB, APPROVER);
    click.reply.expect_prompt_ok("the trust click", &bot);
    let closed = tool_update(&slack, &msg, "trusted by <@U04APPROVER>");
    assert!(!closed.has_buttons(), "{:#}", closed.body);
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web"), 1);
    assert_eq!(target.count("POST", "/rollout/api"), 1);

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    assert_eq!(answered(&show)[0]["decision"]["action"], "trust");
}

#[test]
fn trust_for_an_hour_saves_a_grant_and_the_message_says_its_rule() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox,
        mut bot,
        id,
        msg,
    } = ops_paused(true);
    let hour = msg.call_button("strands_trust_hour", WEB);
    assert_eq!(hour.value, format!("tools#1|{WEB}"));

    let click = bot.click_call(&msg, "strands_trust_hour", WEB, APPROVER);
    click
        .reply
        .expect_prompt_ok("the trust-for-an-hour click", &bot);
    // The rule as saved, not "for the rest of this run".
    let closed = tool_update(&slack, &msg, "trusted by <@U04APPROVER>");
    let text = closed.body.to_string();
    assert!(text.contains(", for 1h"), "{text}");
    assert!(!text.contains("rest of this run"), "{text}");
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web"), 1);
    assert_eq!(
        target.count("POST", "/rollout/api"),
        1,
        "the grant let it run"
    );

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let decision = &answered(&show)[0]["decision"];
    assert_eq!(decision["action"], "trust", "{decision:#}");
    assert!(decision.to_string().contains("3600"), "{decision:#}");
    let out = sandbox.strands(&["trust", "list", "--json"]);
    out.expect_code(0);
    let grants = out.json();
    let grants = grants["grants"].as_array().expect("a list");
    assert_eq!(grants.len(), 1, "{grants:#?}");
    assert_eq!(grants[0]["granted_by"], "U04APPROVER", "{grants:#?}");
}

#[test]
fn edit_arguments_through_the_modal_runs_the_edited_call_and_refuses_bad_edits() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox,
        mut bot,
        id,
        msg,
    } = ops_paused(false);

    // Edit opens a modal at once, prefilled with the call's arguments.
    let click = bot.click_call(&msg, "strands_edit", WEB, APPROVER);
    click.reply.expect_prompt_ok("the edit click", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "{}\n{}", opened.response, slack.describe());
    assert!(opened.at - click.sent < ACK_DEADLINE);
    let view = &opened.body["view"];
    assert_eq!(view["callback_id"], "strands_edit", "{view:#}");
    let prefilled = view["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["type"] == "input"))
        .map(|b| {
            b["element"]["initial_value"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_default();
    let shown: Value = serde_json::from_str(&prefilled).unwrap_or_else(|e| {
        panic!("the input is prefilled with the arguments as JSON ({e}): {view:#}")
    });
    assert_eq!(shown, json!({"method": "POST", "path": "/rollout/web"}));
    assert!(prefilled.contains('\n'), "pretty JSON: {prefilled:?}");
    let meta = view["private_metadata"].as_str().unwrap_or_default();
    assert!(meta.contains(WEB) && meta.contains("tools#1"), "{meta}");

    // Bad edits keep the modal open with the error, and change nothing.
    let refused = |text: &str, words: &str| {
        let reply = bot.submit_modal(&opened, APPROVER, text);
        reply.expect_prompt_ok("a refused edit", &bot);
        let body = reply.json();
        assert_eq!(body["response_action"], "errors", "{body:#}");
        let error = body["errors"]["feedback"].as_str().unwrap_or_default();
        assert!(error.contains(words), "{words:?} in {error:?}");
    };
    refused(
        r#"{"name": "file_write", "arguments": {"path": "x", "content": "y"}}"#,
        "cannot change which tool runs",
    );
    refused("{not json", "not valid JSON");
    refused(r#"{"path": 5}"#, "schema");
    assert!(slack.updates_of(&msg).is_empty(), "{}", slack.describe());
    assert_llm_stays_at(&llm, 1, "refused edits resume nothing");
    assert!(target.hits().is_empty());

    // A good edit approves the call with the edited arguments.
    let edit = r#"{"method": "POST", "path": "/rollout/web-canary"}"#;
    let reply = bot.submit_modal(&opened, APPROVER, edit);
    reply.expect_prompt_ok("the edit", &bot);
    assert!(
        reply.body.trim().is_empty() || reply.json() == json!({"response_action": "clear"}),
        "{:?}",
        reply.body
    );
    let first = tool_update(
        &slack,
        &msg,
        "approved with edited arguments by <@U04APPROVER>",
    );
    assert_eq!(calls_with_buttons(&first), [API]);
    assert_llm_stays_at(&llm, 1, "one call still waits");

    // Edit on the decided call opens nothing: the clicker hears who decided.
    let again = bot.click_call(&msg, "strands_edit", WEB, "U05LATECOMER");
    again.reply.expect_prompt_ok("a late edit click", &bot);
    let note = slack.wait_for_ephemeral(&again);
    assert!(
        note.text
            .contains("already approved with edits by <@U04APPROVER> at "),
        "{}",
        note.text
    );
    assert!(slack
        .calls_to("views.open")
        .iter()
        .all(|c| c.field("trigger_id") != again.trigger_id));

    let click = bot.click_call(&msg, "strands_approve", API, APPROVER);
    click
        .reply
        .expect_prompt_ok("approving the other call", &bot);
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web-canary"), 1);
    assert_eq!(
        target.count("POST", "/rollout/web"),
        0,
        "the original call never runs"
    );
    assert_eq!(target.count("POST", "/rollout/api"), 1);
    assert!(llm
        .request(2)
        .tool_result(WEB)
        .contains("target got POST /rollout/web-canary"));

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates[0]["decision"]["action"], "edit", "{show:#}");
    assert_eq!(
        gates[0]["decision"]["arguments"]["path"],
        "/rollout/web-canary"
    );
}

#[test]
fn two_calls_decided_at_the_same_moment_leave_the_message_showing_both() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox: _sandbox,
        bot,
        id: _,
        msg,
    } = ops_paused(false);
    let barrier = Arc::new(Barrier::new(2));
    let clicks: Vec<Click> = std::thread::scope(|s| {
        let handles: Vec<_> = [
            (WEB, "strands_approve", APPROVER),
            (API, "strands_reject", "U05OTHER"),
        ]
        .into_iter()
        .map(|(call, action, user)| {
            let (bot, msg, barrier) = (&bot, &msg, barrier.clone());
            s.spawn(move || {
                barrier.wait();
                bot.click_call(msg, action, call, user)
            })
        })
        .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a click"))
            .collect()
    });
    for c in &clicks {
        c.reply.expect_prompt_ok("a concurrent click", &bot);
    }
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web"), 1);
    assert_eq!(target.count("POST", "/rollout/api"), 0);
    // Whatever order the updates ran in, the message ends showing both
    // outcomes and no buttons.
    assert!(
        slack.wait_until(WAIT, |s| s
            .updates_of(&msg)
            .last()
            .is_some_and(|u| !u.has_buttons())),
        "{}",
        slack.describe()
    );
    std::thread::sleep(QUIET);
    let last = slack.updates_of(&msg).pop().expect("an update");
    assert!(last.ok() && !last.has_buttons(), "{:#}", last.body);
    let lines = context_lines(&last);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("✅ approved by <@U04APPROVER>"))
            && lines
                .iter()
                .any(|l| l.starts_with("❌ rejected by <@U05OTHER>")),
        "{lines:#?}"
    );
    assert_llm_stays_at(&llm, 2, "the run resumes once");
}

/// "Approve all" on the turn's message: every waiting call approved, one
/// answer (and one audit entry) each; both calls run once and the run
/// goes on.
#[test]
fn approve_all_approves_each_waiting_call_on_its_own() {
    let ToolRun {
        llm,
        slack,
        target,
        sandbox,
        bot,
        id,
        msg,
    } = ops_paused(false);
    let all = msg.button("strands_approve_all");
    assert_eq!(all.value, "tools#1");
    assert!(msg.text().contains("Approve all 2"), "{}", msg.text());
    let click = bot.click_button(&msg, &all, APPROVER);
    click.reply.expect_prompt_ok("approve all", &bot);
    wait_llm(&llm, &slack, 2);
    assert_eq!(target.count("POST", "/rollout/web"), 1);
    assert_eq!(target.count("POST", "/rollout/api"), 1);
    let export = sandbox.strands(&["audit", "export", "--session", &id]);
    let answers: Vec<Value> = export
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "answer")
        .collect();
    assert_eq!(answers.len(), 2, "{}", export.stdout);
    let mut calls: Vec<&str> = answers
        .iter()
        .filter_map(|e| e["event"]["call"].as_str())
        .collect();
    calls.sort_unstable();
    assert_eq!(calls, [API, WEB]);
    assert!(answers.iter().all(|e| e["event"]["who"] == APPROVER));
    assert_llm_stays_at(&llm, 2, "the run resumes once");
}
