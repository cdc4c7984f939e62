//! `strands serve` as an approval service, over real sockets: the real
//! binary without Slack, the fake model, tokens made by the real CLI. A run
//! started by the API pauses (seen over Server-Sent Events), is refused to
//! a non-approver and to its starter, is answered once by an approver, and
//! a second answer is told who decided; events resume after
//! `Last-Event-ID`; every refusal changes nothing.

use crate::common::api::{call, expect_error, make_token, Sse};
use crate::common::service::{write_workflows, ServeConfig, Service};
use crate::common::{FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::time::Duration;

pub const WAIT: Duration = Duration::from_secs(20);

/// The Slack tests' deploy workflow (planner → manual gate `review` →
/// deployer), its gate answered by alice or ci-bot.
pub fn deploy() -> String {
    crate::common::slack_story::DEPLOY.replace(
        "\nagents:",
        "\nsecurity:\n  approvers: [alice, ci-bot]\nagents:",
    )
}

/// A sandbox with the deploy workflow, tokens for ci-bot (operator),
/// alice and mallory (approvers) and root (admin), and the service on it.
pub struct World {
    pub llm: FakeLlm,
    pub sandbox: Sandbox,
    pub svc: Service,
    pub ci: String,
    pub alice: String,
    pub mallory: String,
    pub root: String,
}

impl World {
    pub fn start() -> World {
        World::start_with(|cfg| cfg)
    }

    pub fn start_with(adjust: impl FnOnce(ServeConfig) -> ServeConfig) -> World {
        let llm = FakeLlm::start();
        let sandbox = Sandbox::new();
        let dir = write_workflows(&sandbox, &llm, &[("deploy", &deploy())]);
        let ci = make_token(&sandbox, "ci-bot", "operator");
        let alice = make_token(&sandbox, "alice", "approver");
        let mallory = make_token(&sandbox, "mallory", "approver");
        let root = make_token(&sandbox, "root", "admin");
        let svc = Service::launch(adjust(ServeConfig::api(&sandbox, &dir)));
        World {
            llm,
            sandbox,
            svc,
            ci,
            alice,
            mallory,
            root,
        }
    }

    /// Starts `deploy` as ci-bot; the session id.
    #[track_caller]
    pub fn start_run(&self, service: &str) -> String {
        let r = call(
            &self.svc,
            "POST",
            "/api/v1/runs",
            Some(&self.ci),
            Some(&json!({ "workflow": "deploy", "vars": { "service": service } })),
        );
        assert_eq!(r.status, 201, "{}\n{}", r.body, self.svc.log());
        r.json()["session_id"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    /// `GET /api/v1/sessions/{id}` as root.
    #[track_caller]
    pub fn session(&self, id: &str) -> Value {
        let r = call(
            &self.svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&self.root),
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    /// Answers session `id` as `token` with `body`.
    pub fn answer(&self, id: &str, token: &str, body: Value) -> crate::common::service::HttpReply {
        call(
            &self.svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(token),
            Some(&body),
        )
    }

    /// Waits until the session is paused at a gate.
    #[track_caller]
    pub fn wait_paused(&self, id: &str) -> Value {
        let until = std::time::Instant::now() + WAIT;
        loop {
            let s = self.session(id);
            if s["status"] == "paused" {
                return s;
            }
            assert!(std::time::Instant::now() < until, "never paused: {s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_run_started_by_api_pauses_over_sse_and_is_answered_once_by_an_approver() {
    let w = World::start();
    let id = w.start_run("api");

    // Follow the run: it pauses at the gate.
    let mut sse = Sse::open(
        &w.svc,
        &format!("/api/v1/sessions/{id}/events"),
        &w.ci,
        None,
    );
    assert_eq!(sse.status(), 200, "{}", sse.head);
    assert!(
        sse.head.to_ascii_lowercase().contains("text/event-stream"),
        "{}",
        sse.head
    );
    let seen = sse.until("gate.opened", WAIT);
    let kinds: Vec<&str> = seen.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds, ["step.done", "gate.opened"], "{seen:?}");
    assert!(seen.windows(2).all(|p| p[0].id < p[1].id), "{seen:?}");
    let opened = &seen[1];
    assert_eq!(opened.data["session"], id.as_str());
    assert_eq!(opened.data["gate"], "review#1");
    assert_eq!(opened.data["prompt"], "Approve the deploy of api?");
    assert_eq!(opened.data["type"], "gate.opened");
    assert_eq!(w.llm.count(), 1, "the planner ran, the deployer waits");

    // Someone who is not an approver: 403, and the gate stays open.
    let r = w.answer(&id, &w.mallory, json!({ "decision": "approve" }));
    let why = expect_error(&r, 403, "forbidden");
    assert!(why.contains("not an approver"), "{why}");
    // The run's starter, although an approver: no self-approval here.
    let r = w.answer(&id, &w.ci, json!({ "decision": "approve" }));
    let why = expect_error(&r, 403, "forbidden");
    assert!(why.contains("you started this run"), "{why}");
    let s = w.session(&id);
    assert_eq!(s["status"], "paused", "{s}");
    assert_eq!(s["gate"]["handle"], "review#1");
    assert_eq!(s["gates"], json!([]), "nothing recorded: {s}");
    assert!(
        sse.next(Duration::from_millis(300)).is_none(),
        "no event for a refusal"
    );

    // An approver: recorded, and the run completes. People type ids: an
    // unambiguous prefix names the session, as in the CLI.
    let r = w.answer(
        &id[..8],
        &w.alice,
        json!({ "decision": "approve", "gate": "review" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "recorded", "{}", r.body);
    assert_eq!(r.json()["session"]["session_id"], id.as_str(), "{}", r.body);
    let rest = sse.until("run.completed", WAIT);
    let answered = rest
        .iter()
        .find(|e| e.event == "gate.answered")
        .expect("gate.answered");
    assert_eq!(answered.data["by"], "alice");
    assert_eq!(answered.data["via"], "api");
    assert!(
        sse.closed_within(Duration::from_secs(5)),
        "the run's stream ends with it"
    );

    // A second answer is told who decided, and when.
    let r = w.answer(
        &id,
        &w.alice,
        json!({ "decision": "reject", "reason": "late" }),
    );
    let why = expect_error(&r, 409, "already_answered");
    assert!(why.contains("alice"), "{why}");
    assert_eq!(r.json()["error"]["by"], "alice", "{}", r.body);
    let s = w.session(&id);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(w.llm.count(), 2, "the deployer ran once");
    let history = s["gates"].as_array().expect("history");
    assert_eq!(history.len(), 1, "{s}");
    assert_eq!(history[0]["by"], "alice");
    assert_eq!(history[0]["via"], "api");

    // Reconnecting after the gate opened misses nothing and repeats nothing.
    let mut again = Sse::open(
        &w.svc,
        &format!("/api/v1/sessions/{id}/events"),
        &w.alice,
        Some(opened.id),
    );
    let replay = again.until("run.completed", WAIT);
    assert_eq!(
        replay.first().map(|e| e.event.as_str()),
        Some("gate.answered")
    );
    assert!(replay.iter().all(|e| e.id > opened.id), "{replay:?}");

    // The audit trail names who answered and who was refused, via api.
    let r = call(
        &w.svc,
        "GET",
        &format!("/api/v1/audit?session={id}"),
        Some(&w.root),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let entries: Vec<Value> = r
        .body
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let by = |kind: &str, who: &str| {
        entries.iter().any(|e| {
            e["event"]["kind"] == kind && e["event"]["who"] == who && e["event"]["via"] == "api"
        })
    };
    assert!(by("answer", "alice"), "{entries:?}");
    assert!(
        by("refusal", "mallory") && by("refusal", "ci-bot"),
        "{entries:?}"
    );
    // Approvers may not read the audit.
    let r = call(&w.svc, "GET", "/api/v1/audit", Some(&w.alice), None);
    expect_error(&r, 403, "forbidden");
}

#[test]
fn every_stream_of_every_run_resumes_after_the_last_event_it_saw() {
    let w = World::start();
    let mut all = Sse::open(&w.svc, "/api/v1/events", &w.ci, None);
    assert_eq!(all.status(), 200, "{}", all.head);
    let first = w.start_run("one");
    let second = w.start_run("two");
    let mut opened = Vec::new();
    while opened.len() < 2 {
        let e = all.next(WAIT).expect("an event");
        if e.event == "gate.opened" {
            opened.push(e.data["session"].as_str().unwrap_or_default().to_string());
        }
    }
    opened.sort();
    let mut want = vec![first.clone(), second.clone()];
    want.sort();
    assert_eq!(opened, want);
    // Approvers may not follow every run; nobody without a token may.
    let r = call(&w.svc, "GET", "/api/v1/events", Some(&w.alice), None);
    expect_error(&r, 403, "forbidden");
    let r = call(&w.svc, "GET", "/api/v1/events", None, None);
    expect_error(&r, 401, "unauthorized");
    // A bad Last-Event-ID is a 400.
    let r = w.svc.request(
        "GET",
        "/api/v1/events",
        &[
            ("Authorization".into(), format!("Bearer {}", w.ci)),
            ("Last-Event-ID".into(), "yesterday".into()),
        ],
        b"",
    );
    expect_error(&r, 400, "bad_request");
}
