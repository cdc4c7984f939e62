//! The `parallel` pattern through the real binary and a fake model: branches
//! move independently, several gates are open at once and are answered in
//! either order, `reduce` sees every branch, and nothing runs twice across
//! pauses, answers and restarts.

use crate::common::{session_id, wait_until, Behaviour, FakeLlm, Sandbox};
use serde_json::Value;
use std::time::Duration;

/// Two branches, each: agent → gate → agent; then a reduce agent.
const TWO_GATES: &str = r#"
version: 0
name: parallel-two-gates
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
  max_parallel: 2
inputs:
  values:
    topic: tides
agents:
  scraper:
    prompt: You are the SCRAPER.
  validator:
    prompt: You are the VALIDATOR.
  reader:
    prompt: You are the READER.
  summarizer:
    prompt: You are the SUMMARIZER.
  aggregator:
    prompt: You are the AGGREGATOR.
pattern:
  type: parallel
  config:
    branches:
      - id: web
        steps:
          - agent: scraper
            input: "Scrape {{ topic }}.{% if human_feedback %} Feedback: {{ human_feedback }}{% endif %}"
          - type: hitl
            id: web_review
            prompt: Review the scraped data.
            context_display: "{{ steps[0].response }}"
          - agent: validator
            input: "Validate ({{ steps[1].response }}): {{ steps[0].response }}"
      - id: docs
        steps:
          - agent: reader
            input: "Read docs on {{ topic }}"
          - type: manual_gate
            id: docs_review
            prompt: Approve the docs summary.
          - agent: summarizer
            input: "Summarize: {{ steps[0].response }}"
    reduce:
      agent: aggregator
      input: "WEB={{ branches.web.response }} DOCS={{ branches.docs.response }}"
"#;

fn open_handles(v: &Value) -> Vec<(String, String)> {
    v["open_gates"]
        .as_array()
        .unwrap_or_else(|| panic!("no open_gates in {v:#}"))
        .iter()
        .map(|g| {
            (
                g["id"].as_str().expect("gate id").to_string(),
                g["handle"].as_str().expect("gate handle").to_string(),
            )
        })
        .collect()
}

fn handle_of(v: &Value, id: &str) -> String {
    open_handles(v)
        .into_iter()
        .find(|(g, _)| g == id)
        .map(|(_, h)| h)
        .unwrap_or_else(|| panic!("gate {id} is not open: {v:#}"))
}

fn paused_two(sandbox: &Sandbox, fake: &FakeLlm) -> (String, Value) {
    let spec = sandbox.spec("par.yaml", TWO_GATES, fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    (session_id(&v), v)
}

#[test]
fn both_branch_gates_open_at_once_after_both_first_steps_ran() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let (id, v) = paused_two(&sandbox, &fake);
    // Both branches ran their first step; neither waited for the other's gate.
    assert_eq!(fake.calls_of("SCRAPER").len(), 1);
    assert_eq!(fake.calls_of("READER").len(), 1);
    assert_eq!(fake.count(), 2);
    let mut ids: Vec<String> = open_handles(&v).into_iter().map(|(g, _)| g).collect();
    ids.sort();
    assert_eq!(ids, ["docs_review", "web_review"], "{v:#}");
    // The branch gate shows its own branch's `steps[0]`.
    let web = v["open_gates"]
        .as_array()
        .and_then(|a| a.iter().find(|g| g["id"] == "web_review"))
        .expect("web gate")
        .clone();
    assert!(
        web["preview"]
            .as_str()
            .is_some_and(|p| p.contains("Scrape tides")),
        "{web:#}"
    );
    // A gate without context_display shows its own branch's latest output.
    let docs = v["open_gates"]
        .as_array()
        .and_then(|a| a.iter().find(|g| g["id"] == "docs_review"))
        .expect("docs gate")
        .clone();
    assert!(
        docs["preview"]
            .as_str()
            .is_some_and(|p| p.contains("Read docs on tides") && !p.contains("Scrape")),
        "{docs:#}"
    );
    // The printed text names both gates and how to answer each.
    let text = sandbox.strands(&["sessions", "show", &id]);
    text.expect_code(0);
    assert!(text.stdout.contains("Also open:"), "{}", text.stdout);
    assert!(text.stdout.contains("--gate"), "{}", text.stdout);

    // Without --gate the answer is ambiguous: refused, nothing changes.
    let before = sandbox.show(&id);
    let ambiguous = sandbox.strands(&["resume", &id, "--approve"]);
    ambiguous.expect_code(2);
    assert!(ambiguous.stderr.contains("--gate"), "{}", ambiguous.stderr);
    let after = sandbox.show(&id);
    assert_eq!(before["open_gates"], after["open_gates"]);
    assert_eq!(fake.count(), 2);
}

