//! The Slack approval bot under a click load: click → HTTP 200 latency and
//! click → the next LLM request, at a fixed rate (default 200 clicks/s).
//!
//! Run with `cargo bench --bench slack_clicks`. Knobs (environment):
//! - `BENCH_CLICKS` (default 400): paused sessions prepared, one approve
//!   click each (and one duplicate click each in the second round);
//! - `BENCH_RATE` (default 200): clicks per second, open loop;
//! - `BENCH_CLIENTS` (default 32): client threads sending the clicks;
//! - `BENCH_STORE=postgres`: two `strands serve` replicas on one PostgreSQL
//!   database (a server started from Debian's `postgresql` in a temporary
//!   directory), the clicks alternating between them; the bot-side metrics
//!   below are the first replica's.
//!
//! Set-up: the real release binary (`strands serve`) between the fake Slack
//! Web API and the fake OpenAI-compatible model of `tests/common` (both
//! in-process axum servers on 127.0.0.1, answering at once). N signed
//! `/strands run bench id=<n>` commands start N runs of a chain (agent →
//! manual_gate → agent); once the bot has posted the N approval messages,
//! round 1 sends one signed `block_actions` Approve click per message on an
//! open-loop schedule (click i at t0 + i / rate, from a pool of blocking
//! client threads so a slow answer never delays a later send). Each click is
//! a fresh HTTP/1.1 connection (`Connection: close`). Measured per click:
//! send → complete HTTP answer, and send → arrival at the fake model of the
//! request for the step after the gate (found by the `[bench-id:<n>]`
//! marker the step's input carries). Round 2 clicks every (now completed)
//! message again as another user: the "already decided" path, HTTP only.
//!
//! The bench process (fakes and clients) shares the machine's cores with
//! the bot, as a colocated Slack would not; the figures are an upper bound
//! on the bot's own cost.

#[path = "../tests/common/mod.rs"]
mod common;

use common::fake_slack::{
    block_actions_payload, http, interaction_body, signed, ApprovalMessage, Bot, FakeSlack,
    Signing, ACK_DEADLINE,
};
use common::figures::{cpu_model, env_usize, fire, fmt_d, marker, stats, Shot, Stats};
use common::{FakeLlm, Sandbox};
use std::collections::HashMap;
use std::time::{Duration, Instant};

const REQUESTER: &str = "U01REQUESTER";
const APPROVER: &str = "U04APPROVER";
const LATE: &str = "U05LATECLICK";
const OPS: &str = "C0OPS";
/// How long the bench waits for the bot to catch up after a phase.
const SETTLE: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------- helpers

struct Row {
    metric: String,
    stats: Option<Stats>,
    /// Slack's acknowledgement deadline applies to this row.
    deadline: bool,
}

fn print_table(rows: &[Row]) {
    let w = rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(6)
        .max(6);
    println!(
        "{:<w$}  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}",
        "metric", "n", "p50", "p90", "p99", "max", "3 s / p99"
    );
    println!("{}", "-".repeat(w + 2 + 5 + 5 * 12));
    for r in rows {
        let Some(s) = &r.stats else {
            println!("{:<w$}  {:>5}  (no samples)", r.metric, 0);
            continue;
        };
        let ratio = if !r.deadline {
            "-".to_string()
        } else if s.p99.is_zero() {
            "inf".to_string()
        } else {
            format!("{:.0}x", ACK_DEADLINE.as_secs_f64() / s.p99.as_secs_f64())
        };
        println!(
            "{:<w$}  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}",
            r.metric,
            s.n,
            fmt_d(s.p50),
            fmt_d(s.p90),
            fmt_d(s.p99),
            fmt_d(s.max),
            ratio
        );
    }
}

// ---------------------------------------------------------------- /metrics

