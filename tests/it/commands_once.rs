//! Nothing started twice: a `/strands run` slash command delivered again
//! (a request-URL retry, a Socket Mode redelivery) and a Teams `run`
//! message delivered again start one run — whether the copy reaches the
//! same `strands serve`, the same store after a restart, or another
//! replica on the same PostgreSQL database. The store remembers each
//! command's `trigger_id` (Teams: its activity id in its conversation) as
//! it remembers event ids. Each scenario counts the sessions and the model
//! calls. The replica scenario is skipped with a notice when no PostgreSQL
//! server can be started (failed under `STRANDS_REQUIRE_POSTGRES=1`).

use std::path::PathBuf;

use crate::common::fake_slack::{
    slash_command_body, started, write_workflows, Bot, BotConfig, FakeSlack, HttpReply, Signing,
    APP_TOKEN,
};
use crate::common::fake_teams::FakeTeams;
use crate::common::service::{ServeConfig, Service};
use crate::common::slack_story::{approval, assert_llm_stays_at, wait_llm, DEPLOY, OPS, REQUESTER};
use crate::common::teams_driver::{command, token};
use crate::common::{FakeLlm, Sandbox};

/// `/strands TEXT` as Slack posts it to the request URL: one body, to be
/// sent as often as Slack would.
fn command_body(slack: &FakeSlack, text: &str) -> String {
    slash_command_body(REQUESTER, OPS, text, &slack.response_url())
}

fn post_command(bot: &Bot, body: &str) -> HttpReply {
    bot.post(
        "/slack/commands",
        "application/x-www-form-urlencoded",
        body.as_bytes(),
        Signing::Valid,
        &[],
    )
}

/// How many sessions the store holds (the service stopped: sled is one
/// process's at a time).
fn sessions(sandbox: &Sandbox) -> u64 {
    sandbox.list()["count"].as_u64().unwrap_or(u64::MAX)
}

#[test]
fn a_slash_command_sent_twice_starts_one_run_also_after_a_restart() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", DEPLOY)]);

    let body = command_body(&slack, "run deploy service=billing");
    let first = post_command(&bot, &body);
    first.expect_prompt_ok("a command", &bot);
    let id = started(&first, "deploy");
    approval(&slack, "review#1");
    wait_llm(&llm, &slack, 1);

    // Slack sends it again (its answer was lost): acknowledged, nothing shown.
    let again = post_command(&bot, &body);
    again.expect_prompt_ok("the same command again", &bot);
    assert!(
        !again.body.contains("started"),
        "the copy says nothing: {:?}",
        again.body
    );
    assert_llm_stays_at(&llm, 1, "one run, not two");
    assert_eq!(slack.approvals().len(), 1, "{}", slack.describe());

    // After a restart the store still knows it.
    bot.stop();
    bot.restart();
    let after = post_command(&bot, &body);
    after.expect_prompt_ok("the same command after a restart", &bot);
    assert!(!after.body.contains("started"), "{:?}", after.body);
    assert_llm_stays_at(&llm, 1, "still one run");

    // A new command (a new trigger_id) is a new run.
    let other = post_command(&bot, &command_body(&slack, "run deploy service=web"));
    let second = started(&other, "deploy");
    assert_ne!(second, id);
    wait_llm(&llm, &slack, 2);
    bot.stop();
    assert_eq!(sessions(&sandbox), 2, "{}", bot.log());
}

#[test]
fn a_teams_command_delivered_twice_starts_one_run_also_after_a_restart() {
    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("deploy", DEPLOY)]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let mut svc = Service::launch(cfg);
    let run = command(
        &fake.service_url(),
        "m:run",
        "aad-requester",
        "run deploy service=api",
    );
    let send = |svc: &Service| {
        let r = crate::teams_room::post_activity(
            svc,
            &token(&fake.service_url(), "signing.key.pem"),
            &run,
        );
        assert_eq!(r.status, 200, "{} {}", r.body, svc.log());
    };
    let replies = || {
        fake.hits()
            .into_iter()
            .filter(|h| h.method == "POST" && h.path.ends_with("/activities/m:run"))
            .count()
    };
    send(&svc);
    llm.wait_for_requests(1, crate::common::fake_slack::WAIT);
    let until = std::time::Instant::now() + crate::common::fake_slack::WAIT;
    while replies() == 0 {
        assert!(std::time::Instant::now() < until, "no reply: {}", svc.log());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    send(&svc);
    svc.stop();
    svc.restart();
    send(&svc);
    assert_llm_stays_at(&llm, 1, "one run for one activity");
    assert_eq!(replies(), 1, "answered once: {:#?}", fake.hits());
    svc.stop();
    assert_eq!(sessions(&sandbox), 1, "{}", svc.log());
}

fn database(name: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(strands::store::postgres::testdb::database(name))
}

#[test]
fn the_same_command_to_two_replicas_starts_one_run() {
    let Some(url) = database("commands_once") else {
        return;
    };
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let mut sandbox = Sandbox::new();
    sandbox.store = PathBuf::from(&url);
    let dir = write_workflows(&sandbox, &llm, &[("deploy", DEPLOY)]);
    let cfg = BotConfig::new(&sandbox, &slack, &dir)
        .with("SLACK_APP_TOKEN", Some(APP_TOKEN))
        .with("STRANDS_LEASE_SECS", Some("30"));
    let a = Bot::launch(&slack, cfg.clone());
    let b = Bot::launch(&slack, cfg);
    let socket = slack.socket();
    socket.wait_connections(2);

    // Over the request URL: Slack's retry lands on the other replica.
    let body = command_body(&slack, "run deploy service=billing");
    let first = post_command(&a, &body);
    first.expect_prompt_ok("a command to replica A", &a);
    started(&first, "deploy");
    let copy = post_command(&b, &body);
    copy.expect_prompt_ok("the same command to replica B", &b);
    assert!(!copy.body.contains("started"), "{:?}", copy.body);
    approval(&slack, "review#1");
    wait_llm(&llm, &slack, 1);
    assert_llm_stays_at(&llm, 1, "one run over the request URL");

    // Over Socket Mode: one envelope given to each replica's connection.
    let envelope = socket.command(
        REQUESTER,
        OPS,
        "run deploy service=web",
        &slack.response_url(),
    );
    let id = socket.send_on(1, &envelope);
    socket.send_on(2, &envelope);
    socket.wait_ack_n(&id, 2);
    wait_llm(&llm, &slack, 2);
    assert_llm_stays_at(&llm, 2, "one run over Socket Mode");
    let out = sandbox.strands(&["sessions", "list", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["count"], 2, "{}\n{}", a.log(), b.log());
}
