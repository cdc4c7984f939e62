//! Outbound webhooks from the real service: every event is POSTed to a
//! receiver started by the test, signed per the Standard Webhooks spec
//! (checked with the reference `standardwebhooks` crate), retried after
//! failures with the same `webhook-id`, and — written in the store's outbox
//! with the change it reports — delivered after a `kill -9` and restart.

use super::api::{World, WAIT};
use crate::common::api::Receiver;
use serde_json::json;
use std::time::Duration;

/// `whsec_` + base64 of 32 bytes.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn signed_by_us(d: &crate::common::api::Delivery) -> bool {
    standardwebhooks::Webhook::new(SECRET)
        .expect("the secret")
        .verify(&d.body, &d.headers)
        .is_ok()
}

#[test]
fn events_are_signed_retried_with_one_id_and_delivered_after_a_kill_9() {
    let hooks = Receiver::start(2);
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_WEBHOOK_URL", Some(&hooks.url))
            .with("STRANDS_WEBHOOK_SECRET", Some(SECRET))
    });
    let id = w.start_run("api");

    // gate.opened: refused twice (500), then taken — one id throughout.
    let got = hooks.wait_for(WAIT, |d| d.iter().any(|d| d.status == 200));
    assert_eq!(
        got.iter().map(|d| d.status).collect::<Vec<_>>(),
        [500, 500, 200],
        "retried after errors"
    );
    let msg_id = got[0].header("webhook-id");
    assert!(!msg_id.is_empty());
    assert!(
        got.iter().all(|d| d.header("webhook-id") == msg_id),
        "one id for every retry"
    );
    assert!(got.iter().all(signed_by_us), "every attempt verifies");
    assert!(got[2].header("webhook-signature").starts_with("v1,"));
    let body = got[2].json();
    assert_eq!(body["type"], "gate.opened", "{body}");
    assert_eq!(body["data"]["session"], id.as_str());
    assert_eq!(body["data"]["prompt"], "Approve the deploy of api?");
    let answers = body["data"]["links"]["answers"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answers.ends_with(&format!("/api/v1/sessions/{id}/answers")),
        "{body}"
    );
    // A body changed in transit no longer verifies.
    let mut forged = got[2].clone();
    forged.body = forged.body.replace_ascii_bytes("api", "evil");
    assert!(!signed_by_us(&forged));

    // The receiver goes down; the answer's events wait in the outbox.
    hooks.fail_next(1000);
    let r = w.answer(&id, &w.alice, json!({ "decision": "approve" }));
    assert_eq!(r.status, 200, "{}", r.body);
    let failed = hooks.wait_for(WAIT, |d| {
        d.iter()
            .any(|d| d.status == 500 && d.json()["type"] == "gate.answered")
    });
    let answered_id = failed
        .iter()
        .find(|d| d.json()["type"] == "gate.answered")
        .map(|d| d.header("webhook-id"))
        .expect("an attempt");
    // Let the failed attempt be written back, then kill -9 and come back.
    std::thread::sleep(Duration::from_millis(300));
    let mut svc = w.svc;
    svc.kill();
    hooks.fail_next(0);
    svc.restart();
    let after = hooks.wait_for(WAIT, |d| {
        let ok = |t: &str| d.iter().any(|d| d.status == 200 && d.json()["type"] == t);
        ok("gate.answered") && ok("run.completed")
    });
    let delivered = after
        .iter()
        .find(|d| d.status == 200 && d.json()["type"] == "gate.answered")
        .expect("delivered");
    assert_eq!(
        delivered.header("webhook-id"),
        answered_id,
        "the same message, after the restart"
    );
    assert_eq!(delivered.json()["data"]["by"], "alice");
    assert!(signed_by_us(delivered));
    // Each event is taken once (retries of one event share its id).
    let taken: Vec<String> = after
        .iter()
        .filter(|d| d.status == 200)
        .map(|d| d.header("webhook-id"))
        .collect();
    let mut unique = taken.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        taken.len(),
        unique.len(),
        "no event delivered twice: {taken:?}"
    );
    assert!(
        !after.iter().any(|d| d.json()["type"] == "step.done"),
        "step.done stays off webhooks"
    );
}

/// Replaces every `from` in a byte string.
trait ReplaceBytes {
    fn replace_ascii_bytes(&self, from: &str, to: &str) -> Vec<u8>;
}

impl ReplaceBytes for Vec<u8> {
    fn replace_ascii_bytes(&self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8_lossy(self).replace(from, to).into_bytes()
    }
}
