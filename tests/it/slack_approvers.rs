//! A gate's own terms for its decision, as `strands serve` shows and
//! enforces them in Slack: where it is asked (`channel`, over
//! `STRANDS_APPROVAL_CHANNEL`), what a rejection needs (`require_reason`,
//! asked in a modal), who may decide (`approvers`; never the requester of
//! the run) and how many must (`approvals_required`, with the count shown
//! on the message and refusals audited).
//!
//! Real binary, fake Slack, fake model; the deploy story these gates are
//! added to is in `tests/common/slack_story.rs`.

use crate::common::fake_slack::{Bot, FakeSlack};
use crate::common::slack_story::{
    answered, assert_closed, assert_llm_stays_at, deploy_paused, wait_llm, APPROVER, DEPLOY,
    REQUESTER,
};
use crate::common::{FakeLlm, Sandbox};

#[test]
fn a_gate_can_name_its_channel_and_require_a_reason_asked_in_a_modal() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        channel: \"#C0SECURITY\"\n        require_reason: true\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    assert_eq!(
        msg.channel, "C0SECURITY",
        "the gate's channel wins over STRANDS_APPROVAL_CHANNEL"
    );

    // Reject needs a reason: the click opens a modal instead of deciding.
    let click = bot.click(&msg, "strands_reject", APPROVER);
    click.reply.expect_prompt_ok("the reject click", &bot);
    let opened = slack.wait_for_modal(&click);
    assert_eq!(opened.body["view"]["callback_id"], "strands_reject");
    assert!(
        slack.updates_of(&msg).is_empty(),
        "nothing is decided before the reason arrives"
    );
    bot.submit_modal(&opened, APPROVER, "change freeze this week")
        .expect_prompt_ok("the reason", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Rejected by"));
    assert_closed(&update, "change freeze this week");
    assert_llm_stays_at(&llm, 1, "the deployer never runs after a reject");

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_eq!(
        answered(&show)[0]["decision"]["reason"],
        "change freeze this week"
    );
}

#[test]
fn approvers_self_approval_and_a_two_of_three_quorum_in_slack() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        approvers: [U04APPROVER, U05SECOND, U06THIRD, U01REQUESTER]\n        approvals_required: 2\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    let (id, msg) = deploy_paused(&bot, &slack);
    assert!(
        msg.text().contains("0 of 2 approvals"),
        "{:#}",
        msg.call.body
    );

    // Someone who is not an approver: refused, told who may, nothing changes.
    let stranger = bot.click(&msg, "strands_approve", "U09STRANGER");
    stranger
        .reply
        .expect_prompt_ok("the stranger's click", &bot);
    let note = slack.wait_for_ephemeral(&stranger);
    assert!(note.text.contains("not an approver"), "{}", note.text);
    // The requester is an approver but cannot approve their own run.
    let own = bot.click(&msg, "strands_approve", REQUESTER);
    let note = slack.wait_for_ephemeral(&own);
    assert!(note.text.contains("you started this run"), "{}", note.text);
    assert_llm_stays_at(&llm, 1, "refused clicks resume nothing");

    // First approval: the message shows progress and keeps its buttons.
    bot.click(&msg, "strands_approve", APPROVER)
        .reply
        .expect_prompt_ok("first approval", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("1 of 2 approvals"));
    assert!(update.has_buttons(), "still waiting for a second approval");
    assert_llm_stays_at(&llm, 1, "one approval of two resumes nothing");
    // The same person again counts once.
    let twice = bot.click(&msg, "strands_approve", APPROVER);
    let note = slack.wait_for_ephemeral(&twice);
    assert!(note.text.contains("already approved"), "{}", note.text);

    // Second approval releases the gate.
    bot.click(&msg, "strands_approve", "U05SECOND")
        .reply
        .expect_prompt_ok("second approval", &bot);
    wait_llm(&llm, &slack, 2);
    slack.wait_for_update(&msg, |c| !c.has_buttons());

    bot.stop();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let out = sandbox.strands(&["audit", "export"]);
    let refused = out
        .stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"refusal\""))
        .count();
    assert!(
        refused >= 3,
        "the stranger, the requester and the double click are audited: {}",
        out.stdout
    );
}