/// Answers the two gates in the given order and checks that every agent ran
/// exactly once and the reduce saw both branches.
fn answer_in_order(first: &str) {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let (id, v) = paused_two(&sandbox, &fake);
    let answer = |v: &Value, gate: &str| {
        let h = handle_of(v, gate);
        if gate == "web_review" {
            sandbox.strands(&[
                "resume",
                &id,
                "--gate",
                &h,
                "--response",
                "looks right",
                "--json",
            ])
        } else {
            sandbox.strands(&["resume", &id, "--gate", &h, "--approve", "--json"])
        }
    };
    let second = if first == "web_review" {
        "docs_review"
    } else {
        "web_review"
    };
    let out = answer(&v, first);
    out.expect_code(19);
    let v2 = out.json();
    // The answered branch moved on; the other gate is still open, alone.
    let open: Vec<String> = open_handles(&v2).into_iter().map(|(g, _)| g).collect();
    assert_eq!(open, [second], "{v2:#}");
    let moved = if first == "web_review" {
        "VALIDATOR"
    } else {
        "SUMMARIZER"
    };
    assert_eq!(fake.calls_of(moved).len(), 1);
    assert_eq!(
        fake.calls_of("AGGREGATOR").len(),
        0,
        "reduce waits for both"
    );
    // Answering the same gate again is refused (it is closed).
    let again = sandbox.strands(&["resume", &id, "--gate", &handle_of(&v, first), "--approve"]);
    assert_ne!(again.code, 0, "{again:?}");

    let done = answer(&v2, second);
    done.expect_code(0);
    let end = done.json();
    assert_eq!(end["status"], "completed", "{end:#}");
    for agent in ["SCRAPER", "VALIDATOR", "READER", "SUMMARIZER", "AGGREGATOR"] {
        assert_eq!(fake.calls_of(agent).len(), 1, "{agent} ran once");
    }
    assert_eq!(fake.count(), 5);
    let validator = fake.only_call_of("VALIDATOR").user();
    assert!(
        validator.starts_with("Validate (looks right)"),
        "{validator}"
    );
    let reduce = fake.only_call_of("AGGREGATOR").user();
    assert!(
        reduce.contains("WEB=REPLY") && reduce.contains("DOCS=REPLY"),
        "{reduce}"
    );
    assert!(
        end["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("REPLY 5")),
        "{end:#}"
    );
}

#[test]
fn two_open_gates_answered_web_first() {
    answer_in_order("web_review");
}

#[test]
fn two_open_gates_answered_docs_first() {
    answer_in_order("docs_review");
}

#[test]
fn strands_cli_hitl_response_answers_the_first_open_gate() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let (id, v) = paused_two(&sandbox, &fake);
    let first = v["gate"]["id"].as_str().expect("focused gate").to_string();
    let out = sandbox.strands(&[
        "run",
        "--resume",
        &id,
        "--hitl-response",
        "approved",
        "--json",
    ]);
    out.expect_code(19);
    let v2 = out.json();
    let open: Vec<String> = open_handles(&v2).into_iter().map(|(g, _)| g).collect();
    assert_eq!(open.len(), 1, "{v2:#}");
    assert_ne!(open[0], first);
}

#[test]
fn modify_in_a_branch_reruns_only_that_branchs_step() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let (id, v) = paused_two(&sandbox, &fake);
    let h = handle_of(&v, "web_review");
    let out = sandbox.strands(&[
        "resume",
        &id,
        "--gate",
        &h,
        "--modify",
        "--feedback",
        "add sources",
        "--json",
    ]);
    out.expect_code(19);
    let v2 = out.json();
    let scrapes = fake.calls_of("SCRAPER");
    assert_eq!(scrapes.len(), 2, "the web branch re-ran its step");
    assert!(scrapes[1].user().contains("Feedback: add sources"));
    assert_eq!(fake.calls_of("READER").len(), 1, "the docs branch did not");
    // Both gates are open again: the web one re-asked, docs one untouched.
    let mut open: Vec<String> = open_handles(&v2).into_iter().map(|(g, _)| g).collect();
    open.sort();
    assert_eq!(open, ["docs_review", "web_review"], "{v2:#}");
    assert_eq!(handle_of(&v2, "docs_review"), handle_of(&v, "docs_review"));
    assert_ne!(handle_of(&v2, "web_review"), h, "a new asking");
}

#[test]
fn reject_in_one_branch_rejects_the_run_and_closes_every_gate() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let (id, v) = paused_two(&sandbox, &fake);
    let h = handle_of(&v, "docs_review");
    let out = sandbox.strands(&[
        "resume", &id, "--gate", &h, "--reject", "--reason", "stale", "--json",
    ]);
    out.expect_code(21);
    let end = out.json();
    assert_eq!(end["status"], "rejected");
    assert_eq!(end["open_gates"].as_array().map(Vec::len), Some(0));
    assert_eq!(fake.count(), 2);
}

/// A hitl gate as the reduce: its answer is the run's output.
const REDUCE_GATE: &str = r#"
version: 0
name: parallel-reduce-gate
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  a:
    prompt: You are A.
  b:
    prompt: You are B.
pattern:
  type: parallel
  config:
    branches:
      - id: left
        steps:
          - agent: a
            input: left
      - id: right
        steps:
          - agent: b
            input: right
    reduce:
      type: hitl
      prompt: Merge the branches yourself.
      context_display: "L={{ branches.left.response }} R={{ branches.right.response }}"
