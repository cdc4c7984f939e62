//! `strands serve` with a parallel workflow: every branch gate that waits
//! gets its own approval message; the messages are answered independently,
//! in any order, and a click on one gate while another branch is still
//! running is recorded, not refused.

use crate::common::fake_slack::{ApprovalMessage, Bot, FakeSlack, WAIT};
use crate::common::{Behaviour, FakeLlm, Sandbox};
use std::time::{Duration, Instant};

/// Two branches: agent → manual gate → agent; then a reduce agent.
const FANOUT: &str = r#"
version: 0
name: fanout
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
  max_parallel: 2
agents:
  scraper:
    prompt: You are the SCRAPER.
  validator:
    prompt: You are the VALIDATOR.
  reader:
    prompt: You are the READER.
  summarizer:
    prompt: You are the SUMMARIZER.
  aggregator:
    prompt: You are the AGGREGATOR.
pattern:
  type: parallel
  config:
    branches:
      - id: web
        steps:
          - agent: scraper
            input: Scrape.
          - type: manual_gate
            id: web_review
            prompt: Approve the web data?
          - agent: validator
            input: "Validate {{ steps[0].response }}"
      - id: docs
        steps:
          - agent: reader
            input: Read.
          - type: manual_gate
            id: docs_review
            prompt: Approve the docs data?
          - agent: summarizer
            input: "Summarize {{ steps[0].response }}"
    reduce:
      agent: aggregator
      input: "{{ branches.web.response }} + {{ branches.docs.response }}"
"#;

const REQUESTER: &str = "U01REQUESTER";
const APPROVER: &str = "U04APPROVER";

fn wait_count(llm: &FakeLlm, n: usize) {
    let until = Instant::now() + WAIT;
    while llm.count() < n {
        assert!(
            Instant::now() < until,
            "the model got {} requests, wanted {n}",
            llm.count()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn message_for(slack: &FakeSlack, gate: &str) -> ApprovalMessage {
    let until = Instant::now() + WAIT;
    loop {
        if let Some(m) = slack
            .approvals()
            .into_iter()
            .find(|m| m.handle().starts_with(&format!("{gate}#")))
        {
            return m;
        }
        assert!(
            Instant::now() < until,
            "no approval message for {gate}\n{}",
            slack.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn each_open_branch_gate_gets_its_own_message_answered_in_either_order() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("fanout", FANOUT)]);
    let ack = bot.command(REQUESTER, "C0OPS", "run fanout");
    ack.expect_prompt_ok("/strands run fanout", &bot);

    let web = message_for(&slack, "web_review");
    let docs = message_for(&slack, "docs_review");
    assert_ne!(web.ts, docs.ts, "two messages");
    assert_eq!(llm.count(), 2, "both first steps ran before the pause");

    // The second gate's message first.
    let click = bot.click(&docs, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("approve docs", &bot);
    slack.wait_for_update(&docs, |c| c.text().contains("Approved by"));
    wait_count(&llm, 3);
    assert_eq!(llm.calls_of("SUMMARIZER").len(), 1);
    assert_eq!(llm.calls_of("AGGREGATOR").len(), 0, "reduce waits for web");
    // The web message is still open and was not posted twice.
    std::thread::sleep(Duration::from_millis(300));
    let web_posts = slack
        .approvals()
        .into_iter()
        .filter(|m| m.handle() == web.handle())
        .count();
    assert_eq!(web_posts, 1, "{}", slack.describe());

    let click = bot.click(&web, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("approve web", &bot);
    slack.wait_for_update(&web, |c| c.text().contains("Approved by"));
    wait_count(&llm, 5);
    bot.stop();
    for agent in ["SCRAPER", "VALIDATOR", "READER", "SUMMARIZER", "AGGREGATOR"] {
        assert_eq!(llm.calls_of(agent).len(), 1, "{agent} ran once");
    }
    let list = sandbox.list();
    assert_eq!(list["sessions"][0]["status"], "completed", "{list:#}");
}

#[test]
fn a_click_on_one_gate_while_another_branch_runs_is_recorded_and_applied() {
    // Request 3 (the branch step after the first approval) takes 1.5 s:
    // the second click lands while the run is busy with it.
    let llm = FakeLlm::start_with(Behaviour {
        delay: Some((3, Duration::from_millis(1500))),
        ..Behaviour::default()
    });
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("fanout", FANOUT)]);
    let ack = bot.command(REQUESTER, "C0OPS", "run fanout");
    ack.expect_prompt_ok("/strands run fanout", &bot);
    let web = message_for(&slack, "web_review");
    let docs = message_for(&slack, "docs_review");

    let click = bot.click(&web, "strands_approve", APPROVER);
    click.reply.expect_prompt_ok("approve web", &bot);
    wait_count(&llm, 3);
    // The validator is running now; the docs gate is still open.
    let click = bot.click(&docs, "strands_approve", APPROVER);
    click
        .reply
        .expect_prompt_ok("approve docs while busy", &bot);
    slack.wait_for_update(&docs, |c| c.text().contains("Approved by"));
    wait_count(&llm, 5);
    bot.stop();
    for agent in ["SCRAPER", "VALIDATOR", "READER", "SUMMARIZER", "AGGREGATOR"] {
        assert_eq!(llm.calls_of(agent).len(), 1, "{agent} ran once");
    }
    let list = sandbox.list();
    assert_eq!(list["sessions"][0]["status"], "completed", "{list:#}");
}
