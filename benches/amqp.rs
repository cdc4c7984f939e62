//! The queue room under a burst, with a real RabbitMQ (Debian's
//! `rabbitmq-server`, started in a temporary directory by
//! `tests/common/rabbitmq.rs`) and the real `strands serve`: `BENCH_N`
//! (default 1,000) approval requests published to the requests' queue at
//! once by a pika client (`tests/fixtures/amqp/client.py bench`, publisher
//! confirms), while a second connection, in a process of its own,
//! consumes a queue bound to `gate.opened` on the events' exchange. Measured per request: the time
//! from its publish to its `gate.opened` arriving (queue → intake → store
//! → outbox → exchange → consumer); and that every request was created,
//! once. Target: p99 ≤ 200 ms. Also printed: the CPU time the service
//! used in the burst (from `/proc`), per request; and the client's
//! fastest publish rate against the rate `gate.opened` was written at
//! (when the client outruns the service, a backlog builds and p99 with it).
//!
//! Run with `cargo bench --bench amqp` (or `cargo test --release --bench amqp`).
//! `BENCH_DUMP=FILE` has the client write one line per request: its
//! number, when it was published (s from the first), the wait for its own
//! confirm, and its latencies to `gate.opened` written and on the
//! exchange (ms) — where a backlog starts, and whether the broker kept
//! everyone waiting then, shows there.
//! Skipped (printed) without RabbitMQ. The client, the broker and the
//! server share the machine's cores, so the figures are an upper bound.

#[path = "../tests/common/mod.rs"]
mod common;

use common::api::{call, make_token};
use common::rabbitmq::Broker;
use common::service::{write_workflows, ServeConfig, Service};
use common::{FakeLlm, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The CPU time (user + system, s) process `pid` has used so far: fields
/// 14 and 15 of `/proc/PID/stat`, in clock ticks (100 per second on
/// Linux); `None` elsewhere.
fn cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let n: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let Some(broker) = Broker::start(
        "bench amqp",
        &[("strands", "strands-pw"), ("carol", "carol-pw")],
    ) else {
        return;
    };
    let sandbox = Sandbox::new();
    let llm = FakeLlm::start();
    let dir = write_workflows(&sandbox, &llm, &[]);
    let root = make_token(&sandbox, "root", "admin");
    sandbox
        .strands(&["people", "add", "carol", "--amqp", "carol"])
        .expect_code(0);
    let mut cfg = ServeConfig::api(&sandbox, &dir).with(
        "STRANDS_AMQP_URL",
        Some(&broker.url("strands", "strands-pw")),
    );
    // `BENCH_LOG=strands::webhook=debug BENCH_LOG_FILE=serve.log`: what the
    // service logged, for a closer look.
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        cfg = cfg.with("STRANDS_LOG", Some(&filter));
    }
    let svc = Service::launch(cfg);
    let until = Instant::now() + Duration::from_secs(30);
    while !svc.get("/healthz").body.contains("amqp: connected") {
        assert!(Instant::now() < until, "never connected\n{}", svc.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let app = broker.client("carol", "carol-pw");
    app.bind("bench.watch", "strands.events", "gate.opened");
    let cpu_before = cpu_s(svc.pid());
    let started = Instant::now();
    let out = app.run(
        "bench",
        json!({"queue": "strands.requests", "watch": "bench.watch", "n": n, "user": "carol"}),
    );
    let all_s = started.elapsed().as_secs_f64();
    let cpu_burst = cpu_s(svc.pid()).zip(cpu_before).map(|(a, b)| a - b);
    let sorted = |key: &str| {
        let mut v: Vec<f64> = out[key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a.total_cmp(b));
        v
    };
    let lat = sorted("lat_ms");
    for (what, key) in [
        (
            "publish → gate.opened written (queue, intake, drive)",
            "written_ms",
        ),
        (
            "gate.opened written → on the exchange (outbox)",
            "outbox_ms",
        ),
        ("the client's own publish → its confirm", "confirm_ms"),
    ] {
        let v = sorted(key);
        println!(
            "  {what}: p50={:.1} ms p90={:.1} ms p99={:.1} ms",
            pct(&v, 50.0),
            pct(&v, 90.0),
            pct(&v, 99.0)
        );
    }
    // Whether the service kept up with the client: a backlog (and p99
    // over the target) builds when the client publishes faster than the
    // service writes.
    if let (Some(peak), Some(written)) = (
        out["peak_publish_per_s"].as_f64(),
        out["written_per_s"].as_f64(),
    ) {
        println!(
            "rates: the client published up to {peak:.0} requests/s (its fastest 100 in a row); gate.opened was written at {written:.0}/s (first to last)"
        );
    }
    // Every request created, once: the paused sessions the store counts.
    let metrics = svc.get("/metrics").body;
    // How well the store's writes shared their syncs (sled; the count
    // includes the start-up's few).
    let syncs = metrics
        .lines()
        .find(|l| l.starts_with("strands_store_syncs_total"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok());
    if let Some(syncs) = syncs {
        println!(
            "store syncs: {syncs} for {n} requests ({:.2} per request)",
            syncs / n as f64
        );
    }
    let created = metrics
        .lines()
        .find(|l| l.starts_with("strands_sessions{status=\"paused\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok());
    if let Some(cpu) = cpu_burst {
        println!(
            "strands' CPU time in the burst: {cpu:.2} s ({:.2} ms per request)",
            cpu * 1000.0 / n as f64
        );
    }
    println!(
        "amqp burst: {n} requests published in {:.2} s (confirmed); gate.opened for {} of them, all within {:.2} s",
        out["publish_s"].as_f64().unwrap_or(f64::NAN),
        lat.len(),
        all_s
    );
    println!(
        "publish → gate.opened on the exchange: p50={:.1} ms p90={:.1} ms p99={:.1} ms max={:.1} ms (target p99 ≤ 200 ms)",
        pct(&lat, 50.0),
        pct(&lat, 90.0),
        pct(&lat, 99.0),
        lat.last().copied().unwrap_or(f64::NAN)
    );
    let listed = call(&svc, "GET", "/api/v1/approvals?limit=1", Some(&root), None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    if let Ok(path) = std::env::var("BENCH_LOG_FILE") {
        let _ = std::fs::write(path, svc.log());
    }
    println!(
        "requests created (paused sessions in the store): {created:?} of {n}; missing gate.opened: {}",
        out["missing"]
    );
}