"#;

#[test]
fn a_reduce_gate_shows_every_branch_and_its_answer_is_the_output() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reduce.yaml", REDUCE_GATE, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    assert_eq!(v["gate"]["position"], "reduce", "{v:#}");
    let preview = v["gate"]["preview"].as_str().expect("preview");
    assert!(
        preview.contains("L=REPLY") && preview.contains("R=REPLY"),
        "{preview}"
    );
    // A modify has no agent step before a reduce gate: refused, unchanged.
    let refused = sandbox.strands(&["resume", &id, "--modify", "--feedback", "x"]);
    refused.expect_code(2);
    let out = sandbox.strands(&["resume", &id, "--response", "merged by hand", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["output"], "merged by hand");
    assert_eq!(fake.count(), 2);
}

/// Without reduce, the output lists every branch's result.
#[test]
fn without_reduce_the_output_is_every_branch_under_its_id() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = REDUCE_GATE
        .split("    reduce:")
        .next()
        .expect("spec head")
        .to_string();
    let spec = sandbox.spec("plain.yaml", &yaml, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(0);
    let out = run.json()["output"].as_str().expect("output").to_string();
    assert!(out.contains("## left") && out.contains("## right"), "{out}");
    assert_eq!(fake.count(), 2);
}

#[test]
fn a_run_killed_while_branches_run_resumes_without_rerunning_finished_ones() {
    // Request 2 (the second branch's first step) hangs; the process is
    // killed while it waits; the first branch's result is already saved.
    let fake = FakeLlm::start_with(Behaviour {
        delay: Some((2, Duration::from_secs(30))),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("par.yaml", TWO_GATES, &fake);
    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8")]);
    fake.wait_for_requests(2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill strands");
    let _ = child.wait();
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");
    let first_agent = fake.request(1).system();

    let out = sandbox.strands(&["resume", &id, "--json"]);
    out.expect_code(19);
    let v = out.json();
    assert_eq!(open_handles(&v).len(), 2, "{v:#}");
    // The step that finished before the kill was not asked again.
    let again = fake.calls_of(&first_agent);
    assert_eq!(again.len(), 1, "{first_agent} ran once");
    assert_eq!(fake.count(), 3, "only the interrupted step was asked again");
}

#[test]
fn fewer_than_two_branches_is_a_spec_error_with_its_location() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = r#"version: 0
name: one-branch
runtime:
  provider: openai
  host: $HOST
agents:
  a:
    prompt: A
pattern:
  type: parallel
  config:
    branches:
      - id: only
        steps:
          - agent: nobody
"#;
    let spec = sandbox.spec("one.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("one.yaml:13"), "{all}");
    assert!(all.contains("at least 2 branches"), "{all}");
    assert!(all.contains("undefined agent `nobody`"), "{all}");
    assert!(all.contains("one.yaml:15"), "{all}");
}

/// One branch gate has a short timeout, the other none: the passed one's
/// fallback applies on the next resume (or sweep) while the other stays open.
const TIMEOUTS: &str = r#"
version: 0
name: parallel-timeouts
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
agents:
  a:
    prompt: You are A.
  b:
    prompt: You are B.
pattern:
  type: parallel
  config:
    branches:
      - id: slow
        steps:
          - agent: a
            input: one
          - type: hitl
            id: wait_forever
            prompt: No deadline.
          - agent: a
            input: "after {{ steps[1].response }}"
      - id: quick
        steps:
          - agent: b
            input: two
          - type: hitl
            id: short
            prompt: Answer within a second.
            default: "taken by default"
            timeout_seconds: 1
          - agent: b
            input: "after {{ steps[1].response }}"
"#;

#[test]
fn a_parked_gates_timeout_applies_while_the_other_gate_stays_open() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("timeouts.yaml", TIMEOUTS, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());
    // `sessions sweep` finds the passed deadline (once it has passed: a
    // sweep before finds nothing) even though the gate is not the focused
    // one, and answers it with its default.
    let mut v = Value::Null;
    wait_until(
        Duration::from_secs(20),
        "a sweep found the passed deadline",
        || {
            let swept = sandbox.strands(&["sessions", "sweep", "--json"]);
            swept.expect_code(0);
            v = swept.json();
            v["count"] != 0
        },
        String::new,
    );
    assert_eq!(v["count"], 1, "{v:#}");
    assert!(
        v["swept"][0]["gate"]
            .as_str()
            .is_some_and(|g| g.starts_with("short#")),
        "{v:#}"
    );
    let after = sandbox.show(&id);
    assert_eq!(after["status"], "paused", "{after:#}");
    let open: Vec<String> = open_handles(&after).into_iter().map(|(g, _)| g).collect();
    assert_eq!(open, ["wait_forever"], "{after:#}");
    let quick = fake.calls_of("You are B.");
    assert_eq!(quick.len(), 2, "the quick branch moved on");
    assert_eq!(quick[1].user(), "after taken by default");
    assert_eq!(fake.calls_of("You are A.").len(), 1);
}
