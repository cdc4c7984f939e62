//! Trust within limits through the `strands` binary: an approver answers a
//! tool call with `--trust --for 1h|run --match NAME^=PREFIX`, later calls
//! the grant allows run without asking (each `tool_run` audit entry points
//! to the grant), others ask; a grant expires, is revoked
//! (`strands trust revoke`), and a rule with `trust: never` refuses it.
//! The fake model asks for `file_write` calls; the workspace's files show
//! what ran.

use crate::common::{gate_calls, session_id, tool_call, tool_model, FakeLlm, Sandbox};
use serde_json::{json, Value};
use std::path::PathBuf;

const SPEC: &str = r#"
version: 0
name: notes
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
tools:
  workspace: $WS
$SECURITY
agents:
  worker:
    prompt: You are the WORKER.
    tools: [file_write]
    enable_trust: true
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: Write the notes.
"#;

struct Setup {
    sandbox: Sandbox,
    spec: String,
    _fake: FakeLlm,
}

fn write(id: &str, path: &str) -> Value {
    tool_call(id, "file_write", json!({"path": path, "content": id}))
}

impl Setup {
    /// Each run: the model writes `notes/a.md`, then `notes/b.md`, then
    /// `secret.txt`, one call a turn.
    fn new(security: &str) -> Setup {
        Setup::with_turns(
            security,
            vec![
                vec![write("a", "notes/a.md")],
                vec![write("b", "notes/b.md")],
                vec![write("s", "secret.txt")],
            ],
        )
    }

    /// The model asks for `turns`, one batch a turn.
    fn with_turns(security: &str, turns: Vec<Vec<Value>>) -> Setup {
        let fake = tool_model(turns);
        let sandbox = Sandbox::new();
        let ws = sandbox.path().join("ws");
        let yaml = SPEC
            .replace("$WS", &ws.display().to_string())
            .replace("$SECURITY", security);
        let spec = sandbox
            .spec("notes.yaml", &yaml, &fake)
            .display()
            .to_string();
        Setup {
            sandbox,
            spec,
            _fake: fake,
        }
    }

    fn ws(&self) -> PathBuf {
        self.sandbox.path().join("ws")
    }

    fn exists(&self, name: &str) -> bool {
        self.ws().join(name).exists()
    }

    fn clear(&self) {
        let _ = std::fs::remove_dir_all(self.ws());
    }

    fn run(&self, code: i32) -> Value {
        let out = self.sandbox.strands(&["run", &self.spec, "--json"]);
        out.expect_code(code);
        out.json()
    }

    fn waiting(v: &Value) -> Vec<String> {
        gate_calls(v)
            .iter()
            .filter(|c| c["state"]["state"] == "waiting")
            .map(|c| c["id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn grants(&self, all: bool) -> Vec<Value> {
        let mut args = vec!["trust", "list", "--json"];
        if all {
            args.push("--all");
        }
        let out = self.sandbox.strands(&args);
        out.expect_code(0);
        out.json()["grants"].as_array().cloned().unwrap_or_default()
    }

    fn audit(&self) -> Vec<Value> {
        let out = self.sandbox.strands(&["audit", "export"]);
        out.expect_code(0);
        out.stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON entry per line"))
            .collect()
    }
}

/// The grant id `resume` printed: `granted gr_…: RULE`.
fn granted(stderr: &str) -> (String, String) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("granted gr_"))
        .unwrap_or_else(|| panic!("no grant printed: {stderr}"));
    let rest = line.trim_start_matches("granted ");
    let (id, rule) = rest.split_once(": ").expect("id: rule");
    (id.to_string(), rule.to_string())
}

