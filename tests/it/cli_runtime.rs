//! Runtime behaviour of the `strands` binary against a fake model server:
//! crash recovery, retries, budgets, gate timeouts, the workflow (DAG)
//! pattern, artifacts and typed `--var`s.

use crate::common::{history, session_id, wait_past, Behaviour, FakeLlm, Sandbox};
use serde_json::Value;
use std::time::Duration;

const THREE_AGENTS: &str = r#"
version: 0
name: three-agents
runtime:
  provider: openai
  host: $HOST
agents:
  one:
    prompt: You are agent ONE.
  two:
    prompt: You are agent TWO.
  three:
    prompt: You are agent THREE.
pattern:
  type: chain
  config:
    steps:
      - agent: one
        input: Begin.
      - agent: two
      - agent: three
"#;

#[test]
fn a_run_killed_mid_step_resumes_from_its_last_checkpoint() {
    // Request #2 (agent two) hangs long enough for us to kill the process.
    let fake = FakeLlm::start_with(Behaviour {
        delay: Some((2, Duration::from_secs(20))),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("three.yaml", THREE_AGENTS, &fake);

    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8 path")]);
    fake.wait_for_requests(2, Duration::from_secs(20));
    // While it runs, the store is locked by it.
    let busy = sandbox.strands(&["sessions", "list", "--json"]);
    busy.expect_code(12);
    assert!(busy.stderr.contains("in use"), "{}", busy.stderr);
    child.kill().expect("kill -9 strands");
    child.wait().expect("reap strands");

    let list = sandbox.list();
    assert_eq!(list["count"], 1, "{list:#}");
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");
    let before = sandbox.show(&id);

    // A running session takes no answer.
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(17);
    assert_eq!(sandbox.show(&id), before);

    let resumed = sandbox.strands(&["resume", &id, "--json"]);
    resumed.expect_code(0);
    let v = resumed.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    // At-least-once, said out loud: in the progress and in the audit trail.
    assert!(
        resumed
            .stderr
            .contains("steps[1]: model request re-sent after a crash"),
        "{}",
        resumed.stderr
    );
    let audit = sandbox.strands(&["audit", "export"]);
    let resent: Vec<&str> = audit
        .stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"resent\""))
        .collect();
    assert_eq!(resent.len(), 1, "{}", audit.stdout);
    assert!(resent[0].contains("steps[1]"), "{}", resent[0]);

    let one = fake.calls_of("agent ONE");
    let two = fake.calls_of("agent TWO");
    let three = fake.calls_of("agent THREE");
    assert_eq!(
        one.len(),
        1,
        "step 1 is never re-sent: {:#?}",
        fake.requests()
    );
    assert_eq!(
        two.len(),
        2,
        "step 2 is re-sent once: {:#?}",
        fake.requests()
    );
    assert_eq!(three.len(), 1, "{:#?}", fake.requests());
    // The re-sent step 2 gets step 1's checkpointed reply, as the first try did.
    assert_eq!(two[0].user(), one[0].reply_text());
    assert_eq!(two[1].user(), one[0].reply_text());
    assert_eq!(three[0].user(), two[1].reply_text());
    assert_eq!(v["output"], Value::String(three[0].reply_text()));
}

const TWO_AGENTS: &str = r#"
version: 0
name: two-agents
runtime:
  provider: openai
  host: $HOST
  budgets:
    max_tokens: $BUDGET
agents:
  first:
    prompt: You are FIRST.
  second:
    prompt: You are SECOND.
pattern:
  type: chain
  config:
    steps:
      - agent: first
        input: Start here.
      - agent: second
        input: "Continue from: {{ steps[0].response }}"
"#;

