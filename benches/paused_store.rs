//! A store full of paused runs: what `strands serve` pays at start-up and
//! what listing costs, as the store grows (issue 17's figures).
//!
//! Run with `cargo bench --bench paused_store`. Knobs (environment):
//! - `BENCH_SIZES` (default `10000,100000`): paused sessions per store;
//!   `1000000` works too (about 6 GB of disk and minutes to build).
//! - `BENCH_STORE=postgres`: the stores are PostgreSQL databases on a
//!   server started from Debian's `postgresql` in a temporary directory
//!   (clones bulk-loaded with binary `COPY`, see `support/pg_copy.rs`;
//!   size is `pg_database_size`); `10000000` is the issue-42 figure
//!   (tens of GB of disk, most of an hour to load).
//! - `BENCH_SPEC=PATH`: the workflow of the paused run that is cloned
//!   (default `examples/research-review.yaml`, paused after its first
//!   step: ~4.4 KB a session in PostgreSQL); `benches/support/gate-first.yaml`
//!   pauses before any step (what the ten-million figure uses, to fit a disk).
//! - `BENCH_CLICKS` (default 300) / `BENCH_CLICK_RATE` (default 100): paused
//!   runs spread over the store approved through the API on the running
//!   server, open loop at that rate; send → 200 p50 · p99.
//! - `BENCH_KEEP=DIR`: keep each store in `DIR/N` and reuse it next time
//!   (its "first start" is then not the first after the bulk load).
//!
//! For each size the bench builds its own store: one real paused run of
//! `examples/research-review.yaml` (offline rehearsal provider) made by
//! the real binary, cloned under fresh ids through the library. Then it
//! starts the real `strands serve` on it twice and measures: spawn → first
//! 200 from `/healthz` and the server's resident memory (VmRSS) once it
//! answers, for the first start after the bulk load (sled replays the log
//! written since the store was last opened) and for a restart (what a
//! deploy pays); a page of 50 from `GET /api/v1/sessions` on the running
//! server (median of 21, half of them `status=paused`); `sessions list
//! --limit 50 --json` through the real CLI (median of 5) while the server
//! holds the store (the CLI goes through it) and alone (a new process that
//! opens the store, then reads one page of the index);
//! the store's size on disk.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strands::store::sled::SledStore;

#[path = "support/pg_copy.rs"]
mod pg_copy;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_strands")
}

fn strands(store: &Path) -> Command {
    let mut c = Command::new(bin());
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
    // The answers come from one token, faster than its default limit.
    c.env("NO_COLOR", "1")
        .env("STRANDS_API_RATE_PER_SEC", "10000")
        .env("STRANDS_API_BURST", "10000")
        .arg("--store")
        .arg(store);
    c
}

/// Answers sent to the running server (`BENCH_CLICKS`, default 300), at
/// `BENCH_CLICK_RATE` a second (default 100).
fn click_count() -> usize {
    std::env::var("BENCH_CLICKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn click_rate() -> f64 {
    std::env::var("BENCH_CLICK_RATE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100.0)
}

fn sizes() -> Vec<usize> {
    std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("BENCH_SIZES: `{s}` is not a number"))
        })
        .collect()
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let m = match e.metadata() {
            Ok(m) => m,
            Err(_) => continue,
        };
        n += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.len()
        };
    }
    n
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// `GET path` over a fresh connection; whether the answer was a 200.
fn get(addr: &str, path: &str, token: Option<&str>) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    if s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200")
}

/// `POST path` with a JSON `body` over a fresh connection; the answer
/// (`Err`: it was not a 200).
fn post(addr: &str, path: &str, token: &str, body: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    if buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200") {
        Ok(buf)
    } else {
        Err(buf)
    }
}

