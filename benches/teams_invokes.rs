//! The Teams room under an invoke load: `Action.Execute` invoke → HTTP
//! response (which carries the decided card) and invoke → the next model
//! request, at a fixed rate (default 50 invokes/s) while the approved runs
//! resume.
//!
//! Run with `cargo bench --bench teams_invokes`. Knobs (environment):
//! - `BENCH_INVOKES` (default 400): paused runs prepared, one approve
//!   invoke each (and one duplicate invoke each in the second round);
//! - `BENCH_RATE` (default 50): invokes per second, open loop;
//! - `BENCH_CLIENTS` (default 16): client threads sending them.
//!
//! Set-up: the real release binary (`strands serve`) with the Teams room on,
//! between the fake Bot Framework (OpenID metadata, JWKS, token endpoint,
//! connector) and the fake model of `tests/common`, in-process axum servers
//! on 127.0.0.1. N signed `@strands run bench id=<n>` messages in 40 channels
//! (the room paces each conversation to Teams' limits) start N runs of a
//! chain (agent → manual_gate → agent); once the N cards are
//! posted, round 1 sends one signed approve invoke per run on an open-loop
//! schedule, each a fresh HTTP/1.1 connection with its own Bot Framework
//! token verification (RS256 against the cached JWKS). Measured per invoke:
//! send → complete HTTP answer, and send → the model request of the step
//! after the gate. Round 2 invokes every (now decided) card again: Teams'
//! retry, answered with the same card and deciding nothing.
//!
//! The bench process shares the machine's cores with the service.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::fake_teams::FakeTeams;
use common::figures::{cpu_model, env_usize, fire, fmt_d, marker, stats, Shot};
use common::service::{http, write_workflows, ServeConfig, Service};
use common::teams_driver::{card_action, command, token};
use common::{FakeLlm, Sandbox};

const REQUESTER: &str = "aad-bench-requester";
const APPROVER: &str = "aad-bench-approver";
const SETTLE: Duration = Duration::from_secs(180);
/// Runs are started from this many channels: Teams allows a bot about 60
/// messages in 30 s per conversation (the room paces to that), so 400 runs
/// in one channel would take minutes to be asked.
const CHANNELS: usize = 40;

/// The channel run `i` is started from.
fn conversation(i: usize) -> String {
    format!("19:bench-{}@thread.tacv2", i % CHANNELS)
}

/// The `session` of the first `Action.Execute` in `v`.
fn session_of(v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&Value::from("Action.Execute")) {
                if let Some(s) = m.get("data").and_then(|d| d["session"].as_str()) {
                    return Some(s.to_string());
                }
            }
            m.values().find_map(session_of)
        }
        Value::Array(a) => a.iter().find_map(session_of),
        _ => None,
    }
}

