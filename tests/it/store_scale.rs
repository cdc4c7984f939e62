//! One store with 10,000 paused sessions: listing, filtering, showing and
//! resuming one of them through the real binary, and what a second process
//! sees while the store is open.
//!
//! One real paused session is made by running the example; the library then
//! clones it under fresh ids. sled lets one process open a store at a time,
//! so the `Store` is always dropped before the binary runs. Times are printed
//! (see them with `--nocapture`), never asserted: speed lives in benches/.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use strands::model::Status;
use strands::store::sled::SledStore as Store;

const SESSIONS: usize = 10_000;
const EXIT_OK: i32 = 0;
const EXIT_IO: i32 = 12;
const EXIT_PAUSED: i32 = 19;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/research-review.yaml")
}

fn strands(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strands"));
    c.env_remove("STRANDS_STORE")
        .env_remove("STRANDS_LOG")
        .env_remove("STRANDS_LOG_FORMAT")
        .env("NO_COLOR", "1")
        .arg("--store")
        .arg(store);
    c
}

/// Runs, returning (exit code, stdout, stderr, elapsed).
fn run(cmd: &mut Command) -> (i32, String, String, Duration) {
    let t = Instant::now();
    let out = cmd.output().expect("spawn strands");
    let took = t.elapsed();
    (
        out.status.code().expect("exited by signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    )
}

fn json(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {out}"))
}

/// Runs the example to its gate and returns the paused session's id.
fn start_paused(store: &Path, out_dir: &Path) -> String {
    let (code, out, err, _) = run(strands(store)
        .arg("run")
        .arg(example())
        .arg("--out")
        .arg(out_dir)
        .arg("--json"));
    assert_eq!(code, EXIT_PAUSED, "stdout:\n{out}\nstderr:\n{err}");
    let v = json(&out);
    assert_eq!(v["status"], "paused", "{v}");
    v["session_id"].as_str().expect("session_id").to_string()
}

/// (id, status) of every session, via `sessions list --json`.
fn list(store: &Path, status: Option<&str>) -> (Vec<(String, String)>, u64, Duration) {
    let mut cmd = strands(store);
    cmd.args(["sessions", "list", "--json"]);
    if let Some(s) = status {
        cmd.args(["--status", s]);
    }
    let (code, out, err, took) = run(&mut cmd);
    assert_eq!(code, EXIT_OK, "sessions list: {err}");
    let v = json(&out);
    let count = v["count"].as_u64().expect("count");
    let rows = v["sessions"]
        .as_array()
        .expect("sessions[]")
        .iter()
        .map(|s| {
            (
                s["id"].as_str().expect("id").to_string(),
                s["status"].as_str().expect("status").to_string(),
            )
        })
        .collect();
    (rows, count, took)
}

#[test]
fn ten_thousand_paused_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let out_dir = dir.path().join("art");
    let original = start_paused(&store_dir, &out_dir);

    // Clone the real session 9,999 times, then let go of the store.
    let mut ids = vec![original.clone()];
    let original_rev;
    {
        let store = Store::open(&store_dir).expect("open store");
        let template = store.get(&original).expect("load the paused session");
        assert_eq!(template.status, Status::Paused);
        assert!(!template.gates.is_empty(), "paused at a gate");
        original_rev = template.rev;
        let t = Instant::now();
        for _ in 1..SESSIONS {
            let mut s = template.clone();
            s.id = uuid::Uuid::new_v4().to_string();
            s.rev = 0;
            store.create(&mut s).expect("create clone");
            ids.push(s.id);
        }
        eprintln!(
            "store_scale: created {} clones in {:?}",
            SESSIONS - 1,
            t.elapsed()
        );
        assert_eq!(store.count(), SESSIONS);
    }

    let (rows, count, took) = list(&store_dir, None);
    eprintln!("store_scale: `sessions list --json` of {SESSIONS}: {took:?}");
    assert_eq!(count, SESSIONS as u64);
    assert_eq!(rows.len(), SESSIONS);
    assert!(rows.iter().all(|(_, st)| st == "paused"));
    let mut listed: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
    listed.sort_unstable();
    let mut want: Vec<&str> = ids.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(listed, want, "every session listed exactly once");

    let (rows, count, took) = list(&store_dir, Some("paused"));
    eprintln!("store_scale: `sessions list --status paused --json`: {took:?}");
    assert_eq!(count, SESSIONS as u64);
    assert_eq!(rows.len(), SESSIONS);
    let (_, count, _) = list(&store_dir, Some("completed"));
    assert_eq!(count, 0);

    // One clone from the middle.
    let target = ids[SESSIONS / 2].clone();
    let (code, out, err, took) =
        run(strands(&store_dir).args(["sessions", "show", &target, "--json"]));
    eprintln!("store_scale: `sessions show --json`: {took:?}");
    assert_eq!(code, EXIT_OK, "{err}");
    let v = json(&out);
    assert_eq!(v["session_id"], target.as_str(), "{v}");
    assert_eq!(v["status"], "paused", "{v}");
    assert_eq!(v["workflow"], "research-review", "{v}");
    assert_eq!(v["gate"]["id"], "review_research", "{v}");

    // A unique prefix finds it too.
    let (code, out, err, took) =
        run(strands(&store_dir).args(["sessions", "show", &target[..13], "--json"]));
    eprintln!("store_scale: `sessions show <prefix> --json`: {took:?}");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(json(&out)["session_id"], target.as_str());

    let (code, out, err, took) =
        run(strands(&store_dir).args(["resume", &target, "--approve", "--json"]));
    eprintln!("store_scale: `resume --approve`: {took:?}");
    assert_eq!(code, EXIT_OK, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(json(&out)["status"], "completed", "{out}");

    let (rows, count, _) = list(&store_dir, None);
    assert_eq!(count, SESSIONS as u64);
    let changed: Vec<&(String, String)> = rows.iter().filter(|(_, st)| st != "paused").collect();
    assert_eq!(
        changed,
        vec![&(target.clone(), "completed".to_string())],
        "only the resumed session changed"
    );
    let (_, count, _) = list(&store_dir, Some("paused"));
    assert_eq!(count, SESSIONS as u64 - 1);
    let (rows, count, _) = list(&store_dir, Some("completed"));
    assert_eq!(count, 1);
    assert_eq!(rows[0].0, target);

    // The library agrees, and the other sessions are untouched.
    let store = Store::open(&store_dir).expect("reopen");
    let done = store.get(&target).unwrap();
    assert_eq!(done.status, Status::Completed);
    assert!(done.gates.is_empty());
    let untouched = store.get(&original).unwrap();
    assert_eq!(untouched.status, Status::Paused);
    assert_eq!(untouched.rev, original_rev, "the original was not written");
    let neighbour = store.get(&ids[SESSIONS / 2 + 1]).unwrap();
    assert_eq!(neighbour.status, Status::Paused);
    assert_eq!(neighbour.rev, 1, "a clone was written once, by create");
}

#[test]
fn a_second_process_is_told_the_store_is_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    start_paused(&store_dir, &dir.path().join("art"));

    let held = Store::open(&store_dir).expect("open store");
    for args in [
        &["sessions", "list"][..],
        &["sessions", "list", "--json"][..],
    ] {
        let (code, out, err, _) = run(strands(&store_dir).args(args));
        assert_eq!(code, EXIT_IO, "{args:?}: stdout:\n{out}\nstderr:\n{err}");
        assert!(
            err.contains(&store_dir.display().to_string()),
            "{args:?}: stderr should name the store path:\n{err}"
        );
        assert!(err.contains("in use"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A run cannot start either, and says why.
    let (code, _, err, _) = run(strands(&store_dir)
        .arg("run")
        .arg(example())
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, EXIT_IO, "{err}");
    assert!(err.contains("in use"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    drop(held);

    // Released: the binary can use it again, and nothing was added.
    let (rows, count, _) = list(&store_dir, None);
    assert_eq!(count, 1, "{rows:?}");
}