/// Approves each of `ids` through `POST /api/v1/sessions/{id}/answers` at
/// `rate` a second, open loop (answer i is sent at t0 + i / rate by one of
/// 16 client threads, so a slow answer never delays a later one); each
/// answer's send → complete 200, sorted.
fn clicks(addr: &str, token: &str, ids: &[String], rate: f64) -> Vec<Duration> {
    const CLIENTS: usize = 16;
    let t0 = Instant::now() + Duration::from_millis(50);
    let shots = std::thread::scope(|scope| {
        let workers = (0..CLIENTS)
            .map(|w| {
                scope.spawn(move || {
                    let mut took = Vec::new();
                    for (i, id) in ids.iter().enumerate().skip(w).step_by(CLIENTS) {
                        let at = t0 + Duration::from_secs_f64(i as f64 / rate);
                        if let Some(wait) = at.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        let sent = Instant::now();
                        let answered = post(
                            addr,
                            &format!("/api/v1/sessions/{id}/answers"),
                            token,
                            r#"{"decision":"approve"}"#,
                        );
                        if let Err(e) = answered {
                            panic!("approving {id} failed: {e}");
                        }
                        took.push(sent.elapsed());
                    }
                    took
                })
            })
            .collect::<Vec<_>>();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a client thread"))
            .collect::<Vec<_>>()
    });
    let mut shots = shots;
    shots.sort();
    shots
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn healthz(addr: &str) -> bool {
    get(addr, "/healthz", None)
}

/// Makes one real paused run of the example on `store` (a directory or a
/// PostgreSQL URL); its session id.
fn paused_run(store: &Path, art: &Path) -> String {
    let example = std::env::var_os("BENCH_SPEC")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/research-review.yaml")
        });
    let out = strands(store)
        .arg("run")
        .arg(&example)
        .arg("--out")
        .arg(art)
        .arg("--json")
        .output()
        .expect("run the example");
    assert_eq!(
        out.status.code(),
        Some(19),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["session_id"].as_str().expect("an id").to_string()
}

