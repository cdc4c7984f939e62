//! The queue room against a real RabbitMQ (`tests/common/rabbitmq.rs`: a
//! broker per test in a temporary directory) and the real `strands serve`,
//! with a pika script as the application: an approval request sent with a
//! `reply_to` is created once (a redelivery with the same key is the same
//! request), asked in Slack (the fake) and shown in the web inbox, approved
//! through the API, and its decision comes back on the reply queue with the
//! correlation id; an answer message from a directory
//! person decides a paused run, one from someone else is dead-lettered with
//! the reason; an unknown RabbitMQ user and malformed messages are
//! dead-lettered, a forged `user_id` is refused by the broker itself, and
//! nothing changes; with the broker killed while gates open, every event is
//! on the exchange once it is back, none twice; two replicas on one
//! PostgreSQL store consume one queue and create each request once.
//! Skipped (`SKIPPED` printed) without RabbitMQ; failed under
//! `STRANDS_REQUIRE_AMQP=1`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::api::World;
use crate::common::api::call;
use crate::common::fake_slack::{self, FakeSlack};
use crate::common::rabbitmq::{Broker, Client};
use crate::common::service::{ServeConfig, Service};

const WAIT: Duration = Duration::from_secs(30);
pub(super) const USERS: &[(&str, &str)] = &[
    ("strands", "strands-pw"),
    ("carol", "carol-pw"),
    ("alice-mq", "alice-pw"),
    ("mallory-mq", "mallory-pw"),
    ("stranger", "stranger-pw"),
];
const QUEUE: &str = "strands.requests";

fn world(broker: &Broker) -> World {
    world_with(broker, |cfg| cfg)
}

/// [`world`] with Slack too, pointed at `slack`.
fn world_with_slack(broker: &Broker, slack: &FakeSlack) -> World {
    world_with(broker, |cfg| {
        cfg.with("SLACK_BOT_TOKEN", Some(fake_slack::BOT_TOKEN))
            .with("SLACK_SIGNING_SECRET", Some(fake_slack::SIGNING_SECRET))
            .with("SLACK_API_URL", Some(&slack.api_url))
            .with(
                "STRANDS_APPROVAL_CHANNEL",
                Some(fake_slack::APPROVAL_CHANNEL),
            )
    })
}

fn world_with(broker: &Broker, adjust: impl FnOnce(ServeConfig) -> ServeConfig) -> World {
    let url = broker.url("strands", "strands-pw");
    let w = World::start_with(|cfg| adjust(cfg.with("STRANDS_AMQP_URL", Some(&url))));
    for (name, amqp) in [
        ("carol", "carol"),
        ("alice", "alice-mq"),
        ("mallory", "mallory-mq"),
    ] {
        let r = call(
            &w.svc,
            "POST",
            "/api/v1/people",
            Some(&w.root),
            Some(&json!({"name": name, "amqp": amqp})),
        );
        assert!(r.status == 201 || r.status == 200, "{}", r.body);
    }
    connected(&w.svc);
    w
}

