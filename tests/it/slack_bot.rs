//! `strands serve` end to end: the real binary between a fake Slack Web API
//! and the fake model server.
//!
//! Each test starts its own fakes, store and workflows directory, sends
//! signed Slack requests shaped like `shared/docs/slack-payloads` (slash
//! commands, button clicks, modal submissions, events), and checks what the
//! bot told Slack, what the model was asked, and — after stopping the bot,
//! which holds the store's lock — what the store says.
//!
//! The core flows are here; tool-call approvals are in `slack_tools`, a
//! gate's own channel, reason, approvers and quorum in `slack_approvers`,
//! the checks of the fake Slack itself in `slack_harness`. The deploy story
//! they share is in `tests/common/slack_story.rs`.

use crate::common::fake_slack::{
    started, ApprovalMessage, Bot, BotConfig, Click, Ephemeral, FakeSlack, Signing, SlackBehaviour,
    ACK_DEADLINE, APPROVAL_CHANNEL, BOT_TOKEN, VIEW_SUBMISSION_JSON, WAIT,
};
use crate::common::slack_story::{
    answered, approval, assert_closed, assert_llm_stays_at, deploy_paused, wait_llm, APPROVER,
    DEPLOY, OPS, QUIET, REQUESTER,
};
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// drafter → hitl `signoff` (free text) → publisher.
const RELEASE: &str = r#"
version: 0
name: release
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  drafter:
    prompt: You are the DRAFTER.
  publisher:
    prompt: You are the PUBLISHER.
pattern:
  type: chain
  config:
    steps:
      - agent: drafter
        input: Draft the release notes.
      - type: hitl
        id: signoff
        prompt: Ship this draft?
        context_display: "Draft: {{ steps[0].response }}"
      - agent: publisher
        input: "Decision: {{ steps[1].response }} / latest answer: {{ hitl_response }}"
"#;

// ---------------------------------------------------------------------------
// Story helpers
// ---------------------------------------------------------------------------

/// The note a late clicker gets: who decided, and when —
/// "already <decided|approved|rejected|…> by <@U…> at …".
#[track_caller]
fn assert_already_decided(note: &Ephemeral, by: &str) {
    let tail = format!(" by <@{by}> at ");
    let says = note.text.match_indices("already ").any(|(i, m)| {
        let rest = &note.text[i + m.len()..];
        let verb_len = rest
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(rest.len());
        verb_len > 0 && rest[verb_len..].starts_with(&tail)
    });
    assert!(
        says,
        "the late clicker is told who decided and when (already … by <@{by}> at …): {:#}",
        note.call.body
    );
    assert_ne!(
        note.call.body["replace_original"], true,
        "the note must not replace the approval message for everyone: {:#}",
        note.call.body
    );
    if note.call.method == "chat.postEphemeral" {
        assert!(note.call.ok(), "{:#?}", note.call);
    }
}

/// The sorted action ids of the message's buttons.
fn action_ids(msg: &ApprovalMessage) -> Vec<String> {
    let mut ids = msg.action_ids();
    ids.sort();
    ids
}

/// The one session of the store, read after the bot stopped.
#[track_caller]
fn only_session(sandbox: &Sandbox) -> Value {
    let list = sandbox.list();
    assert_eq!(list["count"], 1, "{list:#}");
    list["sessions"][0].clone()
}

// ---------------------------------------------------------------------------
// 1. run → approve → output in the thread
// ---------------------------------------------------------------------------

