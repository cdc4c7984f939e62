//! The approval service's API under load, with the real release binary
//! (`strands serve`, no Slack) and the fake OpenAI-compatible model of
//! `tests/common` (in-process axum on 127.0.0.1, answering at once).
//!
//! Run with `cargo bench --bench api`. Knobs (environment):
//! - `BENCH_RUNS` (default 200): paused runs prepared, then answered one
//!   at a time: `POST /api/v1/sessions/{id}/answers` → the arrival at the
//!   fake model of the request for the step after the gate (its
//!   `[bench-id:<n>]` marker), and the answer's own HTTP time;
//! - `BENCH_SUBSCRIBERS` (default 1000): concurrent `GET /api/v1/events`
//!   streams (Server-Sent Events, one TCP connection each). Measured: the
//!   server's RSS before and with them, and, for one event (a run's first
//!   `step.done`), the time from the event being written (its `at`) to its
//!   arrival at each subscriber.
//!
//! The bench process (fake model, clients, 1000 readers) shares the
//! machine's cores with the server; the figures are an upper bound.

#[path = "../tests/common/mod.rs"]
mod common;

use common::api::{call, make_token};
use common::service::{write_workflows, ServeConfig, Service};
use common::{FakeLlm, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn summary(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{name}: n={} p50={:.2} ms p90={:.2} ms p99={:.2} ms max={:.2} ms",
        ms.len(),
        pct(&ms, 50.0),
        pct(&ms, 90.0),
        pct(&ms, 99.0),
        ms.last().copied().unwrap_or(f64::NAN)
    );
}

/// The resident set of process `pid`, in KiB (Linux).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let runs = env_usize("BENCH_RUNS", 200);
    let subscribers = env_usize("BENCH_SUBSCRIBERS", 1000);
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("bench", common::BENCH_CHAIN)]);
    let ops = make_token(&sandbox, "ops", "operator");
    let alice = make_token(&sandbox, "alice", "approver");
    let svc = Service::launch(
        ServeConfig::api(&sandbox, &dir)
            .with("STRANDS_API_RATE_PER_SEC", Some("1000000"))
            .with("STRANDS_API_BURST", Some("1000000")),
    );
    println!(
        "strands serve (API only), {runs} runs, {subscribers} SSE subscribers; {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // Prepare: N runs paused at their gate.
    let mut ids = Vec::with_capacity(runs);
    for n in 0..runs {
        let r = call(
            &svc,
            "POST",
            "/api/v1/runs",
            Some(&ops),
            Some(&json!({ "workflow": "bench", "vars": { "id": n.to_string() } })),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(
            r.json()["session_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let r = call(
            &svc,
            "GET",
            "/api/v1/sessions?status=paused&limit=500",
            Some(&ops),
            None,
        );
        if r.json()["count"].as_u64() == Some(runs as u64) {
            break;
        }
        assert!(Instant::now() < until, "runs never paused:\n{}", svc.log());
        std::thread::sleep(Duration::from_millis(20));
    }

    // Answer → next model request, one answer at a time.
    let mut to_model = Vec::with_capacity(runs);
    let mut http_ms = Vec::with_capacity(runs);
    for (n, id) in ids.iter().enumerate() {
        let before = llm.count();
        let sent = Instant::now();
        let r = call(
            &svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(&alice),
            Some(&json!({ "decision": "approve" })),
        );
        http_ms.push(sent.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(r.status, 200, "{}", r.body);
        // Answers go one at a time: the next request is this run's.
        let deadline = Instant::now() + Duration::from_secs(30);
        while llm.count() == before {
            assert!(
                Instant::now() < deadline,
                "no model request after answer {n}"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        to_model.push(sent.elapsed().as_secs_f64() * 1000.0);
        let marker = format!("[bench-id:{n}]");
        assert!(llm.last().user().contains(&marker), "{}", llm.last().user());
    }
    summary("answer -> HTTP 200", http_ms);
    summary("answer -> next model request", to_model);

    // SSE fan-out.
    let pid = svc.pid();
    let rss_before = rss_kib(pid);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let host = svc.url.trim_start_matches("http://").to_string();
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let (host, ops, ready) = (host.clone(), ops.clone(), ready.clone());
        tasks.push(rt.spawn(async move {
            let mut s = tokio::net::TcpStream::connect(&host).await.ok()?;
            let req = format!(
                "GET /api/v1/events HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {ops}\r\n\r\n"
            );
            s.write_all(req.as_bytes()).await.ok()?;
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let mut counted = false;
            loop {
                let n = s.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&chunk[..n]);
                if !counted && buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    counted = true;
                    ready.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let text = String::from_utf8_lossy(&buf);
                if let Some(at) = text.find("event: step.done") {
                    if let Some(end) = text[at..].find("\n\n") {
                        let arrived = chrono::Utc::now();
                        let block = &text[at..at + end];
                        let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
                        let v: serde_json::Value = serde_json::from_str(data).ok()?;
                        let written: chrono::DateTime<chrono::Utc> =
                            v["at"].as_str()?.parse().ok()?;
                        return Some((arrived - written).num_microseconds()? as f64 / 1000.0);
                    }
                }
            }
        }));
    }
    let until = Instant::now() + Duration::from_secs(60);
    while ready.load(std::sync::atomic::Ordering::SeqCst) < subscribers {
        assert!(
            Instant::now() < until,
            "only {} of {subscribers} subscribers connected",
            ready.load(std::sync::atomic::Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_with = rss_kib(pid);
    let r = call(
        &svc,
        "POST",
        "/api/v1/runs",
        Some(&ops),
        Some(&json!({ "workflow": "bench", "vars": { "id": "fanout" } })),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let latencies: Vec<f64> = rt.block_on(async {
        let mut out = Vec::new();
        for t in tasks {
            if let Ok(Ok(Some(ms))) = tokio::time::timeout(Duration::from_secs(30), t).await {
                out.push(ms);
            }
        }
        out
    });
    println!(
        "server RSS: {} KiB idle after the answers, {} KiB with {subscribers} subscribers ({:.1} KiB each)",
        rss_before,
        rss_with,
        (rss_with.saturating_sub(rss_before)) as f64 / subscribers.max(1) as f64
    );
    println!(
        "fan-out: {} of {subscribers} subscribers got the event",
        latencies.len()
    );
    summary("event written -> arrived at a subscriber", latencies);
}
