//! The crash loop: one run driven to its end by `strands` processes that
//! are SIGKILLed at random moments — while a model request is in flight,
//! while a tool writes, between a checkpoint and the next, while an answer
//! is being recorded. Shared by `tests/it/crash_loop.rs` (a few dozen cycles)
//! and `benches/crash_loop.rs` (thousands).
//!
//! Where a process dies is chosen per cycle (see [`KillAt`]): at a random
//! instant, within a few milliseconds of its start (opening the store and
//! recovering), the moment sled starts writing a snapshot of its page table
//! (`snap.*.generating` appears in the store: the window that left stores
//! unopenable with sled 0.34.7, issue 23), the moment a model request
//! arrives at the fake model, or the moment a tool call's request arrives
//! at its target.
//!
//! Each run is a chain of agents that each call `http_request` once (a GET
//! of `/run-N/AGENT` on a local target that takes 20 ms to answer and
//! counts requests on arrival, so a kill often lands while the call runs)
//! and then answer, with two manual gates between them. What is checked:
//! - no session is lost: every session found after a kill is still there,
//!   and every run ends `completed`;
//! - no tool call ran twice: the target saw each agent's GET at most once
//!   (a call interrupted while running is never run again, so one may be
//!   missing — those are counted);
//! - model calls are at-least-once: every re-sent request is audited as
//!   `resent`, and the model saw each (agent, turn) exactly 1 + that many
//!   times.

use super::service::{ServeConfig, Service};
use super::target::Target;
use super::{assistant_turns, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const AGENTS: [&str; 5] = ["alpha", "bravo", "charlie", "delta", "echo"];

const SPEC: &str = r#"
version: 0
name: crash-loop
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: ./ws
  network:
    allow: ["127.0.0.1"]
agents:
  alpha:
    prompt: You are ALPHA of run $RUN at $TARGET.
    tools: [http_request]
  bravo:
    prompt: You are BRAVO of run $RUN at $TARGET.
    tools: [http_request]
  charlie:
    prompt: You are CHARLIE of run $RUN at $TARGET.
    tools: [http_request]
  delta:
    prompt: You are DELTA of run $RUN at $TARGET.
    tools: [http_request]
  echo:
    prompt: You are ECHO of run $RUN at $TARGET.
    tools: [http_request]
pattern:
  type: chain
  config:
    steps:
      - agent: alpha
        input: Start.
      - agent: bravo
      - type: manual_gate
        id: first_review
        prompt: Continue after bravo?
      - agent: charlie
      - agent: delta
      - type: manual_gate
        id: second_review
        prompt: Continue after delta?
      - agent: echo
"#;

/// A small deterministic generator (xorshift), seeded per run so a failure
/// can be replayed with `STRANDS_CRASH_SEED`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// When a process of the loop is SIGKILLed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillAt {
    /// After a random 0..=N ms.
    Within(u64),
    /// The moment a `snap.*.generating` file appears in the store: sled
    /// is writing a snapshot (it does when it opens a store whose log
    /// moved on since the last one).
    Snapshot,
    /// The moment a model request reaches the fake model.
    ModelCall,
    /// The moment a tool call's request reaches the target.
    ToolCall,
}

impl KillAt {
    /// A kill point for the next cycle: half at random instants (a
    /// tenth of those within 5 ms, i.e. while opening and recovering), the
    /// rest at the moments above.
    pub fn pick(rng: &mut Rng, kill_within_ms: u64) -> KillAt {
        match rng.below(10) {
            0..=3 => KillAt::Within(kill_within_ms),
            4 => KillAt::Within(5),
            5 | 6 => KillAt::Snapshot,
            7 | 8 => KillAt::ModelCall,
            _ => KillAt::ToolCall,
        }
    }
}

/// Whether `store` holds a snapshot sled has not finished writing.
pub fn snapshot_in_progress(store: &std::path::Path) -> bool {
    std::fs::read_dir(store)
        .map(|dir| {
            dir.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("snap.") && name.ends_with(".generating")
            })
        })
        .unwrap_or(false)
}

