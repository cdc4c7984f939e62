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
//!   server's RSS before and with them, and, for `BENCH_EVENTS` (default
//!   20) events (the first `step.done` of as many runs started 100 ms
//!   apart), the time from each event being written (its `at`) to its
//!   arrival at each subscriber, and per event the time to its first
//!   arrival (write, bus, one stream) and from its first arrival to its
//!   last (the fan-out itself);
//! - `BENCH_STORE=postgres`: two replicas on one PostgreSQL database (a
//!   server started from Debian's `postgresql` in a temporary directory):
//!   runs are started and answered on the first, the subscribers read the
//!   second, so each event crosses replicas (`LISTEN`/`NOTIFY`).
//!
//! The readers are a second process (this bench again, `BENCH_ROLE=readers`);
//! both share the machine's cores with the server, so the figures are an
//! upper bound.

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
    if std::env::var("BENCH_ROLE").is_ok_and(|r| r == "readers") {
        readers();
        return;
    }
    let runs = env_usize("BENCH_RUNS", 200);
    let subscribers = env_usize("BENCH_SUBSCRIBERS", 1000);
    let events = env_usize("BENCH_EVENTS", 20).max(1);
    let pg_url = common::figures::bench_postgres("api_bench");
    let llm = FakeLlm::start();
    let mut sandbox = Sandbox::new();
    if let Some(url) = &pg_url {
        sandbox.store = url.into();
    }
    let dir = write_workflows(&sandbox, &llm, &[("bench", common::BENCH_CHAIN)]);
    let ops = make_token(&sandbox, "ops", "operator");
    let alice = make_token(&sandbox, "alice", "approver");
    let cfg = ServeConfig::api(&sandbox, &dir)
        .with("STRANDS_API_RATE_PER_SEC", Some("1000000"))
        .with("STRANDS_API_BURST", Some("1000000"));
    let svc = Service::launch(cfg.clone());
    // On PostgreSQL the subscribers read another replica.
    let second = pg_url.as_ref().map(|_| Service::launch(cfg));
    let readers = second.as_ref().unwrap_or(&svc);
    println!(
        "strands serve (API only), {runs} runs, {subscribers} SSE subscribers, {events} events; store: {}; {} cores",
        if pg_url.is_some() {
            "PostgreSQL, two replicas (events written on one, read on the other)"
        } else {
            "sled"
        },
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

    // SSE fan-out: the subscribers are another process (this bench run
    // again as `BENCH_ROLE=readers`), so the figures are not the readers'
    // own scheduling inside the process that measures.
    let pid = readers.pid();
    let rss_before = rss_kib(pid);
    let host = readers.url.trim_start_matches("http://").to_string();
    let mut child = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .env("BENCH_ROLE", "readers")
        .env("BENCH_READERS_HOST", &host)
        .env("BENCH_READERS_TOKEN", &ops)
        .env("BENCH_SUBSCRIBERS", subscribers.to_string())
        .env("BENCH_EVENTS", events.to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the readers");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        child.stdout.take().expect("the readers' output"),
    ));
    match lines.next() {
        Some(Ok(l)) if l == "ready" => {}
        other => panic!("the readers did not connect: {other:?}"),
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_with = rss_kib(pid);
    for e in 0..events {
        let r = call(
            &svc,
            "POST",
            "/api/v1/runs",
            Some(&ops),
            Some(&json!({ "workflow": "bench", "vars": { "id": format!("fanout-{e}") } })),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut deliveries, mut complete) = (Vec::new(), 0usize);
    for line in lines.map_while(Result::ok) {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("complete"), Some(n)) => complete = n.parse().unwrap_or(0),
            (Some(seq), Some(ms)) => {
                if let (Ok(seq), Ok(ms)) = (seq.parse::<u64>(), ms.parse::<f64>()) {
                    deliveries.push((seq, ms));
                }
            }
            _ => {}
        }
    }
    let _ = child.wait();
    // Per event: its first arrival (the write, the bus, one stream) and
    // how long its last arrival came after that (the fan-out itself).
    let mut by_event: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for &(seq, ms) in &deliveries {
        let e = by_event.entry(seq).or_insert((ms, ms));
        e.0 = e.0.min(ms);
        e.1 = e.1.max(ms);
    }
    let latencies: Vec<f64> = deliveries.iter().map(|(_, ms)| *ms).collect();
    println!(
        "server RSS: {} KiB idle after the answers, {} KiB with {subscribers} subscribers ({:.1} KiB each)",
        rss_before,
        rss_with,
        (rss_with.saturating_sub(rss_before)) as f64 / subscribers.max(1) as f64
    );
    println!(
        "fan-out: {complete} of {subscribers} subscribers got all {events} events ({} deliveries)",
        latencies.len()
    );
    summary("event written -> arrived at a subscriber", latencies);
    summary(
        "event written -> its first arrival",
        by_event.values().map(|(first, _)| *first).collect(),
    );
    summary(
        "an event's first arrival -> its last",
        by_event
            .values()
            .map(|(first, last)| last - first)
            .collect(),
    );
}

