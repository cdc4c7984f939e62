//! SIGKILL `strands run` / `resume` / `serve` over and over, at random
//! instants and at chosen ones (see `tests/common/crash.rs`), on sled and
//! on PostgreSQL: no store left unopenable, no session lost, no tool call
//! run twice, every model request sent again audited. Plus the kill that
//! broke sled stores (issue 23), made deterministic with ptrace.
//! `STRANDS_CRASH_CYCLES` (default 40; 30 on PostgreSQL) and
//! `STRANDS_CRASH_SEED` replay or lengthen the loops; `cargo bench --bench
//! crash_loop` runs thousands of cycles.

use crate::common::crash;
use crate::common::syscall_kill::{self, Traced};
use crate::common::{run_paused, FakeLlm, Sandbox};

#[test]
fn random_kills_lose_no_session_and_run_no_tool_call_twice() {
    check(Sandbox::new(), 40);
}

/// The same loop on PostgreSQL: CLI processes and `strands serve` replicas
/// killed the same way, on a real server.
#[test]
fn random_kills_on_postgres_lose_no_session_and_run_no_tool_call_twice() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(url) = rt.block_on(strands::store::postgres::testdb::database("crash_loop")) else {
        return;
    };
    let mut sandbox = Sandbox::new();
    sandbox.store = std::path::PathBuf::from(url);
    check(sandbox, 30);
}

fn check(sandbox: Sandbox, default_cycles: usize) {
    let cycles: usize = std::env::var("STRANDS_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cycles);
    let seed: u64 = std::env::var("STRANDS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    let f = crash::run_in(sandbox, seed, cycles, 150);
    eprintln!("crash loop (seed {seed}): {f:?}");
    assert!(f.kills > cycles / 4, "most processes were killed: {f:?}");
    assert_eq!(f.stores_unopenable, 0, "seed {seed}: {f:?}");
    assert_eq!(f.sessions_lost, 0, "seed {seed}: {f:?}");
    assert!(f.runs >= 1, "{f:?}");
    assert_eq!(f.runs_completed, f.runs, "seed {seed}: {f:?}");
    assert_eq!(f.tool_calls_doubled, 0, "seed {seed}: {f:?}");
    assert!(
        f.model_requests_repeated <= f.model_calls_resent,
        "every model request sent again is audited (seed {seed}): {f:?}"
    );
}

const GATED: &str = r#"
version: 0
name: snapshot-kill
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  writer:
    prompt: You write.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Draft it.
      - type: manual_gate
        id: review
        prompt: Ship it?
      - agent: writer
        input: Ship it.
"#;

/// sled writes a snapshot of its page table whenever a process opens a
/// store whose log moved on since the last snapshot: into
/// `snap.<LSN>.generating`, renamed when complete. A process SIGKILLed in
/// between leaves the unfinished file, and sled 0.34.7 reads it as the
/// newest snapshot at the next open — "Read corrupted data", every session
/// in the store unreachable (issue 23). Here the process that opens the
/// store after a write is killed (deterministically, through ptrace) right
/// after it created that file and before it wrote to it, five times; the
/// store must open each time, the paused run still be there and resume.
#[test]
fn a_kill_while_sled_writes_its_snapshot_leaves_a_store_that_opens() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("gated.yaml", GATED, &fake);
    let id = run_paused(&sandbox, &spec);
    for n in 0..5 {
        // A write, so that the next open has a log to snapshot.
        sandbox
            .strands(&["tokens", "create", &format!("t{n}"), "--role", "approver"])
            .expect_code(0);
        let cmd = crash::command(&sandbox, &["sessions", "show", &id, "--json"]);
        let traced = syscall_kill::kill_after_creating(cmd, ".generating").expect("ptrace");
        let Traced::KilledAfterCreating(path) = traced else {
            panic!("kill {n}: sled wrote no snapshot when opening a store after a write");
        };
        let left = std::fs::metadata(&path).map(|m| m.len());
        assert_eq!(left.ok(), Some(0), "kill {n}: an empty {path} is left");
        let show = sandbox.strands(&["sessions", "show", &id, "--json"]);
        assert_eq!(
            show.code, 0,
            "kill {n}: after a kill while sled wrote its snapshot the store must open: {}",
            show.stderr
        );
        assert_eq!(show.json()["status"], "paused", "{}", show.stdout);
    }
    let out = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "completed", "{}", out.stdout);
    sandbox.strands(&["audit", "verify"]).expect_code(0);
}
