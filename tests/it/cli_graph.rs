//! The `graph` pattern through the real binary and a fake model: a review
//! loop a human breaks with a `when` branch, gates that branch on their
//! answers, modify at a gate node, `max_iterations`, terminal nodes, and
//! resumes (a later process, a killed one) that never repeat a visit.

use crate::common::{compat, run_json, session_id, Behaviour, FakeLlm, Sandbox};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A fake whose reply is `reply(system, user, n)`.
fn fake_with(reply: impl Fn(&str, &str, usize) -> String + Send + Sync + 'static) -> FakeLlm {
    FakeLlm::start_with(Behaviour {
        reply: Arc::new(move |n, body| {
            let system = body["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "system"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_string();
            reply(&system, &crate::common::last_user_message(body), n)
        }),
        ..Behaviour::default()
    })
}

fn respond(sandbox: &Sandbox, id: &str, text: &str, code: i32) -> Value {
    let out = sandbox.strands(&["resume", id, "--response", text, "--json"]);
    out.expect_code(code);
    out.json()
}

/// The node ids of the run's visits, in order.
fn path(sandbox: &Sandbox, id: &str) -> Vec<String> {
    sandbox.show(id)["state"]["visits"]
        .as_array()
        .expect("graph visits in the state")
        .iter()
        .map(|v| v["node"].as_str().expect("node id").to_string())
        .collect()
}

#[test]
fn a_reviewer_breaks_the_revise_loop_with_approve_on_the_second_visit() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("loop.yaml", &compat("graph-hitl-loop.yaml"), &fake);

    let v = run_json(&sandbox, &spec, 19);
    let id = session_id(&v);
    assert_eq!(v["gate"]["id"], "manager_review", "{v:#}");
    assert_eq!(v["gate"]["position"], "nodes.manager_review#0");
    assert_eq!(fake.count(), 1);
    let plan = fake.request(1);
    assert!(plan.system().contains("PLANNER"));
    assert_eq!(
        plan.user(),
        "Create a project plan for: a customer feedback portal"
    );
    assert!(
        v["gate"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains(&plan.reply_text())),
        "{v:#}"
    );

    // First visit: the manager asks for a revision → revise_plan → back.
    let v = respond(&sandbox, &id, "revise", 19);
    assert_eq!(v["gate"]["position"], "nodes.manager_review#1", "{v:#}");
    assert_eq!(fake.count(), 2);
    let revise = fake.request(2);
    assert!(revise.system().contains("REVISOR"));
    assert!(
        revise.user().contains("Manager feedback: revise"),
        "{}",
        revise.user()
    );
    // The second asking shows the revised plan.
    assert!(
        v["gate"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains(&revise.reply_text())),
        "{v:#}"
    );

    // A later process without an answer is refused and changes nothing.
    sandbox.strands(&["resume", &id]).expect_code(2);
    assert_eq!(fake.count(), 2);

    // Second visit: approve → the executive's gate.
    let v = respond(&sandbox, &id, "approve", 19);
    assert_eq!(v["gate"]["id"], "exec_approval", "{v:#}");
    assert_eq!(fake.count(), 2, "no agent between the two gates");

    let done = respond(&sandbox, &id, "yes", 0);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(fake.count(), 3, "every agent node ran once per visit");
    let exec = fake.request(3);
    assert!(exec.system().contains("EXECUTOR"));
    assert!(
        exec.user().contains(&revise.reply_text()),
        "{}",
        exec.user()
    );
    assert!(exec.user().contains("Manager approval: approve"));
    assert!(exec.user().contains("Executive approval: yes"));
    assert_eq!(done["output"], Value::String(exec.reply_text()));
    assert_eq!(
        path(&sandbox, &id),
        [
            "initial_plan",
            "manager_review",
            "revise_plan",
            "manager_review",
            "exec_approval",
            "execute_plan"
        ]
    );
    // The artifact reads the nodes' responses.
    let art = sandbox
        .path()
        .join("artifacts")
        .join("graph-hitl-approval-output.md");
    let text = std::fs::read_to_string(&art).unwrap_or_else(|e| panic!("{}: {e}", art.display()));
    assert!(text.contains("Status: executed"), "{text}");
    assert!(text.contains(&exec.reply_text()), "{text}");
}