/// Fills a fresh PostgreSQL database with `n` paused sessions; its URL.
/// One real paused run, and `n - 1` copies of its rows through binary
/// `COPY` ([`pg_copy`]).
fn build_pg(rt: &tokio::runtime::Runtime, dir: &Path, n: usize) -> PathBuf {
    let url = rt
        .block_on(strands::store::postgres::testdb::database("paused_store"))
        .expect("BENCH_STORE=postgres needs Debian's postgresql installed");
    let url = PathBuf::from(url);
    let id = paused_run(&url, &dir.join("art"));
    let t = Instant::now();
    rt.block_on(async {
        let store = strands::store::Store::connect(&url)
            .await
            .expect("connect to the bench database");
        let template = store.get(&id).await.expect("the paused session");
        let client = pg_client(&url).await;
        pg_copy::clone_session(
            &client,
            &template.id,
            template.created_at,
            "paused",
            n.saturating_sub(1),
        )
        .await
        .expect("bulk-load the clones");
    });
    eprintln!(
        "  built {n} paused sessions in PostgreSQL in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    url
}

/// Builds a store of `n` paused sessions under `dir`.
fn build(dir: &Path, n: usize) -> PathBuf {
    let store = dir.join("store");
    let id = paused_run(&store, &dir.join("art"));
    let s = SledStore::open(&store).expect("open the store");
    let template = s.get(&id).expect("the paused session");
    let t = Instant::now();
    // Each clone is its own transaction, as the engine writes them; the
    // flush (one fsync) comes once per chunk instead of once per clone —
    // that is what makes a million buildable in minutes.
    const CHUNK: usize = 20_000;
    // Ids to answer later, spread over the whole store.
    let stride = (n / click_count().max(1)).max(1);
    let mut sample = Vec::new();
    let mut i = 1;
    while i < n {
        let end = (i + CHUNK).min(n);
        let clones = (i..end).map(|k| {
            let mut c = template.clone();
            c.id = uuid::Uuid::new_v4().to_string();
            c.created_at += chrono::TimeDelta::milliseconds(k as i64);
            if k % stride == 0 {
                sample.push(c.id.clone());
            }
            c
        });
        s.create_many(clones).expect("create clones");
        i = end;
        if i % 100_000 < CHUNK {
            eprintln!(
                "  … {i} of {n} written ({:.0} s)",
                t.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "  built {n} paused sessions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    std::fs::write(dir.join("ids"), sample.join("\n")).expect("keep the sampled ids");
    store
}

struct Figures {
    first_start: Duration,
    first_rss_kb: u64,
    restart: Duration,
    rss_kb: u64,
    api_list: Duration,
    cli_via_server: Duration,
    cli_list: Duration,
    bytes: u64,
    /// Answer send → 200, sorted (empty: no ids to click).
    clicks: Vec<Duration>,
}

/// A running `strands serve` on `store`: the child, its address and the
/// time from spawn to the first 200 from `/healthz`.
fn serve(store: &Path) -> (std::process::Child, String, Duration) {
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
    let addr = rx
        .recv_timeout(Duration::from_secs(1800))
        .expect("strands serve never said where it listens");
    while !healthz(&addr) {
        assert!(started.elapsed() < Duration::from_secs(1800), "no /healthz");
        std::thread::sleep(Duration::from_millis(5));
    }
    (child, addr, started.elapsed())
}

fn stop(mut child: std::process::Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn measure(store: &Path, ids: &[String]) -> Figures {
    let out = strands(store)
        .args(["tokens", "create", &format!("bench-{}", std::process::id())])
        .args(["--role", "admin", "--json"])
        .output()
        .expect("tokens create");
    let made: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    let token = made["token"].as_str().unwrap_or_default().to_string();
    assert!(
        !token.is_empty(),
        "tokens create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first start after the bulk load also replays the log written
    // since the store was last opened (sled snapshots at open); a restart
    // is what a deploy pays.
    let (child, _, first_start) = serve(store);
    std::thread::sleep(Duration::from_millis(500));
    let first_rss_kb = rss_kb(child.id());
    stop(child);
    let (child, addr, restart) = serve(store);
    std::thread::sleep(Duration::from_millis(500));
    let rss_kb = rss_kb(child.id());
    let mut api = Vec::new();
    for i in 0..21 {
        let t = Instant::now();
        let path = if i % 2 == 0 {
            "/api/v1/sessions?limit=50"
        } else {
            "/api/v1/sessions?status=paused&limit=50"
        };
        assert!(get(&addr, path, Some(&token)), "GET {path} failed");
        api.push(t.elapsed());
    }
    let clicked = clicks(&addr, &token, ids, click_rate());
    // The CLI while the server holds the store: it goes through it.
    let mut via = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = strands(store)
            .env("STRANDS_TOKEN", &token)
            .args(["sessions", "list", "--limit", "50", "--json"])
            .output()
            .expect("sessions list");
        via.push(t.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stop(child);
    let mut cli = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let out = strands(store)
            .args(["sessions", "list", "--limit", "50", "--json"])
            .output()
            .expect("sessions list");
        cli.push(t.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Figures {
        first_start,
        first_rss_kb,
        restart,
        rss_kb,
        api_list: median(api),
        cli_via_server: median(via),
        cli_list: median(cli),
        bytes: if store.is_dir() { dir_bytes(store) } else { 0 },
        clicks: clicked,
    }
}

/// A connection to the bench database at `url`.
async fn pg_client(url: &Path) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&url.display().to_string(), tokio_postgres::NoTls)
        .await
        .expect("connect to the bench database");
    tokio::spawn(conn);
    client
}

/// `BENCH_CLICKS` paused session ids spread over the whole table (pages
/// picked at random by `TABLESAMPLE`).
fn pg_sample(rt: &tokio::runtime::Runtime, url: &Path, n: usize) -> Vec<String> {
    let want = click_count();
    let percent = (want as f64 * 400.0 / n.max(1) as f64).min(100.0);
    rt.block_on(async {
        let client = pg_client(url).await;
        let rows = client
            .query(
                &format!(
                    "SELECT id FROM sessions TABLESAMPLE SYSTEM ({percent}) \
                     WHERE status = 'paused' LIMIT {want}"
                ),
                &[],
            )
            .await
            .expect("sample session ids");
        rows.iter().map(|r| r.get::<_, String>(0)).collect()
    })
}

/// The database's size on disk (tables and indexes).
fn pg_bytes(rt: &tokio::runtime::Runtime, url: &Path) -> u64 {
    rt.block_on(async {
        let client = pg_client(url).await;
        let row = client
            .query_one("SELECT pg_database_size(current_database())", &[])
            .await
            .expect("pg_database_size");
        u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)
    })
}

fn main() {
    println!("paused_store: serve start-up, memory and listing as paused runs pile up");
    println!(
        "{:>9} | {:>22} | {:>16} | {:>14} | {:>24} | {:>10} | {:>22}",
        "paused",
        "start → /healthz",
        "serve RSS",
        "API page of 50",
        "sessions list --limit 50",
        "store",
        "answer → 200"
    );
    println!(
        "{:>9} | {:>22} | {:>16} | {:>14} | {:>24} | {:>10} | {:>22}",
        "",
        "first · restart",
        "first · restart",
        "(server up)",
        "via server · alone",
        "",
        format!("p50 · p99 at {}/s", click_rate())
    );
    let keep = std::env::var_os("BENCH_KEEP").map(PathBuf::from);
    let pg = std::env::var("BENCH_STORE").is_ok_and(|v| v == "postgres");
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    println!("store: {}", if pg { "PostgreSQL" } else { "sled" });
    for n in sizes() {
        if pg {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let url = build_pg(&rt, dir.path(), n);
            let ids = pg_sample(&rt, &url, n);
            let mut f = measure(&url, &ids);
            f.bytes = pg_bytes(&rt, &url);
            print_row(n, &f);
            continue;
        }
        let tmp;
        let dir = match &keep {
            Some(k) => {
                let d = k.join(n.to_string());
                std::fs::create_dir_all(&d).expect("BENCH_KEEP directory");
                d
            }
            None => {
                tmp = tempfile::tempdir().expect("a temporary directory");
                tmp.path().to_path_buf()
            }
        };
        let store = if dir.join("built").exists() {
            eprintln!("  reusing the store of {n} in {}", dir.display());
            dir.join("store")
        } else {
            let _ = std::fs::remove_dir_all(dir.join("store"));
            let s = build(&dir, n);
            std::fs::write(dir.join("built"), b"").expect("mark the store built");
            s
        };
        let ids = std::fs::read_to_string(dir.join("ids")).unwrap_or_default();
        let ids = ids
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect::<Vec<_>>();
        let f = measure(&store, &ids);
        print_row(n, &f);
    }
}

fn print_row(n: usize, f: &Figures) {
    println!(
        "{:>9} | {:>8.2} s · {:>8.2} s | {:>5} · {:>5} MB | {:>11.1} ms | {:>7.1} ms · {:>8.1} ms | {:>10} | {:>6.1} · {:>6.1} ms ({})",
        n,
        f.first_start.as_secs_f64(),
        f.restart.as_secs_f64(),
        f.first_rss_kb / 1024,
        f.rss_kb / 1024,
        f.api_list.as_secs_f64() * 1000.0,
        f.cli_via_server.as_secs_f64() * 1000.0,
        f.cli_list.as_secs_f64() * 1000.0,
        mb(f.bytes),
        quantile(&f.clicks, 0.5).as_secs_f64() * 1000.0,
        quantile(&f.clicks, 0.99).as_secs_f64() * 1000.0,
        f.clicks.len()
    );
}
