//! Decision analytics at size (issue 43's figures): `strands report` over
//! many recorded decisions, and what the Insights page shows
//! (`GET /api/v1/insights`, the page's figures) from a running server.
//!
//! Run with `cargo bench --bench report`. Knobs (environment):
//! - `BENCH_STORE` (`postgres` or `sled`, default `postgres`): the store.
//! - `BENCH_DECISIONS` (default `100000,1000000`): decisions per store.
//!
//! For each size the bench writes a history into a fresh store through the
//! library's own audit append (hash-chained, in batches): per decision a
//! request and an answer (a tenth of them timeouts), spread over the last
//! 20 days, across 10 workflows, 50 approvers, 5 doors and 3 rules. Then
//! it times the real binary: `strands report --json` (a whole process:
//! start, read the period's decisions, aggregate, print) — first once on
//! the fresh history (which builds the store's decisions index from the
//! audit, as the first report after an upgrade does), then the median of
//! 3 — and,
//! with `strands serve` on the same store, `GET /api/v1/insights` with an
//! admin's token (everyone's figures: the audit and the open gates; median
//! of 5 after one warm-up).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strands::audit::{AuditEvent, AuditKind};

const DOORS: [&str; 5] = ["slack", "web", "api", "teams", "email"];

fn strands(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strands"));
    for k in [
        "STRANDS_STORE",
        "STRANDS_LOG",
        "STRANDS_SERVER",
        "STRANDS_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "STRANDS_WEBHOOK_URL",
    ] {
        c.env_remove(k);
    }
    c.env("NO_COLOR", "1").arg("--store").arg(store);
    c
}

fn sizes() -> Vec<usize> {
    std::env::var("BENCH_DECISIONS")
        .unwrap_or_else(|_| "100000,1000000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("BENCH_DECISIONS: `{s}` is not a number"))
        })
        .collect()
}

/// A cheap deterministic spread (no RNG dependency).
fn mix(i: u64) -> u64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 7
}

/// The request and decision entries of decision `i`, made at `now` minus
/// up to 20 days.
fn decision(i: u64, now: chrono::DateTime<chrono::Utc>) -> [AuditEvent; 2] {
    let session = format!("{:08x}-bench-{i:012}", mix(i) as u32);
    let workflow = format!("workflow-{}", i % 10);
    let asked = now - chrono::TimeDelta::seconds((mix(i) % (20 * 86_400)) as i64);
    let waited_ms = 1_000 + mix(i + 7) % 3_600_000;
    let rule = format!("rule {}: needs 1 of group:finance", 1 + i % 3);
    let mut request = AuditEvent::new(AuditKind::Request, &session, &workflow, asked);
    request.gate = Some("approve#1".into());
    request.rule = Some(rule.clone());
    request.detail = Some("Approve the payout?".into());
    let at = asked + chrono::TimeDelta::milliseconds(waited_ms as i64);
    let mut answer = if i % 10 == 9 {
        let mut t = AuditEvent::new(AuditKind::Timeout, &session, &workflow, at);
        t.via = Some("timeout".into());
        t.decision = Some(serde_json::json!({"action": "reject"}));
        t
    } else {
        let mut a = AuditEvent::new(AuditKind::Answer, &session, &workflow, at);
        a.who = Some(format!("approver-{}", i % 50));
        a.person = a.who.clone();
        a.via = Some(DOORS[(i % 5) as usize].into());
        let action = if i.is_multiple_of(4) {
            "reject"
        } else {
            "approve"
        };
        a.decision = Some(serde_json::json!({ "action": action }));
        a.response_ms = Some(waited_ms);
        a
    };
    answer.gate = Some("approve#1".into());
    answer.rule = Some(rule);
    [request, answer]
}

/// Writes `n` decisions into the store at `location`.
fn fill(rt: &tokio::runtime::Runtime, location: &Path, n: usize) {
    let t = Instant::now();
    rt.block_on(async {
        let store = strands::store::Store::connect(location)
            .await
            .expect("open the bench store");
        let now = chrono::Utc::now();
        let mut batch = Vec::with_capacity(10_000);
        for i in 0..n as u64 {
            batch.extend(decision(i, now));
            if batch.len() >= 10_000 {
                store.append_audit(&batch).await.expect("append");
                batch.clear();
            }
        }
        if !batch.is_empty() {
            store.append_audit(&batch).await.expect("append");
        }
    });
    eprintln!(
        "  wrote {n} decisions ({} audit entries) in {:.1} s",
        2 * n,
        t.elapsed().as_secs_f64()
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn report_once(store: &Path, n: usize) -> Duration {
    let t = Instant::now();
    let out = strands(store)
        .args(["report", "--json", "--since", "30d"])
        .output()
        .expect("run strands report");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "strands report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    assert_eq!(v["total"]["decisions"], n as u64, "every decision counted");
    took
}

fn token(store: &Path) -> String {
    let out = strands(store)
        .args([
            "tokens",
            "create",
            "bench-admin",
            "--role",
            "admin",
            "--json",
        ])
        .output()
        .expect("create a token");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("token JSON");
    v["token"].as_str().expect("the token").to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` with a bearer token; the status and body.
fn get(addr: &str, path: &str, token: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn insights(store: &Path, n: usize) -> Duration {
    let token = token(store);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = strands(store)
        .args(["serve", "--bind", &addr])
        .env("STRANDS_API_RATE_PER_SEC", "1000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start strands serve");
    let until = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < until, "serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let path = "/api/v1/insights?by=workflow";
    let (status, body) = get(&addr, path, &token);
    let ok = status == 200 && body.contains(&format!("\"decisions\":{n}"));
    let mut times = Vec::new();
    if ok {
        for _ in 0..5 {
            let t = Instant::now();
            let (status, _) = get(&addr, path, &token);
            times.push(t.elapsed());
            assert_eq!(status, 200);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(ok, "insights: {status} {}", &body[..body.len().min(500)]);
    median(times)
}

fn main() {
    let pg = std::env::var("BENCH_STORE").map_or(true, |v| v == "postgres");
    println!(
        "report: strands report and the Insights figures over recorded decisions ({})",
        if pg { "PostgreSQL" } else { "sled" }
    );
    println!(
        "{:>10} | {:>22} | {:>26} | {:>30}",
        "decisions",
        "first (builds index)",
        "strands report --json",
        "GET /api/v1/insights (server)"
    );
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    for n in sizes() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let location: PathBuf = if pg {
            PathBuf::from(
                rt.block_on(strands::store::postgres::testdb::database("report"))
                    .expect("BENCH_STORE=postgres needs Debian's postgresql installed"),
            )
        } else {
            dir.path().join("store")
        };
        fill(&rt, &location, n);
        let first = report_once(&location, n);
        let report = median((0..3).map(|_| report_once(&location, n)).collect());
        let page = insights(&location, n);
        println!(
            "{n:>10} | {:>19.0} ms | {:>23.0} ms | {:>27.0} ms",
            first.as_secs_f64() * 1000.0,
            report.as_secs_f64() * 1000.0,
            page.as_secs_f64() * 1000.0
        );
    }
}
