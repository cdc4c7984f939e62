//! Approvals from any code, against the real `strands serve`: a CI job runs
//! `strands ask` through the server and blocks; an approver answers over
//! the API; `ask` exits 0 naming them, 1 with the rejection's reason, 4
//! when the timeout's fallback rejected. The same idempotency key asks
//! once; the requester may not approve their own request; a quorum of 2
//! needs two people; bad input is 422 naming the field and creates nothing.
//! The request is a Slack card (fake Slack) and a web inbox row whose
//! buttons decide it; `ask` survives a server restart and works on a local
//! store; the examples in `examples/ask` (shell, GitHub Actions step) run
//! against the same server (the agent SDKs' examples: `agent_sdks`).

use super::api::World;
use crate::common::api::{call, expect_error};
use crate::common::{wait_until, Outcome};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// `strands ask ARGS` through the server as ci-bot (an operator).
fn ask(w: &World, args: &[&str]) -> Outcome {
    let mut all = vec!["ask"];
    all.extend_from_slice(args);
    w.sandbox.strands_as(
        "ignored",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", w.ci.as_str()),
        ],
        &all,
    )
}

/// `POST /api/v1/approvals` as ci-bot.
fn request(w: &World, body: Value) -> crate::common::service::HttpReply {
    call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.ci),
        Some(&body),
    )
}

/// The id of ci-bot's request with `key`, once `ask` has made it (asking
/// with the same key returns it, never a second one).
fn id_of(w: &World, key: &str) -> String {
    let r = request(
        w,
        json!({"title": "Deploy v1.2 to prod?", "approvers": ["alice"], "key": key}),
    );
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    r.json()["id"].as_str().expect("an id").to_string()
}