/// Spawns nothing: waits on `child` until `at` comes (or the child exits,
/// or `limit` passes) and SIGKILLs it then. Whether it was killed.
pub fn kill_when(
    child: &mut std::process::Child,
    at: KillAt,
    rng: &mut Rng,
    store: &std::path::Path,
    seen: &dyn Fn() -> (usize, usize),
    limit: Duration,
) -> bool {
    let started = Instant::now();
    let until = match at {
        KillAt::Within(ms) => started + Duration::from_millis(rng.below(ms + 1)),
        _ => started + limit,
    };
    let before = seen();
    loop {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return false;
        }
        let now = Instant::now();
        let due = now >= until
            || match at {
                KillAt::Within(_) => false,
                KillAt::Snapshot => snapshot_in_progress(store),
                KillAt::ModelCall => seen().0 > before.0,
                KillAt::ToolCall => seen().1 > before.1,
            };
        if due {
            let _ = child.kill();
            let _ = child.wait();
            return true;
        }
        if at != KillAt::Snapshot {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// What one crash loop saw.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub cycles: usize,
    pub kills: usize,
    /// Kills by where they landed: at a random instant, within 5 ms of
    /// the start, while sled wrote a snapshot, with a model request in
    /// flight, with a tool call in flight.
    pub kills_random: usize,
    pub kills_at_open: usize,
    pub kills_in_snapshot: usize,
    pub kills_in_model_call: usize,
    pub kills_in_tool_call: usize,
    /// `strands serve` processes killed (after start-up, while recovering
    /// or carrying out an answer given over the API).
    pub kills_serve: usize,
    /// `strands serve` processes killed while starting (opening the
    /// store, recovering runs left running).
    pub kills_serve_starting: usize,
    /// Times a store could not be opened after a kill (every session in
    /// it unreachable).
    pub stores_unopenable: usize,
    /// Runs driven (each to completion).
    pub runs: usize,
    pub sessions_lost: usize,
    pub runs_completed: usize,
    /// Tool calls whose effect is in the log more than once.
    pub tool_calls_doubled: usize,
    /// Tool calls interrupted while running (never run again; their line
    /// may be missing).
    pub tool_calls_interrupted: usize,
    /// `resent` audit entries.
    pub model_calls_resent: usize,
    /// Model requests beyond one per (agent, turn).
    pub model_requests_repeated: usize,
    pub elapsed: Duration,
}

fn agent_of(body: &Value) -> String {
    let system = super::system_of(body);
    AGENTS
        .iter()
        .find(|a| system.contains(&a.to_ascii_uppercase()))
        .map(|a| a.to_string())
        .unwrap_or_default()
}

/// `N` of "of run N at URL." in a system prompt, and the URL.
fn run_of(body: &Value) -> (String, String) {
    let system = super::system_of(body);
    let after = system.split(" of run ").nth(1).unwrap_or_default();
    let (run, rest) = after.split_once(" at ").unwrap_or_default();
    (run.to_string(), rest.trim_end_matches('.').to_string())
}

/// A model that answers each agent's first turn with one GET of
/// `/run-N/AGENT` and its second with text, after a random
/// 0–`max_latency_ms` wait.
pub fn model(seed: u64, max_latency_ms: u64) -> FakeLlm {
    let rng = Arc::new(std::sync::Mutex::new(Rng::new(seed ^ 0x9e37_79b9)));
    let mut behaviour = Behaviour::scripted(|_, body| {
        let agent = agent_of(body);
        let (run, target) = run_of(body);
        if assistant_turns(body) == 0 {
            Say::Calls(vec![tool_call(
                &format!("call-{agent}"),
                "http_request",
                json!({"method": "GET", "url": format!("{target}/run-{run}/{agent}")}),
            )])
        } else {
            Say::Text(format!("{agent} done"))
        }
    });
    behaviour.latency = Some(Arc::new(move |_| {
        let ms = rng
            .lock()
            .map(|mut r| r.below(max_latency_ms + 1))
            .unwrap_or(0);
        Duration::from_millis(ms)
    }));
    FakeLlm::start_with(behaviour)
}

/// Runs `cycles` killed processes, on as many runs as they take (each run
/// is driven by killed processes until it completes, then the next one
/// starts), finishes the last run without killing, and checks every run.
/// `kill_within_ms` bounds how long a process lives.
pub fn run(seed: u64, cycles: usize, kill_within_ms: u64) -> Figures {
    run_in(Sandbox::new(), seed, cycles, kill_within_ms)
}

/// [`run`] on the store of `sandbox` (a sled directory, or a PostgreSQL
/// URL as its `store`).
pub fn run_in(sandbox: Sandbox, seed: u64, cycles: usize, kill_within_ms: u64) -> Figures {
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let fake = model(seed, 30);
    let target = Target::start_with(Some(("*", "*", Duration::from_millis(20))));
    let mut figures = Figures::default();
    let workflows = sandbox.path().join("workflows");
    std::fs::create_dir_all(&workflows).expect("a workflows directory");
    let token = super::api::make_token(&sandbox, "crash-approver", "approver");
    let mut sessions: Vec<String> = Vec::new();
    let mut n = 0;
    while figures.cycles < cycles {
        n += 1;
        let spec = sandbox.spec(
            &format!("crash-{n}.yaml"),
            &SPEC
                .replace("$RUN", &n.to_string())
                .replace("$TARGET", &target.url),
            &fake,
        );
        let seen = || (fake.count(), target.hits().len());
        let ctx = Ctx {
            sandbox: &sandbox,
            serve: ServeConfig::api(&sandbox, &workflows)
                .with("STRANDS_LEASE_SECS", Some("1"))
                .with("STRANDS_REPOST_INTERVAL_MS", Some("0")),
            token: &token,
            cycles,
            kill_within_ms,
            seen: &seen,
        };
        let id = drive(&ctx, &spec.display().to_string(), &mut rng, &mut figures);
        sessions.push(id);
        if figures.stores_unopenable > 0 {
            // Every session is behind a store that no longer opens.
            figures.runs = sessions.len();
            figures.sessions_lost = sessions.len();
            figures.elapsed = started.elapsed();
            return figures;
        }
    }
    // Every run: still there, completed, each tool call's effect at most once.
    for (i, id) in sessions.iter().enumerate() {
        match status(&sandbox, id).as_str() {
            "completed" => figures.runs_completed += 1,
            "lost" => figures.sessions_lost += 1,
            _ => {}
        }
        for agent in AGENTS {
            let k = target.count("GET", &format!("/run-{}/{agent}", i + 1));
            if k > 1 {
                figures.tool_calls_doubled += 1;
            }
            if k == 0 {
                figures.tool_calls_interrupted += 1;
            }
        }
    }
    let count = sandbox.list()["count"].as_u64().unwrap_or(0) as usize;
    figures.sessions_lost += sessions.len().saturating_sub(count);
    figures.runs = sessions.len();
    // Model calls: at-least-once, and every repeat audited.
    let audit = sandbox.strands(&["audit", "export"]);
    figures.model_calls_resent = audit
        .stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"resent\""))
        .count();
    // Each agent answers in exactly two turns (tool call, then text).
    figures.model_requests_repeated = fake
        .count()
        .saturating_sub(sessions.len() * AGENTS.len() * 2);
    figures.elapsed = started.elapsed();
    figures
}

