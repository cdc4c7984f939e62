//! The queue room over TLS (`amqps://`) against a real RabbitMQ with a TLS
//! listener on loopback, its certificate signed by a CA made for the test
//! (`tests/common/rabbitmq.rs`, the `openssl` command).
//!
//! strands verifies the broker with the platform's roots
//! (rustls-platform-verifier, which on Linux reads them through
//! rustls-native-certs: `SSL_CERT_FILE` / `SSL_CERT_DIR` replace the
//! system's store when set). So the CA is trusted by pointing
//! `SSL_CERT_FILE` at it — no root needed — and the link connects, takes
//! a request and replies; without it the broker's certificate is refused,
//! and `/healthz` and the log say why, without the password.

use std::time::{Duration, Instant};

use serde_json::json;

use super::api::World;
use super::queue::{connected, props, USERS};
use crate::common::api::call;
use crate::common::rabbitmq::Broker;

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn amqps_to_a_broker_signed_by_a_ca_in_ssl_cert_file_connects_and_takes_requests() {
    let Some(broker) = Broker::start_tls("queue_tls::trusted", USERS) else {
        return;
    };
    let url = broker.tls_url("strands", "strands-pw");
    let ca = broker.ca().display().to_string();
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_AMQP_URL", Some(&url))
            .with("SSL_CERT_FILE", Some(&ca))
            .with("SSL_CERT_DIR", None)
    });
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/people",
        Some(&w.root),
        Some(&json!({"name": "carol", "amqp": "carol"})),
    );
    assert!(r.status == 201 || r.status == 200, "{}", r.body);
    connected(&w.svc);
    let health = w.svc.get("/healthz").body;
    assert!(
        health.contains("amqp: connected to amqps://strands:********@127.0.0.1"),
        "{health}"
    );
    // The application on the plain listener; strands over TLS takes the
    // request and replies.
    let app = broker.client("carol", "carol-pw");
    app.declare("carol.replies");
    let mut p = props("approval", "carol");
    p["reply_to"] = json!("carol.replies");
    p["correlation_id"] = json!("t-1");
    app.send(
        "strands.requests",
        json!({"title": "Rotate the TLS keys?", "approvers": ["alice"], "key": "tls-1"}),
        p,
    );
    let replies = app.drain("carol.replies", 1, WAIT);
    assert_eq!(replies.len(), 1, "{replies:#?}\n{}", w.svc.log());
    assert_eq!(replies[0]["body"]["ok"], true, "{:#}", replies[0]);
    assert_eq!(replies[0]["body"]["approval"]["created"], true);
    assert!(!w.svc.log().contains("strands-pw"), "{}", w.svc.log());
}

#[test]
fn amqps_to_a_broker_whose_certificate_is_not_trusted_is_refused_with_a_clear_error() {
    let Some(broker) = Broker::start_tls("queue_tls::untrusted", USERS) else {
        return;
    };
    let url = broker.tls_url("strands", "strands-pw");
    // The system's roots only: the test CA is not among them.
    let w = World::start_with(|cfg| {
        cfg.with("STRANDS_AMQP_URL", Some(&url))
            .with("SSL_CERT_FILE", None)
            .with("SSL_CERT_DIR", None)
    });
    let until = Instant::now() + WAIT;
    let health = loop {
        let h = w.svc.get("/healthz");
        if h.body.contains("unreachable") {
            break h;
        }
        assert!(Instant::now() < until, "{}\n{}", h.body, w.svc.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    // The service stays healthy: events wait in the store.
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(
        health.body.contains("amqps://strands:********@127.0.0.1")
            && health.body.to_lowercase().contains("certificate"),
        "{}",
        health.body
    );
    let log = w.svc.log();
    assert!(
        log.contains("could not connect") && log.to_lowercase().contains("certificate"),
        "{log}"
    );
    assert!(
        !log.contains("strands-pw") && !health.body.contains("strands-pw"),
        "the password shown:\n{}\n{log}",
        health.body
    );
    assert!(w
        .svc
        .get("/metrics")
        .body
        .contains("strands_amqp_connected 0"));
}
