//! The Teams room on two real `strands serve` replicas sharing one
//! PostgreSQL database (a real server, `strands::store::postgres::testdb`)
//! and one fake Bot Framework: a run started from a channel through one
//! replica gets one card; twenty approvers' `Action.Execute` invokes, split
//! between the replicas and sent at once, decide the gate once — one
//! answer recorded, the step after the gate run once, every decided card
//! naming the same person — and the audit chain both replicas wrote
//! verifies. Skipped with a notice when no PostgreSQL server can be
//! started, failed under `STRANDS_REQUIRE_POSTGRES=1`.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::teams_room::post_activity;
use crate::common::fake_teams::FakeTeams;
use crate::common::service::{write_workflows, HttpReply, ServeConfig, Service};
use crate::common::slack_story::{answered, DEPLOY};
use crate::common::teams_driver::{card_action, command, token};
use crate::common::{FakeLlm, Sandbox};

const WAIT: Duration = Duration::from_secs(30);
const CLICKS: usize = 20;

fn approver(i: usize) -> String {
    format!("aad-click-{i:02}")
}

/// The deploy workflow, its gate answered by any of the twenty.
fn deploy() -> String {
    let list: Vec<String> = (0..CLICKS)
        .map(|i| format!("\"teams:{}\"", approver(i)))
        .collect();
    DEPLOY.replace(
        "\nagents:",
        &format!("\nsecurity:\n  approvers: [{}]\nagents:", list.join(", ")),
    )
}

fn database(name: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(strands::store::postgres::testdb::database(name))
}

fn signed(svc: &Service, fake: &FakeTeams, activity: &Value) -> HttpReply {
    post_activity(
        svc,
        &token(&fake.service_url(), "signing.key.pem"),
        activity,
    )
}

fn wait_status(sandbox: &Sandbox, id: &str, status: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let show = sandbox.show(id);
        if show["status"] == status {
            return show;
        }
        assert!(Instant::now() < until, "{id} is not {status}: {show:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The id of the run the reply to message `to` announced.
fn started(fake: &FakeTeams, to: &str) -> String {
    let until = Instant::now() + WAIT;
    loop {
        if let Some(h) = fake
            .hits()
            .into_iter()
            .find(|h| h.method == "POST" && h.path.ends_with(&format!("/activities/{to}")))
        {
            let text = h.body["text"].as_str().unwrap_or_default().to_string();
            return text
                .split('`')
                .nth(1)
                .unwrap_or_else(|| panic!("a run id in {text}"))
                .to_string();
        }
        assert!(Instant::now() < until, "no reply to {to}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn teams_invokes_split_across_two_replicas_decide_once() {
    let Some(url) = database("teams_replicas") else {
        return;
    };
    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let mut sandbox = Sandbox::new();
    sandbox.store = PathBuf::from(&url);
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy())]);
    let mut cfg = ServeConfig::api(&sandbox, &dir).with("STRANDS_LEASE_SECS", Some("30"));
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let mut a = Service::launch(cfg.clone());
    let mut b = Service::launch(cfg);

    // Started through replica A, from the channel.
    let run = command(
        &fake.service_url(),
        "m:run",
        "aad-requester",
        "run deploy service=api",
    );
    let r = signed(&a, &fake, &run);
    assert_eq!(r.status, 200, "{} {}", r.body, a.log());
    let id = started(&fake, "m:run");
    wait_status(&sandbox, &id, "paused");
    let until = Instant::now() + WAIT;
    let cards = || {
        fake.hits()
            .into_iter()
            .filter(|h| h.method == "POST" && h.body.get("attachments").is_some())
            .count()
    };
    while cards() == 0 {
        assert!(Instant::now() < until, "no card: {}", a.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let llm_before = llm.count();

    // Twenty approvers click at once, half through each replica.
    let barrier = Arc::new(Barrier::new(CLICKS));
    let replies: Vec<HttpReply> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLICKS)
            .map(|i| {
                let svc = if i % 2 == 0 { &a } else { &b };
                let (fake, barrier, id) = (&fake, barrier.clone(), &id);
                s.spawn(move || {
                    let click = card_action(
                        &fake.service_url(),
                        &format!("i:{i}"),
                        &approver(i),
                        "approve",
                        id,
                        "review#1",
                    );
                    barrier.wait();
                    signed(svc, fake, &click)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a click thread"))
            .collect()
    });
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r.status, 200, "click {i}: {} {}", r.status, r.body);
        assert_eq!(r.json()["statusCode"], 200, "click {i}: {}", r.body);
    }

    let show = wait_status(&sandbox, &id, "completed");
    let answers = answered(&show);
    assert_eq!(answers.len(), 1, "answered exactly once: {show:#}");
    let winner = answers[0].to_string();
    let who = (0..CLICKS)
        .map(approver)
        .find(|p| winner.contains(p.as_str()))
        .unwrap_or_else(|| panic!("one of the approvers decided: {winner}"));

    // Every decided card, in an invoke response or a PUT, names the one.
    let decided: Vec<String> = replies
        .iter()
        .map(|r| r.json())
        .filter(|v| v["type"] == "application/vnd.microsoft.card.adaptive")
        .map(|v| v["value"].to_string())
        .chain(
            fake.hits()
                .into_iter()
                .filter(|h| h.method == "PUT")
                .map(|h| h.body.to_string()),
        )
        .filter(|c| c.contains("Approved by"))
        .collect();
    assert!(!decided.is_empty(), "a decided card was shown");
    for c in &decided {
        assert!(c.contains(&who), "decided by {who}, yet: {c}");
    }

    // The step after the gate ran once, on one replica.
    let until = Instant::now() + WAIT;
    while llm.count() < llm_before + 1 {
        assert!(Instant::now() < until, "the deployer never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(llm.count(), llm_before + 1, "the deployer ran once");
    assert_eq!(cards(), 1, "one card for one gate");

    a.stop();
    b.stop();
    let out = sandbox.strands(&["audit", "verify"]);
    assert_eq!(out.code, 0, "audit verify: {} {}", out.stdout, out.stderr);
}
