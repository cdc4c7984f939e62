//! `strands webhooks failed` through the real binary: deliveries given up
//! on, seeded through the store as the deliverer leaves them, are listed
//! with what an operator needs (event, session, message id, attempts,
//! error, times) and without the endpoint's credentials.

use crate::common::Sandbox;
use strands::model::webhook::Settle;
use strands::model::EventKind;
use strands::store::sled::SledStore;

const ENDPOINT: &str = "https://hooks.example/in?token=S3CRET";

/// Writes a session whose write reports a failed run, queues its webhook
/// and gives up on it, as the deliverer would after a 410; the session id
/// and the message id.
fn seed_failed(sandbox: &Sandbox) -> (String, String) {
    let store = SledStore::open(&sandbox.store).expect("open the store");
    let hooks = [ENDPOINT.to_string()];
    let now = chrono::Utc::now();
    store
        .webhook_pull(&hooks, now, 10)
        .expect("start the cursor");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions/v1/chain-manual-gate-0.json");
    let bytes = std::fs::read(fixture).expect("read the fixture");
    let mut session = strands::model::wire::decode(&bytes).expect("decode the fixture");
    session.events = vec![EventKind::RunFailed {
        message: "provider down".into(),
    }];
    store.create(&mut session).expect("create");
    assert_eq!(store.webhook_pull(&hooks, now, 10).expect("pull"), 1);
    let taken = store
        .webhook_due(now, std::time::Duration::from_secs(60), 10)
        .expect("due");
    let [d] = taken.as_slice() else {
        panic!("one delivery: {taken:?}");
    };
    store
        .webhook_settle(&[(
            d.clone(),
            Settle::GaveUp {
                error: "HTTP 410 Gone".into(),
            },
        )])
        .expect("give up");
    (session.id.clone(), d.msg_id.clone())
}

#[test]
fn failed_deliveries_are_listed_without_credentials() {
    let sandbox = Sandbox::new();
    let (session, msg_id) = seed_failed(&sandbox);

    let out = sandbox.strands(&["webhooks", "failed", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["count"], 1, "{v:#}");
    let row = &v["failed"][0];
    assert_eq!(row["type"], "run.failed");
    assert_eq!(row["session"], session.as_str());
    assert_eq!(row["msg_id"], msg_id.as_str());
    assert_eq!(row["attempts"], 1);
    assert_eq!(row["last_error"], "HTTP 410 Gone");
    assert_eq!(row["endpoint"], "https://hooks.example/in");
    assert!(row["first_attempt_at"].is_string() && row["last_attempt_at"].is_string());
    assert!(!out.stdout.contains("S3CRET"), "{}", out.stdout);

    let table = sandbox.strands(&["webhooks", "failed"]);
    table.expect_code(0);
    for needle in [
        session.as_str(),
        msg_id.as_str(),
        "run.failed",
        "HTTP 410 Gone",
    ] {
        assert!(
            table.stdout.contains(needle),
            "{needle} in\n{}",
            table.stdout
        );
    }
    assert!(!table.stdout.contains("S3CRET"), "{}", table.stdout);

    let none = sandbox.strands(&["webhooks", "failed", "--json", "--limit", "0"]);
    none.expect_code(0);
    assert_eq!(none.json()["count"], 0);
}

#[test]
fn no_failed_deliveries_is_an_empty_list() {
    let sandbox = Sandbox::new();
    let out = sandbox.strands(&["webhooks", "failed", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json(), serde_json::json!({ "failed": [], "count": 0 }));
    let text = sandbox.strands(&["webhooks", "failed"]);
    text.expect_code(0);
    assert!(text.stdout.is_empty(), "{}", text.stdout);
    assert!(
        text.stderr.contains("no failed webhook deliveries"),
        "{}",
        text.stderr
    );
}
