//! Approval rules in the rooms of `strands serve`: in Slack (fake Slack)
//! the rule chosen by the run's variables decides who may click and how
//! many approvals the card counts; the web inbox's audit download carries
//! the rule; the rule's text is on the Slack card and in the web inbox.

use super::api::World;
use super::web::Visitor;
use crate::common::fake_slack::{Bot, FakeSlack};
use crate::common::slack_story::{assert_llm_stays_at, deploy_paused, wait_llm, APPROVER, DEPLOY};
use crate::common::{FakeLlm, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};

/// The deploy story with rules: billing deploys (the story's run) need
/// two approvals.
fn ruled_deploy() -> String {
    DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        concat!(
            "        prompt: Approve the deploy of {{ service }}?\n",
            "        approvers:\n",
            "          - when: \"{{ details.service == 'billing' }}\"\n",
            "            label: billing deploys\n",
            "            approvers: [U04APPROVER, U05SECOND]\n",
            "            quorum: 2\n",
            "          - approvers: [U09ONCALL]\n",
        ),
    )
}

#[test]
fn in_slack_the_rule_decides_who_may_click_and_how_many_approvals_count() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &ruled_deploy())]);
    let (id, msg) = deploy_paused(&bot, &slack);
    assert!(
        msg.text().contains("0 of 2 approvals"),
        "{:#}",
        msg.call.body
    );
    // The default rule's on-call is no approver of a billing deploy.
    let oncall = bot.click(&msg, "strands_approve", "U09ONCALL");
    oncall.reply.expect_prompt_ok("the on-call's click", &bot);
    let note = slack.wait_for_ephemeral(&oncall);
    assert!(note.text.contains("not an approver"), "{}", note.text);
    assert_llm_stays_at(&llm, 1, "a refused click resumes nothing");

    bot.click(&msg, "strands_approve", APPROVER)
        .reply
        .expect_prompt_ok("first approval", &bot);
    slack.wait_for_update(&msg, |c| c.text().contains("1 of 2 approvals"));
    bot.click(&msg, "strands_approve", "U05SECOND")
        .reply
        .expect_prompt_ok("second approval", &bot);
    wait_llm(&llm, &slack, 2);
    bot.stop();

    let show = sandbox.show(&id);
    assert_eq!(show["status"], "completed", "{show:#}");
    let out = sandbox.strands(&["audit", "export"]);
    assert!(
        out.stdout
            .contains("rule 1: needs 2 of U04APPROVER, U05SECOND because billing deploys"),
        "{}",
        out.stdout
    );
}

/// A service whose `payments` policy asks alice and mallory for large amounts.
fn world_with_policy() -> (tempfile::TempDir, World) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("service.yaml");
    std::fs::write(
        &file,
        concat!(
            "policies:\n",
            "  payments:\n",
            "    - when: \"{{ details.amount > 10000 }}\"\n",
            "      label: a large payment\n",
            "      approvers: [alice, mallory]\n",
            "      quorum: 2\n",
            "    - approvers: [alice]\n",
        ),
    )
    .expect("write");
    let path = file.display().to_string();
    let w = World::start_with(|cfg| cfg.with("STRANDS_SERVICE_FILE", Some(path.as_str())));
    (dir, w)
}

/// Asks for a payment of 25000 under the policy; the request's id, once paused.
fn ask_large(w: &World) -> String {
    let r = crate::common::api::call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.ci),
        Some(&json!({"title": "Pay ACME?", "policy": "payments", "details": {"amount": "25000"}})),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    let until = Instant::now() + Duration::from_secs(20);
    while w.session(&id)["status"] != "paused" {
        assert!(Instant::now() < until, "never paused");
        std::thread::sleep(Duration::from_millis(50));
    }
    id
}

#[test]
fn the_web_audit_download_carries_the_rule() {
    let (_dir, w) = world_with_policy();
    let id = ask_large(&w);
    let root = Visitor::sign_in(&w.svc, &w.root);
    let csv = root.get(&format!("/audit/export?format=csv&session={id}"));
    assert_eq!(csv.status, 200, "{}", csv.body);
    assert!(
        csv.body
            .lines()
            .next()
            .unwrap_or_default()
            .contains(",detail,rule,prev,"),
        "{}",
        csv.body
    );
    assert!(
        csv.body
            .contains("rule 1: needs 2 of alice, mallory because a large payment"),
        "{}",
        csv.body
    );
}

/// The rule's text on the Slack card and the web inbox page.
#[test]
fn the_slack_card_and_the_web_inbox_show_the_rule() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &ruled_deploy())]);
    let (_id, msg) = deploy_paused(&bot, &slack);
    assert!(
        msg.text().contains("because billing deploys"),
        "{:#}",
        msg.call.body
    );
    bot.stop();

    let (_dir, w) = world_with_policy();
    let id = ask_large(&w);
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let inbox = alice.get("/");
    assert!(
        inbox.body.contains("because a large payment"),
        "{}",
        inbox.body
    );
    let page = alice.get(&format!("/sessions/{id}"));
    assert!(
        page.body.contains("because a large payment"),
        "{}",
        page.body
    );
}
