//! Traces through the `strands` binary: a run exports its spans over OTLP
//! to a local collector (`tests/common/otlp.rs`), and a run that pauses in
//! one process and is answered and finished in another is still one trace
//! — the same id in its spans, its audit entries and its events.
//!
//! The workflow: an agent that calls a tool (calculator, no approval
//! needed), a manual gate, and an agent after it. And `strands serve`: a
//! run started and answered over the API is one trace, and its webhooks
//! carry it.

use crate::common::otlp::{Collector, Span};
use crate::common::{assistant_turns, session_id, tool_call, Behaviour, FakeLlm, Sandbox, Say};
use serde_json::{json, Value};
use std::time::Duration;

const SPEC: &str = r#"
version: 0
name: traced
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  worker:
    prompt: You are the WORKER.
    tools: [calculator]
  finisher:
    prompt: You are the FINISHER.
pattern:
  type: chain
  config:
    steps:
      - agent: worker
        input: Count the bees.
      - type: manual_gate
        id: review
        prompt: Good count?
      - agent: finisher
        input: Write it up.
"#;

/// The worker asks for one calculation, then answers; the finisher answers.
fn model() -> FakeLlm {
    FakeLlm::start_with(Behaviour::scripted(|n, body| {
        let worker = crate::common::system_of(body).contains("WORKER");
        if worker && assistant_turns(body) == 0 {
            Say::Calls(vec![tool_call(
                "k1",
                "calculator",
                json!({"expression": "6 * 7"}),
            )])
        } else {
            Say::Text(format!("reply {n}"))
        }
    }))
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The one span called `name`.
#[track_caller]
fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    match named(spans, name).as_slice() {
        [s] => s,
        other => panic!(
            "expected one `{name}` span, found {}: {spans:#?}",
            other.len()
        ),
    }
}

/// Whether `child`'s parent is `parent`.
fn under(child: &Span, parent: &Span) -> bool {
    child.parent == parent.span_id && child.trace_id == parent.trace_id
}

#[test]
fn a_run_paused_and_resumed_in_two_processes_is_one_trace() {
    let collector = Collector::start();
    let fake = model();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("traced.yaml", SPEC, &fake);
    let spec = spec.to_str().expect("utf-8 path");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "strands-under-test"),
    ];

    // Process 1: the worker and its tool call, then the gate opens.
    let out = sandbox.strands_env(&env, &["run", spec, "--json"]);
    out.expect_code(19);
    let id = session_id(&out.json());
    let first = collector.wait_until(Duration::from_secs(10), |s| {
        s.iter().any(|s| s.name == "gate")
    });
    let run = one(&first, "run");
    assert!(
        run.parent.is_empty(),
        "the first `run` is the root: {run:#?}"
    );
    assert_eq!(run.attr("workflow"), "traced");
    assert_eq!(run.attr("pattern"), "chain");
    assert_eq!(run.attr("session.id"), id);
    assert_eq!(run.service, "strands-under-test");
    let trace = run.trace_id.clone();
    assert!(
        first.iter().all(|s| s.trace_id == trace),
        "one trace: {first:#?}"
    );

    let step = one(&first, "step");
    assert!(under(step, run), "run → step: {first:#?}");
    assert_eq!(step.attr("agent"), "worker");
    let calls = named(&first, "model.call");
    assert_eq!(calls.len(), 2, "the tool turn and the answer: {first:#?}");
    for call in &calls {
        assert!(under(call, step), "step → model.call: {first:#?}");
        assert_eq!(call.attr("provider"), "openai");
        assert_eq!(call.attr("model"), "fake-model");
    }
    let tool = one(&first, "tool.call");
    assert!(under(tool, step), "step → tool.call: {first:#?}");
    assert_eq!(tool.attr("tool.name"), "calculator");
    assert!(
        !tool.attrs.values().any(|v| v.contains("6 * 7")),
        "no arguments in a span: {tool:#?}"
    );
    let gate = one(&first, "gate");
    assert!(under(gate, run), "run → gate: {first:#?}");
    assert_eq!(gate.attr("gate.id"), "review");
    assert_eq!(gate.attr("gate.kind"), "manual_gate");
    let writes: Vec<&Span> = first
        .iter()
        .filter(|s| s.name.starts_with("store."))
        .collect();
    assert!(
        writes.iter().any(|w| w.name == "store.create")
            && writes.iter().any(|w| w.name == "store.checkpoint_with"),
        "store writes are spans: {first:#?}"
    );
    assert!(
        writes.iter().all(|w| w.parent.len() == 16),
        "a store write is always inside something: {writes:#?}"
    );

    // Process 2: the answer, then the finisher.
    let seen = first.len();
    let out = sandbox.strands_env(&env, &["resume", &id, "--approve", "--json"]);
    out.expect_code(0);
    let all = collector.wait_until(Duration::from_secs(10), |s| {
        s[seen.min(s.len())..].iter().any(|s| s.name == "run")
    });
    let second = &all[seen..];
    assert!(
        second.iter().all(|s| s.trace_id == trace),
        "the resumed process continues the run's trace: {second:#?}"
    );
    let answer = one(second, "answer");
    assert!(under(answer, run), "the answer joins the run: {answer:#?}");
    assert_eq!(answer.attr("channel"), "cli");
    assert_eq!(answer.attr("decision"), "approved");
    let resumed = one(second, "run");
    assert!(
        under(resumed, run),
        "later drives are children of the first: {resumed:#?}"
    );
    let step = one(second, "step");
    assert!(under(step, resumed));
    assert_eq!(step.attr("agent"), "finisher");
    assert!(under(one(second, "model.call"), step));

    // The trace id is in the run's audit entries and its events.
    let export = sandbox.strands(&["audit", "export", "--session", &id]);
    export.expect_code(0);
    let entries: Vec<Value> = export
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(entries.len() >= 3, "{}", export.stdout);
    for e in &entries {
        let got = e["trace_id"].as_str().or(e["event"]["trace_id"].as_str());
        assert_eq!(
            got,
            Some(trace.as_str()),
            "audit entry without the trace: {e:#}"
        );
    }
    let verify = sandbox.strands(&["audit", "verify", "--json"]);
    verify.expect_code(0);

    let store = strands::store::sled::SledStore::open(&sandbox.store).expect("open the store");
    let events = store.events_after(0, 100).expect("events");
    assert!(!events.is_empty());
    for e in &events {
        assert_eq!(e.trace_id.as_deref(), Some(trace.as_str()), "{e:?}");
    }
}

