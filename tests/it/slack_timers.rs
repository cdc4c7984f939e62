//! Gate timers in `strands serve`, end to end: the real binary between the
//! fake Slack Web API and the fake model server. Timeouts fire while the bot
//! runs and across a restart, exactly once; escalations re-post the request
//! to the target, whose click decides; reminders come in the thread.
//!
//! Timers here are a few seconds long; waits are generous (`WAIT`) so a slow
//! machine makes a test slower, not flaky. Assertions about time only say
//! "not before it was due".

use crate::common::fake_slack::{
    ApprovalMessage, Bot, BotConfig, FakeSlack, HttpReply, SlackCall, WAIT,
};
use crate::common::{history, FakeLlm, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const REQUESTER: &str = "U01REQUESTER";
const APPROVER: &str = "U04APPROVER";
const BOSS: &str = "U0BOSS001";
const OPS: &str = "C0OPS";

/// planner → GATE → deployer, with `GATE` replaced by the test's gate.
const FLOW: &str = r#"
version: 0
name: NAME
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
GATE
      - agent: deployer
        input: "Deploy it."
"#;

fn flow(name: &str, gate: &str) -> String {
    FLOW.replace("NAME", name).replace("GATE", gate.trim_end())
}

/// Starts the bot on `workflows` with extra environment.
fn bot_with(
    sandbox: &Sandbox,
    slack: &FakeSlack,
    llm: &FakeLlm,
    workflows: &[(&str, String)],
    env: &[(&str, &str)],
) -> Bot {
    let refs: Vec<(&str, &str)> = workflows.iter().map(|(n, y)| (*n, y.as_str())).collect();
    let dir = crate::common::fake_slack::write_workflows(sandbox, llm, &refs);
    let mut cfg = BotConfig::new(sandbox, slack, &dir);
    for (k, v) in env {
        cfg = cfg.with(k, Some(v));
    }
    Bot::launch(slack, cfg)
}

/// The session id in a "started NAME as SESSION" acknowledgement.
#[track_caller]
fn started(ack: &HttpReply, name: &str) -> String {
    let text = ack.text();
    let marker = format!("started {name} as ");
    let at = text
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {:?}", ack.body));
    text[at + marker.len()..]
        .trim_start_matches(['`', '*', '_'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// `/strands run NAME`, and the approval message of its `review#1`.
fn run_to_gate(bot: &Bot, slack: &FakeSlack, name: &str) -> (String, ApprovalMessage) {
    let ack = bot.command(REQUESTER, OPS, &format!("run {name}"));
    ack.expect_prompt_ok("/strands run", bot);
    let id = started(&ack, name);
    let msg = slack.wait_for_approval_where_session(&id);
    (id, msg)
}

trait Approvals {
    fn wait_for_approval_where_session(&self, id: &str) -> ApprovalMessage;
    fn approvals_in(&self, channel: &str) -> Vec<ApprovalMessage>;
    fn wait_for_approval_in(&self, channel: &str) -> ApprovalMessage;
    fn timed_out_updates(&self, msg: &ApprovalMessage) -> Vec<SlackCall>;
}

impl Approvals for FakeSlack {
    /// The first approval message naming session `id`.
    #[track_caller]
    fn wait_for_approval_where_session(&self, id: &str) -> ApprovalMessage {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(m) = self.approvals().into_iter().find(|m| m.text().contains(id)) {
                return m;
            }
            assert!(
                Instant::now() < until,
                "no approval message for {id}\n{}",
                self.describe()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn approvals_in(&self, channel: &str) -> Vec<ApprovalMessage> {
        self.approvals()
            .into_iter()
            .filter(|m| m.channel == channel)
            .collect()
    }

    #[track_caller]
    fn wait_for_approval_in(&self, channel: &str) -> ApprovalMessage {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(m) = self.approvals_in(channel).into_iter().next() {
                return m;
            }
            assert!(
                Instant::now() < until,
                "no approval message in {channel} within {WAIT:?}\n{}",
                self.describe()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn timed_out_updates(&self, msg: &ApprovalMessage) -> Vec<SlackCall> {
        self.updates_of(msg)
            .into_iter()
            .filter(|c| c.text().contains("Timed out"))
            .collect()
    }
}

/// Asserts `update` closed the approval (no buttons) and says `words`.
#[track_caller]
fn assert_closed(update: &SlackCall, words: &str) {
    assert!(update.ok(), "chat.update failed: {update:#?}");
    assert!(
        update.text().contains(words),
        "the updated message should say {words:?}: {:#}",
        update.body
    );
    assert!(
        !update.has_buttons(),
        "a decided approval has no buttons left: {:#}",
        update.body
    );
}

/// Waits until the model got `n` requests.
#[track_caller]
fn wait_llm(llm: &FakeLlm, slack: &FakeSlack, n: usize) {
    let until = Instant::now() + WAIT;
    while llm.count() < n {
        assert!(
            Instant::now() < until,
            "the model got {} requests, wanted {n}\n{}",
            llm.count(),
            slack.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn answered(show: &Value) -> Vec<Value> {
    history(show)
        .into_iter()
        .filter(|g| g["event"] == "answered")
        .collect()
}

/// Exactly one answer, given by the timeout.
#[track_caller]
fn assert_one_timeout_answer(show: &Value, action: &str) {
    let gates = answered(show);
    assert_eq!(gates.len(), 1, "one answer, no more: {show:#}");
    assert_eq!(gates[0]["by"], "timeout", "{show:#}");
    assert_eq!(gates[0]["via"], "timeout", "{show:#}");
    assert_eq!(gates[0]["decision"]["action"], action, "{show:#}");
}

const REJECT_IN_2S: &str = r#"
      - type: hitl
        id: review
        prompt: Ship it?
        timeout_seconds: 2
        fallback_action: reject
"#;

#[test]
fn a_timeout_fires_while_the_bot_runs_and_rejects_once() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[("expiry", flow("expiry", REJECT_IN_2S))],
        &[],
    );
    let (id, msg) = run_to_gate(&bot, &slack, "expiry");
    assert!(msg.text().contains("Times out"), "{:#}", msg.call.body);

    // Nobody answers: the bot applies the fallback when the time comes.
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Timed out"));
    assert_closed(&update, "Timed out → rejected by fallback");
    assert!(
        update.at.duration_since(msg.call.at) >= Duration::from_millis(1500),
        "not before it was due"
    );
    slack.wait_for_thread_reply(&msg, |c| c.text().contains("rejected"));

    // A late click is told the timeout decided; nothing runs.
    let late = bot.click(&msg, "strands_approve", APPROVER);
    late.reply.expect_prompt_ok("a late click", &bot);
    let note = slack.wait_for_ephemeral(&late);
    assert!(
        note.text.contains("already rejected by timeout"),
        "{}",
        note.text
    );
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(llm.count(), 1, "the deployer never runs");
    assert_eq!(
        slack.timed_out_updates(&msg).len(),
        1,
        "{}",
        slack.describe()
    );

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_one_timeout_answer(&show, "reject");
}

#[test]
fn a_timeout_due_while_the_bot_was_down_fires_once_at_start_up() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let gate = REJECT_IN_2S.replace("timeout_seconds: 2", "timeout_seconds: 4");
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[("expiry", flow("expiry", &gate))],
        &[],
    );
    let (id, msg) = run_to_gate(&bot, &slack, "expiry");
    // Slack shows the message before the bot has recorded its ts; a kill in
    // that instant leaves a message the bot cannot know (posting is not
    // atomic with the store). Give the bot a moment to record it.
    std::thread::sleep(Duration::from_millis(800));
    bot.kill();
    assert!(
        slack.timed_out_updates(&msg).is_empty(),
        "killed before the timeout (a very slow start makes this test meaningless)\n{}",
        slack.describe()
    );

    // Wait until it is due, with the bot down: nothing happens.
    let due = msg.call.at + Duration::from_secs(4);
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now + Duration::from_millis(300));
    }
    assert!(slack.timed_out_updates(&msg).is_empty());

    // The restarted bot fires it at once.
    bot.restart();
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Timed out"));
    assert_closed(&update, "Timed out → rejected by fallback");

    // And never again: another restart finds nothing to do.
    bot.stop();
    bot.restart();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        slack.timed_out_updates(&msg).len(),
        1,
        "fired exactly once\n{}",
        slack.describe()
    );
    assert_eq!(llm.count(), 1);
    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_one_timeout_answer(&show, "reject");
}

#[test]
fn escalation_reposts_to_the_target_who_then_decides() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let gate = r#"
      - type: manual_gate
        id: review
        prompt: Approve the deploy?
        escalation_timeout: 0.03
        escalation_target: [U0BOSS001]
"#;
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[("deploy", flow("deploy", gate))],
        &[],
    );
    let (id, msg) = run_to_gate(&bot, &slack, "deploy");

    // After 1.8 s without an answer, the request goes to the boss directly.
    let copy = slack.wait_for_approval_in(BOSS);
    assert_eq!(copy.handle(), msg.handle(), "the same gate");
    assert!(
        copy.call.at.duration_since(msg.call.at) >= Duration::from_millis(1500),
        "not before it was due"
    );
    assert!(copy.text().contains("<@U0BOSS001>"), "{:#}", copy.call.body);
    assert!(copy.text().contains("Escalated"), "{:#}", copy.call.body);
    assert!(copy.text().contains(&id), "{:#}", copy.call.body);
    slack.wait_for_thread_reply(&msg, |c| c.text().contains("Escalated to <@U0BOSS001>"));

    // The boss approves on the copy: the run resumes, both messages close.
    let click = bot.click(&copy, "strands_approve", BOSS);
    click.reply.expect_prompt_ok("the boss's click", &bot);
    let update = slack.wait_for_update(&copy, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U0BOSS001>");
    let original = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&original, "Approved by <@U0BOSS001>");
    wait_llm(&llm, &slack, 2);
    assert!(llm.request(2).system().contains("DEPLOYER"));
    assert_eq!(slack.approvals_in(BOSS).len(), 1, "escalated once");

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let gates = answered(&show);
    assert_eq!(gates.len(), 1, "{show:#}");
    assert!(
        gates[0]["by"].as_str().is_some_and(|b| b.contains(BOSS)),
        "{show:#}"
    );
}

#[test]
fn an_escalate_fallback_gives_the_target_one_more_period_then_rejects() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let gate = r##"
      - type: hitl
        id: review
        prompt: Ship it?
        timeout_seconds: 2
        fallback_action: escalate
        escalation_target: ["#bosses"]
"##;
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[("expiry", flow("expiry", gate))],
        &[],
    );
    let (id, msg) = run_to_gate(&bot, &slack, "expiry");

    let copy = slack.wait_for_approval_in("bosses");
    assert!(copy.text().contains("Escalated"), "{:#}", copy.call.body);
    assert!(
        slack.timed_out_updates(&msg).is_empty(),
        "escalating is not deciding\n{}",
        slack.describe()
    );

    // Nobody answers the target either: rejected, shown on both messages.
    let on_copy = slack.wait_for_update(&copy, |c| c.text().contains("Timed out"));
    assert_closed(&on_copy, "rejected by fallback");
    assert!(
        on_copy.at.duration_since(copy.call.at) >= Duration::from_millis(1500),
        "one more timeout period for the target"
    );
    let on_original = slack.wait_for_update(&msg, |c| c.text().contains("Timed out"));
    assert_closed(&on_original, "rejected by fallback");
    assert_eq!(llm.count(), 1);

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_one_timeout_answer(&show, "reject");
}

