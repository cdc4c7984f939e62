//! Bounded drives, over real sockets: `strands serve` with two slots
//! (`STRANDS_DRIVES=2`) takes 500 runs through the API as fast as they
//! come (each 201, the later ones `queued`), never has more than two
//! driven at once — counted where it shows, at the model, and in
//! `/metrics` — and every run reaches its gate. Killed (`kill -9`) with
//! runs still waiting, the next process drives the rest from the store,
//! two at a time again, and answers `/healthz` while it does.

use crate::common::api::{call, make_token};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::{Behaviour, FakeLlm, Sandbox};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 500;

/// `strands_<name>{<label>}`'s value in a Prometheus text.
fn metric(text: &str, series: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse::<i64>().ok())
        .unwrap_or(0)
}

struct Seen {
    most_driving: i64,
    most_queued: i64,
    paused: i64,
}

/// Scrapes `/metrics` until `paused` sessions are paused (or `deadline`).
fn watch_until_paused(svc: &Service, paused: i64, deadline: Instant, seen: &mut Seen) {
    loop {
        let m = svc.get("/metrics").body;
        assert_eq!(metric(&m, "strands_drive_slots"), 2, "{m}");
        seen.most_driving = seen
            .most_driving
            .max(metric(&m, "strands_runs{state=\"driving\"}"));
        seen.most_queued = seen
            .most_queued
            .max(metric(&m, "strands_runs{state=\"queued\"}"));
        seen.paused = metric(&m, "strands_sessions{status=\"paused\"}");
        if seen.paused >= paused {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {paused} runs reached their gates\n{m}\n{}",
            seen.paused,
            svc.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_slots_drive_a_backlog_of_500_two_at_a_time_through_a_kill() {
    // Each model call takes a while, so drives overlap when allowed to.
    let llm = FakeLlm::start_with(Behaviour {
        latency: Some(Arc::new(|_| Duration::from_millis(100))),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &super::api::deploy())]);
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let cfg = ServeConfig::api(&sandbox, &dir)
        .with("STRANDS_DRIVES", Some("2"))
        .with("STRANDS_API_RATE_PER_SEC", Some("100000"));
    let mut svc = Service::launch(cfg);

    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    let mut ids = Vec::new();
    for i in 0..RUNS {
        let r = call(
            &svc,
            "POST",
            "/api/v1/runs",
            Some(&ci),
            Some(&json!({ "workflow": "deploy", "vars": { "service": format!("svc-{i}") } })),
        );
        assert_eq!(r.status, 201, "run {i}: {}\n{}", r.body, svc.log());
        let v = r.json();
        *statuses
            .entry(v["status"].as_str().expect("a status").to_string())
            .or_default() += 1;
        ids.push(v["session_id"].as_str().expect("an id").to_string());
    }
    assert!(
        statuses.get("queued").copied().unwrap_or(0) > 0,
        "with two slots, runs started this fast wait their turn: {statuses:?}"
    );
    assert_eq!(statuses.values().sum::<usize>(), RUNS, "{statuses:?}");
    // A queued run says so when read.
    let last = call(
        &svc,
        "GET",
        &format!("/api/v1/sessions/{}", ids[RUNS - 1]),
        Some(&make_token(&sandbox, "root", "admin")),
        None,
    );
    assert_eq!(last.status, 200, "{}", last.body);
    assert_eq!(
        (
            last.json()["status"].as_str(),
            last.json()["queued"].as_bool()
        ),
        (Some("running"), Some(true)),
        "the last of {RUNS} runs waits behind the others: {}",
        last.body
    );

    // Some reach their gates; then the process is killed with the rest
    // still waiting.
    let mut seen = Seen {
        most_driving: 0,
        most_queued: 0,
        paused: 0,
    };
    watch_until_paused(
        &svc,
        50,
        Instant::now() + Duration::from_secs(60),
        &mut seen,
    );
    svc.kill();
    assert!(
        seen.paused < RUNS as i64,
        "the kill should leave runs waiting ({} paused)",
        seen.paused
    );
    assert!(
        seen.most_queued > 0,
        "/metrics showed no queued run while {} waited",
        RUNS as i64 - seen.paused
    );

    // The next process drives the rest from the store, two at a time.
    svc.restart();
    let health = svc.get("/healthz");
    assert_eq!(health.status, 200, "{}", health.body);
    watch_until_paused(
        &svc,
        RUNS as i64,
        Instant::now() + Duration::from_secs(120),
        &mut seen,
    );
    assert!(
        seen.most_driving <= 2,
        "/metrics showed {} runs driven at once with two slots",
        seen.most_driving
    );
    assert!(
        llm.peak_in_flight() <= 2,
        "the model had {} calls in flight at once with two slots",
        llm.peak_in_flight()
    );
    assert_eq!(
        llm.peak_in_flight(),
        2,
        "both slots should have been busy at some point"
    );
    // Every run stopped at its gate, and each asked the model for its
    // planner step (a call cut by the kill asked again).
    assert!(llm.count() >= RUNS, "{} model calls", llm.count());
    let m = svc.get("/metrics").body;
    assert_eq!(metric(&m, "strands_sessions{status=\"running\"}"), 0, "{m}");
    assert_eq!(metric(&m, "strands_runs{state=\"queued\"}"), 0, "{m}");
    svc.stop();
    let listed = sandbox.list();
    let listed = listed["sessions"].as_array().expect("a list");
    assert_eq!(listed.len(), RUNS);
    assert!(
        listed.iter().all(|s| s["status"] == "paused"),
        "every run at its gate: {listed:?}"
    );
}