/// Waits until `/healthz` says the link is up.
#[track_caller]
pub(super) fn connected(svc: &Service) {
    let until = Instant::now() + WAIT;
    loop {
        let h = svc.get("/healthz");
        if h.body.contains("amqp: connected") {
            return;
        }
        assert!(
            Instant::now() < until,
            "never connected: {}\n{}",
            h.body,
            svc.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn approvals(w: &World) -> Vec<Value> {
    let r = call(&w.svc, "GET", "/api/v1/approvals", Some(&w.root), None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["approvals"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

pub(super) fn props(kind: &str, user: &str) -> Value {
    json!({"type": kind, "user_id": user, "message_id": uuid::Uuid::new_v4().to_string()})
}

#[track_caller]
fn wait_status(w: &World, id: &str, status: &str) -> Value {
    let until = Instant::now() + WAIT;
    loop {
        let s = w.session(id);
        if s["status"] == status {
            return s;
        }
        assert!(
            Instant::now() < until,
            "{id} never {status}: {s:#}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn types(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["routing_key"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn an_approval_request_with_reply_to_is_created_once_and_its_decision_comes_back() {
    let Some(broker) = Broker::start("queue::approval", USERS) else {
        return;
    };
    let slack = FakeSlack::start();
    let w = world_with_slack(&broker, &slack);
    let app = broker.client("carol", "carol-pw");
    app.bind("watch", "strands.events", "#");
    app.declare("carol.replies");
    let request = json!({
        "title": "Deploy v2 to prod?",
        "approvers": ["alice"],
        "key": "deploy-2",
        "notify": ["slack:#C0DEPLOYS"],
    });
    let mut p = props("approval", "carol");
    p["reply_to"] = json!("carol.replies");
    p["correlation_id"] = json!("c-1");
    assert_eq!(app.send(QUEUE, request.clone(), p.clone())["sent"], true);
    let replies = app.drain("carol.replies", 1, WAIT);
    assert_eq!(replies.len(), 1, "{replies:#?}\n{}", w.svc.log());
    assert_eq!(replies[0]["correlation_id"], "c-1");
    let created = &replies[0]["body"];
    assert_eq!(created["ok"], true, "{created:#}");
    assert_eq!(created["approval"]["created"], true);
    let id = created["approval"]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    // Redelivered (or sent again): the same request, not a second one.
    p["message_id"] = json!("another-delivery");
    app.send(QUEUE, request, p);
    let again = app.drain("carol.replies", 1, WAIT);
    assert_eq!(again[0]["body"]["approval"]["id"], id.as_str());
    assert_eq!(again[0]["body"]["approval"]["created"], false);
    // Asked in Slack like any request.
    let card = slack.wait_for_approval();
    assert_eq!(card.channel, "C0DEPLOYS");
    assert!(
        card.text().contains("Deploy v2 to prod?"),
        "{:#}",
        card.call.body
    );
    let all = approvals(&w);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["requested_by"], "carol");
    assert_eq!(all[0]["status"], "pending");
    // The approver sees it waiting in the web inbox and over the API, and
    // approves through the API.
    let inbox = super::web::Visitor::sign_in(&w.svc, &w.alice).get("/");
    assert_eq!(inbox.status, 200);
    assert!(inbox.body.contains("Deploy v2 to prod?"), "{}", inbox.body);
    let mine = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}"),
        Some(&w.alice),
        None,
    );
    assert_eq!(mine.status, 200, "{}", mine.body);
    let r = w.answer(&id, &w.alice, json!({"decision": "approve"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let decision = app.drain("carol.replies", 1, WAIT);
    assert_eq!(decision.len(), 1, "{decision:#?}\n{}", w.svc.log());
    assert_eq!(decision[0]["correlation_id"], "c-1");
    assert_eq!(decision[0]["type"], "decision");
    assert_eq!(decision[0]["body"]["decision"], "approved");
    assert_eq!(decision[0]["body"]["approval"]["decided_by"], "alice");
    // Every event on the exchange: persistent JSON, routed by its type,
    // the webhook's body, its id.
    let until = Instant::now() + WAIT;
    let mut events = Vec::new();
    while !types(&events).contains(&"run.completed".to_string()) {
        assert!(
            Instant::now() < until,
            "{:?}\n{}",
            types(&events),
            w.svc.log()
        );
        events.extend(app.drain("watch", 1, Duration::from_secs(2)));
    }
    let t = types(&events);
    for kind in ["gate.opened", "gate.answered", "run.completed"] {
        assert!(t.contains(&kind.to_string()), "{t:?}");
    }
    for e in &events {
        assert_eq!(e["delivery_mode"], 2, "{e:#}");
        assert_eq!(e["body"]["type"], e["routing_key"], "{e:#}");
        assert_eq!(e["body"]["data"]["session"], id.as_str(), "{e:#}");
        assert!(
            e["message_id"]
                .as_str()
                .is_some_and(|m| m.starts_with("msg_")),
            "{e:#}"
        );
    }
    let ids: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["message_id"].as_str())
        .collect();
    assert_eq!(ids.len(), events.len(), "a message id twice: {events:#?}");
    // Counted as publishes to the exchange; there are no HTTP webhooks,
    // so no webhook deliveries.
    let metrics = w.svc.get("/metrics").body;
    assert!(published(&w.svc) >= events.len() as u64, "{metrics}");
    assert!(!metrics.contains("strands_webhook_deliveries"), "{metrics}");
}

#[test]
fn an_answer_from_a_directory_person_decides_and_a_refused_one_is_dead_lettered() {
    let Some(broker) = Broker::start("queue::answer", USERS) else {
        return;
    };
    let w = world(&broker);
    let id = w.start_run("api");
    w.wait_paused(&id);
    let admin = broker.client("strands", "strands-pw");
    // mallory is in the directory but not an approver of deploy.
    let mallory = broker.client("mallory-mq", "mallory-pw");
    mallory.send(
        QUEUE,
        json!({"session": id, "decision": "approve"}),
        props("answer", "mallory-mq"),
    );
    let dead = admin.drain("strands.dead", 1, WAIT);
    assert_eq!(dead.len(), 1, "{dead:#?}\n{}", w.svc.log());
    let reason = dead[0]["headers"]["x-strands-reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("not an approver"), "{reason}");
    assert_eq!(dead[0]["body"]["session"], id.as_str());
    assert_eq!(w.session(&id)["status"], "paused");
    // alice is.
    let alice = broker.client("alice-mq", "alice-pw");
    alice.declare("alice.replies");
    let mut p = props("answer", "alice-mq");
    p["reply_to"] = json!("alice.replies");
    p["correlation_id"] = json!("a-1");
    alice.send(
        QUEUE,
        json!({"session": id, "decision": "approve"}),
        p.clone(),
    );
    let reply = alice.drain("alice.replies", 1, WAIT);
    assert_eq!(reply[0]["body"]["status"], "recorded", "{reply:#?}");
    assert_eq!(reply[0]["correlation_id"], "a-1");
    let s = wait_status(&w, &id, "completed");
    let text = s.to_string();
    assert!(
        text.contains(r#""by":"alice""#) && text.contains(r#""via":"amqp""#),
        "{s:#}"
    );
    // Redelivered: decided once, nothing more.
    alice.send(QUEUE, json!({"session": id, "decision": "approve"}), p);
    let again = alice.drain("alice.replies", 1, WAIT);
    assert_eq!(again.len(), 1, "{again:#?}");
    assert_eq!(
        admin.drain("strands.dead", 0, Duration::from_secs(1)).len(),
        0
    );
}

#[test]
fn unknown_users_forged_user_ids_and_malformed_messages_change_nothing() {
    let Some(broker) = Broker::start("queue::refusals", USERS) else {
        return;
    };
    let w = world(&broker);
    let admin = broker.client("strands", "strands-pw");
    let request = json!({"title": "Drop the table?", "approvers": ["alice"], "key": "k"});
    // A RabbitMQ user nobody in the directory has.
    let stranger = broker.client("stranger", "stranger-pw");
    stranger.send(QUEUE, request.clone(), props("approval", "stranger"));
    // carol claiming to be alice: the broker closes the channel (406).
    let carol = broker.client("carol", "carol-pw");
    let forged = carol.send(QUEUE, request.clone(), props("approval", "alice-mq"));
    assert_eq!(forged["sent"], false, "{forged}");
    assert!(
        forged["refused"]
            .as_str()
            .unwrap_or_default()
            .starts_with("406"),
        "{forged}"
    );
    // Malformed: no type, not JSON, not a request.
    carol.send(QUEUE, request.clone(), json!({"user_id": "carol"}));
    carol.send(QUEUE, json!("{not json"), props("approval", "carol"));
    carol.send(
        QUEUE,
        json!({"title": "x", "frobnicate": 1}),
        props("approval", "carol"),
    );
    let dead = admin.drain("strands.dead", 4, WAIT);
    assert_eq!(dead.len(), 4, "{dead:#?}\n{}", w.svc.log());
    let reasons: Vec<&str> = dead
        .iter()
        .map(|d| {
            d["headers"]["x-strands-reason"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("`stranger` is nobody's")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("no `type` property")),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("not an approval request")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("frobnicate")),
        "{reasons:#?}"
    );
    assert!(approvals(&w).is_empty(), "{:#?}", approvals(&w));
    let metrics = w.svc.get("/metrics").body;
    assert!(
        metrics.contains("strands_amqp_messages_total{outcome=\"refused\"} 4"),
        "{metrics}"
    );
    // The broker's password is never shown.
    let health = w.svc.get("/healthz").body;
    assert!(
        health.contains("strands:********@") && !health.contains("strands-pw"),
        "{health}"
    );
    let url = broker.url("strands", "strands-pw");
    let shown = w.sandbox.strands_env(
        &[("STRANDS_AMQP_URL", &url)],
        &["config", "--section", "amqp"],
    );
    shown.expect_code(0);
    assert!(
        shown.stdout.contains("strands:********@") && !shown.stdout.contains("strands-pw"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("STRANDS_AMQP_PREFETCH"),
        "{}",
        shown.stdout
    );
}

#[test]
fn events_written_while_the_broker_is_down_are_published_once_it_is_back() {
    let Some(mut broker) = Broker::start("queue::broker_down", USERS) else {
        return;
    };
    let w = world(&broker);
    let app = broker.client("carol", "carol-pw");
    app.bind("watch", "strands.events", "gate.opened");
    app.bind("every", "strands.events", "#");
    let first = w.start_run("before");
    w.wait_paused(&first);
    // The first run's events are on the exchange and strands has counted
    // each confirmed before the broker goes: a kill between the broker's
    // write and its confirm would make strands send one again, rightly
    // (at least once), and that is not what this test is about.
    let until = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        seen.extend(app.drain("every", 0, Duration::from_millis(200)));
        let opened = seen.iter().any(|e| {
            e["routing_key"] == "gate.opened" && e["body"]["data"]["session"] == first.as_str()
        });
        if opened && published(&w.svc) == seen.len() as u64 {
            break;
        }
        assert!(
            Instant::now() < until,
            "{seen:#?}\n{}",
            w.svc.get("/metrics").body
        );
    }
    broker.kill();
    let until = Instant::now() + WAIT;
    while !w.svc.get("/healthz").body.contains("unreachable") {
        assert!(Instant::now() < until, "{}", w.svc.get("/healthz").body);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(w
        .svc
        .get("/metrics")
        .body
        .contains("strands_amqp_connected 0"));
    let mut ids = vec![first];
    for i in 0..3 {
        let id = w.start_run(&format!("while-down-{i}"));
        w.wait_paused(&id);
        ids.push(id);
    }
    broker.restart();
    connected(&w.svc);
    assert!(w
        .svc
        .get("/metrics")
        .body
        .contains("strands_amqp_connected 1"));
    let until = Instant::now() + Duration::from_secs(60);
    let mut events = Vec::new();
    loop {
        events.extend(app.drain("watch", 0, Duration::from_secs(1)));
        let sessions: BTreeSet<&str> = events
            .iter()
            .filter_map(|e| e["body"]["data"]["session"].as_str())
            .collect();
        if ids.iter().all(|id| sessions.contains(id.as_str())) {
            break;
        }
        assert!(
            Instant::now() < until,
            "{sessions:?} of {ids:?}\n{}",
            w.svc.log()
        );
    }
    // A moment for any duplicate to show up.
    events.extend(app.drain("watch", 0, Duration::from_secs(2)));
    let message_ids: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["message_id"].as_str())
        .collect();
    assert_eq!(
        message_ids.len(),
        events.len(),
        "a message twice: {events:#?}"
    );
    assert_eq!(events.len(), ids.len(), "{events:#?}");
    // strands published each event once: its count of confirmed publishes
    // is the number of distinct events on the exchange. (`every` may hold
    // one twice: a message taken and acknowledged before the kill comes
    // back, `redelivered`, when the broker lost the acknowledgement with
    // its kill -9. That one is the broker's, not a second publish.)
    let until = Instant::now() + WAIT;
    loop {
        seen.extend(app.drain("every", 0, Duration::from_millis(500)));
        let distinct: BTreeSet<&str> = seen
            .iter()
            .filter_map(|e| e["message_id"].as_str())
            .collect();
        let n = published(&w.svc);
        if n == distinct.len() as u64 {
            break;
        }
        assert!(
            n < distinct.len() as u64 && Instant::now() < until,
            "{n} published, {} distinct: {seen:#?}",
            distinct.len()
        );
    }
}

/// `strands_amqp_published_total{outcome="published"}` on `/metrics`.
fn published(svc: &Service) -> u64 {
    svc.get("/metrics")
        .body
        .lines()
        .find(|l| l.starts_with("strands_amqp_published_total{outcome=\"published\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0)
}

#[test]
fn two_replicas_on_one_postgres_store_create_each_request_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(db) = rt.block_on(strands::store::postgres::testdb::database("queue_replicas")) else {
        println!("SKIPPED: queue::two_replicas: no PostgreSQL test server");
        return;
    };
    let Some(broker) = Broker::start("queue::replicas", USERS) else {
        return;
    };
    let mut sandbox = crate::common::Sandbox::new();
    sandbox.store = std::path::PathBuf::from(&db);
    let llm = crate::common::FakeLlm::start();
    let dir = crate::common::service::write_workflows(&sandbox, &llm, &[]);
    let root = crate::common::api::make_token(&sandbox, "root", "admin");
    let url = broker.url("strands", "strands-pw");
    let cfg = |_: usize| {
        ServeConfig::api(&sandbox, &dir)
            .with("STRANDS_AMQP_URL", Some(&url))
            .with("STRANDS_AMQP_PREFETCH", Some("4"))
    };
    let a = Service::launch(cfg(0));
    let b = Service::launch(cfg(1));
    let r = call(
        &a,
        "POST",
        "/api/v1/people",
        Some(&root),
        Some(&json!({"name": "carol", "amqp": "carol"})),
    );
    assert!(r.status == 201 || r.status == 200, "{}", r.body);
    connected(&a);
    connected(&b);
    let carol: Client = broker.client("carol", "carol-pw");
    carol.bind("watch", "strands.events", "gate.opened");
    const N: usize = 40;
    for i in 0..N {
        let body = json!({"title": format!("Request {i}"), "approvers": ["alice"], "key": format!("k{i}")});
        carol.send(QUEUE, body.clone(), props("approval", "carol"));
        // Each one twice: two deliveries of one request.
        carol.send(QUEUE, body, props("approval", "carol"));
    }
    let until = Instant::now() + Duration::from_secs(60);
    let list = loop {
        let r = call(&a, "GET", "/api/v1/approvals?limit=100", Some(&root), None);
        assert_eq!(r.status, 200, "{}", r.body);
        let list = r.json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if list.len() >= N {
            break list;
        }
        assert!(
            Instant::now() < until,
            "{} of {N}\n{}\n{}",
            list.len(),
            a.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_secs(2));
    let r = call(&b, "GET", "/api/v1/approvals?limit=100", Some(&root), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let again = r.json()["approvals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(list.len(), N);
    assert_eq!(again.len(), N, "a request created twice");
    let titles: BTreeSet<&str> = again.iter().filter_map(|v| v["title"].as_str()).collect();
    assert_eq!(titles.len(), N);
    // Both replicas took messages.
    let taken = |svc: &Service| {
        svc.get("/metrics")
            .body
            .lines()
            .find(|l| l.starts_with("strands_amqp_messages_total{outcome=\"taken\"}"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let (ta, tb) = (taken(&a), taken(&b));
    assert_eq!(ta + tb, (2 * N) as f64, "{ta} + {tb}");
    assert!(ta > 0.0 && tb > 0.0, "{ta} / {tb}");
    // Each gate.opened published once, by one of the two.
    let mut events = carol.drain("watch", N, WAIT);
    events.extend(carol.drain("watch", 0, Duration::from_secs(2)));
    let sessions: BTreeSet<&str> = events
        .iter()
        .filter_map(|e| e["body"]["data"]["session"].as_str())
        .collect();
    assert_eq!(sessions.len(), N, "{events:#?}");
    assert_eq!(events.len(), N, "an event published twice: {events:#?}");
}

/// Runs `sql` on the PostgreSQL database at `url`.
fn psql(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("the test database");
        let task = tokio::spawn(conn);
        client.batch_execute(sql).await.expect(sql);
        drop(client);
        let _ = task.await;
    });
}

#[test]
fn a_message_whose_write_keeps_failing_is_dead_lettered_after_max_deliveries() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(db) = rt.block_on(strands::store::postgres::testdb::database("queue_poison")) else {
        println!("SKIPPED: queue::poison: no PostgreSQL test server");
        return;
    };
    let Some(broker) = Broker::start("queue::poison", USERS) else {
        return;
    };
    let mut sandbox = crate::common::Sandbox::new();
    sandbox.store = std::path::PathBuf::from(&db);
    let llm = crate::common::FakeLlm::start();
    let dir = crate::common::service::write_workflows(&sandbox, &llm, &[]);
    let root = crate::common::api::make_token(&sandbox, "root", "admin");
    let svc = Service::launch(
        ServeConfig::api(&sandbox, &dir)
            .with(
                "STRANDS_AMQP_URL",
                Some(&broker.url("strands", "strands-pw")),
            )
            .with("STRANDS_AMQP_MAX_DELIVERIES", Some("3")),
    );
    let r = call(
        &svc,
        "POST",
        "/api/v1/people",
        Some(&root),
        Some(&json!({"name": "carol", "amqp": "carol"})),
    );
    assert!(r.status == 201 || r.status == 200, "{}", r.body);
    connected(&svc);
    // The database refuses new sessions, as a full disk would: every
    // attempt at the request fails, and it would come back for ever.
    psql(
        &db,
        "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$;
         CREATE TRIGGER full_disk BEFORE INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION full_disk();",
    );
    let carol = broker.client("carol", "carol-pw");
    carol.declare("carol.replies");
    let mut p = props("approval", "carol");
    p["reply_to"] = json!("carol.replies");
    p["correlation_id"] = json!("p-1");
    carol.send(
        QUEUE,
        json!({"title": "Pay invoice 7?", "approvers": ["alice"], "key": "invoice-7"}),
        p,
    );
    let admin = broker.client("strands", "strands-pw");
    let dead = admin.drain("strands.dead", 1, WAIT);
    assert_eq!(dead.len(), 1, "{dead:#?}\n{}", svc.log());
    let reason = dead[0]["headers"]["x-strands-reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("failed 3 times") && reason.contains("No space left on device"),
        "{reason}"
    );
    // Still carol's, though the copies tried again were strands' to publish.
    assert_eq!(dead[0]["headers"]["x-strands-user-id"], "carol");
    assert_eq!(dead[0]["headers"]["x-strands-attempts"], 2);
    assert_eq!(dead[0]["body"]["key"], "invoice-7");
    let replies = carol.drain("carol.replies", 1, WAIT);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert_eq!(replies[0]["correlation_id"], "p-1");
    assert_eq!(replies[0]["body"]["ok"], false);
    assert_eq!(replies[0]["body"]["error"], reason);
    let metrics = svc.get("/metrics").body;
    for line in [
        "strands_amqp_messages_total{outcome=\"retried\"} 2",
        "strands_amqp_messages_total{outcome=\"gave_up\"} 1",
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
    // The disk has room again: the message is not in the queue any more
    // and nothing was created.
    psql(&db, "DROP TRIGGER full_disk ON sessions;");
    std::thread::sleep(Duration::from_secs(2));
    let r = call(&svc, "GET", "/api/v1/approvals", Some(&root), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["approvals"], json!([]), "{}", r.body);
    assert_eq!(admin.drain(QUEUE, 0, Duration::from_secs(1)).len(), 0);
    assert!(
        !svc.log().contains("strands-pw"),
        "the broker's password in the log"
    );
}