#[test]
fn rate_limited_requests_are_retried() {
    let fake = FakeLlm::start_with(Behaviour {
        rate_limited: 2,
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("two.yaml", &TWO_AGENTS.replace("$BUDGET", "1000000"), &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(0);
    let v = run.json();

    let log = fake.requests();
    assert_eq!(log.len(), 4, "two 429s, then two answers: {log:#?}");
    assert_eq!(log[0].status, 429);
    assert_eq!(log[1].status, 429);
    // The retries are the same request again.
    assert_eq!(log[0].body, log[2].body);
    assert_eq!(log[1].body, log[2].body);
    assert!(log[2].system().contains("FIRST"));
    assert!(log[3].system().contains("SECOND"));
    assert_eq!(
        log[3].user(),
        format!("Continue from: {}", log[2].reply_text())
    );
    assert_eq!(v["output"], Value::String(log[3].reply_text()));
    assert_eq!(v["usage"]["total"]["calls"], 2, "429s are not calls");
}

#[test]
fn a_provider_that_stays_rate_limited_fails_the_run_with_exit_10() {
    let fake = FakeLlm::start_with(Behaviour {
        rate_limited: usize::MAX,
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("two.yaml", &TWO_AGENTS.replace("$BUDGET", "1000000"), &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(10);
    let v = run.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    let message = v["error"]["message"].as_str().expect("error message");
    assert!(message.contains("429"), "{message}");
    // The default policy: the first attempt and 3 retries.
    assert_eq!(fake.count(), 4, "{:#?}", fake.requests());
    assert_eq!(sandbox.show(&session_id(&v))["status"], "failed");
}

#[test]
fn exceeding_the_token_budget_fails_the_run_with_exit_20() {
    let fake = FakeLlm::start_with(Behaviour {
        usage: (30, 20),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("two.yaml", &TWO_AGENTS.replace("$BUDGET", "10"), &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(20);
    let v = run.json();
    let id = session_id(&v);
    assert_eq!(v["status"], "failed", "{v:#}");
    assert_eq!(v["error"]["code"], 20);
    let message = v["error"]["message"].as_str().expect("error message");
    assert!(message.contains("budget"), "{message}");
    assert!(message.contains("50"), "names the tokens used: {message}");

    let show = sandbox.show(&id);
    assert_eq!(show["status"], "failed");
    assert_eq!(show["usage"]["total"]["input_tokens"], 30);
    assert_eq!(fake.count(), 1, "no call after the budget is spent");
}

const TIMED_HITL: &str = r#"
version: 0
name: timed-hitl
runtime:
  provider: openai
  host: $HOST
agents:
  drafter:
    prompt: You are the DRAFTER.
  publisher:
    prompt: You are the PUBLISHER.
pattern:
  type: chain
  config:
    steps:
      - agent: drafter
        input: Draft it.
      - type: hitl
        prompt: Publish?
        default: approved
        timeout_seconds: 1
      - agent: publisher
        input: "Answer was: {{ hitl_response }}"
"#;

#[test]
fn a_timed_out_hitl_gate_takes_its_default_on_resume() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("timed.yaml", TIMED_HITL, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    assert!(v["gate"]["timeout_at"].is_string(), "{v:#}");
    assert_eq!(v["gate"]["default"], "approved");

    wait_past(&v["gate"]["timeout_at"]);
    let resumed = sandbox.strands(&["resume", &id, "--json"]);
    resumed.expect_code(0);
    let v = resumed.json();
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["by"], "timeout");
    assert_eq!(gates[0]["via"], "timeout");
    assert_eq!(gates[0]["decision"]["text"], "approved");
    assert!(
        gates[0]["waited_ms"].as_u64().expect("waited_ms") >= 1000,
        "{:#}",
        gates[0]
    );
    assert_eq!(fake.count(), 2);
    assert_eq!(fake.request(2).user(), "Answer was: approved");
}

#[test]
fn a_timed_out_hitl_gate_without_default_rejects_even_a_late_answer() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec(
        "timed.yaml",
        &TIMED_HITL.replace("        default: approved\n", ""),
        &fake,
    );

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    wait_past(&v["gate"]["timeout_at"]);

    let late = sandbox.strands(&["resume", &id, "--response", "ship it", "--json"]);
    late.expect_code(21);
    assert!(late.stderr.contains("timed out"), "{}", late.stderr);
    let v = late.json();
    assert_eq!(v["status"], "rejected", "{v:#}");
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["by"], "timeout");
    assert_eq!(gates[0]["decision"]["action"], "reject");
    assert_eq!(fake.count(), 1, "the publisher never ran");
}

const REVIEWED_DAG: &str = r#"
version: 0
name: reviewed-dag
runtime:
  provider: openai
  host: $HOST
agents:
  alpha:
    prompt: You are ALPHA.
  beta:
    prompt: You are BETA.
  gamma:
    prompt: You are GAMMA.
pattern:
  type: workflow
  config:
    tasks:
      - id: a
        agent: alpha
        input: "Study part A.{% if human_feedback %} Feedback: {{ human_feedback }}{% endif %}"
      - id: b
        agent: beta
        input: Study part B.
      - id: review
        type: hitl
        deps: [a, b]
        prompt: Are A and B good enough?
      - id: c
        agent: gamma
        deps: [review]
        input: "A said: {{ tasks.a.response }} | B said: {{ tasks.b.response }} | reviewer: {{ tasks.review.response }}"
"#;

#[test]
fn workflow_gate_waits_for_its_dependencies_and_feeds_the_next_task() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("dag.yaml", REVIEWED_DAG, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    assert_eq!(v["gate"]["id"], "review", "{v:#}");
    assert_eq!(v["pattern"], "workflow");
    assert_eq!(fake.count(), 2, "a and b ran before the gate");
    let a = fake.only_call_of("ALPHA");
    let b = fake.only_call_of("BETA");
    assert_eq!(a.user(), "Study part A.", "no feedback yet");
    assert_eq!(b.user(), "Study part B.");

    let done = sandbox.strands(&["resume", &id, "--response", "ok", "--json"]);
    done.expect_code(0);
    let v = done.json();
    let c = fake.only_call_of("GAMMA");
    assert_eq!(
        c.user(),
        format!(
            "A said: {} | B said: {} | reviewer: ok",
            a.reply_text(),
            b.reply_text()
        )
    );
    assert_eq!(fake.count(), 3);
    assert_eq!(v["output"], Value::String(c.reply_text()));
}

#[test]
fn modify_at_a_workflow_gate_reruns_its_agent_dependencies() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("dag.yaml", REVIEWED_DAG, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());

    let modified = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "go deeper",
        "--json",
    ]);
    modified.expect_code(19);
    let v = modified.json();
    assert_eq!(v["gate"]["handle"], "review#2", "{v:#}");
    let a = fake.calls_of("ALPHA");
    let b = fake.calls_of("BETA");
    assert_eq!((a.len(), b.len()), (2, 2), "{:#?}", fake.requests());
    assert_eq!(a[1].user(), "Study part A. Feedback: go deeper");

    sandbox
        .strands(&["resume", &id, "--response", "ok"])
        .expect_code(0);
    let c = fake.only_call_of("GAMMA");
    assert_eq!(
        c.user(),
        format!(
            "A said: {} | B said: {} | reviewer: ok",
            a[1].reply_text(),
            b[1].reply_text()
        ),
        "gamma sees the re-run results"
    );
}

const WITH_ARTIFACT: &str = r#"
version: 0
name: with-artifact
runtime:
  provider: openai
  host: $HOST
agents:
  researcher:
    prompt: You are the RESEARCHER.
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: researcher
        input: Research.
      - type: manual_gate
        id: review
        prompt: Review.
      - agent: writer
        input: "Write from: {{ steps[0].response }}"
outputs:
  artifacts:
    - path: "out/report.md"
      from: "{{ last_response }}"
"#;

#[test]
fn artifacts_are_written_under_out_on_completion() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let out = sandbox.path().join("arts");
    let spec = sandbox.spec("art.yaml", WITH_ARTIFACT, &fake);

    let run = sandbox.strands(&[
        "run",
        spec.to_str().expect("utf-8 path"),
        "--out",
        out.to_str().expect("utf-8 path"),
        "--json",
    ]);
    run.expect_code(19);
    let id = session_id(&run.json());
    let report = out.join("out/report.md");
    assert!(!report.exists(), "nothing is written before completion");

    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    let v = done.json();
    let text = std::fs::read_to_string(&report).expect("the artifact was written");
    assert_eq!(text, fake.last().reply_text());
    assert_eq!(v["output"], Value::String(text));
    assert_eq!(
        v["artifacts"],
        serde_json::json!([report.display().to_string()])
    );
}

#[test]
fn a_relative_out_dir_is_kept_when_resuming_from_elsewhere() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("art.yaml", WITH_ARTIFACT, &fake);
    let started_in = sandbox.path().join("here");
    let resumed_in = sandbox.path().join("there");
    std::fs::create_dir_all(&started_in).expect("mkdir");
    std::fs::create_dir_all(&resumed_in).expect("mkdir");

    let run = sandbox.strands_in(
        &started_in,
        &[
            "run",
            spec.to_str().expect("utf-8 path"),
            "--out",
            "arts",
            "--json",
        ],
        "",
    );
    run.expect_code(19);
    let id = session_id(&run.json());
    sandbox
        .strands_in(&resumed_in, &["resume", &id, "--approve"], "")
        .expect_code(0);
    let text = std::fs::read_to_string(started_in.join("arts/out/report.md"))
        .expect("the artifact lands under the --out of the run");
    assert_eq!(text, fake.last().reply_text());
    assert!(!resumed_in.join("arts").exists());
}

const TYPED_INPUT: &str = r#"
version: 0
name: typed-input
runtime:
  provider: openai
  host: $HOST
inputs:
  required:
    n: integer
agents:
  counter:
    prompt: You count.
pattern:
  type: chain
  config:
    steps:
      - agent: counter
        input: "Count to {{ n }}; next is {{ n + 1 }}."
"#;

#[test]
fn a_var_of_the_wrong_type_is_refused_before_anything_is_saved() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("typed.yaml", TYPED_INPUT, &fake);
    let spec = spec.to_str().expect("utf-8 path");

    let bad = sandbox.strands(&["run", spec, "--var", "n=abc", "--json"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("n=abc"), "{}", bad.stderr);
    assert_eq!(bad.json()["exit_code"], 2);
    let nothing_saved = !sandbox.store.exists() || sandbox.list()["count"] == 0;
    assert!(nothing_saved, "no session was created");
    assert_eq!(fake.count(), 0);

    // A proper integer is typed as one: the template can do arithmetic.
    sandbox
        .strands(&["run", spec, "--var", "n=41"])
        .expect_code(0);
    assert_eq!(fake.request(1).user(), "Count to 41; next is 42.");
}

/// strands-cli's `compaction-test-openai` example in small: `runtime` with
/// budgets (and `warn_threshold`), a required integer input, compaction,
/// and an artifact that reads `runtime.*`, `context_policy.*`,
/// `steps[-1]` and `truncate`.
const RUNTIME_ARTIFACT: &str = r#"
version: 1
name: runtime-in-artifacts
runtime:
  provider: openai
  model_id: fake-model-7
  host: $HOST
  region: eu-north-1
  temperature: 0.2
  top_p: 0.9
  max_tokens: 800
  max_parallel: 3
  budgets:
    max_tokens: 50000
    warn_threshold: 0.75
context_policy:
  compaction:
    enabled: true
    when_tokens_over: 5000
    summary_ratio: 0.5
    preserve_recent_messages: 15
    summarization_model: fake-model-7
agents:
  accumulator:
    prompt: You are the ACCUMULATOR.
inputs:
  required:
    iterations:
      type: integer
      description: How many iterations
pattern:
  type: chain
  config:
    steps:
      - agent: accumulator
        input: "Iteration 1 of {{ iterations }}."
      - agent: accumulator
        input: "Iteration 2 of {{ iterations }}. Before: {{ steps[0].response | truncate(100) }}"
outputs:
  artifacts:
    - path: "./result.md"
      from: |
        Workflow: {{ name }}
        Iterations: {{ iterations }}
        Model: {{ runtime.model_id }}
        Provider: {{ runtime.provider }}
        Host: {{ runtime.host }}
        Region: {{ runtime.region }}
        Sampling: {{ runtime.temperature }} / {{ runtime.top_p }} / {{ runtime.max_tokens }}
        Parallel: {{ runtime.max_parallel }}
        Budget: {{ runtime.budgets.max_tokens }} at {{ runtime.budgets.warn_threshold }}
        Threshold: {{ context_policy.compaction.when_tokens_over }}
        Preserve: {{ context_policy.compaction.preserve_recent_messages }}
        Last: {{ steps[-1].response }}
"#;

#[test]
fn artifacts_read_the_runtime_as_strands_cli_names_it() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("runtime.yaml", RUNTIME_ARTIFACT, &fake);
    let out = sandbox.strands(&[
        "run",
        spec.to_str().expect("utf-8 path"),
        "--var",
        "iterations=10",
        "--out",
        sandbox.path().to_str().expect("utf-8 path"),
    ]);
    out.expect_code(0);
    let text = std::fs::read_to_string(sandbox.path().join("result.md")).expect("the artifact");
    let want = [
        "Workflow: runtime-in-artifacts".to_string(),
        "Iterations: 10".into(),
        "Model: fake-model-7".into(),
        "Provider: openai".into(),
        format!("Host: {}", fake.url),
        "Region: eu-north-1".into(),
        "Sampling: 0.2 / 0.9 / 800".into(),
        "Parallel: 3".into(),
        "Budget: 50000 at 0.75".into(),
        "Threshold: 5000".into(),
        "Preserve: 15".into(),
        "Last: REPLY 2 to: Iteration 2 of 10.".into(),
    ];
    for line in want {
        assert!(text.contains(&line), "{line:?} not in:\n{text}");
    }
}