#[test]
fn reminders_come_in_the_thread_up_to_max_reminders_and_mention_who_must_answer() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let nag = r#"
      - type: manual_gate
        id: review
        prompt: Approve the deploy?
        reminder_interval: 0.015
        max_reminders: 2
"#;
    let with_approvers = format!(
        "{}        approvers: [{APPROVER}]\n",
        nag.trim_start_matches('\n')
    );
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[
            ("nag", flow("nag", nag)),
            ("nagapprovers", flow("nagapprovers", &with_approvers)),
        ],
        &[],
    );
    let (_, msg) = run_to_gate(&bot, &slack, "nag");
    let (_, msg2) = run_to_gate(&bot, &slack, "nagapprovers");
    let reminders = |m: &ApprovalMessage| -> Vec<SlackCall> {
        slack
            .thread_replies(m)
            .into_iter()
            .filter(|c| c.text().contains("Reminder"))
            .collect()
    };
    assert!(
        slack.wait_until(WAIT, |_| reminders(&msg).len() >= 2
            && reminders(&msg2).len() >= 2),
        "two reminders each\n{}",
        slack.describe()
    );
    // Well past a third interval: still two.
    std::thread::sleep(Duration::from_millis(2500));
    let first = reminders(&msg);
    assert_eq!(first.len(), 2, "{}", slack.describe());
    assert!(
        first[0].text().contains("Reminder 1 of 2"),
        "{:#}",
        first[0].body
    );
    assert!(
        first[1].text().contains("Reminder 2 of 2"),
        "{:#}",
        first[1].body
    );
    assert!(
        first
            .iter()
            .all(|c| c.text().contains(&format!("<@{REQUESTER}>"))),
        "without approvers, the starter is reminded: {:#}",
        first[0].body
    );
    assert!(
        first[1].at.duration_since(first[0].at) >= Duration::from_millis(600),
        "an interval apart"
    );
    let second = reminders(&msg2);
    assert_eq!(second.len(), 2, "{}", slack.describe());
    assert!(
        second
            .iter()
            .all(|c| c.text().contains(&format!("<@{APPROVER}>"))),
        "the approvers are reminded: {:#}",
        second[0].body
    );
    // Reminders do not decide.
    assert!(slack.updates_of(&msg).is_empty(), "{}", slack.describe());
    bot.stop();
}

#[test]
fn the_bot_wide_default_timeout_applies_to_gates_without_one() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let gate = r#"
      - type: manual_gate
        id: review
        prompt: Approve the deploy?
"#;
    let mut bot = bot_with(
        &sandbox,
        &slack,
        &llm,
        &[("deploy", flow("deploy", gate))],
        &[("STRANDS_DEFAULT_TIMEOUT_MINUTES", "0.03")],
    );
    let (id, msg) = run_to_gate(&bot, &slack, "deploy");
    assert!(
        msg.text().contains("Times out"),
        "the message shows the default deadline: {:#}",
        msg.call.body
    );
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Timed out"));
    assert_closed(&update, "Timed out → rejected by fallback");
    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_one_timeout_answer(&show, "reject");
}