/// Waits until request `id` is paused at its gate.
fn paused(w: &World, id: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    while w.session(id)["status"] != "paused" {
        assert!(Instant::now() < until, "never paused: {}", w.session(id));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `strands ask` has made its request, the `n`th in the store
/// (so that `id_of`, asking with the same key, finds it rather than making
/// it).
#[track_caller]
fn asked(w: &World, n: usize) {
    wait_until(
        WAIT_ASKED,
        "strands ask made its request",
        || approval_count(w) >= n,
        || w.svc.log(),
    );
}

const WAIT_ASKED: Duration = Duration::from_secs(20);

fn approval_count(w: &World) -> usize {
    let r = call(
        &w.svc,
        "GET",
        "/api/v1/sessions?workflow=approval&limit=500",
        Some(&w.root),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["sessions"].as_array().map_or(0, Vec::len)
}

#[test]
fn ask_exits_0_naming_the_approver_and_1_with_the_reason() {
    let w = World::start();
    std::thread::scope(|s| {
        let asking = s.spawn(|| {
            ask(
                &w,
                &[
                    "Deploy v1.2 to prod?",
                    "--approvers",
                    "alice,mallory",
                    "--detail",
                    "version=1.2",
                    "--key",
                    "run-1",
                ],
            )
        });
        asked(&w, 1);
        let id = id_of(&w, "run-1");
        paused(&w, &id);
        // The approver sees it among the sessions they may answer.
        let mine = call(&w.svc, "GET", "/api/v1/sessions", Some(&w.alice), None);
        assert!(mine.body.contains(&id), "{}", mine.body);
        let r = w.answer(&id, &w.alice, json!({"decision": "approve"}));
        assert_eq!(r.status, 200, "{}", r.body);
        let out = asking.join().expect("ask");
        out.expect_code(0);
        assert!(out.stdout.contains("approved by alice"), "{}", out.stdout);
    });
    // The same key again: the same request, already decided; nothing new.
    let again = ask(
        &w,
        &[
            "Deploy v1.2 to prod?",
            "--approvers",
            "alice",
            "--key",
            "run-1",
            "--json",
        ],
    );
    again.expect_code(0);
    assert_eq!(again.json()["decided_by"], "alice");
    assert_eq!(approval_count(&w), 1);

    std::thread::scope(|s| {
        let asking = s.spawn(|| {
            ask(
                &w,
                &["Drop the table?", "--approvers", "alice", "--key", "run-2"],
            )
        });
        asked(&w, 2);
        let id = id_of(&w, "run-2");
        paused(&w, &id);
        let r = w.answer(
            &id,
            &w.alice,
            json!({"decision": "reject", "reason": "not during the freeze"}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let out = asking.join().expect("ask");
        out.expect_code(1);
        assert!(out.stdout.contains("rejected by alice"), "{}", out.stdout);
        assert!(
            out.stdout.contains("not during the freeze"),
            "{}",
            out.stdout
        );
        let view = call(
            &w.svc,
            "GET",
            &format!("/api/v1/approvals/{id}"),
            Some(&w.ci),
            None,
        );
        assert_eq!(view.json()["status"], "rejected", "{}", view.body);
        assert_eq!(view.json()["reason"], "not during the freeze");
    });
    assert_eq!(approval_count(&w), 2);
}

#[test]
fn the_timeout_fallback_rejects_and_ask_exits_4() {
    let w = World::start_with(|cfg| cfg.with("STRANDS_DEFAULT_TIMEOUT_MINUTES", Some("0.03")));
    let out = ask(&w, &["Rotate the keys?", "--approvers", "alice", "--json"]);
    out.expect_code(4);
    let v = out.json();
    assert_eq!(v["status"], "timed_out", "{v}");
    assert_eq!(v["decision"], "rejected", "{v}");
}

#[test]
fn the_requester_may_not_approve_and_a_quorum_of_two_needs_two() {
    let w = World::start();
    let r = request(
        &w,
        json!({"title": "Pay the invoice?", "approvers": ["alice", "mallory", "ci-bot"], "quorum": 2}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        r.header("location")
            .as_deref()
            .map(|l| l.starts_with("/api/v1/approvals/")),
        Some(true)
    );
    let id = r.json()["id"].as_str().expect("id").to_string();
    paused(&w, &id);
    expect_error(
        &w.answer(&id, &w.ci, json!({"decision": "approve"})),
        403,
        "forbidden",
    );
    let one = w.answer(&id, &w.alice, json!({"decision": "approve"}));
    assert_eq!(one.json()["status"], "counted", "{}", one.body);
    let pending = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}"),
        Some(&w.ci),
        None,
    );
    assert_eq!(pending.json()["status"], "pending", "{}", pending.body);
    let two = w.answer(&id, &w.mallory, json!({"decision": "approve"}));
    assert_eq!(two.status, 200, "{}", two.body);
    // ?wait holds the answer until the decision is in.
    let done = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}?wait=20"),
        Some(&w.ci),
        None,
    );
    let v = done.json();
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["decision"], "approved", "{v}");
}

#[test]
fn bad_input_is_422_naming_the_field_and_creates_nothing() {
    let w = World::start();
    let ok = json!({"title": "Ship?", "approvers": ["alice"]});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("approvers", json!([])), "approvers"),
        (with("approvers", json!(["group:nobody-here"])), "approvers"),
        (
            with("timeout_minutes", json!(60 * 24 * 365)),
            "timeout_minutes",
        ),
        (with("body", json!("x".repeat(17 * 1024))), "body"),
        (with("title", json!("")), "title"),
        (with("notify", json!(["pager:ops"])), "notify"),
    ] {
        let r = request(&w, body);
        expect_error(&r, 422, "invalid_request");
        assert_eq!(r.json()["error"]["field"], field, "{}", r.body);
    }
    assert_eq!(approval_count(&w), 0);
    // An approver token may not ask (an operator's job), nor read others' runs.
    let r = call(
        &w.svc,
        "POST",
        "/api/v1/approvals",
        Some(&w.alice),
        Some(&ok),
    );
    expect_error(&r, 403, "forbidden");
    // The CLI says the same, exit 2, the field named.
    let out = ask(&w, &["Ship?", "--approvers", "group:nobody-here"]);
    out.expect_code(2);
    assert!(out.stderr.contains("approvers"), "{}", out.stderr);
    assert_eq!(approval_count(&w), 0);
}

