//! No store is ever lost silently (issue 23): `strands store verify`
//! finds what is wrong with a store, `strands store backup DEST` makes a
//! copy that opens as a store — offline and through a running `strands
//! serve` — a store that no longer opens names its last backup, and a
//! store-format upgrade backs the store up first.

use super::api::World;
use crate::common::api::call;
use crate::common::Sandbox;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/research-review.yaml").to_string()
}

/// A paused run of the example on `sandbox`'s store; its id.
fn paused(sandbox: &Sandbox) -> String {
    let out = sandbox.strands(&["run", &example(), "--json"]);
    out.expect_code(19);
    out.json()["session_id"]
        .as_str()
        .expect("a session id")
        .to_string()
}

/// A sandbox (its own working directory) on the store at `store`.
fn on(store: &Path) -> Sandbox {
    Sandbox {
        dir: tempfile::tempdir().expect("a temp dir"),
        store: store.to_path_buf(),
    }
}

fn status(sandbox: &Sandbox, id: &str) -> Value {
    let out = sandbox.strands(&["sessions", "show", id, "--json"]);
    out.expect_code(0);
    out.json()["status"].clone()
}

fn backups_log(store: &Path) -> String {
    std::fs::read_to_string(store.join("backups.log")).unwrap_or_default()
}

/// Opens a store's sled database directly from the test. sled releases
/// its lock on `db` from a background thread a moment after the last
/// handle (here, or in a `strands` process just ended) is dropped, so a
/// busy lock is retried for a few seconds.
#[track_caller]
fn open_sled(path: impl AsRef<std::path::Path>, what: &str) -> sled::Db {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match sled::open(path.as_ref()) {
            Ok(db) => return db,
            Err(e)
                if std::time::Instant::now() < until && format!("{e:?}").contains("WouldBlock") =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{what}: {e:?}"),
        }
    }
}

#[test]
fn verify_passes_a_sound_store_with_its_counts() {
    let s = Sandbox::new();
    let first = paused(&s);
    paused(&s);
    s.strands(&["resume", &first, "--approve", "--json"])
        .expect_code(0);
    let out = s.strands(&["store", "verify", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["sessions"], 2, "{v}");
    assert_eq!(v["decoded"], 2, "{v}");
    assert_eq!(v["listed"], 2, "{v}");
    assert_eq!(v["statuses"]["paused"], 1, "{v}");
    assert_eq!(v["statuses"]["completed"], 1, "{v}");
    assert!(v["audit_entries"].as_u64().is_some_and(|n| n > 0), "{v}");
    let out = s.strands(&["store", "verify"]);
    out.expect_code(0);
    assert!(out.stdout.contains("the store is sound"), "{}", out.stdout);
}

#[test]
fn verify_names_a_session_whose_record_does_not_decode() {
    let s = Sandbox::new();
    let good = paused(&s);
    let bad = paused(&s);
    {
        let db = open_sled(&s.store, "open the store with sled");
        let sessions = db.open_tree("sessions").expect("the sessions tree");
        assert!(sessions.get(bad.as_bytes()).expect("get").is_some());
        sessions
            .insert(bad.as_bytes(), &b"\x00not a session{"[..])
            .expect("overwrite");
        db.flush().expect("flush");
    }
    let out = s.strands(&["store", "verify"]);
    out.expect_code(12);
    assert!(
        out.stdout.contains(&bad) && out.stdout.contains("does not decode"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains(&good), "{}", out.stdout);
    let out = s.strands(&["store", "verify", "--json"]);
    out.expect_code(12);
    let v = out.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["sessions"], 2);
    assert_eq!(v["decoded"], 1);
    let problems = v["problems"].to_string();
    assert!(problems.contains(&bad), "{v}");
}

#[test]
fn an_offline_backup_opens_and_resumes_and_leaves_the_original_alone() {
    let s = Sandbox::new();
    let id = paused(&s);
    let dest = s.path().join("backup");
    let out = s.strands(&["store", "backup", dest.to_str().expect("utf-8"), "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["verify"]["sessions"], 1, "{v}");
    assert_eq!(v["verify"]["ok"], true, "{v}");
    assert!(v["verify"]["problems"]
        .as_array()
        .is_some_and(|p| p.is_empty()));
    assert!(v["bytes"].as_u64().is_some_and(|b| b > 0), "{v}");
    assert!(
        !std::fs::read_dir(&dest)
            .expect("dest")
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".generating")),
        "no unfinished snapshot is copied"
    );
    let log = backups_log(&s.store);
    assert!(log.contains(&format!("\t{}", dest.display())), "{log}");

    let copy = on(&dest);
    let list = copy.strands(&["sessions", "list", "--json"]);
    list.expect_code(0);
    assert!(list.stdout.contains(&id), "{}", list.stdout);
    assert_eq!(status(&copy, &id), "paused");
    copy.strands(&["store", "verify"]).expect_code(0);
    let done = copy.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["status"], "completed");
    // The original is untouched: still paused.
    assert_eq!(status(&s, &id), "paused");
}

