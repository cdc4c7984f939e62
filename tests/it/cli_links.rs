//! `strands links create` through the real binary against the real
//! service holding the store: an operator makes a one-tap link for a
//! person to approve a paused run's gate; opening it decides nothing,
//! pressing its button approves once and the run goes on once; a second
//! press is refused. A person who may not answer the gate (not an
//! approver; the run's own starter where self-approval is off) and a run
//! that is not paused are refused, naming why, and nothing is made.

use super::api::{World, WAIT};
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
    let h = vec![
        ("Accept".to_string(), "text/html".to_string()),
        ("Sec-Fetch-Site".to_string(), "same-origin".to_string()),
        (
            "Content-Type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
    ];
    w.svc.request("POST", path, &h, b"decision=approve")
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
