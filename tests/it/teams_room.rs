//! The Teams room's way in, on the real `strands serve` pointed at the fake
//! Bot Framework: activities signed with the test-only fixture key are
//! verified, their conversations remembered (and their `serviceUrl`
//! refreshed) in the store, where `strands teams conversations` reads
//! them; forged or mismatched ones are refused, counted and audited, and
//! change nothing. A half-set room refuses to start; an unset one has no
//! `/api/messages`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::fake_teams::{self, FakeTeams, APP_ID};
use crate::common::service::{run_to_exit, HttpReply, ServeConfig, Service};
use crate::common::Sandbox;

pub(crate) use crate::common::teams_driver::{token, BOT, CHANNEL, TENANT};
pub(crate) const PERSON: &str = "aad-0000-ann";

/// The install: the bot added to a channel.
fn install(service_url: &str, conversation: &str) -> Value {
    json!({
        "type": "conversationUpdate",
        "id": "f:1",
        "channelId": "msteams",
        "serviceUrl": service_url,
        "from": {"id": "29:ann", "aadObjectId": PERSON},
        "recipient": {"id": BOT, "name": "strands"},
        "conversation": {"id": conversation, "conversationType": "channel", "name": "General", "isGroup": true},
        "channelData": {"tenant": {"id": TENANT}},
        "membersAdded": [{"id": BOT}],
    })
}

fn message(service_url: &str, conversation: &str) -> Value {
    json!({
        "type": "message",
        "id": "m:1",
        "channelId": "msteams",
        "serviceUrl": service_url,
        "from": {"id": "29:ann", "aadObjectId": PERSON},
        "recipient": {"id": BOT},
        "conversation": {"id": conversation, "conversationType": "channel"},
        "channelData": {"tenant": {"id": TENANT}},
        "text": "<at>strands</at> help",
    })
}

/// POSTs `body` to `/api/messages` with `Bearer token` (if any).
pub(crate) fn post(svc: &Service, token: Option<&str>, body: &[u8]) -> HttpReply {
    let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
    if let Some(t) = token {
        headers.push(("Authorization".into(), format!("Bearer {t}")));
    }
    svc.request("POST", "/api/messages", &headers, body)
}

pub(crate) fn post_activity(svc: &Service, token: &str, activity: &Value) -> HttpReply {
    post(svc, Some(token), activity.to_string().as_bytes())
}

/// `strands serve` with the room on, pointed at `fake`.
fn serve(sandbox: &Sandbox, fake: &FakeTeams) -> Service {
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    let mut cfg = ServeConfig::api(sandbox, &dir).with("STRANDS_MAX_BODY_BYTES", Some("4096"));
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    Service::launch(cfg)
}

fn conversations(sandbox: &Sandbox) -> Vec<Value> {
    let out = sandbox.strands(&["teams", "conversations", "--json"]);
    out.expect_code(0);
    let v = out.json();
    v["conversations"]
        .as_array()
        .expect("conversations")
        .clone()
}

