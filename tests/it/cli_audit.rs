//! The audit trail through the real binary: every request, answer, refusal
//! and outcome is chained; `audit verify` finds a changed byte at the right
//! entry; exports are filterable; previews are redacted.

use crate::common::Sandbox;
use serde_json::Value;

/// A chain with a review gate, on the offline rehearsal provider. The
/// researcher's input carries a secret so redaction can be checked.
const SPEC: &str = r#"
version: 0
name: audited
runtime:
  provider: echo
security:
  redact: ["ACCT-[0-9]{6}"]
agents:
  researcher:
    prompt: You research.
  writer:
    prompt: You write.
pattern:
  type: chain
  config:
    steps:
      - agent: researcher
        input: "Research account ACCT-123456 with key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"
      - type: manual_gate
        id: review
        prompt: Review the research.
      - agent: writer
        input: "Write: {{ steps[0].response }}"
"#;

fn paused(sandbox: &Sandbox) -> String {
    let path = sandbox.path().join("audited.yaml");
    std::fs::write(&path, SPEC).expect("write spec");
    let run = sandbox.strands(&["run", path.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    crate::common::session_id(&run.json())
}

fn export(sandbox: &Sandbox, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["audit", "export"];
    args.extend_from_slice(extra);
    let out = sandbox.strands(&args);
    out.expect_code(0);
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON entry per line"))
        .collect()
}

fn kinds(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[test]
fn every_request_answer_refusal_and_outcome_is_chained_and_verifiable() {
    let sandbox = Sandbox::new();
    let id = paused(&sandbox);
    sandbox
        .strands(&["resume", &id, "--modify", "--feedback", "more sources"])
        .expect_code(19);
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    // The same answer again is a retry: nothing is recorded.
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    // A late other answer is refused, changes nothing, and is audited.
    sandbox
        .strands(&["resume", &id, "--reject"])
        .expect_code(17);

    let entries = export(&sandbox, &[]);
    assert_eq!(
        kinds(&entries),
        ["request", "answer", "request", "answer", "outcome", "refusal"],
        "{entries:#?}"
    );
    let modify = &entries[1]["event"];
    assert_eq!(modify["who"], "tester");
    assert_eq!(modify["via"], "cli");
    assert_eq!(modify["decision"]["action"], "modify");
    assert!(modify["response_ms"].as_u64().is_some());
    assert!(entries[0]["event"]["shown_digest"]
        .as_str()
        .is_some_and(|d| d.len() == 64));
    let outcome = entries[4]["event"]["detail"].as_str().unwrap_or_default();
    assert!(outcome.starts_with("completed; output"), "{outcome}");
    assert!(
        !outcome.contains("[writer]"),
        "full outputs are not copied into the log: {outcome}"
    );
    for pair in entries.windows(2) {
        assert_eq!(
            pair[1]["prev"], pair[0]["hash"],
            "each entry carries the previous hash"
        );
    }

    let verify = sandbox.strands(&["audit", "verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["entries"], 6);

    // Filters and CSV.
    let other = paused(&sandbox);
    assert_eq!(export(&sandbox, &["--session", &other]).len(), 1);
    assert_eq!(export(&sandbox, &["--since", "2999-01-01"]).len(), 0);
    let csv = sandbox.strands(&["audit", "export", "--format", "csv"]);
    csv.expect_code(0);
    let mut lines = csv.stdout.lines();
    assert!(lines
        .next()
        .is_some_and(|h| h.starts_with("seq,at,session,workflow,kind")));
    assert!(csv.stdout.contains(",refusal,"), "{}", csv.stdout);
}

#[test]
fn one_changed_byte_breaks_the_chain_at_that_entry() {
    let sandbox = Sandbox::new();
    let id = paused(&sandbox);
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    sandbox.strands(&["audit", "verify"]).expect_code(0);

    // Someone with access to the store edits entry #2 (the answer): one byte.
    {
        let db = sled::open(&sandbox.store).expect("open the store directly");
        let log = db
            .open_tree(strands::store::sled::trees::AUDIT)
            .expect("audit tree");
        let key = 2u64.to_be_bytes();
        let mut bytes = log.get(key).expect("read").expect("entry #2").to_vec();
        let text = String::from_utf8(bytes.clone()).expect("utf-8");
        let at = text.find("tester").expect("the answer names who answered");
        bytes[at] = b'T';
        log.insert(key, bytes).expect("write");
        db.flush().expect("flush");
    }
    let verify = sandbox.strands(&["audit", "verify", "--json"]);
    verify.expect_code(22);
    let v = verify.json();
    assert_eq!(v["intact"], false);
    assert_eq!(v["broken_at"], 2, "{v}");
    assert!(verify.stderr.contains("#2"), "{}", verify.stderr);
}

#[test]
fn previews_shown_and_audited_are_redacted() {
    let sandbox = Sandbox::new();
    let path = sandbox.path().join("audited.yaml");
    std::fs::write(&path, SPEC).expect("write spec");
    let run = sandbox.strands(&["run", path.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    let shown = run.json()["gate"]["preview"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(shown.contains("[REDACTED]"), "{shown}");
    for secret in ["ACCT-123456", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
        assert!(!run.stdout.contains(secret), "{secret} printed");
    }
    let entries = export(&sandbox, &[]);
    let preview = entries[0]["event"]["preview"].as_str().unwrap_or_default();
    assert!(
        preview.contains("[REDACTED]") && !preview.contains("ACCT-123456"),
        "{preview}"
    );
}
