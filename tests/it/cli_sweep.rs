//! `strands sessions sweep`: applies every gate timeout that has passed,
//! without the bot (for cron), exactly once, and leaves gates not yet due
//! alone.

use crate::common::{history, wait_past, FakeLlm, Sandbox};
use serde_json::Value;

/// One agent, a hitl gate (`GATE`), one more agent; the offline `echo`
/// provider answers.
const FLOW: &str = r#"
version: 0
name: NAME
runtime:
  provider: echo
agents:
  writer:
    prompt: You write.
  shipper:
    prompt: You ship.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Write it.
      - type: hitl
        id: review
        prompt: Ship it?
GATE
      - agent: shipper
        input: "Ship: {{ steps[1].response }}"
"#;

/// Starts workflow `name` whose gate has `keys`; returns its session id.
fn paused(sandbox: &Sandbox, llm: &FakeLlm, name: &str, keys: &str) -> String {
    let yaml = FLOW.replace("NAME", name).replace("GATE", keys.trim_end());
    let spec = sandbox.spec(&format!("{name}.yaml"), &yaml, llm);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    out.expect_code(19);
    crate::common::session_id(&out.json())
}

fn answers(show: &Value) -> Vec<Value> {
    history(show)
        .into_iter()
        .filter(|g| g["event"] == "answered")
        .collect()
}

fn swept_for<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["swept"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["session"] == id))
        .unwrap_or_else(|| panic!("{id} not swept: {v:#}"))
}

#[test]
fn sweep_applies_passed_timeouts_once_and_leaves_the_rest() {
    // The echo provider needs no model server; FakeLlm only fills `$HOST`.
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let approve = paused(
        &sandbox,
        &llm,
        "approve",
        "        timeout_seconds: 1\n        fallback_action: approve\n",
    );
    let reject = paused(
        &sandbox,
        &llm,
        "reject",
        "        timeout_seconds: 1\n        fallback_action: reject\n",
    );
    let abort = paused(
        &sandbox,
        &llm,
        "abort",
        "        timeout_seconds: 1\n        fallback_action: abort\n",
    );
    let skip = paused(
        &sandbox,
        &llm,
        "skip",
        "        timeout_seconds: 1\n        fallback_action: skip\n",
    );
    let default = paused(
        &sandbox,
        &llm,
        "default",
        "        timeout_seconds: 1\n        default: looks fine\n",
    );
    let escalate = paused(
        &sandbox,
        &llm,
        "escalate",
        "        timeout_seconds: 1\n        fallback_action: escalate\n        escalation_target: [U0BOSS]\n",
    );
    let later = paused(
        &sandbox,
        &llm,
        "later",
        "        timeout_seconds: 3600\n        fallback_action: approve\n",
    );
    let never = paused(&sandbox, &llm, "never", "");
    // The last of the one-second gates opened last: when its deadline has
    // passed, all six have.
    wait_past(&sandbox.show(&escalate)["gate"]["timeout_at"]);

    let out = sandbox.strands(&["sessions", "sweep", "--json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["count"], 6, "{v:#}");
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(0), "{v:#}");

    let s = swept_for(&v, &approve);
    assert_eq!(s["fallback"], "approve");
    assert_eq!(s["status"], "completed", "{v:#}");
    let s = swept_for(&v, &reject);
    assert_eq!(s["status"], "rejected", "{v:#}");
    assert!(
        s["reason"]
            .as_str()
            .is_some_and(|r| r.contains("rejected by fallback")),
        "{v:#}"
    );
    assert_eq!(swept_for(&v, &abort)["status"], "failed", "{v:#}");
    assert_eq!(swept_for(&v, &skip)["status"], "completed", "{v:#}");
    assert_eq!(swept_for(&v, &default)["status"], "completed", "{v:#}");
    let s = swept_for(&v, &escalate);
    assert_eq!(
        s["status"], "rejected",
        "without the bot escalate rejects: {v:#}"
    );
    assert!(
        s["note"].as_str().is_some_and(|n| n.contains("bot")),
        "{v:#}"
    );

    // What each fallback did to the run.
    let show = sandbox.show(&approve);
    let a = answers(&show);
    assert_eq!(a.len(), 1, "{show:#}");
    assert_eq!(a[0]["by"], "timeout");
    assert_eq!(a[0]["decision"]["action"], "approve");
    let show = sandbox.show(&abort);
    assert_eq!(show["status"], "failed");
    assert!(
        show["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("timed out: aborted by fallback")),
        "{show:#}"
    );
    let show = sandbox.show(&skip);
    assert_eq!(answers(&show)[0]["decision"]["action"], "skip", "{show:#}");
    assert!(
        show["output"]
            .as_str()
            .is_some_and(|o| o.contains("Ship: ")),
        "a skipped gate has no response: {show:#}"
    );
    let show = sandbox.show(&default);
    assert!(
        show["output"]
            .as_str()
            .is_some_and(|o| o.contains("Ship: looks fine")),
        "the default answer is the gate's response: {show:#}"
    );

    // Not yet due, or no timeout at all: untouched.
    for id in [&later, &never] {
        let show = sandbox.show(id);
        assert_eq!(show["status"], "paused", "{show:#}");
        assert!(answers(&show).is_empty(), "{show:#}");
    }

    // A second sweep finds nothing: each timeout was applied once.
    let again = sandbox.strands(&["sessions", "sweep", "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["count"], 0, "{}", again.stdout);
    assert_eq!(answers(&sandbox.show(&reject)).len(), 1);

    // Human output says what it did.
    let text = sandbox.strands(&["sessions", "sweep"]);
    text.expect_code(0);
    assert!(
        text.stderr.contains("no gate timeout is due"),
        "{}",
        text.stderr
    );
}

#[test]
fn a_timeout_beyond_seven_days_is_refused_unless_configured() {
    let llm = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = FLOW
        .replace("NAME", "long")
        .replace("GATE", "        timeout_seconds: 864000");
    let spec = sandbox.spec("long.yaml", &yaml, &llm);
    let path = spec.to_str().expect("utf-8 path");
    let out = sandbox.strands(&["validate", path]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("long.yaml:20:26") && out.stderr.contains("limit of 7 days"),
        "{}",
        out.stderr
    );
    let out = sandbox.strands_as(
        "tester",
        &[("STRANDS_MAX_TIMEOUT_DAYS", "30")],
        &["validate", path],
    );
    out.expect_code(0);
}