#[test]
fn slash_run_then_approve_click_resumes_and_posts_the_output_in_the_thread() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);

    // The slash command is acknowledged at once, privately, with the session id.
    let ack = bot.command(REQUESTER, OPS, "run deploy service=billing");
    ack.expect_prompt_ok("/strands run deploy", &bot);
    let id = started(&ack, "deploy");
    assert_ne!(
        ack.json()["response_type"],
        "in_channel",
        "the acknowledgement is ephemeral: {}",
        ack.body
    );

    // The planner ran with the variable, then the gate posted an approval.
    let msg = approval(&slack, "review#1");
    assert_eq!(msg.channel, APPROVAL_CHANNEL);
    assert_eq!(msg.call.field("channel"), APPROVAL_CHANNEL);
    assert_eq!(
        msg.call.authorization.as_deref(),
        Some(format!("Bearer {BOT_TOKEN}").as_str()),
        "Web API calls carry the bot token"
    );
    assert!(msg.call.has_actions_block(), "{:#}", msg.call.body);
    assert_eq!(
        action_ids(&msg),
        [
            "strands_approve",
            "strands_modify",
            "strands_open_web",
            "strands_reject",
            "strands_reject_reason"
        ]
    );
    // "Open in browser" links to the run's page in the web inbox.
    let body = msg.call.body.to_string();
    assert!(
        body.contains("/sessions/") && body.contains("\"url\""),
        "{:#}",
        msg.call.body
    );
    for b in msg
        .buttons()
        .into_iter()
        .filter(|b| b.action_id != "strands_open_web")
    {
        assert_eq!(b.value, "review#1", "every button carries the gate handle");
    }
    assert_eq!(llm.count(), 1, "only the planner ran before the gate");
    let plan = llm.request(1);
    assert!(plan.system().contains("PLANNER"), "{plan:#?}");
    assert_eq!(plan.user(), "Plan the deploy of billing.");
    assert!(
        msg.text().contains("Approve the deploy of billing?"),
        "the message shows the gate's prompt: {:#}",
        msg.call.body
    );
    assert!(
        msg.text().contains(&plan.reply_text()),
        "the message shows what is to be approved: {:#}",
        msg.call.body
    );

    // A signed click is acknowledged at once; the message closes.
    let click = bot.click(&msg, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("the approve click", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04APPROVER>");

    // The run continues from the checkpoint and the output lands in the thread.
    wait_llm(&llm, &slack, 2);
    let deployer = llm.request(2);
    assert!(deployer.system().contains("DEPLOYER"), "{deployer:#?}");
    assert_eq!(
        deployer.user(),
        format!("Deploy per plan: {}", plan.reply_text())
    );
    let output = slack.wait_for_thread_reply(&msg, |c| c.text().contains(&deployer.reply_text()));
    assert_eq!(output.channel(), APPROVAL_CHANNEL);

    // A late second click is told who decided; nothing else happens.
    let updates = slack.calls_to("chat.update").len();
    let late = bot.click(&msg, "strands_approve", "U05LATECOMER");
    late.reply.expect_prompt_ok("the second click", &bot);
    assert_already_decided(&slack.wait_for_ephemeral(&late), APPROVER);
    assert_llm_stays_at(&llm, 2, "a second click does not resume again");
    assert_eq!(
        slack.calls_to("chat.update").len(),
        updates,
        "a second click does not update the message again\n{}",
        slack.describe()
    );

    bot.stop();
    let session = only_session(&sandbox);
    assert!(
        session["id"].as_str().is_some_and(|s| s.starts_with(&id)),
        "the acknowledged id is the session's: {session:#}"
    );
    assert_eq!(session["status"], "completed", "{session:#}");
    let show = sandbox.show(&id);
    assert_eq!(show["output"], Value::String(deployer.reply_text()));
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "{show:#}");
    assert_eq!(gates[0]["decision"]["action"], "approve");
    assert!(
        gates[0]["by"]
            .as_str()
            .is_some_and(|by| by.contains(APPROVER)),
        "the audit names the Slack user: {:#}",
        gates[0]
    );
}

// ---------------------------------------------------------------------------
// 2. modify, reject, hitl respond
// ---------------------------------------------------------------------------