fn summarize(name: &str, shots: &[Shot], rate: f64) {
    let first = shots.iter().map(|s| s.sent).min();
    let last = shots.iter().map(|s| s.sent).max();
    let achieved = match (first, last) {
        (Some(a), Some(b)) if b > a => (shots.len() - 1) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let late = stats(shots.iter().map(|s| s.late).collect());
    let bad: Vec<&Shot> = shots.iter().filter(|s| s.status != Some(200)).collect();
    println!(
        "{name}: {} invokes at {achieved:.1}/s (target {rate}); sent late: p99 {}; not 200: {}",
        shots.len(),
        late.as_ref().map_or("-".into(), |s| fmt_d(s.p99)),
        bad.len()
    );
    for s in bad.iter().take(5) {
        println!(
            "  invoke {}: {:?} {:?} {:?}",
            s.i, s.status, s.error, s.body
        );
    }
}

fn row(name: &str, xs: Vec<Duration>) {
    match stats(xs) {
        None => println!("{name:<34} (no samples)"),
        Some(s) => println!(
            "{name:<34} {:>5}  {:>10}  {:>10}  {:>10}  {:>10}",
            s.n,
            fmt_d(s.p50),
            fmt_d(s.p90),
            fmt_d(s.p99),
            fmt_d(s.max)
        ),
    }
}

fn main() {
    let n = env_usize("BENCH_INVOKES", 400).max(1);
    let rate = env_usize("BENCH_RATE", 50).max(1) as f64;
    let clients = env_usize("BENCH_CLIENTS", 16).max(1);
    println!("strands serve: Teams invoke bench");
    println!(
        "machine: {} {}, {} CPUs, {}; {n} runs; {rate} invokes/s from {clients} threads",
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );

    let fake = FakeTeams::start();
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let dir = write_workflows(&sandbox, &llm, &[("bench", common::BENCH_CHAIN)]);
    let mut cfg = ServeConfig::api(&sandbox, &dir);
    for (k, v) in fake.env(&[("TEAMS_SERVICE_URL_HOSTS", "127.0.0.1")]) {
        cfg = cfg.with(&k, Some(&v));
    }
    let mut svc = Service::launch(cfg);
    let here = fake.service_url();
    let bearer = format!("Bearer {}", token(&here, "signing.key.pem"));
    let headers = vec![
        ("Authorization".to_string(), bearer),
        ("Content-Type".to_string(), "application/json".to_string()),
    ];
    let messages = format!("{}/api/messages", svc.url);
    let post =
        |activity: &Value| http("POST", &messages, &headers, activity.to_string().as_bytes());

    // ---- prepare N paused runs, one card each ---------------------------
    let prep = Instant::now();
    for i in 0..n {
        let mut run = command(
            &here,
            &format!("m:{i}"),
            REQUESTER,
            &format!("run bench id={i}"),
        );
        run["conversation"]["id"] = conversation(i).into();
        let r = post(&run).expect("POST /api/messages");
        assert_eq!(
            r.status,
            200,
            "run {i}: {} {}\n{}",
            r.status,
            r.body,
            svc.log()
        );
    }
    let until = Instant::now() + SETTLE;
    let sessions: HashMap<usize, String> = loop {
        let found: HashMap<usize, String> = fake
            .hits()
            .iter()
            .filter(|h| h.method == "POST" && h.body.get("attachments").is_some())
            .filter_map(|h| {
                let card = &h.body["attachments"][0]["content"];
                Some((marker(&card.to_string())?, session_of(card)?))
            })
            .collect();
        if found.len() >= n {
            break found;
        }
        assert!(
            Instant::now() < until,
            "only {} of {n} cards within {SETTLE:?}\n{}",
            found.len(),
            svc.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "prepared {n} paused runs with their cards in {}",
        fmt_d(prep.elapsed())
    );
    std::thread::sleep(Duration::from_millis(500));

    // ---- round 1: one approve per card, resumes running ------------------
    let llm_mark = llm.count();
    let invoke = |round: &str, i: usize| {
        let mut a = card_action(
            &here,
            &format!("{round}:{i}"),
            APPROVER,
            "approve",
            &sessions[&i],
            "review#1",
        );
        a["conversation"]["id"] = conversation(i).into();
        post(&a)
    };
    let shots1 = fire(n, rate, clients, |i| invoke("r1", i));
    println!();
    summarize("round 1 (approve)", &shots1, rate);
    let decided = shots1
        .iter()
        .filter(|s| {
            s.body.contains("application/vnd.microsoft.card.adaptive")
                && s.body.contains("Approved by")
        })
        .count();
    let until = Instant::now() + SETTLE;
    while llm.count() < llm_mark + n && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut next_llm: HashMap<usize, Instant> = HashMap::new();
    let mut finishers = 0;
    for e in llm.requests().into_iter().skip(llm_mark) {
        if !e.system().contains("FINISHER") {
            continue;
        }
        finishers += 1;
        if let Some(i) = marker(&e.user()) {
            next_llm.entry(i).or_insert(e.at);
        }
    }
    let to_llm: Vec<Duration> = shots1
        .iter()
        .filter_map(|s| Some(next_llm.get(&s.i)?.saturating_duration_since(s.sent)))
        .collect();

    // ---- round 2: Teams retries every invoke -----------------------------
    let llm_mark2 = llm.count();
    let shots2 = fire(n, rate, clients, |i| invoke("r1", i));
    summarize("round 2 (retried invoke)", &shots2, rate);
    let same = shots2
        .iter()
        .zip(&shots1)
        .filter(|(b, a)| a.body == b.body)
        .count();
    std::thread::sleep(Duration::from_millis(500));

    println!();
    println!(
        "{:<34} {:>5}  {:>10}  {:>10}  {:>10}  {:>10}",
        "metric", "n", "p50", "p90", "p99", "max"
    );
    row(
        "invoke → HTTP response",
        shots1
            .iter()
            .filter(|s| s.status == Some(200))
            .map(|s| s.took)
            .collect(),
    );
    row("invoke → next model request", to_llm);
    row(
        "retried invoke → HTTP response",
        shots2
            .iter()
            .filter(|s| s.status == Some(200))
            .map(|s| s.took)
            .collect(),
    );
    println!("checks:");
    println!("  round 1 answered with the decided card: {decided}/{n}");
    println!(
        "  next-step model requests: {finishers} for {n} runs ({} distinct)",
        next_llm.len()
    );
    println!(
        "  round 2: same answer as round 1: {same}/{n}; model requests during round 2: {}",
        llm.count() - llm_mark2
    );
    println!("percentiles are nearest-rank over the invokes answered with HTTP 200");
    svc.stop();
    drop(sandbox);
}
