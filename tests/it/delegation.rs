//! Delegation: `strands people delegate alice --to bob --from DAY --until
//! DAY`, then bob answers the gates that list alice — from the CLI and
//! through the API — and the audit export says "bob for alice"; outside
//! the window (and after `undelegate`) bob is refused; a cycle is refused
//! and nothing is stored; a delegate never approves a run they started;
//! in Slack, alice's direct copy goes to bob and the decided message says
//! "… for alice"; the web inbox lists alice's gate for bob; a person sets
//! their own from Slack, Teams and the web inbox.
//!
//! Real binary; fake model and fake Slack.

use chrono::{TimeDelta, Utc};
use serde_json::{json, Value};

use crate::common::api::{call, expect_error, make_token};
use crate::common::fake_slack::{dm_channel, Bot, FakeSlack, WAIT};
use crate::common::slack_story::{assert_closed, deploy_paused, wait_llm, DEPLOY, HUMAN, OPS};
use crate::common::{session_id, FakeLlm, Sandbox};

const SPEC: &str = r#"
version: 0
name: payout
runtime:
  provider: echo
agents:
  clerk:
    prompt: You prepare payouts.
pattern:
  type: chain
  config:
    steps:
      - agent: clerk
        input: Prepare the payout.
      - type: manual_gate
        id: release
        prompt: Release the payout?
        approvers: [alice]
$MORE
      - agent: clerk
        input: Pay.
"#;

/// A day `offset` days from today (UTC), as the commands take it.
fn day(offset: i64) -> String {
    (Utc::now() + TimeDelta::days(offset))
        .format("%Y-%m-%d")
        .to_string()
}

/// Starts the payout as `starter` (`more`: extra gate lines); its id.
fn started_by(sandbox: &Sandbox, starter: &str, more: &str) -> String {
    let path = sandbox.path().join("payout.yaml");
    std::fs::write(&path, SPEC.replace("$MORE\n", more)).expect("write spec");
    let out = sandbox.strands_as(
        starter,
        &[],
        &["run", path.to_str().expect("utf-8"), "--json"],
    );
    out.expect_code(19);
    session_id(&out.json())
}

fn people(sandbox: &Sandbox, names: &[&str]) {
    for n in names {
        sandbox.strands(&["people", "add", n]).expect_code(0);
    }
}

/// The audit trail's `answer` entries.
fn answers(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.strands(&["audit", "export"]);
    out.expect_code(0);
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == "answer")
        .collect()
}

#[test]
fn a_delegate_approves_from_the_cli_in_the_window_and_the_audit_says_for_whom() {
    let sandbox = Sandbox::new();
    people(&sandbox, &["alice", "bob", "carol"]);
    let id = started_by(&sandbox, "carol", "");
    let resume = |who: &str| sandbox.strands_as(who, &[], &["resume", &id, "--approve"]);

    let out = resume("bob");
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);

    // A window that starts tomorrow: not yet.
    sandbox
        .strands(&[
            "people",
            "delegate",
            "alice",
            "--to",
            "bob",
            "--from",
            &day(1),
            "--until",
            &day(3),
        ])
        .expect_code(0);
    let out = resume("bob");
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);

    // Another delegate over the same days is refused: one at a time.
    let out = sandbox.strands(&[
        "people",
        "delegate",
        "alice",
        "--to",
        "carol",
        "--from",
        &day(2),
        "--until",
        &day(4),
    ]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("already delegates to bob"),
        "{}",
        out.stderr
    );

    // The same delegate: the window is replaced (today .. tomorrow).
    sandbox
        .strands(&[
            "people",
            "delegate",
            "alice",
            "--to",
            "bob",
            "--from",
            &day(0),
            "--until",
            &day(1),
            "--reason",
            "winter break",
        ])
        .expect_code(0);
    let list = sandbox.strands(&["people", "delegations", "alice", "--json"]);
    list.expect_code(0);
    let listed = list.json();
    assert_eq!(listed["count"], 1, "{listed:#}");
    assert_eq!(listed["delegations"][0]["to"], "bob");
    assert_eq!(listed["delegations"][0]["active"], true);
    assert_eq!(listed["delegations"][0]["from"], day(0));
    assert_eq!(listed["delegations"][0]["reason"], "winter break");

    // A cycle is refused, and nothing is stored.
    let out = sandbox.strands(&[
        "people",
        "delegate",
        "bob",
        "--to",
        "alice",
        "--from",
        &day(0),
        "--until",
        &day(0),
    ]);
    out.expect_code(2);
    assert!(out.stderr.contains("cycle"), "{}", out.stderr);
    let again = sandbox.strands(&["people", "delegations", "--json"]);
    assert_eq!(again.json()["count"], 1, "{}", again.stdout);

    // In the window, bob approves for alice.
    resume("bob").expect_code(0);
    assert_eq!(sandbox.show(&id)["status"], "completed");
    let answered = answers(&sandbox);
    assert_eq!(answered.len(), 1, "{answered:#?}");
    assert_eq!(answered[0]["event"]["who"], "bob");
    assert_eq!(answered[0]["event"]["on_behalf_of"], "alice");
    assert_eq!(answered[0]["event"]["detail"], "bob for alice");
    let csv = sandbox.strands(&["audit", "export", "--format", "csv"]);
    csv.expect_code(0);
    let header = csv.stdout.lines().next().unwrap_or_default();
    assert!(header.contains("person,on_behalf_of,via"), "{header}");
    assert!(
        csv.stdout
            .lines()
            .any(|l| l.contains(",bob,bob,alice,cli,") && l.contains("bob for alice")),
        "{}",
        csv.stdout
    );

    // Once removed, bob is refused again.
    sandbox
        .strands(&["people", "undelegate", "alice", "--to", "bob"])
        .expect_code(0);
    let id2 = started_by(&sandbox, "carol", "");
    let out = sandbox.strands_as("bob", &[], &["resume", &id2, "--approve"]);
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);
    sandbox
        .strands(&["people", "undelegate", "alice"])
        .expect_code(17);
}

