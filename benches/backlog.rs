//! A restart with a backlog of queued runs: what `strands serve` pays when
//! it finds many runs started and not yet driven (issue 42's figures).
//!
//! Run with `cargo bench --bench backlog`. Knobs (environment):
//! - `BENCH_QUEUED` (default `10000,100000`): queued runs per store.
//! - `BENCH_DRIVES`: `STRANDS_DRIVES` for the server (default: its own, 8
//!   per core).
//!
//! For each size the bench builds a sled store of `n` runs just started
//! (status `running`, no step done): one made through the library's
//! engine from `examples/research-review.yaml` (the offline rehearsal
//! provider: no model, no network), cloned under fresh ids. Then it starts
//! the real `strands serve` on it and measures: spawn → first 200 from
//! `/healthz`; the server's peak resident memory (VmHWM) until every run
//! has reached its gate; the time until all are paused (from `/metrics`);
//! and the most runs `/metrics` showed driven at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strands::store::sled::SledStore;

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
        "STRANDS_DRIVES",
    ] {
        c.env_remove(k);
    }
    if let Ok(d) = std::env::var("BENCH_DRIVES") {
        c.env("STRANDS_DRIVES", d);
    }
    c.env("NO_COLOR", "1").arg("--store").arg(store);
    c
}

fn sizes() -> Vec<usize> {
    std::env::var("BENCH_QUEUED")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("BENCH_QUEUED: `{s}` is not a number"))
        })
        .collect()
}

fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// `GET path`'s body when the answer is a 200.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    let ok = buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200");
    ok.then(|| buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
}

fn metric(text: &str, series: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse::<i64>().ok())
        .unwrap_or(0)
}

/// A sled store under `dir` with `n` runs started and never driven.
fn build(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("store");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/research-review.yaml");
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let template = rt.block_on(async {
        let store = strands::store::Store::Sled(SledStore::open(&path).expect("open the store"));
        let spec = strands::spec::load(&example, &Default::default()).expect("the example");
        let start = strands::engine::Start {
            variables: spec.resolve_variables(&[]).expect("the example's inputs"),
            started_by: "bench".into(),
            out_dir: dir.join("art"),
            origin: None,
            overwrite_artifacts: true,
        };
        strands::engine::Engine::new(&store)
            .create(&spec, start)
            .await
            .expect("create a run")
    });
    drop(rt);
    let s = SledStore::open(&path).expect("open the store");
    let t = Instant::now();
    const CHUNK: usize = 20_000;
    let mut i = 1;
    while i < n {
        let end = (i + CHUNK).min(n);
        let clones = (i..end).map(|k| {
            let mut c = template.clone();
            c.id = uuid::Uuid::new_v4().to_string();
            c.created_at += chrono::TimeDelta::milliseconds(k as i64);
            c
        });
        s.create_many(clones).expect("create clones");
        i = end;
    }
    eprintln!(
        "  built {n} queued runs in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    path
}

struct Figures {
    healthz: Duration,
    peak_rss_kb: u64,
    all_paused: Duration,
    most_driving: i64,
    slots: i64,
}

fn measure(store: &Path, n: usize) -> Figures {
    let started = Instant::now();
    let mut child = strands(store)
        .arg("serve")
        .env("STRANDS_BIND", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strands serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let _ = tx.send(addr);
            }
        }
    });
    let addr: String = rx
        .recv_timeout(Duration::from_secs(600))
        .expect("strands serve never said where it listens");
    while get(&addr, "/healthz").is_none() {
        assert!(started.elapsed() < Duration::from_secs(600), "no /healthz");
        std::thread::sleep(Duration::from_millis(2));
    }
    let healthz = started.elapsed();
    let mut most_driving = 0;
    let (all_paused, slots) = loop {
        let m = get(&addr, "/metrics").unwrap_or_default();
        most_driving = most_driving.max(metric(&m, "strands_runs{state=\"driving\"}"));
        if metric(&m, "strands_sessions{status=\"paused\"}") >= n as i64 {
            break (started.elapsed(), metric(&m, "strands_drive_slots"));
        }
        let failed = metric(&m, "strands_sessions{status=\"failed\"}");
        assert!(failed == 0, "{failed} runs failed");
        assert!(
            started.elapsed() < Duration::from_secs(7200),
            "not all paused"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let peak_rss_kb = status_kb(child.id(), "VmHWM:");
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    Figures {
        healthz,
        peak_rss_kb,
        all_paused,
        most_driving,
        slots,
    }
}

fn main() {
    println!("backlog: strands serve restarted on a store of queued runs");
    println!(
        "{:>8} | {:>14} | {:>14} | {:>16} | {:>12} | {:>14}",
        "queued", "start → healthz", "peak RSS", "all at gates", "runs/s", "driving (max)"
    );
    for n in sizes() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = build(dir.path(), n);
        let f = measure(&store, n);
        println!(
            "{:>8} | {:>11.0} ms | {:>11.1} MB | {:>14.1} s | {:>12.0} | {:>6} of {:>3}",
            n,
            f.healthz.as_secs_f64() * 1000.0,
            f.peak_rss_kb as f64 / 1000.0,
            f.all_paused.as_secs_f64(),
            n as f64 / f.all_paused.as_secs_f64(),
            f.most_driving,
            f.slots
        );
    }
}