#[test]
fn modify_through_the_modal_reruns_the_step_with_the_feedback_and_asks_again() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    // Modify opens a modal with the click's trigger_id, in time.
    let click = bot.click(&msg, "strands_modify", APPROVER);
    click.reply.expect_prompt_ok("the modify click", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(
        opened.ok(),
        "views.open must use the click's trigger_id once, within 3 s: {}\n{}",
        opened.response,
        slack.describe()
    );
    assert!(opened.at - click.sent < ACK_DEADLINE);
    let view = &opened.body["view"];
    assert_eq!(view["callback_id"], "strands_modify", "{view:#}");
    assert!(
        view["private_metadata"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "the modal carries private_metadata: {view:#}"
    );

    // Submitting it closes the modal and re-runs the planner with the feedback.
    let feedback = "Roll out behind a canary first";
    let submitted = bot.submit_modal(&opened, APPROVER, feedback);
    submitted.expect_prompt_ok("the modal submission", &bot);
    assert!(
        submitted.body.trim().is_empty() || submitted.json() == json!({"response_action": "clear"}),
        "a submission is answered with an empty body or response_action clear: {:?}",
        submitted.body
    );
    wait_llm(&llm, &slack, 2);
    let rerun = llm.request(2);
    assert!(rerun.system().contains("PLANNER"), "{rerun:#?}");
    assert_eq!(
        rerun.user(),
        format!("Plan the deploy of billing. Reviewer feedback: {feedback}")
    );

    // The re-asked gate is a new approval message.
    let second = approval(&slack, "review#2");
    assert_ne!(second.ts, msg.ts, "a new message, not the old one");
    assert_eq!(second.channel, APPROVAL_CHANNEL);
    assert_eq!(
        action_ids(&second),
        [
            "strands_approve",
            "strands_modify",
            "strands_open_web",
            "strands_reject",
            "strands_reject_reason"
        ]
    );
    assert!(
        second.text().contains(&rerun.reply_text()),
        "the new message shows the re-run plan: {:#}",
        second.call.body
    );

    // The old message's buttons are stale now.
    let stale = bot.click(&msg, "strands_approve", "U05OTHER");
    stale
        .reply
        .expect_prompt_ok("a click on the old message", &bot);
    assert_already_decided(&slack.wait_for_ephemeral(&stale), APPROVER);
    assert_llm_stays_at(&llm, 2, "a stale click resumes nothing");
    assert!(
        slack
            .updates_of(&msg)
            .iter()
            .all(|u| !u.text().contains("Approved by")),
        "a stale click approves nothing\n{}",
        slack.describe()
    );

    // Approving the new one finishes the run with the re-run plan.
    let click = bot.click(&second, "strands_approve", APPROVER);
    click
        .reply
        .expect_prompt_ok("the approve click on #2", &bot);
    let update = slack.wait_for_update(&second, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04APPROVER>");
    wait_llm(&llm, &slack, 3);
    let deployer = llm.request(3);
    assert!(deployer.system().contains("DEPLOYER"));
    assert_eq!(
        deployer.user(),
        format!("Deploy per plan: {}", rerun.reply_text())
    );
    let (first_ts, second_ts) = (msg.ts.clone(), second.ts.clone());
    let out = deployer.reply_text();
    slack.wait_for(
        "chat.postMessage",
        |c| {
            c.ok()
                && (c.thread_ts() == first_ts || c.thread_ts() == second_ts)
                && c.text().contains(&out)
        },
        WAIT,
    );

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 2, "{show:#}");
    assert_eq!(gates[0]["decision"]["action"], "modify");
    assert_eq!(gates[0]["decision"]["feedback"], feedback);
    assert_eq!(gates[1]["decision"]["action"], "approve");
}

#[test]
fn reject_button_closes_the_message_and_ends_the_run_rejected() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    let click = bot.click(&msg, "strands_reject", APPROVER);
    click.reply.expect_prompt_ok("the reject click", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Rejected by"));
    assert_closed(&update, "Rejected by <@U04APPROVER>");
    assert_llm_stays_at(&llm, 1, "the deployer never runs after a reject");
    assert!(llm.calls_of("DEPLOYER").is_empty());

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert!(show["gate"].is_null(), "no gate stays open: {show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "{show:#}");
    assert_eq!(gates[0]["decision"]["action"], "reject");
}

#[test]
fn hitl_gate_takes_a_free_text_answer_through_the_modal() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("release", RELEASE)]);

    let ack = bot.command(REQUESTER, OPS, "run release");
    ack.expect_prompt_ok("/strands run release", &bot);
    let id = started(&ack, "release");
    let msg = approval(&slack, "signoff#1");
    assert!(
        msg.action_ids().iter().any(|a| a == "strands_respond"),
        "a hitl gate is answered in words: {:?}",
        msg.action_ids()
    );
    let draft = llm.request(1);
    assert!(
        msg.text().contains("Ship this draft?"),
        "{:#}",
        msg.call.body
    );
    assert!(
        msg.text().contains(&draft.reply_text()),
        "{:#}",
        msg.call.body
    );

    let click = bot.click(&msg, "strands_respond", APPROVER);
    click.reply.expect_prompt_ok("the respond click", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "{}\n{}", opened.response, slack.describe());
    assert_eq!(opened.body["view"]["callback_id"], "strands_respond");
    assert!(opened.body["view"]["private_metadata"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    let submitted = bot.submit_modal(&opened, APPROVER, "ship it");
    submitted.expect_prompt_ok("the modal submission", &bot);

    wait_llm(&llm, &slack, 2);
    let publisher = llm.request(2);
    assert!(publisher.system().contains("PUBLISHER"), "{publisher:#?}");
    assert_eq!(
        publisher.user(),
        "Decision: ship it / latest answer: ship it"
    );
    // The answered message closes, naming who answered.
    let update = slack.wait_for_update(&msg, |c| !c.has_buttons());
    assert_closed(&update, "<@U04APPROVER>");
    slack.wait_for_thread_reply(&msg, |c| c.text().contains(&publisher.reply_text()));

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "{show:#}");
    assert_eq!(gates[0]["decision"]["action"], "respond");
    assert_eq!(gates[0]["decision"]["text"], "ship it");
}

#[test]
fn a_click_the_moment_the_approval_message_appears_is_honoured() {
    // Slack shows the message to people while chat.postMessage is still
    // answering the bot: a click can arrive before the bot has seen the ts.
    // Here that answer takes half a second, and the click comes at once.
    let llm = FakeLlm::start();
    let slack = FakeSlack::start_with(SlackBehaviour {
        post_answer_delay: Duration::from_millis(500),
        ..SlackBehaviour::default()
    });
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let ack = bot.command(REQUESTER, OPS, "run deploy service=billing");
    ack.expect_prompt_ok("/strands run deploy", &bot);
    let msg = slack.wait_for_approval_of("review#1");

    let click = bot.click(&msg, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("the immediate click", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04APPROVER>");
    wait_llm(&llm, &slack, 2);
    assert!(
        slack.ephemerals_for(&click).is_empty(),
        "the clicker is not told the message is unknown: {:#?}",
        slack.ephemerals_for(&click)
    );
}

// ---------------------------------------------------------------------------
// 3. signatures
// ---------------------------------------------------------------------------

#[test]
fn unsigned_forged_and_stale_requests_get_401_and_change_nothing() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    let calls = slack.len();
    let asked = llm.count();

    let submission: Value = serde_json::from_str(VIEW_SUBMISSION_JSON).expect("example payload");
    for signing in [
        Signing::Missing,
        Signing::WrongSecret,
        Signing::Stale,
        Signing::Future,
        Signing::BodyAltered,
    ] {
        let r = bot.command_signed(REQUESTER, OPS, "run deploy", signing);
        assert_eq!(r.status, 401, "{signing:?} slash command: {:?}", r.body);
        for action in ["strands_approve", "strands_reject", "strands_modify"] {
            let c = bot.click_with(&msg, action, APPROVER, signing, |_| {});
            assert_eq!(
                c.reply.status, 401,
                "{signing:?} {action}: {:?}",
                c.reply.body
            );
        }
        let r = bot.interaction(&submission, signing);
        assert_eq!(r.status, 401, "{signing:?} view_submission: {:?}", r.body);
        let challenge =
            json!({"token": "x", "challenge": "forged-challenge", "type": "url_verification"});
        let r = bot.event(&challenge, None, signing);
        assert_eq!(r.status, 401, "{signing:?} event: {:?}", r.body);
        assert!(!r.body.contains("forged-challenge"));
    }
    slack.assert_no_calls_since(calls, QUIET, "refused requests");
    assert_eq!(llm.count(), asked, "refused requests run nothing");

    bot.stop();
    let session = only_session(&sandbox);
    assert_eq!(session["status"], "paused", "{session:#}");
    assert_eq!(session["gate"], "review", "{session:#}");
    let show = sandbox.show(&id);
    assert!(answered(&show).is_empty(), "nothing was answered: {show:#}");
    assert_eq!(show["gate"]["handle"], "review#1", "{show:#}");
}

// ---------------------------------------------------------------------------
// 4. exactly once under concurrent clicks
// ---------------------------------------------------------------------------

#[test]
fn fifty_concurrent_clicks_approve_once_and_the_rest_hear_who_decided() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    let users: Vec<String> = (0..50).map(|i| format!("U0CLICK{i:02}")).collect();
    let barrier = Arc::new(Barrier::new(users.len()));
    let clicks: Vec<Click> = std::thread::scope(|s| {
        let handles: Vec<_> = users
            .iter()
            .map(|u| {
                let (bot, msg, barrier) = (&bot, &msg, barrier.clone());
                s.spawn(move || {
                    barrier.wait();
                    bot.click(msg, "strands_approve", u)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a click thread"))
            .collect()
    });
    for c in &clicks {
        c.reply
            .expect_prompt_ok(&format!("the click of {}", c.user), &bot);
    }

    // One approval, by one of them.
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U0CLICK");
    let winner = users
        .iter()
        .find(|u| update.text().contains(&format!("Approved by <@{u}>")))
        .unwrap_or_else(|| panic!("the update names a clicker: {:#}", update.body))
        .clone();
    wait_llm(&llm, &slack, 2);
    slack.wait_for_thread_reply(&msg, |c| c.text().contains(&llm.request(2).reply_text()));

    // Everyone else is told who decided.
    let losers: Vec<&Click> = clicks.iter().filter(|c| c.user != winner).collect();
    assert_eq!(losers.len(), 49);
    let all_told = slack.wait_until(WAIT, |s| {
        losers.iter().all(|c| !s.ephemerals_for(c).is_empty())
    });
    let untold: Vec<&str> = losers
        .iter()
        .filter(|c| slack.ephemerals_for(c).is_empty())
        .map(|c| c.user.as_str())
        .collect();
    assert!(
        all_told,
        "{} late clickers heard nothing: {untold:?}\n{}",
        untold.len(),
        slack.describe()
    );
    for c in &losers {
        for note in slack.ephemerals_for(c) {
            assert_already_decided(&note, &winner);
        }
    }
    let winner_click = clicks.iter().find(|c| c.user == winner).expect("winner");
    assert!(
        slack.ephemerals_for(winner_click).is_empty(),
        "the winner is not told someone else decided"
    );

    assert_llm_stays_at(&llm, 2, "the step after the gate runs once");
    assert_eq!(llm.calls_of("DEPLOYER").len(), 1);
    let approvals: Vec<_> = slack
        .updates_of(&msg)
        .into_iter()
        .filter(|u| u.text().contains("Approved"))
        .collect();
    assert_eq!(
        approvals.len(),
        1,
        "exactly one chat.update: {approvals:#?}"
    );

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "answered exactly once: {show:#}");
    assert!(gates[0]["by"]
        .as_str()
        .is_some_and(|by| by.contains(&winner)));
}

// ---------------------------------------------------------------------------
// 5. durability across a crash
// ---------------------------------------------------------------------------

#[test]
fn a_click_after_the_bot_was_killed_and_restarted_still_resumes() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (id, msg) = deploy_paused(&bot, &slack);

    bot.kill();
    bot.restart();

    let click = bot.click(&msg, "strands_approve", APPROVER);
    click
        .reply
        .expect_prompt_ok("the click after the restart", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04APPROVER>");
    wait_llm(&llm, &slack, 2);
    let deployer = llm.request(2);
    assert!(deployer.system().contains("DEPLOYER"));
    assert_eq!(
        llm.calls_of("PLANNER").len(),
        1,
        "the planner is not run again"
    );
    slack.wait_for_thread_reply(&msg, |c| c.text().contains(&deployer.reply_text()));

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    assert_eq!(show["output"], Value::String(deployer.reply_text()));
}

// ---------------------------------------------------------------------------
// 6. rate limits
// ---------------------------------------------------------------------------

#[test]
fn a_rate_limited_approval_message_is_posted_again_after_retry_after() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start_with(SlackBehaviour {
        rate_limited_posts: 1,
        retry_after_secs: 1,
        ..SlackBehaviour::default()
    });
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (_id, msg) = deploy_paused(&bot, &slack);

    let posts = slack.calls_to("chat.postMessage");
    assert_eq!(posts[0].status, 429, "{posts:#?}");
    assert_eq!(posts[0].channel(), APPROVAL_CHANNEL);
    assert!(msg.call.n > posts[0].n);
    let waited = msg.call.at - posts[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "the retry honours Retry-After: 1 (came after {waited:?})"
    );
    assert_eq!(msg.call.body["blocks"], posts[0].body["blocks"]);
    std::thread::sleep(QUIET);
    assert_eq!(
        slack.approvals().len(),
        1,
        "the approval is posted once\n{}",
        slack.describe()
    );

    let click = bot.click(&msg, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("the approve click", &bot);
    wait_llm(&llm, &slack, 2);
    slack.wait_for_thread_reply(&msg, |c| c.text().contains(&llm.request(2).reply_text()));
}

// ---------------------------------------------------------------------------
// 7. events
// ---------------------------------------------------------------------------

fn mention(event_id: &str, ts: &str) -> Value {
    json!({
        "token": "legacy-verification-token-unused",
        "team_id": "T0ACME01",
        "api_app_id": "A0STRANDS1",
        "event": {
            "type": "app_mention", "user": APPROVER, "text": "<@U0BOTUSER> help",
            "ts": ts, "channel": "C0EVENTS", "event_ts": ts,
            "client_msg_id": "5f0e2b4e-0000-4000-8000-000000000001"
        },
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1763720100,
        "authorizations": [{"enterprise_id": null, "team_id": "T0ACME01", "user_id": "U0BOTUSER",
                            "is_bot": true, "is_enterprise_install": false}],
        "is_ext_shared_channel": false,
        "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIn0"
    })
}

#[test]
fn events_url_verification_echoes_the_challenge_and_a_retried_event_is_handled_once() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);

    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let r = bot.event(
        &json!({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"}),
        None,
        Signing::Valid,
    );
    r.expect_prompt_ok("url_verification", &bot);
    assert!(
        r.body.trim() == challenge || r.json()["challenge"] == challenge,
        "the challenge is echoed: {:?}",
        r.body
    );

    // The same event, then Slack's retry of it.
    let about = |s: &FakeSlack, ts: &str| {
        s.calls()
            .into_iter()
            .filter(|c| c.method != "response_url")
            .filter(|c| c.channel() == "C0EVENTS" || c.thread_ts() == ts)
            .count()
    };
    let first = mention("Ev0RETRY0001", "1763720100.000100");
    let r1 = bot.event(&first, None, Signing::Valid);
    r1.expect_prompt_ok("the event", &bot);
    let r2 = bot.event(&first, Some(1), Signing::Valid);
    r2.expect_prompt_ok("the retried event", &bot);
    assert_eq!(
        r2.header("x-slack-no-retry").as_deref(),
        Some("1"),
        "a retry of a handled event is acknowledged with X-Slack-No-Retry: 1: {r2:?}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let reactions = about(&slack, "1763720100.000100");
    assert!(
        reactions <= 1,
        "a retried event is handled once, got {reactions} reactions\n{}",
        slack.describe()
    );
    // A new event id is a new event: if the bot reacts to mentions at all,
    // the first one must have got exactly one reaction.
    let other = mention("Ev0RETRY0002", "1763720101.000100");
    bot.event(&other, None, Signing::Valid)
        .expect_prompt_ok("another event", &bot);
    std::thread::sleep(Duration::from_millis(1500));
    if about(&slack, "1763720101.000100") > reactions {
        assert_eq!(reactions, 1, "{}", slack.describe());
    }
    assert_eq!(llm.count(), 0);
}

// ---------------------------------------------------------------------------
// Slash command verbs, health, start-up, payload robustness
// ---------------------------------------------------------------------------

#[test]
fn slash_help_list_status_cancel_and_unknown_workflows() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(
        &sandbox,
        &slack,
        &llm,
        &[("deploy", DEPLOY), ("release", RELEASE)],
    );

    let help = bot.command(REQUESTER, OPS, "help");
    help.expect_prompt_ok("/strands help", &bot);
    for verb in ["run", "list", "status", "cancel"] {
        assert!(
            help.text().contains(verb),
            "help mentions {verb}: {:?}",
            help.body
        );
    }

    // An unknown workflow: a private error naming the ones there are.
    let calls = slack.len();
    let unknown = bot.command(REQUESTER, OPS, "run nope");
    unknown.expect_prompt_ok("/strands run nope", &bot);
    let text = unknown.text();
    assert!(!text.contains("started"), "{text:?}");
    assert!(
        text.contains("deploy") && text.contains("release"),
        "the error lists the workflows: {text:?}"
    );
    assert_ne!(unknown.json()["response_type"], "in_channel");
    std::thread::sleep(QUIET);
    assert!(
        slack
            .since(calls)
            .iter()
            .all(|c| c.method != "chat.postMessage"),
        "nothing is posted for an unknown workflow\n{}",
        slack.describe()
    );
    assert_eq!(llm.count(), 0);

    let (id, msg) = deploy_paused(&bot, &slack);
    let list = bot.command(REQUESTER, OPS, "list");
    list.expect_prompt_ok("/strands list", &bot);
    assert!(list.text().contains("deploy"), "{:?}", list.body);

    let status = bot.command(REQUESTER, OPS, &format!("status {id}"));
    status.expect_prompt_ok("/strands status", &bot);
    assert!(
        status.text().contains("paused") && status.text().contains("review"),
        "status says where the session waits: {:?}",
        status.body
    );

    let cancel = bot.command(REQUESTER, OPS, &format!("cancel {id}"));
    cancel.expect_prompt_ok("/strands cancel", &bot);
    std::thread::sleep(QUIET);
    let click = bot.click(&msg, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("a click after cancel", &bot);
    assert_llm_stays_at(&llm, 1, "a cancelled session does not resume");
    assert!(slack
        .updates_of(&msg)
        .iter()
        .all(|u| !u.text().contains("Approved by")));

    bot.stop();
    let session = only_session(&sandbox);
    assert_ne!(session["status"], "paused", "{session:#}");
    assert_ne!(session["status"], "completed", "{session:#}");
}

#[test]
fn healthz_and_metrics_answer() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let health = bot.get("/healthz");
    assert_eq!(health.status, 200, "{health:?}");
    let metrics = bot.get("/metrics");
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert!(
        metrics.body.contains("# TYPE"),
        "Prometheus text: {:?}",
        metrics.body
    );
    let ct = metrics.header("content-type").unwrap_or_default();
    assert!(
        ct.starts_with("text/plain") || ct.starts_with("application/openmetrics-text"),
        "{ct:?}"
    );
}

#[test]
fn serve_refuses_to_start_without_its_secrets_and_never_prints_them() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let dir = crate::common::fake_slack::write_workflows(&sandbox, &llm, &[("deploy", DEPLOY)]);
    let base = BotConfig::new(&sandbox, &slack, &dir);

    let token = "xoxb-leak-canary-1234567890";
    let run = crate::common::fake_slack::run_to_exit(
        &base
            .clone()
            .with("SLACK_SIGNING_SECRET", None)
            .with("SLACK_BOT_TOKEN", Some(token)),
        Duration::from_secs(15),
    );
    assert!(
        run.code.is_some_and(|c| c != 0),
        "exits non-zero by itself: {run:?}"
    );
    assert!(run.output.contains("SLACK_SIGNING_SECRET"), "{run:?}");
    assert!(!run.output.contains(token), "the token leaked: {run:?}");

    let secret = "signing-leak-canary-0987654321";
    let run = crate::common::fake_slack::run_to_exit(
        &base
            .with("SLACK_BOT_TOKEN", None)
            .with("SLACK_SIGNING_SECRET", Some(secret)),
        Duration::from_secs(15),
    );
    assert!(
        run.code.is_some_and(|c| c != 0),
        "exits non-zero by itself: {run:?}"
    );
    assert!(run.output.contains("SLACK_BOT_TOKEN"), "{run:?}");
    assert!(!run.output.contains(secret), "the secret leaked: {run:?}");
    assert!(slack.is_empty(), "{}", slack.describe());
}

#[test]
fn unknown_fields_in_slack_payloads_are_ignored() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);
    let (_id, msg) = deploy_paused(&bot, &slack);

    let extras = |p: &mut Value| {
        p["future_top_level"] = json!({"nested": [1, "two", {"three": null}]});
        p["user"]["future_field"] = json!(true);
        p["team"]["enterprise_name"] = json!("Acme Corp");
        p["is_ext_shared_channel"] = json!(false);
    };
    let click = bot.click_with(&msg, "strands_modify", APPROVER, Signing::Valid, |p| {
        extras(p);
        p["container"]["thread_ts"] = json!("1763720000.000001");
        p["actions"][0]["future_action_field"] = json!({"x": 1});
        p["message"]["metadata"] = json!({"event_type": "x", "event_payload": {}});
        p["message"]["reactions"] = json!([{"name": "eyes", "users": ["U1"], "count": 1}]);
    });
    click
        .reply
        .expect_prompt_ok("a click with extra fields", &bot);
    let opened = slack.wait_for_modal(&click);
    assert!(opened.ok(), "{}", slack.describe());
    let submitted = bot.submit_modal_with(&opened, APPROVER, "use the blue pool", |p| {
        extras(p);
        p["view"]["future_view_field"] = json!([1, 2, 3]);
        p["response_urls"] = json!([]);
    });
    submitted.expect_prompt_ok("a submission with extra fields", &bot);
    wait_llm(&llm, &slack, 2);
    assert!(
        llm.request(2).user().contains("use the blue pool"),
        "{:#?}",
        llm.request(2)
    );
    let second = approval(&slack, "review#2");
    let click = bot.click_with(&second, "strands_approve", APPROVER, Signing::Valid, extras);
    click
        .reply
        .expect_prompt_ok("an approve with extra fields", &bot);
    let update = slack.wait_for_update(&second, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04APPROVER>");
    wait_llm(&llm, &slack, 3);
}
