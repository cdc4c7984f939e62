//! Pause / resume latency, measured against seed 000's budget
//! (save < 50 ms, resume < 1 s), plus `sessions list` / `show` with a large
//! store.
//!
//! Run with `cargo bench --bench pause_resume`. Knobs (environment):
//! - `BENCH_RUNS` (default 1000): paused runs started, then resumed, in process;
//! - `BENCH_SESSIONS` (default 10000): paused sessions in the listing store;
//! - `BENCH_CLI_RUNS` (default 20): end-to-end `strands resume` processes;
//! - `BENCH_BRANCHES` (default 8) / `BENCH_FANOUT_RUNS` (default 100): a
//!   parallel run whose every branch stops at its own gate, all open at once.
//!
//! - `BENCH_STORE=postgres`: the pause/resume rows (1.) on a PostgreSQL
//!   database (a server started from Debian's `postgresql` in a temporary
//!   directory) instead of sled.
//!
//! The model is an in-process fake OpenAI-compatible server (axum) that
//! answers at once with a fixed ~2 KB reply and records when each request
//! arrived, so the figures are strands' own cost: sled writes + flushes,
//! JSON, templates, HTTP over loopback. Stores live in fresh temporary
//! directories (`TMPDIR`, else /tmp), so the disk under them matters.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::header;
use axum::routing::post;
use axum::Router;
use chrono::Utc;
use strands::channel::Detached;
use strands::engine::{Engine, Start};
use strands::model::{Answer, Decision};
use strands::model::{Session, Status};
use strands::store::Store;

/// Answers through the engine's intake (as the CLI does), then drives.
async fn answer_and_resume(
    engine: &mut Engine<'_>,
    id: &str,
    gate: Option<&str>,
    answer: Answer,
) -> strands::Result<Session> {
    let who = answer.by.clone();
    let asker = strands::engine::Asker {
        who: &who,
        admins: &[],
        default_approvers: &[],
        shared: false,
        member_of: &|_| false,
        idp_groups: &[],
        now: chrono::Utc::now(),
    };
    if let Err(refusal) = engine.submit(id, gate, answer, &asker).await? {
        panic!("the answer was refused: {refusal}");
    }
    engine.resume(id, &mut Detached).await
}

/// Seed 000's budgets.
const SAVE_BUDGET: Duration = Duration::from_millis(50);
const RESUME_BUDGET: Duration = Duration::from_secs(1);
/// Untimed start + resume cycles before measuring (connection, caches).
const WARMUP: usize = 3;
/// Repeats for the in-process store reads on the big store.
const READ_REPEATS: usize = 20;
/// Repeats for each spawned `strands sessions ...` process.
const CLI_REPEATS: usize = 5;

type Arrivals = Arc<Mutex<Vec<Instant>>>;

// ---------------------------------------------------------------- fake model

/// A ~2 KB assistant reply with usage, as an OpenAI Chat Completions body.
fn reply_body() -> String {
    let sentence = "Durable gates let a workflow stop for a human and continue later. ";
    let mut content = String::new();
    while content.len() < 2000 {
        content.push_str(sentence);
    }
    serde_json::json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 480, "total_tokens": 600}
    })
    .to_string()
}

struct FakeServer {
    port: u16,
    arrivals: Arrivals,
    reply_bytes: usize,
}

impl FakeServer {
    fn count(&self) -> usize {
        self.arrivals.lock().expect("arrival log poisoned").len()
    }

    /// When request number `index` (0-based, over the server's life) arrived.
    fn arrival(&self, index: usize) -> Instant {
        let log = self.arrivals.lock().expect("arrival log poisoned");
        *log.get(index).unwrap_or_else(|| {
            panic!(
                "expected model request #{index} at the fake server, saw only {}",
                log.len()
            )
        })
    }
}