/// `BENCH_ROLE=readers`: `BENCH_SUBSCRIBERS` streams of `GET /api/v1/events`
/// on `BENCH_READERS_HOST`; says `ready` once all are connected, then for
/// each of `BENCH_EVENTS` `step.done` events each stream gets, a line
/// `SEQ MS` (from the event's `at` to its arrival), and last `complete N`
/// (the streams that got them all).
fn readers() {
    use std::io::Write as _;
    let subscribers = env_usize("BENCH_SUBSCRIBERS", 1000);
    let events = env_usize("BENCH_EVENTS", 20).max(1);
    let host = std::env::var("BENCH_READERS_HOST").expect("BENCH_READERS_HOST");
    let ops = std::env::var("BENCH_READERS_TOKEN").expect("BENCH_READERS_TOKEN");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let ready = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let (host, ops, ready) = (host.clone(), ops.clone(), ready.clone());
        tasks.push(rt.spawn(async move {
            let mut got = Vec::new();
            let Ok(mut s) = tokio::net::TcpStream::connect(&host).await else {
                return got;
            };
            let req = format!(
                "GET /api/v1/events HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {ops}\r\n\r\n"
            );
            if s.write_all(req.as_bytes()).await.is_err() {
                return got;
            }
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16384];
            let mut counted = false;
            while got.len() < events {
                let n = match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => n,
                };
                let arrived = chrono::Utc::now();
                buf.extend_from_slice(&chunk[..n]);
                if !counted {
                    let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    counted = true;
                    buf.drain(..head + 4);
                    ready.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
                    let block: Vec<u8> = buf.drain(..end + 2).collect();
                    let text = String::from_utf8_lossy(&block);
                    if !text.contains("event: step.done") {
                        continue;
                    }
                    let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) else {
                        continue;
                    };
                    // The readers share the cores with the server: they
                    // read only `at` and the event's number, not the whole
                    // JSON (at 1,000 readers, parsing each event whole was
                    // milliseconds of the cores per event).
                    let Some(seq) = text
                        .lines()
                        .find_map(|l| l.strip_prefix("id: "))
                        .and_then(|n| n.trim().parse::<u64>().ok())
                    else {
                        continue;
                    };
                    let written = data
                        .split_once("\"at\":\"")
                        .and_then(|(_, rest)| rest.split_once('"'))
                        .and_then(|(at, _)| at.parse::<chrono::DateTime<chrono::Utc>>().ok());
                    if let Some(us) = written.and_then(|w| (arrived - w).num_microseconds()) {
                        got.push((seq, us as f64 / 1000.0));
                    }
                }
            }
            got
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
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    let complete = rt.block_on(async {
        let mut complete = 0;
        for t in tasks {
            if let Ok(Ok(got)) = tokio::time::timeout(Duration::from_secs(60), t).await {
                complete += usize::from(got.len() == events);
                for (seq, ms) in got {
                    let _ = writeln!(out, "{seq} {ms:.3}");
                }
            }
        }
        complete
    });
    let _ = writeln!(out, "complete {complete}");
}