#[test]
fn a_reject_answer_branches_to_the_rejected_node_whose_answer_is_the_output() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("loop.yaml", &compat("graph-hitl-loop.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    // 'reject' is data for `when:` here, not a rejection of the run.
    let v = respond(&sandbox, &id, "reject", 19);
    assert_eq!(v["gate"]["id"], "rejected", "{v:#}");
    let done = respond(&sandbox, &id, "too expensive", 0);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"], "too expensive");
    assert_eq!(fake.count(), 1);
    // An answer no `when` names takes the `else` branch.
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("loop.yaml", &compat("graph-hitl-loop.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    let v = respond(&sandbox, &id, "maybe later", 19);
    assert_eq!(v["gate"]["id"], "rejected", "{v:#}");
}

#[test]
fn reject_at_a_gate_node_rejects_the_run() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("loop.yaml", &compat("graph-hitl-loop.yaml"), &fake);
    let id = session_id(&run_json(&sandbox, &spec, 19));
    let out = sandbox.strands(&["resume", &id, "--reject", "--reason", "no budget", "--json"]);
    out.expect_code(21);
    assert_eq!(out.json()["status"], "rejected");
    assert_eq!(fake.count(), 1);
}

/// An agent node, a manual gate node, then branches on the gate's answer
/// and on inputs / `hitl_response` (conditions without `{{ }}`).
const MANUAL: &str = r#"
version: 0
name: graph-manual
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
inputs:
  values:
    mode: fast
agents:
  writer:
    prompt: You are the WRITER.
  shipper:
    prompt: You are the SHIPPER.
  slowpoke:
    prompt: You are the SLOWPOKE.
pattern:
  type: graph
  config:
    nodes:
      write:
        agent: writer
        input: "Write it.{% if human_feedback %} Feedback: {{ human_feedback }}{% endif %}"
      check:
        type: manual_gate
        prompt: Ship this?
      decide:
        type: hitl
        prompt: How?
      ship:
        agent: shipper
        input: "Ship ({{ nodes.check.response }}, visit {{ iteration }}): {{ nodes.write.response }}"
      slow:
        agent: slowpoke
        input: "Slowly: {{ nodes.write.response }}"
    edges:
      - from: write
        to: [check]
      - from: check
        choose:
          - when: "{{ nodes.check.response == 'approved' }}"
            to: decide
      - from: decide
        choose:
          - when: "hitl_response == 'go' and mode == 'fast'"
            to: ship
          - when: else
            to: slow
"#;

#[test]
fn modify_at_a_gate_node_reruns_the_agent_before_it_and_asks_again() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("manual.yaml", MANUAL, &fake);
    let v = run_json(&sandbox, &spec, 19);
    let id = session_id(&v);
    assert_eq!(v["gate"]["position"], "nodes.check#0");
    let out = sandbox.strands(&["resume", &id, "--modify", "--feedback", "shorter", "--json"]);
    out.expect_code(19);
    let v = out.json();
    assert_eq!(v["gate"]["id"], "check", "the same gate asks again: {v:#}");
    assert_eq!(fake.count(), 2);
    assert_eq!(fake.request(2).user(), "Write it. Feedback: shorter");
    assert!(
        v["gate"]["preview"]
            .as_str()
            .is_some_and(|p| p.contains(&fake.request(2).reply_text())),
        "{v:#}"
    );
    // approve → `decide`; `go` with the input mode=fast → ship.
    let out = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    out.expect_code(19);
    assert_eq!(out.json()["gate"]["id"], "decide");
    let done = respond(&sandbox, &id, "go", 0);
    assert_eq!(fake.count(), 3);
    let ship = fake.request(3);
    assert!(ship.system().contains("SHIPPER"), "{ship:?}");
    assert_eq!(
        ship.user(),
        format!("Ship (approved, visit 1): {}", fake.request(2).reply_text())
    );
    assert_eq!(done["output"], Value::String(ship.reply_text()));
    assert_eq!(
        path(&sandbox, &id),
        ["write", "write", "check", "decide", "ship"]
    );
}

#[test]
fn a_choose_where_nothing_holds_ends_the_run_at_that_node() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    // `check` has no `else`: a skipped gate (condition false) reads "".
    let yaml = MANUAL.replace(
        "        prompt: Ship this?\n",
        "        prompt: Ship this?\n        condition: \"{{ mode == 'careful' }}\"\n",
    );
    let spec = sandbox.spec("manual.yaml", &yaml, &fake);
    let done = run_json(&sandbox, &spec, 0);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(fake.count(), 1);
    // The output is the latest output: the writer's (the gate has none).
    assert_eq!(done["output"], Value::String(fake.request(1).reply_text()));
    let id = session_id(&done);
    let state = &sandbox.show(&id)["state"];
    assert!(
        state["ended"]
            .as_str()
            .is_some_and(|e| e.contains("`check`")),
        "{state:#}"
    );
}

