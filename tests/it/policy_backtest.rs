//! `strands policy backtest`: a known history of approval requests
//! (`strands ask --policy payments --detail amount=…`, answered with
//! `strands resume`) judged again by a candidate service file whose
//! threshold is lower and whose quorum is 2 — exact counts per rule, the
//! exact sessions that would now need more approvals, who would be asked
//! instead; `--since`, `--json`, the requests it cannot replay and why, and
//! proof that nothing in the store or the audit changed. On sled, and on
//! PostgreSQL when a test server can be started.

use serde_json::{json, Value};

use crate::common::Sandbox;

/// The file in force: above 10000 the CFO alone, else either clerk.
const IN_FORCE: &str = r#"policies:
  payments:
    - when: "{{ details.amount > 10000 }}"
      approvers: [cfo]
      quorum: 1
    - approvers: [clerk1, clerk2]
"#;

/// The candidate: above 5000 the CFO and the controller, both.
const CANDIDATE: &str = r#"policies:
  payments:
    - when: "{{ details.amount > 5000 }}"
      approvers: [cfo, controller]
      quorum: 2
    - approvers: [clerk1, clerk2]
"#;

fn write(sandbox: &Sandbox, name: &str, text: &str) -> String {
    let path = sandbox.path().join(name);
    std::fs::write(&path, text).expect("write a service file");
    path.display().to_string()
}

/// `strands ask` for `amount` under the policy; the request's id.
fn ask(sandbox: &Sandbox, file: &str, amount: &str) -> String {
    let detail = format!("amount={amount}");
    let out = sandbox.strands_as(
        "ci",
        &[("STRANDS_SERVICE_FILE", file)],
        &[
            "ask",
            "Pay?",
            "--policy",
            "payments",
            "--detail",
            &detail,
            "--no-wait",
        ],
    );
    out.expect_code(0);
    out.stdout.trim().to_string()
}

fn answer(sandbox: &Sandbox, who: &str, id: &str, flags: &[&str], code: i32) {
    let mut args = vec!["resume", id];
    args.extend_from_slice(flags);
    sandbox.strands_as(who, &[], &args).expect_code(code);
}

fn backtest(sandbox: &Sandbox, file: &str, extra: &[&str]) -> crate::common::Outcome {
    let candidate = write(sandbox, "candidate.yaml", CANDIDATE);
    let mut args = vec!["policy", "backtest", "--service-file", &candidate];
    args.extend_from_slice(extra);
    let out = sandbox.strands_as("tester", &[("STRANDS_SERVICE_FILE", file)], &args);
    out.expect_code(0);
    out
}