/// The bot's Prometheus text, as `name{labels}` → value.
fn scrape(bot: &Bot) -> HashMap<String, f64> {
    let reply = bot.get("/metrics");
    assert_eq!(reply.status, 200, "GET /metrics: {reply:?}");
    reply
        .body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

fn metric(m: &HashMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

/// Polls /metrics until `done` holds or `timeout` passes; the last scrape.
fn wait_metrics(
    bot: &Bot,
    timeout: Duration,
    done: impl Fn(&HashMap<String, f64>) -> bool,
) -> (bool, HashMap<String, f64>) {
    let until = Instant::now() + timeout;
    loop {
        let m = scrape(bot);
        if done(&m) {
            return (true, m);
        }
        if Instant::now() >= until {
            return (false, m);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The click-to-ack histogram's change between two scrapes, as a line.
fn ack_histogram_delta(before: &HashMap<String, f64>, after: &HashMap<String, f64>) -> String {
    let d = |k: &str| metric(after, k) - metric(before, k);
    let count = d("strands_click_ack_seconds_count");
    let sum = d("strands_click_ack_seconds_sum");
    let mean = if count > 0.0 { sum / count } else { 0.0 };
    // The smallest bucket bound holding at least 99% of the observations.
    let mut buckets: Vec<(f64, f64)> = after
        .keys()
        .filter_map(|k| {
            let le = k
                .strip_prefix("strands_click_ack_seconds_bucket{le=\"")?
                .strip_suffix("\"}")?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, d(k)))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p99_bound = buckets
        .iter()
        .find(|(_, c)| count > 0.0 && *c >= 0.99 * count)
        .map(|(b, _)| {
            if b.is_finite() {
                format!("≤ {}", fmt_d(Duration::from_secs_f64(*b)))
            } else {
                "> largest bucket".into()
            }
        })
        .unwrap_or_else(|| "-".into());
    format!(
        "count {count:.0}, sum {sum:.4} s, mean {}, p99 bucket {p99_bound}",
        fmt_d(Duration::from_secs_f64(mean))
    )
}

// ---------------------------------------------------------------- load

/// Sends `bodies[i]` signed to `urls[i % len]`, open loop (see [`common::figures::fire`]).
fn fire_clicks(urls: &[String], bodies: &[String], rate: f64, clients: usize) -> Vec<Shot> {
    fire(bodies.len(), rate, clients, |i| {
        let (mut headers, body) = signed(Signing::Valid, bodies[i].as_bytes());
        headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        http("POST", &urls[i % urls.len()], &headers, &body)
    })
}

/// The signed-body-to-be of an Approve click on `msg` by `user`.
fn click_body(slack: &FakeSlack, msg: &ApprovalMessage, user: &str) -> String {
    let button = msg.button("strands_approve");
    let payload = block_actions_payload(
        msg,
        &button,
        user,
        &slack.issue_trigger_id(),
        &slack.response_url(),
    );
    interaction_body(&payload)
}

/// One round's load summary: a line, and the (index, latency) of each 200.
fn summarize(name: &str, shots: &[Shot], rate: f64) -> Vec<(usize, Duration)> {
    let first = shots.iter().map(|s| s.sent).min();
    let last = shots.iter().map(|s| s.sent).max();
    let achieved = match (first, last) {
        (Some(a), Some(b)) if b > a => (shots.len() - 1) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let lateness = stats(shots.iter().map(|s| s.late).collect());
    let errors: Vec<&Shot> = shots.iter().filter(|s| s.error.is_some()).collect();
    let non_200: Vec<&Shot> = shots
        .iter()
        .filter(|s| s.status.is_some_and(|c| c != 200))
        .collect();
    let with_body = shots
        .iter()
        .filter(|s| s.status == Some(200) && !s.body.trim().is_empty())
        .count();
    println!(
        "{name}: {} clicks sent at {achieved:.1} clicks/s (target {rate}); sent late vs schedule: p99 {}, max {}; non-200: {}; transport errors: {}; 200s with a body: {with_body}",
        shots.len(),
        lateness.as_ref().map_or("-".into(), |s| fmt_d(s.p99)),
        lateness.as_ref().map_or("-".into(), |s| fmt_d(s.max)),
        non_200.len(),
        errors.len()
    );
    for s in non_200.iter().take(5) {
        println!("  click {}: HTTP {:?} {:?}", s.i, s.status, s.body);
    }
    for s in errors.iter().take(5) {
        println!("  click {}: {}", s.i, s.error.as_deref().unwrap_or(""));
    }
    shots
        .iter()
        .filter(|s| s.status == Some(200))
        .map(|s| (s.i, s.took))
        .collect()
}

// ---------------------------------------------------------------- main

fn main() {
    let n = env_usize("BENCH_CLICKS", 400).max(1);
    let rate = env_usize("BENCH_RATE", 200).max(1) as f64;
    let clients = env_usize("BENCH_CLIENTS", 32).max(1);

    println!("strands serve: Slack click bench");
    println!(
        "machine: {} {}, {} CPUs available, {}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
    println!(
        "binary: {}; {n} sessions; {rate} clicks/s open loop from {clients} client threads, one connection per click",
        env!("CARGO_BIN_EXE_strands")
    );

    let pg_url = common::figures::bench_postgres("slack_clicks");
    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let mut sandbox = Sandbox::new();
    if let Some(url) = &pg_url {
        sandbox.store = url.into();
        println!("store: PostgreSQL, two replicas, clicks alternating between them");
    }
    let mut bot = Bot::start(&sandbox, &slack, &llm, &[("bench", common::BENCH_CHAIN)]);
    let mut second = pg_url
        .as_ref()
        .map(|_| Bot::launch(&slack, bot.cfg.clone()));
    let interactions: Vec<String> = std::iter::once(&bot)
        .chain(second.as_ref())
        .map(|b| format!("{}/slack/interactions", b.url))
        .collect();

    // ---- prepare N paused sessions ------------------------------------
    let prep = Instant::now();
    for i in 0..n {
        let ack = bot.command(REQUESTER, OPS, &format!("run bench id={i}"));
        if ack.status != 200 || !ack.body.contains("started bench as") {
            panic!(
                "/strands run bench id={i}: HTTP {} {:?}\n--- bot output\n{}",
                ack.status,
                ack.body,
                bot.log()
            );
        }
    }
    let (ok, m) = wait_metrics(&bot, SETTLE, |m| {
        metric(m, "strands_gates_opened_total") >= n as f64
    });
    if !ok {
        panic!(
            "only {} of {n} approval messages posted within {SETTLE:?}\n{}",
            metric(&m, "strands_gates_opened_total"),
            slack.describe()
        );
    }
    let mut messages: Vec<Option<ApprovalMessage>> = vec![None; n];
    for msg in slack.approvals() {
        if let Some(i) = marker(&msg.text()).filter(|i| *i < n) {
            if messages[i].replace(msg).is_some() {
                panic!("two approval messages for [bench-id:{i}]");
            }
        }
    }
    let messages: Vec<ApprovalMessage> = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| m.unwrap_or_else(|| panic!("no approval message for [bench-id:{i}]")))
        .collect();
    println!(
        "prepared {n} paused sessions in {} ({n} slash commands, {} model requests, {} approval messages; handle {})",
        fmt_d(prep.elapsed()),
        llm.count(),
        messages.len(),
        messages[0].handle()
    );
    std::thread::sleep(Duration::from_millis(500));

    // ---- round 1: one approve click per message -----------------------
    let bodies: Vec<String> = messages
        .iter()
        .map(|m| click_body(&slack, m, APPROVER))
        .collect();
    let m0 = scrape(&bot);
    let slack_mark = slack.len();
    let llm_mark = llm.count();
    let shots1 = fire_clicks(&interactions, &bodies, rate, clients);
    println!();
    let acked1 = summarize("round 1 (first approve per message)", &shots1, rate);

    // The step after the gate, per session, then the runs' ends.
    let until = Instant::now() + SETTLE;
    while llm.count() < llm_mark + n && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, m1) = wait_metrics(&bot, Duration::from_secs(30), |m| {
        metric(m, "strands_sessions{status=\"completed\"}") >= n as f64
    });
    std::thread::sleep(Duration::from_millis(500));
    let mut next_llm: HashMap<usize, Instant> = HashMap::new();
    for e in llm.requests().into_iter().skip(llm_mark) {
        if !e.system().contains("FINISHER") {
            continue;
        }
        if let Some(i) = marker(&e.user()) {
            next_llm.entry(i).or_insert(e.at);
        }
    }
    let mut to_llm = Vec::new();
    let mut llm_before_ack = 0;
    for s in &shots1 {
        if let Some(at) = next_llm.get(&s.i) {
            to_llm.push(at.saturating_duration_since(s.sent));
            if *at < s.sent + s.took {
                llm_before_ack += 1;
            }
        }
    }
    let refusals1 = slack
        .since(slack_mark)
        .iter()
        .filter(|c| c.method == "chat.postEphemeral" || c.method == "response_url")
        .count();
    let updates1 = slack
        .since(slack_mark)
        .iter()
        .filter(|c| c.method == "chat.update" && c.ok())
        .count();

    // ---- round 2: a duplicate click on every decided message ----------
    let bodies: Vec<String> = messages
        .iter()
        .map(|m| click_body(&slack, m, LATE))
        .collect();
    let slack_mark2 = slack.len();
    let llm_mark2 = llm.count();
    let shots2 = fire_clicks(&interactions, &bodies, rate, clients);
    let acked2 = summarize("round 2 (duplicate click, already decided)", &shots2, rate);
    let told = |slack: &FakeSlack| {
        slack
            .since(slack_mark2)
            .iter()
            .filter(|c| c.method == "chat.postEphemeral" && c.text().contains("already"))
            .count()
    };
    slack.wait_until(Duration::from_secs(30), |s| told(s) >= n);
    std::thread::sleep(Duration::from_millis(300));
    let m2 = scrape(&bot);

    // ---- report ---------------------------------------------------------
    println!();
    let rows = [
        Row {
            metric: "click → HTTP 200".into(),
            stats: stats(acked1.iter().map(|(_, d)| *d).collect()),
            deadline: true,
        },
        Row {
            metric: "click → next LLM request".into(),
            stats: stats(to_llm),
            deadline: false,
        },
        Row {
            metric: "duplicate click → HTTP 200".into(),
            stats: stats(acked2.iter().map(|(_, d)| *d).collect()),
            deadline: true,
        },
    ];
    print_table(&rows);
    println!(
        "\nSlack's deadline for acknowledging an interaction: {} (the \"3 s / p99\" column)",
        fmt_d(ACK_DEADLINE)
    );
    println!(
        "bot-side /metrics strands_click_ack_seconds (handler time, no connection/transport):"
    );
    println!("  round 1: {}", ack_histogram_delta(&m0, &m1));
    println!("  round 2: {}", ack_histogram_delta(&m1, &m2));
    println!("checks:");
    println!(
        "  approvals recorded (strands_gates_answered_total{{decision=\"approve\"}}): {}/{n}",
        metric(&m1, "strands_gates_answered_total{decision=\"approve\"}")
    );
    println!(
        "  next-step model requests seen: {}/{n} ({} arrived before the click's HTTP answer)",
        next_llm.len(),
        llm_before_ack
    );
    println!(
        "  sessions completed after round 1: {}/{n}; messages updated (chat.update): {updates1}/{n}; refusal notes in round 1: {refusals1}",
        metric(&m1, "strands_sessions{status=\"completed\"}")
    );
    println!(
        "  round 2: \"already …\" notes {}/{n}; approvals recorded afterwards {} (unchanged: {}); model requests during round 2: {}",
        told(&slack),
        metric(&m2, "strands_gates_answered_total{decision=\"approve\"}"),
        metric(&m2, "strands_gates_answered_total{decision=\"approve\"}")
            == metric(&m1, "strands_gates_answered_total{decision=\"approve\"}"),
        llm.count() - llm_mark2
    );
    let refused = metric(
        &m2,
        "strands_requests_refused_total{reason=\"bad_signature\"}",
    ) + metric(
        &m2,
        "strands_requests_refused_total{reason=\"stale_timestamp\"}",
    );
    println!("  requests refused by the signature check: {refused}");
    println!("percentiles are nearest-rank over the clicks answered with HTTP 200");

    bot.stop();
    if let Some(b) = second.as_mut() {
        b.stop();
    }
    drop(sandbox);
}