#[test]
fn a_delegate_cannot_approve_a_run_they_started_even_with_self_approval_allowed() {
    let sandbox = Sandbox::new();
    people(&sandbox, &["alice", "bob"]);
    sandbox
        .strands(&[
            "people",
            "delegate",
            "alice",
            "--to",
            "bob",
            "--from",
            &day(0),
            "--until",
            &day(0),
        ])
        .expect_code(0);
    let id = started_by(&sandbox, "bob", "        allow_self_approval: true\n");
    let before = sandbox.show(&id);
    let out = sandbox.strands_as("bob", &[], &["resume", &id, "--approve"]);
    out.expect_code(17);
    assert!(
        out.stderr.contains(
            "you started this run, so you cannot approve it, not even as alice's delegate"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(sandbox.show(&id), before, "a refusal changes nothing");
    sandbox
        .strands_as("alice", &[], &["resume", &id, "--approve"])
        .expect_code(0);
}

#[test]
fn through_the_api_a_person_sets_their_own_delegation_and_their_delegate_answers() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        approvers: [alice]\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    for (name, token) in [
        ("alice", "alice-web"),
        ("bob", "bob-web"),
        ("erin", "erin-web"),
    ] {
        sandbox
            .strands(&["people", "add", name, "--token", token])
            .expect_code(0);
    }
    let alice = make_token(&sandbox, "alice-web", "approver");
    let bob = make_token(&sandbox, "bob-web", "approver");
    let erin = make_token(&sandbox, "erin-web", "approver");
    let body = json!({ "to": "bob", "from": day(0), "until": day(1), "reason": "away" });

    // Erin may not set alice's delegation; a bad day is refused.
    let r = call(
        &bot,
        "POST",
        "/api/v1/people/alice/delegations",
        Some(&erin),
        Some(&body),
    );
    let why = expect_error(&r, 403, "forbidden");
    assert!(why.contains("only alice"), "{why}");
    let bad = json!({ "to": "bob", "from": "tomorrow", "until": day(1) });
    let r = call(
        &bot,
        "POST",
        "/api/v1/people/alice/delegations",
        Some(&alice),
        Some(&bad),
    );
    expect_error(&r, 400, "bad_request");
    let r = call(
        &bot,
        "GET",
        "/api/v1/people/alice/delegations",
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["count"], 0, "nothing was stored: {}", r.body);

    // Alice sets her own.
    let r = call(
        &bot,
        "POST",
        "/api/v1/people/alice/delegations",
        Some(&alice),
        Some(&body),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["to"], "bob");
    assert_eq!(r.json()["active"], true);
    let listed = sandbox.strands(&["people", "delegations", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json()["delegations"][0]["person"], "alice");

    // Bob answers alice's gate through the API.
    let (id, _msg) = deploy_paused(&bot, &slack);
    let answer_at = format!("/api/v1/sessions/{id}/answers");
    let r = call(
        &bot,
        "POST",
        &answer_at,
        Some(&erin),
        Some(&json!({ "decision": "approve" })),
    );
    expect_error(&r, 403, "forbidden");
    let r = call(
        &bot,
        "POST",
        &answer_at,
        Some(&bob),
        Some(&json!({ "decision": "approve" })),
    );
    assert!(r.status < 300, "{}", r.body);
    wait_llm(&llm, &slack, 2);
    let r = call(
        &bot,
        "GET",
        &format!("/api/v1/sessions/{id}"),
        Some(&bob),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let history = r.json()["gates"].clone();
    assert!(
        history.as_array().is_some_and(|h| h
            .iter()
            .any(|e| e["by"] == "bob-web" && e["on_behalf_of"] == "alice")),
        "{history:#}"
    );

    // Alice removes it; erin may not.
    let r = call(
        &bot,
        "DELETE",
        "/api/v1/people/alice/delegations",
        Some(&erin),
        None,
    );
    expect_error(&r, 403, "forbidden");
    let r = call(
        &bot,
        "DELETE",
        "/api/v1/people/alice/delegations?to=bob",
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 204, "{}", r.body);
    bot.stop();
    let answered = answers(&sandbox);
    assert!(
        answered
            .iter()
            .any(|a| a["event"]["who"] == "bob-web" && a["event"]["on_behalf_of"] == "alice"),
        "{answered:#?}"
    );
}

#[test]
fn in_slack_alices_copy_goes_to_bob_and_the_decided_message_says_for_alice() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        "        prompt: Approve the deploy of {{ service }}?\n        approvers: [U04ALICE]\n        notify: dm\n",
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    sandbox
        .strands(&["people", "add", "alice", "--slack", "U04ALICE"])
        .expect_code(0);
    sandbox
        .strands(&["people", "add", "bob", "--slack", "U04BOBBY"])
        .expect_code(0);
    // Alice sets it herself, with the slash command; a stranger cannot.
    let said = |r: crate::common::service::HttpReply| {
        r.json()["text"].as_str().unwrap_or_default().to_string()
    };
    let stranger = said(bot.command(
        "U09STRANGER",
        OPS,
        "delegate <@U04BOBBY|bob> until 2099-01-01",
    ));
    assert!(
        stranger.contains("not in the people directory"),
        "{stranger}"
    );
    let typo = said(bot.command("U04ALICE", OPS, "delegate <@U04BOBBY|bob> til 2099-01-01"));
    assert!(typo.contains("I don't understand `til`"), "{typo}");
    let text = format!(
        "delegate <@U04BOBBY|bob> until {} reason winter break",
        day(0)
    );
    let ok = said(bot.command("U04ALICE", OPS, &text));
    assert!(ok.contains("bob answers for you from"), "{ok}");
    let mine = said(bot.command("U04BOBBY", OPS, "delegations"));
    assert!(
        mine.contains("alice is answered for by you") && mine.contains(", now"),
        "{mine}"
    );

    let (id, msg) = deploy_paused(&bot, &slack);
    // Alice's direct copy went to bob, not to her.
    slack.wait_until(WAIT, |s| {
        s.approvals().iter().any(|m| m.channel.starts_with('D'))
    });
    let copies: Vec<_> = slack
        .approvals()
        .into_iter()
        .filter(|m| m.channel.starts_with('D'))
        .collect();
    let places: Vec<&str> = copies.iter().map(|m| m.channel.as_str()).collect();
    assert_eq!(
        places,
        [dm_channel("U04BOBBY").as_str()],
        "{}",
        slack.describe()
    );

    assert!(
        copies[0]
            .text()
            .contains("You answer for alice (a delegation)"),
        "{}",
        copies[0].text()
    );
    std::thread::sleep(HUMAN);
    bot.click(&copies[0], "strands_approve", "U04BOBBY")
        .reply
        .expect_prompt_ok("bob approves for alice", &bot);
    for m in [&msg, &copies[0]] {
        let update = slack.wait_for_update(m, |c| c.text().contains("Approved by"));
        assert_closed(&update, "Approved by <@U04BOBBY> for alice");
        assert!(
            update
                .body
                .to_string()
                .contains("✅ Approved by <@U04BOBBY> for alice"),
            "the message's own section says it too: {:#}",
            update.body
        );
    }
    wait_llm(&llm, &slack, 2);
    bot.stop();
    assert_eq!(sandbox.show(&id)["status"], "completed");
    let answered = answers(&sandbox);
    assert_eq!(
        answered[0]["event"]["on_behalf_of"], "alice",
        "{answered:#?}"
    );
}

#[test]
fn in_the_web_inbox_alice_sets_her_delegate_who_then_sees_and_answers_her_gate() {
    use crate::web::{wait_status, Visitor};
    let w = crate::api::World::start();
    for (name, token) in [("alice", "alice"), ("mallory", "mallory")] {
        let r = call(
            &w.svc,
            "POST",
            "/api/v1/people",
            Some(&w.root),
            Some(&json!({ "name": name, "tokens": [token] })),
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let id = w.start_run("payments");
    w.wait_paused(&id);
    let mallory = Visitor::sign_in(&w.svc, &w.mallory);
    assert!(
        !mallory.get("/").body.contains(&id),
        "not mallory's gate yet"
    );

    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let page = alice.get("/");
    assert!(page.body.contains("Who answers for me"), "{}", page.body);
    let csrf = alice.csrf();
    let (today, tomorrow) = (day(0), day(1));
    let fields = [
        ("to", "mallory"),
        ("from", today.as_str()),
        ("until", tomorrow.as_str()),
        ("reason", "holidays"),
    ];
    // Without the sign-in's CSRF token: refused, nothing stored.
    let mut forged = fields.to_vec();
    forged.push(("csrf", "0123456789abcdef"));
    let r = alice.post("/inbox/delegate", &forged);
    assert_eq!(r.status, 403, "{}", r.body);
    let none = call(
        &w.svc,
        "GET",
        "/api/v1/people/delegations",
        Some(&w.root),
        None,
    );
    assert_eq!(none.json()["count"], 0, "{}", none.body);
    // A cycle-free, well-formed one is stored; the inbox lists it.
    let mut real = fields.to_vec();
    real.push(("csrf", &csrf));
    let r = alice.post("/inbox/delegate", &real);
    assert_eq!(r.status, 303, "{}", r.body);
    let page = alice.get("/");
    assert!(
        page.body
            .contains("<strong>mallory</strong> answers for you")
            && page.body.contains("holidays"),
        "{}",
        page.body
    );

    // Mallory now sees alice's gate, and answers it for her.
    let inbox = mallory.get("/");
    assert!(inbox.body.contains(&id), "{}", inbox.body);
    assert!(
        inbox.body.contains("alice (you stand in for them)"),
        "{}",
        inbox.body
    );
    assert!(
        inbox.body.contains("You answer for <strong>alice</strong>"),
        "{}",
        inbox.body
    );
    let csrf = mallory.csrf();
    let r = mallory.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "review#1"),
            ("decision", "approve"),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let done = wait_status(&w, &id, "completed");
    assert_eq!(done["gates"][0]["by"], "mallory");
    assert_eq!(done["gates"][0]["on_behalf_of"], "alice");
    let page = mallory.get(&format!("/sessions/{id}"));
    assert!(
        page.body
            .contains("<span class=\"by\">mallory</span> for <span class=\"for\">alice</span>"),
        "{}",
        page.body
    );

    // Alice removes it from the inbox.
    let csrf = alice.csrf();
    let r = alice.post("/inbox/undelegate", &[("csrf", &csrf), ("to", "mallory")]);
    assert_eq!(r.status, 303, "{}", r.body);
    let none = call(
        &w.svc,
        "GET",
        "/api/v1/people/delegations",
        Some(&w.root),
        None,
    );
    assert_eq!(none.json()["count"], 0, "{}", none.body);
}

#[test]
fn in_teams_a_person_sets_their_own_delegation_by_message() {
    use crate::common::fake_teams::FakeTeams;
    use crate::common::service::{ServeConfig, Service};
    use crate::common::teams_driver::{command, token};
    let fake = FakeTeams::start();
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let svc = Service::launch(cfg);
    sandbox
        .strands(&["people", "add", "alice", "--teams", "aaaa-0001"])
        .expect_code(0);
    sandbox.strands(&["people", "add", "bob"]).expect_code(0);
    let say = |id: &str, aad: &str, text: &str| -> String {
        let activity = command(&fake.service_url(), id, aad, text);
        let r = crate::teams_room::post_activity(
            &svc,
            &token(&fake.service_url(), "signing.key.pem"),
            &activity,
        );
        assert_eq!(r.status, 200, "{} {}", r.body, svc.log());
        let until = std::time::Instant::now() + WAIT;
        loop {
            if let Some(h) = fake
                .hits()
                .into_iter()
                .find(|h| h.method == "POST" && h.path.ends_with(&format!("/activities/{id}")))
            {
                return h.body["text"].as_str().unwrap_or_default().to_string();
            }
            assert!(std::time::Instant::now() < until, "no reply to {id}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let text = format!("delegate bob until {} reason parental leave", day(2));
    let reply = say("m:1", "aaaa-0001", &text);
    assert!(reply.contains("bob answers for you from"), "{reply}");
    let reply = say("m:2", "bbbb-stranger", "delegations");
    assert!(reply.contains("not in the people directory"), "{reply}");
    let listed = sandbox.strands(&["people", "delegations", "--json"]);
    listed.expect_code(0);
    let d = &listed.json()["delegations"][0];
    assert_eq!(
        (d["person"].as_str(), d["to"].as_str()),
        (Some("alice"), Some("bob"))
    );
    assert_eq!(d["set_by"], "teams:aaaa-0001");
    let reply = say("m:3", "aaaa-0001", "undelegate");
    assert!(reply.contains("Removed 1 delegation."), "{reply}");
}

/// A gate whose approval rule names alice: the rule's text and the
/// delegation both show — on the Slack card and its decision, and in the
/// audit export (the request's rule, the answer's "bob for alice").
#[test]
fn the_rule_and_the_delegation_show_together_in_slack_and_the_audit_export() {
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let spec = DEPLOY.replace(
        "        prompt: Approve the deploy of {{ service }}?\n",
        concat!(
            "        prompt: Approve the deploy of {{ service }}?\n",
            "        approvers:\n",
            "          - when: \"{{ details.service == 'billing' }}\"\n",
            "            label: billing deploys\n",
            "            approvers: [alice]\n",
            "          - approvers: [U09ONCALL]\n",
        ),
    );
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("deploy", &spec)]);
    sandbox
        .strands(&["people", "add", "alice", "--slack", "U04ALICE"])
        .expect_code(0);
    sandbox
        .strands(&["people", "add", "bob", "--slack", "U04BOBBY"])
        .expect_code(0);
    sandbox
        .strands(&[
            "people",
            "delegate",
            "alice",
            "--to",
            "bob",
            "--from",
            &day(0),
            "--until",
            &day(0),
        ])
        .expect_code(0);
    let (id, msg) = deploy_paused(&bot, &slack);
    assert!(
        msg.text().contains("because billing deploys"),
        "{:#}",
        msg.call.body
    );
    std::thread::sleep(HUMAN);
    bot.click(&msg, "strands_approve", "U04BOBBY")
        .reply
        .expect_prompt_ok("bob for alice", &bot);
    let update = slack.wait_for_update(&msg, |c| c.text().contains("Approved by"));
    assert_closed(&update, "Approved by <@U04BOBBY> for alice");
    assert!(
        update.text().contains("because billing deploys"),
        "{:#}",
        update.body
    );
    wait_llm(&llm, &slack, 2);
    bot.stop();
    let csv = sandbox.strands(&["audit", "export", "--session", &id, "--format", "csv"]);
    csv.expect_code(0);
    assert!(
        csv.stdout.contains("because billing deploys"),
        "the request's rule: {}",
        csv.stdout
    );
    assert!(
        csv.stdout
            .lines()
            .any(|l| l.contains(",U04BOBBY,bob,alice,slack,") && l.contains("bob for alice")),
        "the answer, for alice: {}",
        csv.stdout
    );
}

/// A named policy of the service file asks alice; mallory stands in for
/// her: her web inbox shows the request with its rule and whom she
/// answers for.
#[test]
fn the_web_inbox_shows_the_rule_and_whom_a_delegate_stands_in_for() {
    use crate::web::Visitor;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("service.yaml");
    std::fs::write(
        &file,
        concat!(
            "policies:\n",
            "  payments:\n",
            "    - when: \"{{ details.amount > 10000 }}\"\n",
            "      label: a large payment\n",
            "      approvers: [alice]\n",
            "    - approvers: [ci-bot]\n",
        ),
    )
    .expect("write");
    let path = file.display().to_string();
    let w =
        crate::api::World::start_with(|cfg| cfg.with("STRANDS_SERVICE_FILE", Some(path.as_str())));
    for (name, token) in [("alice", "alice"), ("mallory", "mallory")] {
        let body = json!({ "name": name, "tokens": [token] });
        let r = call(&w.svc, "POST", "/api/v1/people", Some(&w.root), Some(&body));
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let body = json!({ "to": "mallory", "from": day(0), "until": day(0) });
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/people/alice/delegations",
        Some(&w.alice),
        Some(&body),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.ci),
        Some(&json!({"title": "Pay ACME?", "policy": "payments", "details": {"amount": "25000"}})),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    w.wait_paused(&id);
    let mallory = Visitor::sign_in(&w.svc, &w.mallory);
    let inbox = mallory.get("/");
    for needed in [
        id.as_str(),
        "because a large payment",
        "alice (you stand in for them)",
    ] {
        assert!(
            inbox.body.contains(needed),
            "no {needed:?} in:\n{}",
            inbox.body
        );
    }
}