#[test]
fn teams_room_records_conversations_and_refuses_forgeries() {
    let fake = FakeTeams::start();
    let sandbox = Sandbox::new();
    let mut svc = serve(&sandbox, &fake);
    let here = fake.service_url();
    assert!(svc.log().contains("the Teams room is on"), "{}", svc.log());
    assert!(
        !svc.log().contains(fake_teams::APP_PASSWORD),
        "{}",
        svc.log()
    );

    // Installed in a channel: acknowledged, remembered.
    let r = post_activity(
        &svc,
        &token(&here, "signing.key.pem"),
        &install(&here, CHANNEL),
    );
    assert_eq!(r.status, 200, "{} {}\n{}", r.status, r.body, svc.log());
    assert_eq!(r.json(), json!({}));

    // A later message comes from another region: the reference follows.
    let moved = format!("{here}emea/");
    let r = post_activity(
        &svc,
        &token(&moved, "signing.key.pem"),
        &message(&moved, CHANNEL),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({}));

    // Forged (signed by a key the Bot Framework never published): 401,
    // audited, nothing stored.
    let forged_token = token(&here, "wrong.key.pem");
    let r = post_activity(
        &svc,
        &forged_token,
        &install(&here, "19:forged@thread.tacv2"),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "bad_signature");
    // No token at all.
    let r = post(
        &svc,
        None,
        install(&here, "19:forged@thread.tacv2")
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    // A good token for another service URL: 403.
    let r = post_activity(
        &svc,
        &token(&here, "signing.key.pem"),
        &install("http://127.0.0.1:1/", "19:elsewhere@thread.tacv2"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "serviceurl_mismatch");
    // Not JSON: 400; over the body limit: 413.
    let r = post(&svc, Some(&token(&here, "signing.key.pem")), b"{\"type\": ");
    assert_eq!(r.status, 400, "{}", r.body);
    let mut big = message(&here, CHANNEL);
    big["text"] = json!("x".repeat(8192));
    let r = post_activity(&svc, &token(&here, "signing.key.pem"), &big);
    assert_eq!(r.status, 413, "{}", r.body);

    let metrics = svc.get("/metrics");
    assert_eq!(metrics.status, 200);
    for line in [
        "strands_teams_activities_total{type=\"conversationUpdate\"} 1",
        "strands_teams_activities_total{type=\"message\"} 1",
        "strands_teams_refusals_total{reason=\"bad_signature\"} 1",
        "strands_teams_refusals_total{reason=\"no_token\"} 1",
        "strands_teams_refusals_total{reason=\"serviceurl_mismatch\"} 1",
        "strands_teams_refusals_total{reason=\"body_too_large\"} 1",
    ] {
        assert!(metrics.body.contains(line), "{line} in\n{}", metrics.body);
    }
    // Through the server holding the store (its local admin token).
    let live = conversations(&sandbox);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["service_url"], moved.as_str());
    svc.stop();

    // Offline, the same: the one conversation, at its new address.
    let all = conversations(&sandbox);
    assert_eq!(all.len(), 1, "{all:?}");
    let c = &all[0];
    assert_eq!(c["id"], CHANNEL);
    assert_eq!(c["type"], "channel");
    assert_eq!(c["name"], "General");
    assert_eq!(c["tenant_id"], TENANT);
    assert_eq!(c["bot_id"], BOT);
    assert_eq!(c["service_url"], moved.as_str());
    assert_eq!(c["service_host"], "127.0.0.1");
    assert!(c["first_seen"].as_str() <= c["last_seen"].as_str(), "{c}");
    let table = sandbox.strands(&["teams", "conversations"]);
    table.expect_code(0);
    assert!(table.stdout.contains(CHANNEL), "{}", table.stdout);

    // The refusals are in the audit trail, the token is not.
    let audit = sandbox.strands(&["audit", "export"]);
    audit.expect_code(0);
    let refusals: Vec<Value> = audit
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"]["via"] == "teams")
        .collect();
    assert_eq!(refusals.len(), 3, "{}", audit.stdout);
    let forged = refusals[0]["event"]["detail"].as_str().expect("detail");
    assert!(forged.contains("bad_signature"), "{forged}");
    assert!(forged.contains("conversationUpdate"), "{forged}");
    assert!(forged.contains(PERSON), "{forged}");
    assert_eq!(refusals[0]["event"]["kind"], "refusal");
    assert!(
        !audit.stdout.contains(&forged_token),
        "the token is never audited"
    );

    // Started again, the room takes the next activity with the keys it
    // fetches afresh, and the reference keeps its first sighting.
    svc.restart();
    let r = post_activity(
        &svc,
        &token(&here, "signing.key.pem"),
        &message(&here, CHANNEL),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    svc.stop();
    let again = conversations(&sandbox);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["first_seen"], c["first_seen"]);
    assert_eq!(again[0]["service_url"], here.as_str());
}

#[test]
fn teams_a_half_set_room_refuses_to_start() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    let cfg = ServeConfig::api(&sandbox, &dir)
        .with("TEAMS_APP_ID", Some(APP_ID))
        .with("TEAMS_APP_PASSWORD", None);
    let out = run_to_exit(&cfg, Duration::from_secs(30));
    assert_eq!(out.code, Some(2), "{}", out.output);
    assert!(out.output.contains("TEAMS_APP_PASSWORD"), "{}", out.output);
}

#[test]
fn teams_without_settings_there_is_no_messages_route() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("workflows");
    std::fs::create_dir_all(&dir).expect("workflows dir");
    let svc = Service::launch(
        ServeConfig::api(&sandbox, &dir)
            .with("TEAMS_APP_ID", None)
            .with("TEAMS_APP_PASSWORD", None),
    );
    assert!(!svc.log().contains("Teams room"), "{}", svc.log());
    let r = post(&svc, None, b"{}");
    assert_eq!(r.status, 404, "{}", r.body);
}

/// Anyone can send a request that is refused: a flood of them gets at most
/// 60 audit entries a minute (and one saying the rest were only counted),
/// while `/metrics` counts every one.
#[test]
fn a_flood_of_refused_activities_does_not_flood_the_audit_trail() {
    let fake = FakeTeams::start();
    let sandbox = Sandbox::new();
    let mut svc = serve(&sandbox, &fake);
    for _ in 0..75 {
        let r = post(
            &svc,
            None,
            install(&fake.service_url(), CHANNEL).to_string().as_bytes(),
        );
        assert_eq!(r.status, 401, "{}", r.body);
    }
    let metrics = svc.get("/metrics").body;
    let counted: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("strands_teams_refusals_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(counted, 75, "{metrics}");
    svc.stop();
    let audit = sandbox.strands(&["audit", "export"]);
    audit.expect_code(0);
    let teams: Vec<Value> = audit
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|e| e["event"]["via"] == "teams")
        .collect();
    assert_eq!(
        teams.len(),
        61,
        "60 refusals and one note: {}",
        audit.stdout
    );
    let last = teams[60]["event"]["detail"].as_str().expect("detail");
    assert!(
        last.contains("counted in strands_teams_refusals_total only"),
        "{last}"
    );
    sandbox.strands(&["audit", "verify"]).expect_code(0);
}
