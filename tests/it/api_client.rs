//! The CLI as a client of the running service: with `STRANDS_SERVER` and
//! `STRANDS_TOKEN`, and by itself on a store the service holds (it finds
//! `serve.json` there instead of exiting 12). Same `--json` shapes and exit
//! codes as offline; answers carry the caller's identity.

use super::api::{deploy, World};
use crate::common::service::write_workflows;
use crate::common::{FakeLlm, Outcome, Sandbox};
use serde_json::Value;
use std::collections::BTreeSet;

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The CLI pointed at the service with `token`, as `who`.
fn remote(w: &World, who: &str, token: &str, args: &[&str]) -> Outcome {
    w.sandbox.strands_as(
        who,
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", token),
        ],
        args,
    )
}

#[test]
fn the_cli_goes_through_the_server_with_the_offline_output_and_exit_codes() {
    let w = World::start();

    // Offline, on a store of its own, for the shapes to compare with.
    let offline = Sandbox::new();
    let llm = FakeLlm::start();
    let dir = write_workflows(&offline, &llm, &[("deploy", &deploy())]);
    let spec = dir.join("deploy.yaml");
    let local = offline.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    local.expect_code(19);
    let local = local.json();

    // Through the server: same exit code, same shape.
    let out = remote(
        &w,
        "ignored",
        &w.ci,
        &["run", "deploy", "--var", "service=api", "--json"],
    );
    out.expect_code(19);
    let paused = out.json();
    assert_eq!(keys(&paused), keys(&local), "{paused}\n{local}");
    assert_eq!(keys(&paused["gate"]), keys(&local["gate"]));
    assert_eq!(paused["status"], "paused");
    assert_eq!(paused["gate"]["prompt"], "Approve the deploy of api?");
    assert!(
        out.stderr.contains("completed: planner"),
        "progress on stderr: {}",
        out.stderr
    );
    let id = paused["session_id"].as_str().expect("an id").to_string();

    // A refusal exits as offline (17), nothing changed.
    let out = remote(&w, "x", &w.mallory, &["resume", &id, "--approve", "--json"]);
    out.expect_code(17);
    assert!(out.stderr.contains("not an approver"), "{}", out.stderr);

    // The approver: the run goes on to the end, exit 0.
    let out = remote(&w, "x", &w.alice, &["resume", &id, "--approve", "--json"]);
    out.expect_code(0);
    let done = out.json();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["output"]
            .as_str()
            .is_some_and(|o| o.contains("REPLY 2")),
        "{done}"
    );
    // The same answer again is a retry: nothing new, the run as it ended.
    let same = remote(&w, "x", &w.alice, &["resume", &id, "--approve", "--json"]);
    same.expect_code(0);
    assert_eq!(same.json()["status"], "completed", "{}", same.stdout);
    // Another answer is refused, naming who decided.
    let again = remote(&w, "x", &w.alice, &["resume", &id, "--reject"]);
    again.expect_code(17);
    assert!(
        again.stderr.contains("already approved by alice"),
        "{}",
        again.stderr
    );

    // Reading through the server.
    let out = remote(&w, "x", &w.ci, &["sessions", "list", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["count"], 1);
    let out = remote(&w, "x", &w.ci, &["sessions", "show", &id[..8], "--json"]);
    out.expect_code(0);
    let shown = out.json();
    assert_eq!(shown["gates"][0]["by"], "alice");
    assert_eq!(shown["gates"][0]["via"], "api");
    let out = remote(&w, "x", &w.ci, &["sessions", "show", "nope-nope"]);
    out.expect_code(17);
    // A wrong token is refused with a usage error, not a crash.
    let out = remote(&w, "x", "stk_aaaaaaaaaaaa_bbbb", &["sessions", "list"]);
    out.expect_code(2);
    assert!(out.stderr.contains("refused the token"), "{}", out.stderr);
}

#[test]
fn on_a_store_the_server_holds_the_cli_finds_it_and_acts_as_its_user() {
    let mut w = World::start();
    let s = &w.sandbox;

    // No STRANDS_SERVER: the store is held, yet run works (not exit 12).
    let out = s.strands_as("ops", &[], &["run", "deploy", "--json"]);
    out.expect_code(19);
    let id = out.json()["session_id"]
        .as_str()
        .expect("an id")
        .to_string();
    // --as alice answers as alice (the local credential acts for its user).
    let out = s.strands_as("alice", &[], &["resume", &id, "--approve", "--json"]);
    out.expect_code(0);
    let v = w.session(&id);
    assert_eq!(v["gates"][0]["by"], "alice", "{v}");
    // The starter is refused, as offline in a shared service.
    let second = s.strands_as("ops", &[], &["run", "deploy", "--json"]);
    second.expect_code(19);
    let id2 = second.json()["session_id"]
        .as_str()
        .expect("id")
        .to_string();
    let out = s.strands_as("mallory", &[], &["resume", &id2, "--approve"]);
    out.expect_code(17);

    // Tokens and the audit go through the server too.
    let out = s.strands(&["tokens", "create", "late", "--role", "approver", "--json"]);
    out.expect_code(0);
    assert!(out.json()["token"]
        .as_str()
        .is_some_and(|t| t.starts_with("stk_")));
    let out = s.strands(&["tokens", "list", "--json"]);
    out.expect_code(0);
    let names: Vec<String> = out.json()["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .filter(|t| t["state"] == "active")
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(names.contains(&"late".to_string()), "{names:?}");
    assert!(!out.stdout.contains("\"hash\""), "hashes stay in the store");
    s.strands(&["tokens", "revoke", "late"]).expect_code(0);
    let out = s.strands(&["audit", "export", "--session", &id]);
    out.expect_code(0);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("\"who\":\"alice\"") && l.contains("\"via\":\"api\"")),
        "{}",
        out.stdout
    );
    // The file the server left is the owner's only.
    let left = s.store.join("serve.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&left)
            .expect("serve.json")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    // Stopped, the server takes its file and its credential with it; the
    // CLI works on the store again.
    w.svc.stop();
    assert!(!left.exists());
    s.strands(&["sessions", "list"]).expect_code(0);
}