#[test]
fn without_an_endpoint_nothing_is_traced() {
    let collector = Collector::start();
    let fake = model();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("traced.yaml", SPEC, &fake);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    out.expect_code(19);
    let id = session_id(&out.json());
    assert!(collector.spans().is_empty());
    let store = strands::store::sled::SledStore::open(&sandbox.store).expect("open the store");
    let session = store.get(&id).expect("the session");
    assert_eq!(session.trace, None);
}

#[test]
fn the_service_traces_an_api_run_and_its_webhooks_carry_the_trace() {
    use super::api::{World, WAIT};
    use crate::common::api::Receiver;
    let collector = Collector::start();
    let hooks = Receiver::start(0);
    let w = World::start_with(|cfg| {
        cfg.with("OTEL_EXPORTER_OTLP_ENDPOINT", Some(&collector.endpoint))
            .with("OTEL_SERVICE_NAME", None)
            // The service exports as it goes, not only when it stops.
            .with("OTEL_BSP_SCHEDULE_DELAY", Some("50"))
            .with("STRANDS_WEBHOOK_URL", Some(&hooks.url))
            .with(
                "STRANDS_WEBHOOK_SECRET",
                Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            )
    });
    let id = w.start_run("api");
    w.wait_paused(&id);
    let r = w.answer(&id, &w.alice, json!({ "decision": "approve" }));
    assert_eq!(r.status, 200, "{}", r.body);

    let got = hooks.wait_for(WAIT, |d| {
        d.iter().any(|d| d.json()["type"] == "run.completed")
    });
    let spans = collector.wait_until(WAIT, |s| {
        s.iter().any(|s| s.name == "answer")
            && s.iter()
                .filter(|s| s.name == "run" && s.attr("session.id") == id)
                .count()
                == 2
    });
    let runs: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "run" && s.attr("session.id") == id)
        .collect();
    let root = runs
        .iter()
        .find(|s| s.parent.is_empty())
        .unwrap_or_else(|| panic!("a root `run`: {spans:#?}"));
    let trace = root.trace_id.clone();
    let later = runs
        .iter()
        .find(|s| !s.parent.is_empty())
        .unwrap_or_else(|| panic!("a second `run`: {spans:#?}"));
    assert_eq!(later.trace_id, trace, "{spans:#?}");
    let answer = one(&spans, "answer");
    assert!(under(answer, root), "{spans:#?}");
    assert_eq!(answer.attr("channel"), "api");
    assert_eq!(answer.attr("decision"), "approved");
    assert_eq!(root.service, "strands");

    for d in got.iter().filter(|d| d.status == 200) {
        let body = d.json();
        assert_eq!(body["data"]["trace_id"], trace.as_str(), "{body}");
    }
}