/// The plain compat graph with a critic that approves on its `approve_at`-th call.
fn plain_fake(approve_at: usize) -> FakeLlm {
    let critiques = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    fake_with(move |system, user, n| {
        if system.contains("CRITIC") {
            // Count distinct critique requests by their number.
            let k = critiques.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let _ = user;
            if k >= approve_at {
                return format!("APPROVED (request {n})");
            }
            return format!("too vague (request {n})");
        }
        format!("TEXT {n}")
    })
}

#[test]
fn a_plain_graph_loops_until_the_critic_approves_and_ends_at_its_terminal_node() {
    let fake = plain_fake(2);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", &compat("graph-plain.yaml"), &fake);
    let done = run_json(&sandbox, &spec, 0);
    assert_eq!(done["status"], "completed", "{done:#}");
    // draft, critique, revise, critique (approved), polish.
    assert_eq!(fake.count(), 5);
    assert_eq!(fake.request(5).user(), "Polish: TEXT 3");
    assert_eq!(done["output"], "TEXT 5");
    let id = session_id(&done);
    assert_eq!(
        path(&sandbox, &id),
        ["draft", "critique", "revise", "critique", "polish"]
    );
}

#[test]
fn exceeding_max_iterations_fails_the_run_naming_the_node_and_the_loop() {
    let fake = plain_fake(usize::MAX);
    let sandbox = Sandbox::new();
    // Without the forced completion, a critic that never approves loops.
    let forced = "          - when: \"{{ nodes.critique.iteration >= 3 }}\"\n            to: polish  # force completion after 3 critiques\n";
    let yaml = compat("graph-plain.yaml");
    assert!(yaml.contains(forced));
    let spec = sandbox.spec("plain.yaml", &yaml.replace(forced, ""), &fake);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    out.expect_code(10);
    let v = out.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    let msg = v["error"]["message"]
        .as_str()
        .expect("error message")
        .to_string();
    assert!(msg.contains("`critique`"), "{msg}");
    assert!(msg.contains("max_iterations is 3"), "{msg}");
    assert!(msg.contains("critique → revise → critique"), "{msg}");
    // draft + 3 × (critique, revise): the 4th critique never ran.
    assert_eq!(fake.count(), 7);
}