#[test]
fn a_grant_allows_matching_calls_in_later_runs_until_it_is_revoked() {
    let s = Setup::new("");
    let v = s.run(19);
    let id = session_id(&v);
    assert_eq!(Setup::waiting(&v), ["a"]);

    // A match that does not hold for the call answered is refused: it
    // would allow nothing like what the approver looked at.
    let out = s.sandbox.strands(&[
        "resume",
        &id,
        "--trust",
        "--for",
        "1h",
        "--match",
        "path^=docs/",
    ]);
    out.expect_code(2);
    assert!(out.stderr.contains("does not hold"), "{}", out.stderr);
    assert!(s.grants(true).is_empty());

    let out = s.sandbox.strands(&[
        "resume",
        &id,
        "--trust",
        "--for",
        "1h",
        "--match",
        "path^=notes/",
        "--json",
    ]);
    out.expect_code(19);
    let (grant, rule) = granted(&out.stderr);
    assert!(
        rule.starts_with(
            "tool file_write where args.path starts with \"notes/\" of workflow notes, until "
        ),
        "{rule}"
    );
    let v = out.json();
    // a (answered) and b (the grant) ran; secret.txt does not match: asks.
    assert_eq!(Setup::waiting(&v), ["s"], "{v:#}");
    assert!(s.exists("notes/a.md") && s.exists("notes/b.md"));
    assert!(!s.exists("secret.txt"));
    s.sandbox
        .strands(&["resume", &id, "--reject"])
        .expect_code(0);
    assert!(!s.exists("secret.txt"));

    // The audit: the grant made, and b's run pointing to it (a ran on
    // the answer itself, so its entry has no pointer).
    let audit = s.audit();
    let made: Vec<&Value> = audit
        .iter()
        .filter(|e| e["event"]["kind"] == "grant")
        .collect();
    assert_eq!(made.len(), 1, "{audit:#?}");
    assert_eq!(made[0]["event"]["grant"], grant.as_str());
    assert_eq!(made[0]["event"]["who"], "tester");
    // The answer that made it points to it too.
    let answer = audit
        .iter()
        .find(|e| e["event"]["kind"] == "answer" && e["event"]["decision"]["action"] == "trust")
        .expect("the trust answer");
    assert_eq!(answer["event"]["grant"], grant.as_str(), "{answer:#}");
    assert_eq!(
        answer["event"]["decision"]["limit"]["span"],
        json!({"for": {"secs": 3600}})
    );
    let runs: Vec<(&Value, &Value)> = audit
        .iter()
        .filter(|e| e["event"]["kind"] == "tool_run")
        .map(|e| (&e["event"]["call"], &e["event"]["grant"]))
        .collect();
    assert_eq!(
        runs,
        [(&json!("a"), &Value::Null), (&json!("b"), &json!(grant))],
        "{audit:#?}"
    );

    // The grant is of the workflow: a new run writes the notes unasked.
    s.clear();
    let v = s.run(19);
    assert_eq!(Setup::waiting(&v), ["s"], "{v:#}");
    assert!(s.exists("notes/a.md") && s.exists("notes/b.md"));
    let listed = s.grants(false);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], grant.as_str());
    assert_eq!(listed[0]["state"], "live");
    assert_eq!(listed[0]["granted_by"], "tester");

    // Revoked: the next run asks again from the first call.
    let out = s.sandbox.strands(&["trust", "revoke", &grant]);
    out.expect_code(0);
    assert!(out.stderr.contains("revoked grant"), "{}", out.stderr);
    assert!(s.grants(false).is_empty());
    assert_eq!(s.grants(true)[0]["state"], "revoked");
    assert_eq!(s.grants(true)[0]["revoked_by"], "tester");
    s.sandbox
        .strands(&["trust", "revoke", "gr_0000000000000000"])
        .expect_code(17);
    s.clear();
    let v = s.run(19);
    assert_eq!(Setup::waiting(&v), ["a"], "{v:#}");
    assert!(!s.exists("notes/a.md"));
    let kinds: Vec<String> = s
        .audit()
        .iter()
        .filter(|e| e["event"]["kind"] == "grant")
        .map(|e| {
            e["event"]["detail"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.len(), 2, "made and revoked: {kinds:?}");
    assert!(kinds[1].starts_with("revoked: "), "{kinds:?}");
    s.sandbox.strands(&["audit", "verify"]).expect_code(0);
}

#[test]
fn a_grant_expires_and_one_for_the_run_ends_with_the_run() {
    let s = Setup::new("");
    let id = session_id(&s.run(19));
    let out = s
        .sandbox
        .strands(&["resume", &id, "--trust", "--for", "3s", "--json"]);
    // Without a match the grant covers secret.txt too.
    out.expect_code(0);
    let (grant, rule) = granted(&out.stderr);
    assert!(
        rule.starts_with("tool file_write of workflow notes, until "),
        "{rule}"
    );
    assert!(s.exists("notes/b.md") && s.exists("secret.txt"));
    assert_eq!(s.grants(false).len(), 1);
    // Until it expires.
    std::thread::sleep(std::time::Duration::from_millis(3200));
    assert!(s.grants(false).is_empty(), "expired");
    let all = s.grants(true);
    assert_eq!(all[0]["id"], grant.as_str());
    assert_eq!(all[0]["state"], "expired");
    s.clear();
    assert_eq!(
        Setup::waiting(&s.run(19)),
        ["a"],
        "an expired grant allows nothing"
    );

    // For this run: b and secret.txt run unasked, a new run asks again.
    let s = Setup::new("");
    let id = session_id(&s.run(19));
    let out = s
        .sandbox
        .strands(&["resume", &id, "--trust", "--for", "run", "--json"]);
    out.expect_code(0);
    let (_, rule) = granted(&out.stderr);
    assert_eq!(
        rule,
        format!("tool file_write of workflow notes, for run {id}")
    );
    assert!(s.exists("secret.txt"));
    s.clear();
    assert_eq!(Setup::waiting(&s.run(19)), ["a"]);
}

#[test]
fn a_rule_with_trust_never_refuses_a_grant_and_no_grant_applies_to_it() {
    let security = r#"security:
  approvers:
    - when: "{{ tool.args.path == 'secret.txt' }}"
      approvers: [tester]
      trust: never
    - approvers: [tester]"#;
    let s = Setup::new(security);
    // `policy explain` says so for the call it covers, and not for another.
    let explain = |path: &str| {
        let args = format!(r#"{{"path": "{path}", "content": "x"}}"#);
        let out = s.sandbox.strands(&[
            "policy",
            "explain",
            &s.spec,
            "--tool",
            "file_write",
            "--args",
            &args,
        ]);
        out.expect_code(0);
        let json = s.sandbox.strands(&[
            "policy",
            "explain",
            &s.spec,
            "--tool",
            "file_write",
            "--args",
            &args,
            "--json",
        ]);
        json.expect_code(0);
        (out.stdout, json.json()["explained"][0]["trust"].clone())
    };
    let (text, trust) = explain("secret.txt");
    assert!(text.contains("trust: never"), "{text}");
    assert_eq!(trust, "never", "{text}");
    let (text, trust) = explain("notes/a.md");
    assert!(!text.contains("trust: never"), "{text}");
    assert_eq!(trust, "allowed", "{text}");
    let id = session_id(&s.run(19));
    // A grant for every file_write (no match), for an hour.
    let out = s
        .sandbox
        .strands(&["resume", &id, "--trust", "--for", "1h", "--json"]);
    out.expect_code(19);
    granted(&out.stderr);
    let v = out.json();
    // b ran on the grant; secret.txt's rule says never: it asks, and
    // offers no trust.
    assert_eq!(Setup::waiting(&v), ["s"], "{v:#}");
    let calls = gate_calls(&v);
    let call = calls.iter().find(|c| c["id"] == "s").expect("the call s");
    assert_eq!(call["request"]["trustable"], false, "{v:#}");
    let out = s
        .sandbox
        .strands(&["resume", &id, "--trust", "--for", "1h"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("trust: never"), "{}", out.stderr);
    assert!(!s.exists("secret.txt"));
    assert_eq!(s.grants(false).len(), 1, "nothing new granted");
    s.sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert!(s.exists("secret.txt"));

    // In one batch, trust of another call covers neither a call whose
    // rule says never, plain or within limits.
    for limits in [&[][..], &["--for", "run"][..]] {
        let s = Setup::with_turns(
            security,
            vec![vec![write("a", "notes/a.md"), write("s", "secret.txt")]],
        );
        let id = session_id(&s.run(19));
        let mut args = vec!["resume", id.as_str(), "--call", "a", "--trust", "--json"];
        args.extend_from_slice(limits);
        let out = s.sandbox.strands(&args);
        out.expect_code(19);
        assert_eq!(
            Setup::waiting(&out.json()),
            ["s"],
            "{limits:?}: {}",
            out.stdout
        );
    }

    // A rule key `validate` does not know is an error at its line.
    let bad =
        Setup::new("security:\n  approvers:\n    - approvers: [tester]\n      trust: sometimes");
    let out = bad.sandbox.strands(&["validate", &bad.spec]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("`trust` is `never`") || out.stdout.contains("`trust` is `never`"),
        "{} {}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn over_the_api_a_grant_is_made_by_an_answer_listed_and_revoked() {
    use crate::common::api::{call, expect_error, make_token};
    use crate::common::service::{write_workflows, ServeConfig, Service};
    let fake = tool_model(vec![
        vec![write("a", "notes/a.md")],
        vec![write("b", "notes/b.md")],
        vec![write("s", "secret.txt")],
    ]);
    let sandbox = Sandbox::new();
    let ws = sandbox.path().join("ws");
    let yaml = SPEC
        .replace("$WS", &ws.display().to_string())
        .replace("$SECURITY", "security:\n  approvers: [alice]");
    let dir = write_workflows(&sandbox, &fake, &[("notes", &yaml)]);
    let ci = make_token(&sandbox, "ci-bot", "operator");
    let alice = make_token(&sandbox, "alice", "approver");
    let svc = Service::launch(ServeConfig::api(&sandbox, &dir));
    let session = |id: &str| {
        call(
            &svc,
            "GET",
            &format!("/api/v1/sessions/{id}"),
            Some(&alice),
            None,
        )
        .json()
    };
    let paused_at = |id: &str, call_id: &str| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let s = session(id);
            if s["status"] == "paused" && gate_calls(&s).iter().any(|c| c["id"] == call_id) {
                return s;
            }
            assert!(
                std::time::Instant::now() < until,
                "never paused at {call_id}: {s}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let r = call(
        &svc,
        "POST",
        "/api/v1/runs",
        Some(&ci),
        Some(&json!({ "workflow": "notes" })),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session_id"].as_str().expect("an id").to_string();
    paused_at(&id, "a");
    let answer = |body: Value| {
        call(
            &svc,
            "POST",
            &format!("/api/v1/sessions/{id}/answers"),
            Some(&alice),
            Some(&body),
        )
    };

    // Limits go with trust only, and must read.
    let r = answer(json!({ "decision": "approve", "for": "1h" }));
    assert!(expect_error(&r, 422, "bad_answer").contains("limit a `trust` answer"));
    let r = answer(json!({ "decision": "trust", "for": "soon" }));
    assert!(expect_error(&r, 422, "bad_answer").contains("`for`"));
    let r = answer(json!({ "decision": "trust", "match": ["path"] }));
    assert!(expect_error(&r, 422, "bad_answer").contains("not a match"));

    let r = answer(json!({ "decision": "trust", "for": "1h", "match": ["path^=notes/"] }));
    assert_eq!(r.status, 200, "{}", r.body);
    paused_at(&id, "s");
    assert!(ws.join("notes/b.md").exists(), "b ran on the grant");

    let r = call(&svc, "GET", "/api/v1/grants", Some(&alice), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.json();
    assert_eq!(list["count"], 1, "{list}");
    let g = &list["grants"][0];
    assert_eq!(g["granted_by"], "alice");
    assert_eq!(g["state"], "live");
    assert_eq!(g["tool"], "file_write");
    assert_eq!(g["origin"]["session"], id.as_str());
    assert_eq!(g["when"], json!([{"arg": "path", "starts_with": "notes/"}]));
    let grant = g["id"].as_str().expect("an id").to_string();
    assert_eq!(call(&svc, "GET", "/api/v1/grants", None, None).status, 401);

    // The web inbox lists it with a Revoke button; a post without the
    // sign-in's CSRF token changes nothing, one with it revokes.
    let web = crate::web::Visitor::sign_in(&svc, &alice);
    let page = web.get("/grants");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(&grant), "{}", page.body);
    assert!(
        page.body.contains("action=\"/grants/revoke\""),
        "{}",
        page.body
    );
    let r = web.post("/grants/revoke", &[("id", grant.as_str())]);
    assert_ne!(r.status, 303, "refused without the CSRF token: {}", r.body);
    let r = call(&svc, "GET", "/api/v1/grants", Some(&alice), None);
    assert_eq!(r.json()["count"], 1, "still live");
    let csrf = crate::web::csrf_of(&page.body);
    let r = web.post(
        "/grants/revoke",
        &[("csrf", csrf.as_str()), ("id", grant.as_str())],
    );
    assert_eq!(r.status, 303, "{}", r.body);

    // Revoking again over the API: the grant as it was revoked.
    let r = call(
        &svc,
        "DELETE",
        &format!("/api/v1/grants/{grant}"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["state"], "revoked");
    assert_eq!(r.json()["revoked_by"], "alice");
    let r = call(&svc, "DELETE", "/api/v1/grants/gr_none", Some(&alice), None);
    expect_error(&r, 404, "not_found");
    let r = call(&svc, "GET", "/api/v1/grants", Some(&alice), None);
    assert_eq!(r.json()["count"], 0);
    let r = call(&svc, "GET", "/api/v1/grants?all=true", Some(&alice), None);
    assert_eq!(r.json()["grants"][0]["state"], "revoked");

    // The CLI goes through the server.
    let out = sandbox.strands_env(
        &[
            ("STRANDS_SERVER", svc.url.as_str()),
            ("STRANDS_TOKEN", alice.as_str()),
        ],
        &["trust", "list", "--all", "--json"],
    );
    out.expect_code(0);
    assert_eq!(
        out.json()["grants"][0]["id"],
        grant.as_str(),
        "{}",
        out.stdout
    );
}