/// `strands --store STORE --as tester ARGS` with no input or output.
pub fn command(sandbox: &Sandbox, args: &[&str]) -> Command {
    let store = sandbox.store.display().to_string();
    let mut all = vec!["--store", store.as_str(), "--as", "tester"];
    all.extend_from_slice(args);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strands"));
    cmd.args(&all)
        .current_dir(sandbox.path())
        .env("STRANDS_RETRY_BASE_MS", "10")
        .env_remove("STRANDS_STORE")
        .env_remove("STRANDS_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// The run's status; `lost` when its session is gone, `unopenable` when
/// the store itself no longer opens.
fn status(sandbox: &Sandbox, id: &str) -> String {
    let out = sandbox.strands(&["sessions", "show", id, "--json"]);
    if out.code != 0 && out.stderr.contains("cannot open the session store") {
        eprintln!("the store no longer opens: {}", out.stderr.trim());
        return "unopenable".into();
    }
    if out.code != 0 {
        return "lost".into();
    }
    out.json()["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The id of the session of `spec`, if its run created one.
fn session_of(sandbox: &Sandbox, workflow_file: &str) -> Option<String> {
    let list = sandbox.strands(&["sessions", "list", "--json"]);
    let ids: Vec<String> = list.json()["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect();
    ids.into_iter().find(|id| {
        let show = sandbox.strands(&["sessions", "show", id, "--json"]);
        show.code == 0
            && show.json()["spec_path"]
                .as_str()
                .is_some_and(|p| p.ends_with(workflow_file))
    })
}

/// Drives one run with processes killed at random until it completes (or
/// the cycles run out), then to its end without killing. Its session id.
/// What every cycle of one loop shares.
struct Ctx<'a> {
    sandbox: &'a Sandbox,
    /// `strands serve` on the same store (the API, no Slack).
    serve: ServeConfig,
    /// An approver's API token.
    token: &'a str,
    cycles: usize,
    kill_within_ms: u64,
    /// (requests the model saw, requests the tool target saw).
    seen: &'a dyn Fn() -> (usize, usize),
}

/// One cycle on `strands serve`: SIGKILLed at a random instant while it
/// starts, or once it listens — recovering a run left running, or after it
/// was asked over the API to approve a paused one.
fn serve_cycle(ctx: &Ctx, id: &str, now: &str, rng: &mut Rng, figures: &mut Figures) {
    if rng.below(3) == 0 {
        // Killed while it starts: opening the store, recovering runs.
        let mut child = ctx
            .serve
            .command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn strands serve");
        let at = KillAt::Within(ctx.kill_within_ms);
        let limit = Duration::from_secs(5);
        if kill_when(&mut child, at, rng, &ctx.sandbox.store, ctx.seen, limit) {
            figures.kills += 1;
            figures.kills_serve_starting += 1;
        }
        let _ = child.wait();
        return;
    }
    let mut svc = Service::launch(ctx.serve.clone());
    if now == "paused" {
        let _ = super::api::call(
            &svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(ctx.token),
            Some(&json!({"decision": "approve"})),
        );
    }
    std::thread::sleep(Duration::from_millis(rng.below(ctx.kill_within_ms + 1)));
    svc.kill();
    figures.kills += 1;
    figures.kills_serve += 1;
}

fn drive(ctx: &Ctx, spec: &str, rng: &mut Rng, figures: &mut Figures) -> String {
    let (sandbox, cycles, kill_within_ms, seen) =
        (ctx.sandbox, ctx.cycles, ctx.kill_within_ms, ctx.seen);
    let sled = !sandbox.store.to_string_lossy().contains("://");
    let file = spec.rsplit('/').next().unwrap_or_default().to_string();
    let mut session: Option<String> = None;
    let args_for = |session: &Option<String>, now: &str| -> Vec<String> {
        match (session, now) {
            (None, _) => vec!["run".into(), spec.to_string()],
            (Some(id), "paused") => vec!["resume".into(), id.clone(), "--approve".into()],
            (Some(id), _) => vec!["resume".into(), id.clone()],
        }
    };
    let limit = Duration::from_millis(kill_within_ms.max(50) * 4);
    let kill = |child: &mut std::process::Child, at: KillAt, rng: &mut Rng, f: &mut Figures| {
        if kill_when(child, at, rng, &sandbox.store, seen, limit) {
            f.kills += 1;
            match at {
                KillAt::Within(5) => f.kills_at_open += 1,
                KillAt::Within(_) => f.kills_random += 1,
                KillAt::Snapshot => f.kills_in_snapshot += 1,
                KillAt::ModelCall => f.kills_in_model_call += 1,
                KillAt::ToolCall => f.kills_in_tool_call += 1,
            }
        }
    };
    while figures.cycles < cycles {
        let mut at = KillAt::pick(rng, kill_within_ms);
        if at == KillAt::Snapshot && !sled {
            at = KillAt::Within(kill_within_ms);
        }
        if let (KillAt::Snapshot, Some(id)) = (at, session.as_deref()) {
            // sled writes its snapshot when the first process opens the
            // store after a writer: that is this reader, killed in it.
            figures.cycles += 1;
            let reader = command(sandbox, &["sessions", "show", id, "--json"]);
            if rng.below(2) == 0 {
                // Right after sled created the file, before a byte of it
                // is written (ptrace): the worst instant.
                let traced = super::syscall_kill::kill_after_creating(reader, ".generating");
                if let Ok(super::syscall_kill::Traced::KilledAfterCreating(_)) = traced {
                    figures.kills += 1;
                    figures.kills_in_snapshot += 1;
                }
            } else {
                // When the file is seen: usually written, not yet renamed.
                let mut reader = reader;
                let mut child = reader.spawn().expect("spawn strands");
                kill(&mut child, at, rng, figures);
            }
            at = KillAt::Within(kill_within_ms);
        }
        let now = session
            .as_deref()
            .map(|id| status(sandbox, id))
            .unwrap_or_default();
        if now == "unopenable" {
            figures.stores_unopenable += 1;
            break;
        }
        if now == "completed" || now == "lost" || figures.cycles >= cycles {
            break;
        }
        figures.cycles += 1;
        if let (0, Some(id)) = (rng.below(6), session.as_deref()) {
            serve_cycle(ctx, id, &now, rng, figures);
            continue;
        }
        let args = args_for(&session, &now);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = command(sandbox, &refs).spawn().expect("spawn strands");
        kill(&mut child, at, rng, figures);
        if session.is_none() {
            session = session_of(sandbox, &file);
        }
    }
    if figures.stores_unopenable > 0 {
        return session.unwrap_or_default();
    }
    // To its end, without killing.
    for _ in 0..20 {
        let Some(id) = session.clone() else {
            let out = sandbox.strands(&["run", spec]);
            assert!(matches!(out.code, 0 | 19), "{}", out.stderr);
            session = session_of(sandbox, &file);
            continue;
        };
        let args = match status(sandbox, &id).as_str() {
            "paused" => vec!["resume", id.as_str(), "--approve"],
            "running" => vec!["resume", id.as_str()],
            _ => break,
        };
        let out = sandbox.strands(&args);
        assert!(matches!(out.code, 0 | 19), "{}", out.stderr);
    }
    session.expect("the run created a session")
}
