//! The crash loop: one run driven to its end by `strands` processes that
//! are SIGKILLed at random moments — while a model request is in flight,
//! while a tool writes, between a checkpoint and the next, while an answer
//! is being recorded. Shared by `tests/it/crash_loop.rs` (a few dozen cycles)
//! and `benches/crash_loop.rs` (thousands).
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

/// What one crash loop saw.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    pub cycles: usize,
    pub kills: usize,
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
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let fake = model(seed, 30);
    let target = Target::start_with(Some(("*", "*", Duration::from_millis(20))));
    let sandbox = Sandbox::new();
    let mut figures = Figures::default();
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
        let id = drive(
            &sandbox,
            &spec.display().to_string(),
            &mut rng,
            cycles,
            kill_within_ms,
            &mut figures,
        );
        sessions.push(id);
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

fn command(sandbox: &Sandbox, args: &[&str]) -> Command {
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

fn status(sandbox: &Sandbox, id: &str) -> String {
    let out = sandbox.strands(&["sessions", "show", id, "--json"]);
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
fn drive(
    sandbox: &Sandbox,
    spec: &str,
    rng: &mut Rng,
    cycles: usize,
    kill_within_ms: u64,
    figures: &mut Figures,
) -> String {
    let file = spec.rsplit('/').next().unwrap_or_default().to_string();
    let mut session: Option<String> = None;
    let args_for = |session: &Option<String>, now: &str| -> Vec<String> {
        match (session, now) {
            (None, _) => vec!["run".into(), spec.to_string()],
            (Some(id), "paused") => vec!["resume".into(), id.clone(), "--approve".into()],
            (Some(id), _) => vec!["resume".into(), id.clone()],
        }
    };
    while figures.cycles < cycles {
        let now = session
            .as_deref()
            .map(|id| status(sandbox, id))
            .unwrap_or_default();
        if now == "completed" || now == "lost" {
            break;
        }
        figures.cycles += 1;
        let args = args_for(&session, &now);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = command(sandbox, &refs).spawn().expect("spawn strands");
        let until = Instant::now() + Duration::from_millis(rng.below(kill_within_ms + 1));
        let mut exited = false;
        while Instant::now() < until {
            if matches!(child.try_wait(), Ok(Some(_))) {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if !exited {
            let _ = child.kill();
            figures.kills += 1;
        }
        let _ = child.wait();
        if session.is_none() {
            session = session_of(sandbox, &file);
        }
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