/// Serves `POST /v1/chat/completions` on 127.0.0.1:0 from its own thread and
/// runtime, so the engine's runtime is not shared with it.
fn start_fake_server() -> FakeServer {
    let arrivals: Arrivals = Arc::new(Mutex::new(Vec::with_capacity(8192)));
    let body = reply_body();
    let reply_bytes = body.len();
    let body: &'static str = Box::leak(body.into_boxed_str());
    let log = arrivals.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("fake-openai".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("fake server: cannot build its tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("fake server: cannot bind 127.0.0.1:0");
                let port = listener
                    .local_addr()
                    .expect("fake server: no local address")
                    .port();
                // `Bytes` reads the whole request body first, so the instant
                // is "request fully received", and keep-alive stays usable.
                let app = Router::new().route(
                    "/v1/chat/completions",
                    post(move |_req: Bytes| {
                        let log = log.clone();
                        async move {
                            log.lock()
                                .expect("arrival log poisoned")
                                .push(Instant::now());
                            ([(header::CONTENT_TYPE, "application/json")], body)
                        }
                    }),
                );
                tx.send(port).expect("fake server: cannot report its port");
                axum::serve(listener, app)
                    .await
                    .expect("fake server: serve failed");
            });
        })
        .expect("cannot spawn the fake server thread");
    let port = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the fake server did not start within 10 s");
    FakeServer {
        port,
        arrivals,
        reply_bytes,
    }
}

// ---------------------------------------------------------------- workflow

fn spec_text(port: u16) -> String {
    format!(
        r#"version: 0
name: bench-pause-resume
description: agent step, manual gate, agent step
runtime:
  provider: openai
  host: http://127.0.0.1:{port}/v1
  model_id: bench
agents:
  drafter:
    prompt: You draft short notes.
  writer:
    prompt: You write short, clear reports.
pattern:
  type: chain
  config:
    steps:
      - agent: drafter
        input: Draft a note on durable human approval gates.
      - type: manual_gate
        id: review
        prompt: Review the draft before the report is written.
        show_preview: true
        preview_length: 300
      - agent: writer
        input: "Write a report from this draft: {{{{ steps[0].response }}}}"
"#
    )
}

/// `branches` branches, each agent → manual gate → agent, then a reduce.
fn fanout_text(port: u16, branches: usize) -> String {
    let mut text = format!(
        r#"version: 0
name: bench-fanout
runtime:
  provider: openai
  host: http://127.0.0.1:{port}/v1
  model_id: bench
  max_parallel: {branches}
agents:
  drafter:
    prompt: You draft short notes.
pattern:
  type: parallel
  config:
    branches:
"#
    );
    for b in 0..branches {
        text.push_str(&format!(
            r#"      - id: b{b}
        steps:
          - agent: drafter
            input: Draft note {b}.
          - type: manual_gate
            id: review{b}
            prompt: Review note {b}.
          - agent: drafter
            input: "Finish: {{{{ steps[0].response }}}}"
"#
        ));
    }
    text.push_str(
        r#"    reduce:
      agent: drafter
      input: Merge the notes.
"#,
    );
    text
}

fn start_args(spec: &strands::spec::Spec, out: &Path) -> Start {
    Start {
        variables: spec
            .resolve_variables(&[])
            .expect("the bench spec's variables do not resolve"),
        started_by: "bench".into(),
        out_dir: out.to_path_buf(),
        origin: None,
        overwrite_artifacts: true,
    }
}

fn approve() -> Answer {
    Answer {
        decision: Decision::Approve,
        by: "bench".into(),
        at: Utc::now(),
        via: "bench".into(),
        vars: Default::default(),
        call: None,
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    }
}

fn expect_status(s: &Session, want: Status, what: &str) {
    if s.status != want {
        panic!(
            "{what}: session {} is {} (wanted {want}); failure: {:?}",
            s.id, s.status, s.failure
        );
    }
}

// ---------------------------------------------------------------- stats

struct Stats {
    n: usize,
    median: Duration,
    p99: Duration,
    max: Duration,
}

