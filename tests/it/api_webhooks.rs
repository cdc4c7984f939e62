//! Outbound webhooks from the real service: every event is POSTed to a
//! receiver started by the test, signed per the Standard Webhooks spec
//! (checked with the reference `standardwebhooks` crate), retried after
//! failures with the same `webhook-id`, and — written in the store's outbox
//! with the change it reports — delivered after a `kill -9` and restart;
//! a delivery given up on (a 4xx) is listed by `strands webhooks failed`
//! and, once the receiver is fixed, sent again by the running service
//! after `strands webhooks retry --all-failed`, with the same `webhook-id`.

use super::api::{World, WAIT};
use crate::common::api::{call, expect_error, Receiver};
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

#[test]
fn a_delivery_given_up_on_is_sent_again_after_webhooks_retry() {
    let hooks = Receiver::start(0);
    hooks.fail_next_with(1000, 410);
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_WEBHOOK_URL", Some(&hooks.url))
            .with("STRANDS_WEBHOOK_SECRET", Some(SECRET))
    });
    let id = w.start_run("api");
    let gone = hooks.wait_for(WAIT, |d| d.iter().any(|d| d.status == 410));
    let msg_id = gone[0].header("webhook-id");
    assert_eq!(gone[0].json()["type"], "gate.opened");

    // Listed as given up on, through the server holding the store.
    let until = std::time::Instant::now() + WAIT;
    let failed = loop {
        let out = w.sandbox.strands(&["webhooks", "failed", "--json"]);
        out.expect_code(0);
        let v = out.json();
        if v["count"] == 1 {
            break v;
        }
        assert!(std::time::Instant::now() < until, "not given up: {v:#}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(failed["failed"][0]["msg_id"], msg_id.as_str(), "{failed:#}");
    assert_eq!(failed["failed"][0]["session"], id.as_str());
    assert_eq!(
        failed["failed"][0]["last_error"], "HTTP 410 Gone",
        "{failed:#}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(hooks.deliveries().len(), 1, "given up: not tried again");

    // Refused retries change nothing.
    let svc = &w.svc;
    let r = call(svc, "POST", "/api/v1/webhooks/retry", Some(&w.root), None);
    expect_error(&r, 400, "bad_request");
    let path = format!("/api/v1/webhooks/{msg_id}/retry");
    expect_error(
        &call(svc, "POST", &path, Some(&w.ci), None),
        403,
        "forbidden",
    );
    let r = call(
        svc,
        "POST",
        "/api/v1/webhooks/msg_nope_9/retry",
        Some(&w.root),
        None,
    );
    expect_error(&r, 404, "not_found");
    let out = w.sandbox.strands(&["webhooks", "retry", "msg_nope_9"]);
    assert_ne!(out.code, 0, "an unknown id is refused: {}", out.stdout);
    assert_eq!(
        w.sandbox.strands(&["webhooks", "failed", "--json"]).json()["count"],
        1
    );

    // The receiver is fixed; the operator retries; the service sends it.
    hooks.fail_next(0);
    let out = w
        .sandbox
        .strands(&["webhooks", "retry", "--all-failed", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["requeued"], 1, "{} {}", out.stdout, out.stderr);
    let got = hooks.wait_for(WAIT, |d| d.iter().any(|d| d.status == 200));
    let sent = got.iter().find(|d| d.status == 200).expect("delivered");
    assert_eq!(sent.header("webhook-id"), msg_id, "the same message id");
    assert_eq!(sent.json()["type"], "gate.opened");
    assert!(signed_by_us(sent));
    let out = w.sandbox.strands(&["webhooks", "failed", "--json"]);
    assert_eq!(out.json()["count"], 0, "{}", out.stdout);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(hooks.deliveries().len(), 2, "sent once more, not again");
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