#[test]
fn a_backup_refuses_a_destination_that_is_not_empty() {
    let s = Sandbox::new();
    paused(&s);
    let dest = s.path().join("full");
    std::fs::create_dir_all(&dest).expect("mkdir");
    std::fs::write(dest.join("keep.txt"), b"mine").expect("write");
    let out = s.strands(&["store", "backup", dest.to_str().expect("utf-8")]);
    out.expect_code(2);
    assert!(out.stderr.contains("not empty"), "{}", out.stderr);
    assert_eq!(std::fs::read(dest.join("keep.txt")).expect("kept"), b"mine");
    assert!(!dest.join("db").exists());
    assert!(backups_log(&s.store).is_empty());
}

#[test]
fn a_backup_through_the_server_holding_the_store_opens_and_resumes() {
    let mut w = World::start();
    let id = w.start_run("api");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while w.session(&id)["status"] != "paused" {
        assert!(
            std::time::Instant::now() < deadline,
            "the run did not pause: {}",
            w.session(&id)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let dest = w.sandbox.path().join("live-backup");
    // Admins only; an absolute path only.
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/store/backup",
        Some(&w.ci),
        Some(&json!({ "dest": dest.display().to_string() })),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/store/backup",
        Some(&w.root),
        Some(&json!({ "dest": "relative/dir" })),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(!dest.exists());

    // The CLI finds the server on the store and goes through it.
    let out = w
        .sandbox
        .strands(&["store", "backup", dest.to_str().expect("utf-8"), "--json"]);
    out.expect_code(0);
    assert!(out.stderr.contains("strands serve"), "{}", out.stderr);
    let v = out.json();
    assert!(
        v["verify"]["sessions"].as_u64().is_some_and(|n| n >= 1),
        "{v}"
    );
    assert!(backups_log(&w.sandbox.store).contains(&dest.display().to_string()));
    // Verify refuses a store a server writes to, naming why.
    let out = w.sandbox.strands(&["store", "verify"]);
    out.expect_code(12);
    assert!(
        out.stderr.contains("held by `strands serve`"),
        "{}",
        out.stderr
    );
    // Copying again into the now full directory is refused by the server.
    let out = w
        .sandbox
        .strands(&["store", "backup", dest.to_str().expect("utf-8")]);
    out.expect_code(2);

    w.svc.stop();
    let copy = on(&dest);
    assert_eq!(status(&copy, &id), "paused");
    copy.strands(&["store", "verify"]).expect_code(0);
    let done = copy.strands_as("alice", &[], &["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["status"], "completed", "{}", done.stdout);
}

/// A finished-looking snapshot newer than every other one that fails its
/// CRC: sled refuses the store (not something a crash leaves, so nothing
/// clears it).
fn break_store(store: &Path) {
    std::fs::write(
        store.join("snap.FFFFFFFFFFFFFFF0"),
        b"this is not a sled snapshot at all",
    )
    .expect("write a bad snapshot");
}

#[test]
fn a_store_that_does_not_open_names_its_last_backup() {
    let s = Sandbox::new();
    let id = paused(&s);
    // Without a backup: it says none was made.
    let other = Sandbox::new();
    paused(&other);
    break_store(&other.store);
    let out = other.strands(&["sessions", "list"]);
    out.expect_code(12);
    assert!(
        out.stderr.contains("no backup of it was made") && out.stderr.contains("strands doctor"),
        "{}",
        out.stderr
    );

    let dest = s.path().join("nightly");
    s.strands(&["store", "backup", dest.to_str().expect("utf-8")])
        .expect_code(0);
    break_store(&s.store);
    let out = s.strands(&["sessions", "list"]);
    out.expect_code(12);
    assert!(
        out.stderr
            .contains(&format!("the last backup is {}", dest.display()))
            && out.stderr.contains(&format!("--store {}", dest.display())),
        "{}",
        out.stderr
    );
    let out = s.strands(&["doctor", "--json"]);
    let v = out.json();
    let store = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "store")
        .cloned()
        .expect("a store check");
    assert_eq!(store["status"], "fail", "{v}");
    let detail = store["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&dest.display().to_string()), "{detail}");
    assert!(detail.contains("snap.*.generating"), "{detail}");
    // The way back works.
    assert_eq!(status(&on(&dest), &id), "paused");
}

/// The store's format as sled holds it (`meta` → `format`, u32 big-endian).
fn format_of(store: &Path) -> u32 {
    let db = open_sled(store, "open with sled");
    let meta = db.open_tree("meta").expect("meta");
    let v = meta.get(b"format").expect("get").expect("a format");
    u32::from_be_bytes(v.as_ref().try_into().expect("4 bytes"))
}

#[test]
fn a_format_upgrade_backs_the_store_up_first() {
    let s = Sandbox::new();
    let id = paused(&s);
    let current = format_of(&s.store);
    assert!(current > 2, "{current}");
    {
        // As a release of format 2 left it.
        let db = open_sled(&s.store, "open with sled");
        let meta = db.open_tree("meta").expect("meta");
        meta.insert(b"format", &2u32.to_be_bytes()).expect("insert");
        db.flush().expect("flush");
    }
    let out = s.strands(&["sessions", "list", "--json"]);
    out.expect_code(0);
    assert!(out.stdout.contains(&id));
    let prefix = format!("store.before-format-{current}-");
    let copies: Vec<PathBuf> = std::fs::read_dir(s.path())
        .expect("sandbox")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}\n{}", out.stderr);
    let copy = &copies[0];
    assert!(
        out.stderr.contains(&copy.display().to_string()),
        "where it went is said: {}",
        out.stderr
    );
    assert!(backups_log(&s.store).contains(&copy.display().to_string()));
    // The copy is the store as it was, before the upgrade; the store is upgraded.
    assert_eq!(format_of(copy), 2);
    assert_eq!(format_of(&s.store), current);
    {
        let db = open_sled(copy, "open the copy with sled");
        let sessions = db.open_tree("sessions").expect("sessions");
        assert!(sessions.get(id.as_bytes()).expect("get").is_some());
    }
    // Once upgraded, no further copy is made.
    s.strands(&["sessions", "list"]).expect_code(0);
    let again = std::fs::read_dir(s.path())
        .expect("sandbox")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count();
    assert_eq!(again, 1);
}

#[test]
fn on_postgres_verify_checks_the_database_and_backup_points_at_pg_dump() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(url) = rt.block_on(strands::store::postgres::testdb::database("store_backup")) else {
        eprintln!("skipped: no PostgreSQL for this test");
        return;
    };
    let s = on(Path::new(&url));
    let id = paused(&s);
    let out = s.strands(&["store", "verify", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["sessions"], 1, "{v}");
    assert_eq!(v["statuses"]["paused"], 1, "{v}");
    let dest = s.path().join("pg-copy");
    let out = s.strands(&["store", "backup", dest.to_str().expect("utf-8")]);
    out.expect_code(2);
    assert!(out.stderr.contains("pg_dump"), "{}", out.stderr);
    assert!(!dest.exists());
    assert_eq!(status(&s, &id), "paused");
}