/// Nearest-rank percentiles.
fn stats(mut xs: Vec<Duration>) -> Stats {
    assert!(!xs.is_empty(), "no samples");
    xs.sort();
    let rank = |q: f64| {
        let r = (q * xs.len() as f64).ceil() as usize;
        xs[r.clamp(1, xs.len()) - 1]
    };
    Stats {
        n: xs.len(),
        median: rank(0.50),
        p99: rank(0.99),
        max: xs[xs.len() - 1],
    }
}

fn fmt_d(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

struct Row {
    metric: String,
    stats: Stats,
    budget: Option<Duration>,
}

fn row(metric: impl Into<String>, xs: Vec<Duration>, budget: Option<Duration>) -> Row {
    Row {
        metric: metric.into(),
        stats: stats(xs),
        budget,
    }
}

fn print_table(title: &str, rows: &[Row]) {
    let w = rows
        .iter()
        .map(|r| r.metric.len())
        .max()
        .unwrap_or(6)
        .max(6);
    println!("\n{title}");
    println!(
        "{:<w$}  {:>6}  {:>10}  {:>10}  {:>10}  {:>8}  {:>11}",
        "metric", "runs", "median", "p99", "max", "budget", "budget/p99"
    );
    println!(
        "{}",
        "-".repeat(w + 2 + 6 + 2 + 10 * 3 + 4 + 2 + 8 + 2 + 11)
    );
    for r in rows {
        let (budget, ratio) = match r.budget {
            Some(b) => {
                let p99 = r.stats.p99.as_secs_f64();
                let ratio = if p99 > 0.0 {
                    format!("{:.1}x", b.as_secs_f64() / p99)
                } else {
                    "inf".into()
                };
                (fmt_d(b), ratio)
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<w$}  {:>6}  {:>10}  {:>10}  {:>10}  {:>8}  {:>11}",
            r.metric,
            r.stats.n,
            fmt_d(r.stats.median),
            fmt_d(r.stats.p99),
            fmt_d(r.stats.max),
            budget,
            ratio
        );
    }
}

// ---------------------------------------------------------------- helpers

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer")),
        Err(_) => default,
    }
}

/// (apparent bytes, allocated bytes) under `dir`.
fn dir_size(dir: &Path) -> (u64, u64) {
    let mut apparent = 0;
    let mut allocated = 0;
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read directory {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        let meta = entry
            .metadata()
            .unwrap_or_else(|e| panic!("cannot stat {}: {e}", entry.path().display()));
        if meta.is_dir() {
            let (a, b) = dir_size(&entry.path());
            apparent += a;
            allocated += b;
        } else {
            apparent += meta.len();
            allocated += allocated_bytes(&meta);
        }
    }
    (apparent, allocated)
}