#[test]
fn a_run_killed_mid_step_resumes_without_repeating_a_visit() {
    // Request 3 (the first revise) hangs; the process is killed meanwhile.
    let critiques = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fake = FakeLlm::start_with(Behaviour {
        delay: Some((3, Duration::from_secs(30))),
        reply: Arc::new(move |n, body| {
            let system = body["messages"][0]["content"].as_str().unwrap_or_default();
            if system.contains("CRITIC") {
                let k = critiques.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if k >= 2 {
                    return "APPROVED".into();
                }
                return "no".into();
            }
            format!("TEXT {n}")
        }),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", &compat("graph-plain.yaml"), &fake);
    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8")]);
    fake.wait_for_requests(3, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill strands");
    let _ = child.wait();
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");
    assert_eq!(path(&sandbox, &id), ["draft", "critique"]);

    let out = sandbox.strands(&["resume", &id, "--json"]);
    out.expect_code(0);
    // revise (again: it never finished), critique, polish.
    assert_eq!(fake.count(), 6);
    let users: Vec<String> = fake.requests().iter().map(|e| e.user()).collect();
    assert_eq!(
        users
            .iter()
            .filter(|u| u.starts_with("Write a first draft"))
            .count(),
        1,
        "the draft ran once: {users:#?}"
    );
    assert_eq!(
        path(&sandbox, &id),
        ["draft", "critique", "revise", "critique", "polish"]
    );
}

#[test]
fn invalid_graphs_are_spec_errors_at_their_lines() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = r#"version: 0
name: bad-graph
runtime:
  provider: openai
  host: $HOST
agents:
  a:
    prompt: A
pattern:
  type: graph
  config:
    nodes:
      one:
        agent: a
      two:
        agent: nobody
      gate:
        type: hitl
        prompt: ok?
    edges:
      - from: one
        to: [ghost]
      - from: one
        to: [two]
      - from: two
        choose:
          - when: "{{ nodes.one.response == }}"
            to: gate
          - when: else
            to: one
"#;
    let spec = sandbox.spec("bad.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    for (line, text) in [
        ("bad.yaml:16:", "undefined agent `nobody`"),
        ("bad.yaml:22:", "unknown node `ghost`"),
        ("bad.yaml:23:", "second outgoing edge"),
        ("bad.yaml:27:", "`when` of the edge from `two`"),
    ] {
        assert!(all.contains(line), "{line} in {all}");
        assert!(all.contains(text), "{text} in {all}");
    }
    assert!(all.contains("hint:"), "{all}");
    // Running it is refused the same way, before anything is saved.
    sandbox
        .strands(&["run", spec.to_str().expect("utf-8")])
        .expect_code(3);
    assert_eq!(fake.count(), 0);

    // A graph whose edge has both `to` and `choose`, and max_iterations 0.
    let yaml = r#"version: 0
name: bad-graph-2
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: graph
  config:
    max_iterations: 0
    nodes:
      one:
        agent: a
    edges:
      - from: one
        to: [one]
        choose:
          - when: else
            to: one
"#;
    let spec = sandbox.spec("bad2.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(3);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("bad2.yaml:11:"), "{all}");
    assert!(all.contains("max_iterations must be at least 1"), "{all}");
    assert!(all.contains("bad2.yaml:19:"), "{all}");
    assert!(all.contains("both `to` and `choose`"), "{all}");
}

#[test]
fn compat_graph_specs_validate_and_warnings_name_their_lines() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    for name in ["graph-plain.yaml", "graph-hitl-loop.yaml"] {
        let spec = sandbox.spec(name, &compat(name), &fake);
        sandbox
            .strands(&["validate", spec.to_str().expect("utf-8")])
            .expect_code(0);
    }
    let yaml = r#"version: 0
name: warn-graph
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: graph
  config:
    nodes:
      one:
        agent: a
      two:
        agent: a
      lonely:
        agent: a
    edges:
      - from: one
        to: [two, lonely]
"#;
    let spec = sandbox.spec("warn.yaml", yaml, &fake);
    let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("warn.yaml:20: the edge from `one` lists 2 targets"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("`lonely` cannot be reached"),
        "{}",
        out.stderr
    );
}
