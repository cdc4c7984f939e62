//! Stores outlive binaries: sessions written by earlier releases
//! (`tests/fixtures/sessions/v1`, exactly as the release before the
//! session format 2 wrote them: every pattern paused and finished, two
//! gates open at once, a tool-call gate, a quorum vote, a recorded answer
//! not yet carried out, Slack messages inside the session) decode, a store
//! holding them is migrated once on open, and a paused one resumes with
//! this binary.

use crate::common::{FakeLlm, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};
use strands::model::{wire, Status, SESSION_FORMAT};
use strands::store::sled::SledStore as Store;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions/v1");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the fixtures directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 15, "the fixtures are there");
    paths
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            (name, std::fs::read(&p).expect("read a fixture"))
        })
        .collect()
}

#[test]
fn every_format_1_session_decodes_into_the_current_shape() {
    for (name, bytes) in fixtures() {
        let old: Value = serde_json::from_slice(&bytes).expect("a JSON fixture");
        let s = wire::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.format, SESSION_FORMAT, "{name}");
        assert_eq!(s.id, old["id"].as_str().unwrap_or_default(), "{name}");
        assert_eq!(
            serde_json::to_value(s.status).expect("status"),
            old["status"],
            "{name}"
        );
        // Every open gate is kept, by handle.
        let mut handles: Vec<String> = Vec::new();
        for g in old["gate"].as_object().into_iter().chain(
            old["parked"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object),
        ) {
            handles.push(format!(
                "{}#{}",
                g["id"].as_str().unwrap_or_default(),
                g["instance"]
            ));
        }
        let mut now: Vec<String> = s.gates.keys().cloned().collect();
        handles.sort();
        now.sort();
        assert_eq!(now, handles, "{name}");
        // The focused gate comes first.
        if let Some(g) = old["gate"].as_object() {
            assert_eq!(
                s.first_gate().map(|g| g.id.clone()).as_deref(),
                g["id"].as_str(),
                "{name}"
            );
        }
        // A recorded answer not carried out stays recorded, for its gate.
        match old["pending_answer"].as_object() {
            Some(a) => {
                let p = s
                    .pending
                    .as_ref()
                    .unwrap_or_else(|| panic!("{name}: lost the answer"));
                assert_eq!(Some(p.answer.by.as_str()), a["by"].as_str(), "{name}");
                assert!(s.gates.contains_key(&p.gate), "{name}");
            }
            None => assert!(s.pending.is_none(), "{name}"),
        }
        // History, usage, state and the conversation survive unchanged.
        let again = serde_json::to_value(&s).expect("encode");
        for key in [
            "history",
            "usage",
            "state",
            "agent_turn",
            "variables",
            "output",
        ] {
            assert_eq!(again[key], old[key], "{name}: {key}");
        }
        // Written back, it reads as the current format.
        let bytes = serde_json::to_vec(&s).expect("encode");
        assert_eq!(wire::decode(&bytes).expect("decode again"), s, "{name}");
    }
}

/// Opens the store once sled's background threads of the writer above
/// have let go of its lock.
fn open_when_released(path: &Path) -> Store {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match Store::open(path) {
            Ok(s) => return s,
            Err(e) if std::time::Instant::now() < until && e.to_string().contains("in use") => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("open migrates: {e}"),
        }
    }
}

/// Writes fixtures as raw rows of a sled store, as the old release left it.
fn old_store(dir: &Path, rows: &[(String, Vec<u8>)]) {
    let db = sled::open(dir).expect("a sled store");
    let sessions = db.open_tree("sessions").expect("sessions");
    let summaries = db.open_tree("summaries").expect("summaries");
    for (_, bytes) in rows {
        let v: Value = serde_json::from_slice(bytes).expect("json");
        let id = v["id"].as_str().expect("id");
        sessions
            .insert(id.as_bytes(), bytes.as_slice())
            .expect("insert");
        let summary = serde_json::json!({
            "id": id, "workflow": v["workflow"], "status": v["status"],
            "created_at": v["created_at"], "updated_at": v["updated_at"],
            "gate": v["gate"]["id"], "prompt": v["gate"]["prompt"],
        });
        summaries
            .insert(
                id.as_bytes(),
                serde_json::to_vec(&summary).expect("summary"),
            )
            .expect("insert");
    }
    db.flush().expect("flush");
}

#[test]
fn an_old_store_is_migrated_once_and_its_slack_messages_move_beside_the_sessions() {
    // One row per session: several fixtures are one session at different
    // moments; the store keeps the last one written.
    let mut by_id = std::collections::BTreeMap::new();
    for (name, bytes) in fixtures() {
        let v: Value = serde_json::from_slice(&bytes).expect("json");
        by_id.insert(v["id"].as_str().expect("id").to_string(), (name, bytes));
    }
    let rows: Vec<(String, Vec<u8>)> = by_id.into_values().collect();
    let dir = tempfile::tempdir().expect("tempdir");
    old_store(dir.path(), &rows);
    let store = open_when_released(dir.path());
    for (name, bytes) in &rows {
        let old: Value = serde_json::from_slice(bytes).expect("json");
        let id = old["id"].as_str().expect("id");
        let s = store.load(id).expect("load").expect("still there");
        assert_eq!(s.format, SESSION_FORMAT, "{name}");
        let notes = store.notifications(id).expect("notifications");
        if let Some(n) = old["notification"].as_object() {
            let ts = n["ts"].as_str().expect("a posted message");
            assert!(
                notes.iter().any(|m| m.ts.as_deref() == Some(ts)),
                "{name}: the message moved: {notes:?}"
            );
            // A click on it still finds its session.
            let channel = n["channel"].as_str().expect("channel");
            let target = store.message_target(channel, ts).expect("index");
            assert_eq!(target.map(|t| t.session), Some(id.to_string()), "{name}");
        } else {
            assert!(notes.is_empty(), "{name}");
        }
    }
    drop(store);
    // Opening again changes nothing more.
    let store = open_when_released(dir.path());
    assert_eq!(store.count(), rows.len());
}

#[test]
fn a_session_paused_by_the_old_release_resumes_with_this_one() {
    let (_, bytes) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "chain-manual-gate-0")
        .expect("the fixture");
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    // The model it talked to is gone; point the snapshot at today's fake.
    let mut v: Value = serde_json::from_slice(&bytes).expect("json");
    let snapshot = v["spec_snapshot"].as_str().expect("snapshot").to_string();
    let host_line = snapshot
        .lines()
        .find(|l| l.trim_start().starts_with("host:"))
        .expect("a host line")
        .to_string();
    let snapshot = snapshot.replace(&host_line, &format!("  host: {}", fake.url));
    v["spec_hash"] = Value::String(strands::spec::sha256_hex(&snapshot));
    v["spec_snapshot"] = Value::String(snapshot);
    v["out_dir"] = Value::String(sandbox.path().display().to_string());
    // Its timeout was an hour after it paused; it has not passed in this story.
    v["gate"]["timeout_at"] = Value::Null;
    let id = v["id"].as_str().expect("id").to_string();
    old_store(
        &sandbox.store,
        &[(id.clone(), serde_json::to_vec(&v).expect("json"))],
    );

    let out = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    out.expect_code(0);
    let done = out.json();
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(fake.count(), 1, "only the step after the gate ran");
    let store = Store::open(&sandbox.store).expect("open");
    let s = store.get(&id).expect("get");
    assert_eq!(s.status, Status::Completed);
    assert_eq!(
        s.format, SESSION_FORMAT,
        "written back in the current format"
    );
}