#[cfg(unix)]
fn allocated_bytes(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn allocated_bytes(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

fn print_store_size(label: &str, dir: &Path, sessions: usize) {
    if !dir.exists() {
        return; // a database URL
    }
    let (apparent, allocated) = dir_size(dir);
    println!(
        "store size on disk {label}: {} apparent, {} allocated ({sessions} sessions, {} apparent per session)",
        fmt_bytes(apparent),
        fmt_bytes(allocated),
        fmt_bytes(apparent / sessions.max(1) as u64)
    );
}

/// The `strands` binary of this build: Cargo's `CARGO_BIN_EXE_strands`, else
/// `target/<profile>/strands` next to the bench executable (which lives in
/// `target/<profile>/deps/`).
fn strands_binary() -> Option<PathBuf> {
    let exe = format!("strands{}", std::env::consts::EXE_SUFFIX);
    let from_cargo = option_env!("CARGO_BIN_EXE_strands").map(PathBuf::from);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent()?.parent().map(|d| d.join(&exe)));
    from_cargo.into_iter().chain(beside).find(|p| p.is_file())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Runs `strands` with `args`, checking it exits 0; returns the wall time
/// and stdout length.
fn run_cli(bin: &Path, args: &[&str]) -> (Duration, usize) {
    let t0 = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    let took = t0.elapsed();
    if !out.status.success() {
        panic!(
            "`strands {}` exited {:?}: {}",
            args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (took, out.stdout.len())
}

// ---------------------------------------------------------------- main

fn main() {
    strands::http::install_crypto();
    let runs = env_usize("BENCH_RUNS", 1000).max(1);
    let n_sessions = env_usize("BENCH_SESSIONS", 10_000).max(1);
    let cli_runs = env_usize("BENCH_CLI_RUNS", 20);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("cannot build the bench's tokio runtime");
    let server = start_fake_server();
    let text = spec_text(server.port);
    let spec = strands::spec::parse(
        &text,
        Path::new("bench.yaml"),
        &strands::spec::Limits::default(),
    )
    .unwrap_or_else(|e| panic!("the bench spec does not parse: {e}"));
    let bin = strands_binary();

    println!("strands pause/resume bench");
    println!(
        "machine: {} {}, {} CPUs available, {}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model()
    );
    println!(
        "fake model: http://127.0.0.1:{}/v1, reply {} bytes; stores under {}",
        server.port,
        server.reply_bytes,
        std::env::temp_dir().display()
    );

    // ---- 1. pause and resume, in process -------------------------------
    let pause_dir = tempfile::Builder::new()
        .prefix("strands-bench-pause-")
        .tempdir()
        .expect("cannot create a temporary store directory");
    let pg_url = std::env::var("BENCH_STORE")
        .is_ok_and(|v| v == "postgres")
        .then(|| {
            rt.block_on(strands::store::postgres::testdb::database("pause_resume"))
                .expect("BENCH_STORE=postgres needs Debian's postgresql installed")
        });
    let store_path = match &pg_url {
        Some(url) => PathBuf::from(url),
        None => pause_dir.path().join("store"),
    };
    println!(
        "pause/resume store: {}",
        if pg_url.is_some() {
            "PostgreSQL"
        } else {
            "sled"
        }
    );
    let out_dir = pause_dir.path().join("out");
    let mut start_total = Vec::with_capacity(runs);
    let mut reply_to_paused = Vec::with_capacity(runs);
    let mut checkpoint = Vec::with_capacity(runs);
    let mut resume_to_request = Vec::with_capacity(runs);
    let mut resume_total = Vec::with_capacity(runs);
    let mut session_bytes = 0;
    let cli_ids: Vec<String>;
    let open_started = Instant::now();
    {
        let store = rt
            .block_on(Store::connect(&store_path))
            .expect("cannot open the bench store");
        println!(
            "Store::connect (empty store): {}",
            fmt_d(open_started.elapsed())
        );
        let mut engine = Engine::new(&store);

        for _ in 0..WARMUP {
            let s = rt
                .block_on(engine.start(&spec, start_args(&spec, &out_dir), &mut Detached))
                .expect("warm-up start failed");
            expect_status(&s, Status::Paused, "warm-up start");
            let s = rt
                .block_on(answer_and_resume(&mut engine, &s.id, None, approve()))
                .expect("warm-up resume failed");
            expect_status(&s, Status::Completed, "warm-up resume");
        }

        let mut ids = Vec::with_capacity(runs);
        for _ in 0..runs + cli_runs {
            let k = server.count();
            let t0 = Instant::now();
            let mut s = rt
                .block_on(engine.start(&spec, start_args(&spec, &out_dir), &mut Detached))
                .expect("start failed");
            let t1 = Instant::now();
            expect_status(&s, Status::Paused, "start");
            assert_eq!(server.count(), k + 1, "start should make one model call");
            start_total.push(t1 - t0);
            reply_to_paused.push(t1.saturating_duration_since(server.arrival(k)));
            // The same write + flush the engine does when it pauses.
            let c0 = Instant::now();
            rt.block_on(store.checkpoint(&mut s))
                .expect("checkpoint of the paused session failed");
            checkpoint.push(c0.elapsed());
            session_bytes = serde_json::to_vec(&s)
                .expect("cannot encode the session")
                .len();
            ids.push(s.id);
        }
        // Sessions beyond `runs` are for the end-to-end rows; their pause
        // samples are dropped so every row counts the same `runs`.
        cli_ids = ids.split_off(runs);
        start_total.truncate(runs);
        reply_to_paused.truncate(runs);
        checkpoint.truncate(runs);
        print_store_size(
            &format!(
                "after {WARMUP} warm-up runs (completed) + {} paused runs",
                runs + cli_runs
            ),
            &store_path,
            rt.block_on(store.count()).expect("count"),
        );

        for id in &ids {
            let k = server.count();
            let answer = approve();
            let t0 = Instant::now();
            let s = rt
                .block_on(answer_and_resume(&mut engine, id, None, answer))
                .expect("resume failed");
            let t1 = Instant::now();
            expect_status(&s, Status::Completed, "resume");
            assert_eq!(server.count(), k + 1, "resume should make one model call");
            resume_to_request.push(server.arrival(k).saturating_duration_since(t0));
            resume_total.push(t1 - t0);
        }
        print_store_size(
            &format!("after resuming {runs} of them"),
            &store_path,
            rt.block_on(store.count()).expect("count"),
        );
    }
    println!("one paused session is {session_bytes} bytes of JSON");

    // End to end through the binary: a fresh process loads the store and
    // continues to the next model request.
    let mut cli_resume_to_request = Vec::new();
    let mut cli_resume_total = Vec::new();
    if let Some(bin) = bin.as_ref().filter(|_| !cli_ids.is_empty()) {
        let store_arg = store_path.display().to_string();
        for id in &cli_ids {
            let k = server.count();
            let t0 = Instant::now();
            let child = Command::new(bin)
                .args(["--store", &store_arg, "resume", id, "--approve", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
            let out = child
                .wait_with_output()
                .expect("cannot wait for `strands resume`");
            let t1 = Instant::now();
            if !out.status.success() {
                panic!(
                    "`strands resume {id} --approve` exited {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            cli_resume_to_request.push(server.arrival(k).saturating_duration_since(t0));
            cli_resume_total.push(t1 - t0);
        }
    }

    // ---- 2. a store with many paused sessions --------------------------
    let list_dir = tempfile::Builder::new()
        .prefix("strands-bench-list-")
        .tempdir()
        .expect("cannot create a temporary store directory");
    let list_path = list_dir.path().join("store");
    let real = n_sessions.min(3);
    let seeding;
    let mut list_all = Vec::new();
    let mut list_paused = Vec::new();
    let mut get_full = Vec::new();
    let mut get_prefix = Vec::new();
    let some_id;
    {
        let store = Store::open(&list_path).expect("cannot open the listing store");
        let mut engine = Engine::new(&store);
        let mut template = None;
        for _ in 0..real {
            let s = rt
                .block_on(engine.start(
                    &spec,
                    start_args(&spec, &list_dir.path().join("out")),
                    &mut Detached,
                ))
                .expect("start failed");
            expect_status(&s, Status::Paused, "start");
            template = Some(s);
        }
        let template = template.expect("no paused session to copy");
        // There is no batch insert: each create is its own write + flush.
        let seed_started = Instant::now();
        for i in 0..n_sessions - real {
            let mut s = template.clone();
            s.id = uuid::Uuid::new_v4().to_string();
            s.created_at = template.created_at - chrono::Duration::milliseconds(i as i64 + 1);
            s.updated_at = s.created_at;
            s.rev = 0;
            rt.block_on(store.create(&mut s))
                .expect("cannot seed a session");
        }
        seeding = seed_started.elapsed();
        assert_eq!(
            rt.block_on(store.count()).expect("count"),
            n_sessions,
            "seeded store has the wrong count"
        );
        some_id = template.id.clone();
        for _ in 0..READ_REPEATS {
            let t = Instant::now();
            let all = rt.block_on(store.list(None)).expect("list failed");
            list_all.push(t.elapsed());
            assert_eq!(all.len(), n_sessions);
            let t = Instant::now();
            let paused = rt
                .block_on(store.list(Some(Status::Paused)))
                .expect("list paused failed");
            list_paused.push(t.elapsed());
            assert_eq!(paused.len(), n_sessions);
            let t = Instant::now();
            let s = rt.block_on(store.get(&some_id)).expect("get failed");
            get_full.push(t.elapsed());
            assert_eq!(s.id, some_id);
            let t = Instant::now();
            let s = rt
                .block_on(store.get(&some_id[..8]))
                .expect("get by prefix failed");
            get_prefix.push(t.elapsed());
            assert_eq!(s.id, some_id);
        }
        print_store_size(
            &format!("with {n_sessions} paused sessions"),
            &list_path,
            rt.block_on(store.count()).expect("count"),
        );
    }
    println!(
        "seeding {} sessions with Store::create: {} ({} per create)",
        n_sessions - real,
        fmt_d(seeding),
        fmt_d(seeding / (n_sessions - real).max(1) as u32)
    );

    let mut reopen = Vec::new();
    for _ in 0..CLI_REPEATS {
        let t = Instant::now();
        let store = Store::open(&list_path).expect("cannot reopen the listing store");
        reopen.push(t.elapsed());
        drop(store);
    }

    let mut cli_list = Vec::new();
    let mut cli_show = Vec::new();
    let mut list_stdout = 0;
    let mut show_stdout = 0;
    if let Some(bin) = &bin {
        let store_arg = list_path.display().to_string();
        for _ in 0..CLI_REPEATS {
            let (t, n) = run_cli(bin, &["--store", &store_arg, "sessions", "list", "--json"]);
            cli_list.push(t);
            list_stdout = n;
            let (t, n) = run_cli(
                bin,
                &[
                    "--store", &store_arg, "sessions", "show", &some_id, "--json",
                ],
            );
            cli_show.push(t);
            show_stdout = n;
        }
    }

    // ---- 3. parallel fan-out: every branch waits at its own gate ---------
    let branches = env_usize("BENCH_BRANCHES", 8).max(2);
    let fan_runs = env_usize("BENCH_FANOUT_RUNS", 100).max(1);
    let fan_spec = strands::spec::parse(
        &fanout_text(server.port, branches),
        Path::new("fan.yaml"),
        &strands::spec::Limits::default(),
    )
    .unwrap_or_else(|e| panic!("the fan-out spec does not parse: {e}"));
    let fan_dir = tempfile::Builder::new()
        .prefix("strands-bench-fanout-")
        .tempdir()
        .expect("cannot create a temporary store directory");
    let mut fan_pause = Vec::with_capacity(fan_runs);
    let mut fan_answer_to_request = Vec::with_capacity(fan_runs);
    let mut fan_answer_total = Vec::with_capacity(fan_runs);
    let mut fan_bytes = 0;
    {
        let store =
            Store::open(&fan_dir.path().join("store")).expect("cannot open the fan-out store");
        let mut engine = Engine::new(&store);
        for _ in 0..fan_runs {
            let k = server.count();
            let t0 = Instant::now();
            let s = rt
                .block_on(engine.start(
                    &fan_spec,
                    start_args(&fan_spec, &fan_dir.path().join("out")),
                    &mut Detached,
                ))
                .expect("fan-out start failed");
            fan_pause.push(t0.elapsed());
            expect_status(&s, Status::Paused, "fan-out start");
            assert_eq!(
                server.count(),
                k + branches,
                "every branch's first step ran"
            );
            assert_eq!(
                s.open_gates().count(),
                branches,
                "every branch's gate is open"
            );
            fan_bytes = serde_json::to_vec(&s)
                .expect("cannot encode the session")
                .len();
            // Answer a parked gate (not the focused one): the last branch's.
            let handle = s
                .open_gates()
                .last()
                .map(|g| g.handle())
                .expect("open gates");
            let k = server.count();
            let t0 = Instant::now();
            let s = rt
                .block_on(answer_and_resume(
                    &mut engine,
                    &s.id,
                    Some(&handle),
                    approve(),
                ))
                .expect("fan-out resume failed");
            fan_answer_total.push(t0.elapsed());
            expect_status(&s, Status::Paused, "fan-out answer");
            assert_eq!(server.count(), k + 1, "only the answered branch moved");
            assert_eq!(s.open_gates().count(), branches - 1);
            fan_answer_to_request.push(server.arrival(k).saturating_duration_since(t0));
        }
    }

    // ---- report ---------------------------------------------------------
    let title = format!(
        "pause / resume, in process ({runs} runs after {WARMUP} warm-up; fake model answers at once)"
    );
    let pause_rows = [
        row(
            "pause: Store::checkpoint of a paused session (write+flush)",
            checkpoint,
            Some(SAVE_BUDGET),
        ),
        row(
            "pause: model request at server -> step+gate saved (1 flush)",
            reply_to_paused,
            Some(SAVE_BUDGET),
        ),
        row(
            "start: create + model call + step & gate checkpoints",
            start_total,
            None,
        ),
        row(
            "resume: load + answer -> next model request (2 flushes)",
            resume_to_request,
            Some(RESUME_BUDGET),
        ),
        row(
            "resume: whole call, to completed & flushed",
            resume_total,
            None,
        ),
    ];
    print_table(&title, &pause_rows);
    if !cli_resume_to_request.is_empty() {
        print_table(
            "resume through the binary (new process: store open + load + answer)",
            &[
                row(
                    "`strands resume ID --approve`: spawn -> next model request",
                    cli_resume_to_request,
                    Some(RESUME_BUDGET),
                ),
                row(
                    "`strands resume ID --approve`: spawn -> exit",
                    cli_resume_total,
                    None,
                ),
            ],
        );
    }
    print_table(
        &format!(
            "parallel fan-out: {branches} branches each stop at a gate, all open at once ({fan_runs} runs; session with {branches} open gates: {})",
            fmt_bytes(fan_bytes as u64)
        ),
        &[
            row(
                format!("start -> {branches} model calls -> {branches} gates open, flushed"),
                fan_pause,
                None,
            ),
            row(
                "answer a parked gate (--gate): load -> next model request",
                fan_answer_to_request,
                Some(RESUME_BUDGET),
            ),
            row(
                format!("answer a parked gate: whole call, paused again with {} open", branches - 1),
                fan_answer_total,
                None,
            ),
        ],
    );
    let mut rows = vec![
        row(
            format!("Store::list(None), {n_sessions} sessions"),
            list_all,
            None,
        ),
        row(
            format!("Store::list(Some(Paused)), {n_sessions} sessions"),
            list_paused,
            None,
        ),
        row("Store::get(full id)", get_full, None),
        row("Store::get(8-char prefix)", get_prefix, None),
        row(format!("Store::open, {n_sessions} sessions"), reopen, None),
    ];
    if !cli_list.is_empty() {
        rows.push(row(
            format!(
                "`strands sessions list --json` (stdout {})",
                fmt_bytes(list_stdout as u64)
            ),
            cli_list,
            None,
        ));
        rows.push(row(
            format!(
                "`strands sessions show ID --json` (stdout {})",
                fmt_bytes(show_stdout as u64)
            ),
            cli_show,
            None,
        ));
    }
    let title = format!(
        "reading a store of {n_sessions} paused sessions (in process: {READ_REPEATS} repeats; binary: {CLI_REPEATS})"
    );
    print_table(&title, &rows);
    match &bin {
        Some(b) => println!("\nbinary: {}", b.display()),
        None => println!(
            "\nnote: no strands binary found beside the bench (build it with `cargo build --release`); the end-to-end rows were skipped"
        ),
    }
    println!("percentiles are nearest-rank; median of an even count is the lower middle");
}