/// Everything a backtest must leave as it was: the whole audit (and so
/// its head), the chain's verdict, every session.
fn state(sandbox: &Sandbox) -> (String, String, String) {
    let audit = sandbox.strands(&["audit", "export"]);
    audit.expect_code(0);
    let verify = sandbox.strands(&["audit", "verify", "--json"]);
    verify.expect_code(0);
    let sessions = sandbox.strands(&["sessions", "list", "--json"]);
    sessions.expect_code(0);
    (audit.stdout, verify.stdout, sessions.stdout)
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The history, the backtest and its checks, on `sandbox`'s store.
fn a_lower_threshold_and_a_quorum_of_two(sandbox: &Sandbox) {
    let file = write(sandbox, "service.yaml", IN_FORCE);
    // 20000: the CFO's (rule 1); 7000 and 6000 and 100: a clerk's (rule 2).
    let big = ask(sandbox, &file, "20000");
    let mid = ask(sandbox, &file, "7000");
    let low = ask(sandbox, &file, "6000");
    let small = ask(sandbox, &file, "100");
    answer(sandbox, "cfo", &big, &["--approve"], 0);
    answer(sandbox, "clerk1", &mid, &["--approve"], 0);
    answer(sandbox, "clerk2", &low, &["--reject", "--reason", "no"], 21);
    answer(sandbox, "clerk1", &small, &["--approve"], 0);
    // A request of a session deleted since, and one without rules.
    let gone = ask(sandbox, &file, "9000");
    sandbox
        .strands(&["sessions", "delete", &gone, "--force"])
        .expect_code(0);
    let plain = sandbox.strands_as(
        "ci",
        &[],
        &["ask", "Deploy?", "--approvers", "bob", "--no-wait"],
    );
    plain.expect_code(0);
    let plain = plain.stdout.trim().to_string();

    let before = state(sandbox);
    let out = backtest(sandbox, &file, &["--json"]);
    let b = out.json();
    assert_eq!(b["requests"], 6, "{b:#}");
    assert_eq!(b["replayed"], 4, "{b:#}");
    assert!(b["since"].is_string(), "{b:#}");
    assert!(
        b["service_file"]
            .as_str()
            .is_some_and(|f| f.ends_with("candidate.yaml")),
        "{b:#}"
    );
    assert_eq!(
        b["not_replayed"],
        json!([
            {"reason": "its session was deleted", "requests": 1, "sessions": [gone]},
            {"reason": "no approval rules decided it (its approvers were a fixed list)",
             "requests": 1, "sessions": [plain]},
        ]),
        "{b:#}"
    );
    let rules = b["rules"].as_array().cloned().unwrap_or_default();
    assert_eq!(rules.len(), 2, "{b:#}");
    let r1 = &rules[0];
    assert_eq!(r1["policy"], "payments");
    assert_eq!(r1["rule"], 1);
    assert_eq!(
        r1["summary"],
        "needs 2 of cfo, controller because amount > 5000"
    );
    assert_eq!(r1["requests"], 3, "{r1:#}");
    assert_eq!(
        r1["from"],
        json!([
            {"rule": 1, "summary": "needs 1 of cfo because amount > 10000", "requests": 1},
            {"rule": 2, "summary": "needs 1 of clerk1, clerk2 (default rule)", "requests": 2},
        ]),
        "{r1:#}"
    );
    assert_eq!(r1["asked_instead"], json!(["cfo", "controller"]), "{r1:#}");
    assert_eq!(r1["no_longer_asked"], json!(["clerk1", "clerk2"]), "{r1:#}");
    assert_eq!(
        r1["approvals"],
        json!({"more": 3, "fewer": 0, "same": 0}),
        "{r1:#}"
    );
    assert_eq!(
        ids(&r1["sessions"]["more"]),
        [big.as_str(), mid.as_str(), low.as_str()],
        "{r1:#}"
    );
    let r2 = &rules[1];
    assert_eq!(r2["requests"], 1, "{r2:#}");
    assert_eq!(r2["approvals"], json!({"more": 0, "fewer": 0, "same": 1}));
    assert_eq!(ids(&r2["sessions"]["same"]), [small.as_str()]);
    assert_eq!(r2["asked_instead"], json!([]));

    // Each replay: what was recorded, what the candidate would ask.
    let replays = b["replays"].as_array().cloned().unwrap_or_default();
    assert_eq!(replays.len(), 4, "{b:#}");
    let mid_replay = &replays[1];
    assert_eq!(mid_replay["session"], mid.as_str());
    assert_eq!(mid_replay["outcome"], "approved");
    assert_eq!(mid_replay["approvals"], 1);
    assert_eq!(mid_replay["change"], "more");
    assert_eq!(mid_replay["recorded"]["rule"], 2);
    assert_eq!(mid_replay["recorded"]["approvals_needed"], 1);
    assert_eq!(
        mid_replay["recorded"]["approvers"],
        json!(["clerk1", "clerk2"])
    );
    assert_eq!(mid_replay["candidate"]["rule"], 1);
    assert_eq!(mid_replay["candidate"]["approvals_needed"], 2);
    assert_eq!(replays[2]["outcome"], "rejected");

    // The table says the same to people.
    let table = backtest(sandbox, &file, &[]).stdout.clone();
    assert!(
        table.contains("6 requests recorded; 4 replayed, 2 not:"),
        "{table}"
    );
    assert!(
        table.contains("would now need more approvals (3):"),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "{mid} (payments rule 2 → rule 1): approved by 1, the new rule needs 2"
        )),
        "{table}"
    );
    assert!(
        table.contains(&format!(
            "{low} (payments rule 2 → rule 1): rejected (needed 1), the new rule needs 2"
        )),
        "{table}"
    );

    // Nothing changed: the audit, its chain, every session.
    assert_eq!(state(sandbox), before, "a backtest changed the store");

    // --since: only the requests made after the moment given.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let moment = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let late = ask(sandbox, &file, "8000");
    answer(sandbox, "clerk2", &late, &["--approve"], 0);
    let b = backtest(sandbox, &file, &["--json", "--since", &moment]).json();
    assert_eq!(
        (b["requests"].clone(), b["replayed"].clone()),
        (json!(1), json!(1)),
        "{b:#}"
    );
    assert_eq!(b["rules"][0]["requests"], 1, "{b:#}");
    assert_eq!(
        ids(&b["rules"][0]["sessions"]["more"]),
        [late.as_str()],
        "{b:#}"
    );
    let none = backtest(sandbox, &file, &["--json", "--since", "0d"]).json();
    assert_eq!(none["requests"], 0, "{none:#}");
}