/// The one approval request in the store, once it is paused at its gate.
fn the_request(w: &World) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let r = call(
            &w.svc,
            "GET",
            "/api/v1/sessions?workflow=approval&status=paused",
            Some(&w.root),
            None,
        );
        if let Some(id) = r.json()["sessions"][0]["id"].as_str() {
            return id.to_string();
        }
        assert!(Instant::now() < until, "no request came: {}", w.svc.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `program` runs here; a test needing it skips (saying so) unless
/// `require` is set in the environment.
fn available(program: &str, require: &str) -> bool {
    let there = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !there {
        assert!(
            std::env::var_os(require).is_none(),
            "{program} is missing and {require} is set"
        );
        eprintln!("skipped: {program} is not on this machine (set {require}=1 to require it)");
    }
    there
}

fn example(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/ask")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn the_shell_example_exits_1_when_rejected() {
    if !available("curl", "STRANDS_REQUIRE_CURL") {
        return;
    }
    let w = World::start();
    std::thread::scope(|s| {
        let job = s.spawn(|| {
            std::process::Command::new("sh")
                .arg(example("ask.sh"))
                .arg("Deploy v1.2 to prod?")
                .env("STRANDS_SERVER", &w.svc.url)
                .env("STRANDS_TOKEN", &w.ci)
                .env("APPROVERS", "\"alice\"")
                .env("KEY", "pipeline-7")
                .output()
                .expect("sh")
        });
        let id = the_request(&w);
        let r = w.answer(
            &id,
            &w.alice,
            json!({"decision": "reject", "reason": "freeze"}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let out = job.join().expect("job");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("rejected by alice"), "{stdout}");
    });
}

#[test]
fn the_request_is_a_slack_card_whose_buttons_work() {
    use crate::common::fake_slack::{Bot, FakeSlack};
    use crate::common::service::write_workflows;
    use crate::common::{FakeLlm, Sandbox};

    let llm = FakeLlm::start();
    let slack = FakeSlack::start();
    let sandbox = Sandbox::new();
    let ci = crate::common::api::make_token(&sandbox, "ci-bot", "operator");
    let dir = write_workflows(&sandbox, &llm, &[]);
    let bot = Bot::launch(
        &slack,
        crate::common::fake_slack::BotConfig::new(&sandbox, &slack, &dir),
    );
    let r = call(
        &bot,
        "POST",
        "/api/v1/approvals",
        Some(&ci),
        Some(&json!({
            "title": "Deploy v1.2 to prod?",
            "details": {"version": "1.2"},
            "approvers": ["U04APPROVER"],
            "notify": ["slack:#C0DEPLOYS"],
        })),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    let msg = slack.wait_for_approval();
    assert_eq!(msg.channel, "C0DEPLOYS");
    assert!(
        msg.text().contains("Deploy v1.2 to prod?"),
        "{:#}",
        msg.call.body
    );
    assert!(msg.text().contains("1.2"), "{:#}", msg.call.body);
    bot.click(&msg, "strands_approve", "U04APPROVER")
        .reply
        .expect_prompt_ok("the approve click", &bot);
    let done = call(
        &bot,
        "GET",
        &format!("/api/v1/approvals/{id}?wait=20"),
        Some(&ci),
        None,
    );
    let v = done.json();
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["decided_by"], "U04APPROVER", "{v}");
    assert_eq!(v["via"], "slack", "{v}");
}

#[test]
fn on_a_local_store_ask_waits_for_an_answer_from_another_process() {
    let sandbox = crate::common::Sandbox::new();
    let no_wait = sandbox.strands(&[
        "ask",
        "Purge the cache?",
        "--approvers",
        "alice",
        "--key",
        "cron-1",
        "--no-wait",
    ]);
    no_wait.expect_code(0);
    let id = no_wait.stdout.trim().to_string();
    assert_eq!(id.len(), 36, "{}", no_wait.stdout);
    std::thread::scope(|s| {
        let asking = s.spawn(|| {
            sandbox.strands(&[
                "ask",
                "Purge the cache?",
                "--approvers",
                "alice",
                "--key",
                "cron-1",
            ])
        });
        std::thread::sleep(Duration::from_millis(500));
        // ask holds the store only to look: a resume gets in (retried if it
        // met the look).
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let out = sandbox.strands_as("alice", &[], &["resume", &id, "--approve"]);
            if out.code == 0 {
                break;
            }
            assert!(Instant::now() < until, "{}\n{}", out.stdout, out.stderr);
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = asking.join().expect("ask");
        out.expect_code(0);
        assert!(out.stdout.contains("approved by alice"), "{}", out.stdout);
        assert!(out.stderr.contains("waiting on it"), "{}", out.stderr);
    });
}

#[test]
fn the_request_is_in_the_web_inbox_and_answered_there() {
    use super::web::Visitor;
    let w = World::start();
    let r = request(
        &w,
        json!({"title": "Delete the 2019 backups?", "body": "**42** files", "approvers": ["alice"]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    paused(&w, &id);
    let alice = Visitor::sign_in(&w.svc, &w.alice);
    let inbox = alice.get("/");
    assert_eq!(inbox.status, 200);
    assert!(
        inbox.body.contains("Delete the 2019 backups?"),
        "{}",
        inbox.body
    );
    assert!(inbox.body.contains(&id), "{}", inbox.body);
    let csrf = alice.csrf();
    let answered = alice.post(
        &format!("/sessions/{id}/answer"),
        &[
            ("csrf", &csrf),
            ("gate", "approval#1"),
            ("decision", "approve"),
        ],
    );
    assert!(
        answered.status < 400,
        "{} {}",
        answered.status,
        answered.body
    );
    let done = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}?wait=20"),
        Some(&w.ci),
        None,
    );
    let v = done.json();
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["decided_by"], "alice", "{v}");
}

#[test]
fn labels_filter_the_list_and_an_action_is_shown_and_bound_by_its_digest() {
    let w = World::start();
    let action = json!({"tool": "delete_rows", "arguments": {"table": "events", "days": 90}});
    for (team, with_action) in [("a", true), ("b", false), ("a", false)] {
        let mut body = json!({"title": format!("For {team}"), "approvers": ["alice"], "labels": {"team": team}});
        if with_action {
            body["action"] = action.clone();
        }
        let r = request(&w, body);
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let list = |q: &str| {
        let r = call(
            &w.svc,
            "GET",
            &format!("/api/v1/approvals{q}"),
            Some(&w.ci),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(list("").len(), 3);
    let a = list("?labels=team=a");
    assert_eq!(a.len(), 2, "{a:?}");
    assert!(a.iter().all(|v| v["labels"]["team"] == "a"));
    assert_eq!(list("?labels=team=c").len(), 0);
    let bound = a
        .iter()
        .find(|v| !v["action"].is_null())
        .expect("the one with an action");
    assert_eq!(bound["action"], action);
    let digest = bound["action_digest"].as_str().expect("a digest");
    assert_eq!(digest.len(), 64);
    let id = bound["id"].as_str().expect("id");
    paused(&w, id);
    let shown = w.session(id);
    assert!(
        shown["gate"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains(digest) && p.contains("delete_rows")),
        "{shown}"
    );
    assert_eq!(list("?status=pending&labels=team=b").len(), 1);
    expect_error(
        &call(
            &w.svc,
            "GET",
            "/api/v1/approvals?status=maybe",
            Some(&w.ci),
            None,
        ),
        400,
        "bad_request",
    );
}

#[test]
fn a_server_restart_while_ask_waits_resumes_waiting_on_the_same_request() {
    // A fixed port, so the restarted server is where ask left it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let bind = format!("127.0.0.1:{port}");
    let mut w = World::start_with(|cfg| cfg.with("STRANDS_BIND", Some(&bind)));
    let asking = std::process::Command::new(env!("CARGO_BIN_EXE_strands"))
        .args(["--store", &w.sandbox.store.display().to_string()])
        .args([
            "ask",
            "Deploy v1.2 to prod?",
            "--approvers",
            "alice",
            "--key",
            "run-9",
        ])
        .env("STRANDS_SERVER", &w.svc.url)
        .env("STRANDS_TOKEN", &w.ci)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn ask");
    asked(&w, 1);
    let id = id_of(&w, "run-9");
    paused(&w, &id);
    w.svc.kill();
    std::thread::sleep(Duration::from_millis(500));
    w.svc.restart();
    let r = w.answer(&id, &w.alice, json!({"decision": "approve"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let out = asking.wait_with_output().expect("ask");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("approved by alice"), "{stdout}");
    assert!(stderr.contains("again"), "{stderr}");
    assert_eq!(approval_count(&w), 1);
}

/// The `strands ask` step of `examples/ask/github-actions.yml`, its
/// `${{ … }}` filled in as GitHub would.
fn github_step() -> String {
    let yml = std::fs::read_to_string(example("github-actions.yml")).expect("the example");
    let start = yml.find("strands ask").expect("a strands ask step");
    let step: String = yml[start..]
        .lines()
        .take_while(|l| !l.trim_start().starts_with("- name:"))
        .collect::<Vec<_>>()
        .join("\n");
    step.replace("${{ github.sha }}", "3f9c2e1")
        .replace("${{ github.actor }}", "octocat")
        .replace("${{ github.run_id }}", "4242")
}

#[test]
fn the_github_actions_step_waits_for_a_quorum_of_two_with_a_group() {
    let w = World::start();
    w.sandbox
        .strands(&[
            "people", "add", "mallory", "--token", "mallory", "--group", "sre",
        ])
        .expect_code(0);
    let step = github_step();
    assert!(!step.contains("${{"), "{step}");
    let bin = env!("CARGO_BIN_EXE_strands");
    std::thread::scope(|s| {
        let job = s.spawn(|| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(step.replacen("strands ask", &format!("'{bin}' ask"), 1))
                .env("STRANDS_SERVER", &w.svc.url)
                .env("STRANDS_TOKEN", &w.ci)
                .current_dir(w.sandbox.path())
                .output()
                .expect("sh")
        });
        let id = the_request(&w);
        let one = w.answer(&id, &w.alice, json!({"decision": "approve"}));
        assert_eq!(one.json()["status"], "counted", "{}", one.body);
        let two = w.answer(&id, &w.mallory, json!({"decision": "approve"}));
        assert_eq!(two.status, 200, "{}", two.body);
        let out = job.join().expect("job");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("approved by mallory"), "{stdout}");
        let view = call(
            &w.svc,
            "GET",
            &format!("/api/v1/approvals/{id}"),
            Some(&w.ci),
            None,
        );
        assert_eq!(
            view.json()["title"],
            "Deploy 3f9c2e1 to prod?",
            "{}",
            view.body
        );
    });
}

#[test]
fn require_reason_refuses_a_bare_rejection() {
    let w = World::start();
    let r = request(
        &w,
        json!({"title": "Wipe staging?", "approvers": ["alice"], "require_reason": true}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["id"].as_str().expect("id").to_string();
    paused(&w, &id);
    let bare = w.answer(&id, &w.alice, json!({"decision": "reject"}));
    assert_eq!(bare.status, 422, "{}", bare.body);
    let why = w.answer(
        &id,
        &w.alice,
        json!({"decision": "reject", "reason": "staging is in use"}),
    );
    assert_eq!(why.status, 200, "{}", why.body);
    let v = call(
        &w.svc,
        "GET",
        &format!("/api/v1/approvals/{id}?wait=20"),
        Some(&w.ci),
        None,
    )
    .json();
    assert_eq!(v["status"], "rejected", "{v}");
    assert_eq!(v["reason"], "staging is in use", "{v}");
}

#[test]
fn on_a_local_store_ask_applies_its_own_timeout_and_exits_4() {
    // Gate timeouts are whole minutes: this test waits one.
    let sandbox = crate::common::Sandbox::new();
    let started = Instant::now();
    let out = sandbox.strands(&[
        "ask",
        "Rotate the keys?",
        "--approvers",
        "alice",
        "--timeout",
        "1m",
        "--on-timeout",
        "reject",
        "--json",
    ]);
    out.expect_code(4);
    assert!(
        started.elapsed() >= Duration::from_secs(59),
        "{:?}",
        started.elapsed()
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let id = v["id"].as_str().unwrap_or_else(|| panic!("an id in {v}"));
    // Decided once, by the timeout; nothing left to resume.
    let show = sandbox.show(id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    let again = sandbox.strands(&["resume", id, "--approve"]);
    assert_ne!(again.code, 0, "{}", again.stdout);
}
