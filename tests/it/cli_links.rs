//! `strands links create` through the real binary against the real
//! service holding the store: an operator makes a one-tap link for a
//! person to approve a paused run's gate; opening it decides nothing,
//! pressing its button approves once and the run goes on once; a second
//! press is refused. A person who may not answer the gate (not an
//! approver; the run's own starter where self-approval is off) and a run
//! that is not paused are refused, naming why, and nothing is made. On a
//! shared PostgreSQL store with no server in between, the CLI signs the
//! link itself (with `STRANDS_PUBLIC_URL`) and the service honours it.

use super::api::{deploy, World, WAIT};
use crate::common::api::{call, make_token};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::{FakeLlm, Sandbox};
use serde_json::json;
use std::time::{Duration, Instant};

/// Where the service says it is reached (links open there).
const PUBLIC: &str = "https://strands.example";

fn wait_status(w: &World, id: &str, status: &str) -> serde_json::Value {
    let until = Instant::now() + WAIT;
    loop {
        let s = w.session(id);
        if s["status"] == status {
            return s;
        }
        assert!(
            Instant::now() < until,
            "never {status}: {s}\n{}",
            w.svc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn press(w: &World, path: &str) -> crate::common::service::HttpReply {
    press_on(&w.svc, path)
}

fn press_on(svc: &Service, path: &str) -> crate::common::service::HttpReply {
    let h = vec![
        ("Accept".to_string(), "text/html".to_string()),
        ("Sec-Fetch-Site".to_string(), "same-origin".to_string()),
        (
            "Content-Type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
    ];
    svc.request("POST", path, &h, b"decision=approve")
}

#[test]
fn a_link_made_on_the_command_line_approves_once() {
    let w = World::start_with(|cfg| cfg.with("STRANDS_PUBLIC_URL", Some(PUBLIC)));
    let id = w.start_run("api");
    w.wait_paused(&id);
    let calls = w.llm.count();

    // Refused, naming why: nothing is made.
    let mallory = w
        .sandbox
        .strands(&["links", "create", &id, "--for", "mallory"]);
    assert_ne!(mallory.code, 0, "{}", mallory.stdout);
    assert!(
        mallory.stderr.contains("mallory may not approve")
            || mallory.stderr.contains("mallory may not answer"),
        "{}",
        mallory.stderr
    );
    assert!(
        mallory.stderr.contains("not an approver"),
        "{}",
        mallory.stderr
    );
    let starter = w.sandbox.strands(&[
        "links",
        "create",
        &id,
        "--for",
        "ci-bot",
        "--decision",
        "approve",
    ]);
    assert_ne!(starter.code, 0, "{}", starter.stdout);
    assert!(
        starter.stderr.contains("you started this run"),
        "{}",
        starter.stderr
    );
    let ttl = w
        .sandbox
        .strands(&["links", "create", &id, "--for", "alice", "--ttl", "90m"]);
    assert_eq!(ttl.code, 2, "{}", ttl.stderr);

    // Made for alice, to approve.
    let out = w.sandbox.strands(&[
        "links",
        "create",
        &id,
        "--for",
        "alice",
        "--decision",
        "approve",
        "--ttl",
        "2h",
        "--json",
    ]);
    out.expect_code(0);
    let made = out.json();
    assert_eq!(made["gate"], "review#1", "{made}");
    assert_eq!(made["decision"], "approve");
    let url = made["url"].as_str().expect("a url").to_string();
    assert!(
        url.starts_with(PUBLIC),
        "{url} opens the service's public URL"
    );
    let path = url[url.find("/l/").expect("a /l/ link")..].to_string();

    // Opening it decides nothing.
    let page = w.svc.get(&path);
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(w.session(&id)["status"], "paused");

    // Pressing it approves, as alice; the run goes on once.
    let r = press(&w, &path);
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let done = wait_status(&w, &id, "completed");
    assert_eq!(done["gates"][0]["by"], "alice", "{done:#}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.llm.count(), calls + 1, "the deployer ran once");

    // A second press is refused; the run is not paused any more.
    let again = press(&w, &path);
    assert_eq!(again.status, 403, "{}", again.body);
    let late = w
        .sandbox
        .strands(&["links", "create", &id, "--for", "alice"]);
    assert_ne!(late.code, 0);
    assert!(late.stderr.contains("not paused"), "{}", late.stderr);
}

#[test]
fn on_a_shared_store_the_cli_signs_the_link_itself() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(url) = rt.block_on(strands::store::postgres::testdb::database("links_offline")) else {
        return;
    };
    let llm = FakeLlm::start();
    let mut sandbox = Sandbox::new();
    sandbox.store = std::path::PathBuf::from(&url);
    let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy())]);
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let svc =
        Service::launch(ServeConfig::api(&sandbox, &dir).with("STRANDS_PUBLIC_URL", Some(PUBLIC)));
    let body = json!({ "workflow": "deploy", "vars": { "service": "api" } });
    let r = call(&svc, "POST", "/api/v1/runs", Some(&ci), Some(&body));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session_id"].as_str().expect("an id").to_string();
    let until = Instant::now() + WAIT;
    while sandbox.show(&id)["status"] != "paused" {
        assert!(Instant::now() < until, "never paused: {}", svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }

    // Without the service's address there is no link to print.
    let args = [
        "links",
        "create",
        &id,
        "--for",
        "alice",
        "--decision",
        "approve",
        "--json",
    ];
    let bare = sandbox.strands(&args);
    assert_eq!(bare.code, 2, "{}", bare.stderr);
    assert!(
        bare.stderr.contains("STRANDS_PUBLIC_URL"),
        "{}",
        bare.stderr
    );
    let out = sandbox.strands_env(&[("STRANDS_PUBLIC_URL", PUBLIC)], &args);
    out.expect_code(0);
    let link = out.json()["url"].as_str().expect("a url").to_string();
    assert!(link.starts_with(PUBLIC), "{link}");
    let path = link[link.find("/l/").expect("a /l/ link")..].to_string();
    let r = press_on(&svc, &path);
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let until = Instant::now() + WAIT;
    while sandbox.show(&id)["status"] != "completed" {
        assert!(Instant::now() < until, "never completed: {}", svc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(press_on(&svc, &path).status, 403, "used once");
}