#[test]
fn a_candidate_is_replayed_on_the_recorded_requests_changing_nothing() {
    a_lower_threshold_and_a_quorum_of_two(&Sandbox::new());
}

#[test]
fn on_postgresql_the_backtest_is_the_same() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let Some(url) = rt.block_on(strands::store::postgres::testdb::database("backtest")) else {
        return;
    };
    let mut sandbox = Sandbox::new();
    sandbox.store = std::path::PathBuf::from(url);
    a_lower_threshold_and_a_quorum_of_two(&sandbox);
}

#[test]
fn through_the_server_the_backtest_is_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write a service file");
        p.display().to_string()
    };
    // alice alone decides today; the candidate adds mallory above 5000.
    let file = path(
        "service.yaml",
        "policies:\n  payments:\n    - when: \"{{ details.amount > 10000 }}\"\n      approvers: [alice]\n    - approvers: [alice]\n",
    );
    let candidate = path(
        "candidate.yaml",
        "policies:\n  payments:\n    - when: \"{{ details.amount > 5000 }}\"\n      approvers: [alice, mallory]\n      quorum: 2\n    - approvers: [alice]\n",
    );
    let w =
        super::api::World::start_with(|cfg| cfg.with("STRANDS_SERVICE_FILE", Some(file.as_str())));
    let mut made = Vec::new();
    for amount in ["20000", "7000", "100"] {
        let r = crate::common::api::call(
            &w.svc,
            "POST",
            "/api/v1/approvals",
            Some(&w.ci),
            Some(&json!({"title": "Pay?", "policy": "payments", "details": {"amount": amount}})),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.json()["id"].as_str().expect("an id").to_string();
        w.wait_paused(&id);
        let r = w.answer(&id, &w.alice, json!({ "decision": "approve" }));
        assert_eq!(r.status, 200, "{}", r.body);
        made.push(id);
    }
    // The server holds the sled store: only through it can this read.
    let out = w.sandbox.strands_as(
        "x",
        &[
            ("STRANDS_SERVER", w.svc.url.as_str()),
            ("STRANDS_TOKEN", w.root.as_str()),
        ],
        &["policy", "backtest", "--service-file", &candidate, "--json"],
    );
    out.expect_code(0);
    let b = out.json();
    assert_eq!(
        (b["requests"].clone(), b["replayed"].clone()),
        (json!(3), json!(3)),
        "{b:#}"
    );
    let r1 = &b["rules"][0];
    assert_eq!(r1["requests"], 2, "{b:#}");
    assert_eq!(
        r1["from"],
        json!([
            {"rule": 1, "summary": "needs 1 of alice because amount > 10000", "requests": 1},
            {"rule": 2, "summary": "needs 1 of alice (default rule)", "requests": 1},
        ]),
        "{b:#}"
    );
    assert_eq!(r1["asked_instead"], json!(["mallory"]), "{b:#}");
    assert_eq!(
        ids(&r1["sessions"]["more"]),
        [made[0].as_str(), made[1].as_str()],
        "{b:#}"
    );
    assert_eq!(ids(&b["rules"][1]["sessions"]["same"]), [made[2].as_str()]);
}

#[test]
fn a_bad_candidate_file_is_named_with_its_line() {
    let sandbox = Sandbox::new();
    let bad = write(
        &sandbox,
        "bad.yaml",
        "policies:\n  payments:\n    - when: \"{{ details.amount > 5000 }}\"\n      approvers: [cfo]\n      quorom: 2\n    - approvers: [clerk1]\n",
    );
    let out = sandbox.strands(&["policy", "backtest", "--service-file", &bad]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.yaml") && out.stderr.contains("policy `payments`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("quorom"), "{}", out.stderr);

    let broken = write(&sandbox, "broken.yaml", "policies:\n  payments: [\n");
    let out = sandbox.strands(&["policy", "backtest", "--service-file", &broken]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("broken.yaml") && out.stderr.contains("line"),
        "{}",
        out.stderr
    );
    let out = sandbox.strands(&["policy", "backtest", "--service-file", "nope.yaml"]);
    out.expect_code(2);
    assert!(out.stderr.contains("nope.yaml"), "{}", out.stderr);
}
