//! The `routing` pattern through the real binary and a fake model: the
//! router's JSON pick (bare, fenced, re-asked when it names no route), the
//! router review (`approved`, `route:<name>`, refused answers, modify),
//! gates inside a route, and nothing run twice across pauses, answers and
//! restarts.

use crate::common::{invalid_spec, per_agent, run_paused, session_id, FakeLlm, Sandbox};
use serde_json::Value;
use std::time::Duration;

const PLAIN: &str = include_str!("../specs/compat/routing-plain.yaml");
const REVIEW: &str = include_str!("../specs/compat/routing-review.yaml");
const ROUTE_GATE: &str = include_str!("../specs/compat/routing-route-gate.yaml");

#[test]
fn the_router_picks_a_route_and_only_that_routes_steps_run() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &["Sure.\n```json\n{\"route\": \"billing\", \"reasoning\": \"a charge\"}\n```"],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let out_dir = sandbox.path().join("out");
    let run = sandbox.strands(&[
        "run",
        spec.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
        "--json",
    ]);
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["status"], "completed", "{v:#}");

    let router = fake.only_call_of("CLASSIFIER");
    assert!(
        router
            .user()
            .starts_with("Customer inquiry: I was charged twice this month"),
        "{}",
        router.user()
    );
    assert!(
        router
            .user()
            .ends_with("Respond with valid JSON: {\"route\": \"<route_name>\"}"),
        "{}",
        router.user()
    );
    let billing = fake.only_call_of("BILLING");
    assert_eq!(
        billing.user(),
        "Billing question: I was charged twice this month (route billing)"
    );
    let summary = fake.only_call_of("SUMMARIZER");
    assert_eq!(
        summary.user(),
        format!("Summarize for the customer: {}", billing.reply_text())
    );
    assert!(fake.calls_of("TECHNICAL").is_empty());
    assert!(fake.calls_of("GENERAL").is_empty());
    assert_eq!(fake.count(), 3);
    assert_eq!(v["output"], Value::String(summary.reply_text()));
    let artifact = std::fs::read_to_string(out_dir.join("routing-output.md")).expect("artifact");
    assert!(
        artifact.starts_with("# Support response (billing)"),
        "{artifact}"
    );
    assert!(artifact.contains(&summary.reply_text()), "{artifact}");
}

#[test]
fn a_reply_without_a_valid_route_is_reasked_with_the_routes_then_succeeds() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &[
            "It is clearly about money.",
            "{\"route\": \"sales\"}",
            "{\"route\": \"general\"}",
        ],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(0);
    let v = run.json();

    let router = fake.calls_of("CLASSIFIER");
    assert_eq!(router.len(), 3, "asked once, re-asked twice");
    let second = router[1].user();
    assert!(
        second.starts_with("Customer inquiry: I was charged twice this month"),
        "{second}"
    );
    assert!(
        second.contains("did not name a valid route (no JSON object with a \"route\" field):\nIt is clearly about money."),
        "{second}"
    );
    assert!(
        second.contains("one of: technical, billing, general"),
        "{second}"
    );
    assert!(
        router[2].user().contains("(`sales` is not a route)"),
        "{}",
        router[2].user()
    );
    let general = fake.only_call_of("GENERAL");
    assert_eq!(v["output"], Value::String(general.reply_text()));
    assert_eq!(fake.count(), 4);
}

#[test]
fn a_router_that_never_names_a_route_fails_the_run_with_the_routes_and_its_reply() {
    let fake = FakeLlm::start_with(per_agent(&[("CLASSIFIER", &["  I cannot decide.  "])]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(10);
    let v = run.json();
    assert_eq!(v["status"], "failed", "{v:#}");
    let message = v["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("named no valid route in 3 attempts (max_retries: 2)"),
        "{message}"
    );
    assert!(
        message.contains("valid routes: technical, billing, general"),
        "{message}"
    );
    assert!(
        message.contains("its last reply: \"I cannot decide.\""),
        "{message}"
    );
    assert_eq!(fake.calls_of("CLASSIFIER").len(), 3);
    assert_eq!(fake.count(), 3, "no route ran");

    // A resume of the failed run asks nobody again.
    let id = session_id(&v);
    let again = sandbox.strands(&["resume", &id, "--json"]);
    assert_ne!(again.code, 0, "{}", again.stdout);
    assert_eq!(fake.count(), 3);
}

#[test]
fn the_review_shows_the_pick_and_approved_runs_it() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &["{\"route\": \"technical\", \"reasoning\": \"login problem\"}"],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW, &fake);
    let id = run_paused(&sandbox, &spec);
    assert_eq!(fake.count(), 1, "only the router ran before the review");

    let show = sandbox.show(&id);
    assert_eq!(show["gate"]["id"], "review_router", "{show:#}");
    assert_eq!(show["gate"]["position"], "router.review_router");
    let context = show["gate"]["context"].as_str().expect("context");
    assert!(
        context.contains("Router's Selected Route: technical"),
        "{context}"
    );
    assert!(
        context.contains("\"reasoning\": \"login problem\""),
        "{context}"
    );

    // strands-cli's form of the answer.
    let done = sandbox.strands(&[
        "run",
        "--resume",
        &id,
        "--hitl-response",
        "approved",
        "--json",
    ]);
    done.expect_code(0);
    let v = done.json();
    let tech = fake.only_call_of("TECHNICAL");
    assert!(
        tech.user().contains("Router classification: technical"),
        "{}",
        tech.user()
    );
    assert_eq!(v["output"], Value::String(tech.reply_text()));
    assert_eq!(fake.calls_of("CLASSIFIER").len(), 1, "the router ran once");
    assert_eq!(fake.count(), 2);
}

#[test]
fn route_override_runs_only_that_routes_agent() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &["{\"route\": \"technical\"}"],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW, &fake);
    let id = run_paused(&sandbox, &spec);

    let done = sandbox.strands(&["resume", &id, "--response", "route:billing", "--json"]);
    done.expect_code(0);
    let v = done.json();
    let billing = fake.only_call_of("BILLING");
    assert!(
        billing.user().contains("Router classification: billing"),
        "{}",
        billing.user()
    );
    assert!(
        fake.calls_of("TECHNICAL").is_empty(),
        "the pick was overridden"
    );
    assert!(fake.calls_of("GENERAL").is_empty());
    assert_eq!(v["output"], Value::String(billing.reply_text()));
    let show = sandbox.show(&id);
    assert_eq!(show["state"]["picked"], "technical", "{show:#}");
    assert_eq!(show["state"]["chosen"], "billing");
}

#[test]
fn an_answer_the_review_does_not_take_is_refused_and_the_session_stays_answerable() {
    let fake = FakeLlm::start_with(per_agent(&[("CLASSIFIER", &["{\"route\": \"general\"}"])]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW, &fake);
    let id = run_paused(&sandbox, &spec);
    let before = sandbox.show(&id);

    for bad in ["yes please", "route:sales"] {
        let out = sandbox.strands(&["resume", &id, "--response", bad]);
        out.expect_code(2);
        assert!(
            out.stderr
                .contains("valid answers: approved, route:billing, route:general, route:technical"),
            "{}",
            out.stderr
        );
    }
    // Only the audit of the refusals may differ; the session is as it was.
    let after = sandbox.show(&id);
    assert_eq!(after["status"], "paused");
    assert_eq!(after["state"], before["state"]);
    assert_eq!(after["gate"], before["gate"]);
    assert_eq!(after["gates"], before["gates"]);
    assert_eq!(fake.count(), 1);

    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(fake.calls_of("GENERAL").len(), 1);
    assert_eq!(fake.count(), 2);
}

#[test]
fn modify_at_the_review_reruns_the_router_with_the_feedback() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &["{\"route\": \"technical\"}", "{\"route\": \"billing\"}"],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW, &fake);
    let id = run_paused(&sandbox, &spec);

    let modified = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "the customer mentions an invoice",
        "--json",
    ]);
    modified.expect_code(19);
    let v = modified.json();
    assert_eq!(v["gate"]["handle"], "review_router#2", "{v:#}");
    let router = fake.calls_of("CLASSIFIER");
    assert_eq!(router.len(), 2);
    assert!(
        !router[0].user().contains("invoice"),
        "no feedback the first time"
    );
    assert!(
        router[1].user().contains(
            "Feedback from a human reviewer on the previous routing decision:\nthe customer mentions an invoice"
        ),
        "{}",
        router[1].user()
    );
    let show = sandbox.show(&id);
    assert!(
        show["gate"]["context"]
            .as_str()
            .expect("context")
            .contains("Router's Selected Route: billing"),
        "{show:#}"
    );

    // A second process answers the re-asked review.
    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(fake.calls_of("BILLING").len(), 1);
    assert!(fake.calls_of("TECHNICAL").is_empty());
    assert_eq!(fake.count(), 3);
}

#[test]
fn reject_at_the_review_ends_the_run_before_any_route() {
    let fake = FakeLlm::start_with(per_agent(&[(
        "CLASSIFIER",
        &["{\"route\": \"technical\"}"],
    )]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW, &fake);
    let id = run_paused(&sandbox, &spec);
    sandbox
        .strands(&["resume", &id, "--reject", "--reason", "spam"])
        .expect_code(21);
    assert_eq!(sandbox.show(&id)["status"], "rejected");
    assert_eq!(fake.count(), 1);
}

#[test]
fn gates_inside_a_route_modify_approve_answer_and_resume_in_new_processes() {
    let fake = FakeLlm::start_with(per_agent(&[("CLASSIFIER", &["{\"route\": \"billing\"}"])]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("gate.yaml", ROUTE_GATE, &fake);
    let id = run_paused(&sandbox, &spec);
    assert_eq!(sandbox.show(&id)["gate"]["id"], "manager_approval");
    assert_eq!(fake.count(), 2, "router and drafter");

    // Modify re-runs the route's drafter with the feedback.
    let modified = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "only half",
        "--json",
    ]);
    modified.expect_code(19);
    let drafts = fake.calls_of("REFUND DRAFTER");
    assert_eq!(drafts.len(), 2);
    assert_eq!(
        drafts[1].user(),
        "Draft a refund decision for: Please refund my last invoice Manager feedback: only half"
    );
    assert_eq!(modified.json()["gate"]["handle"], "manager_approval#2");

    // Approve: the hitl gate asks next (another pause, another process).
    let approved = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    approved.expect_code(19);
    assert_eq!(approved.json()["gate"]["id"], "tone");
    assert_eq!(fake.count(), 3, "nothing ran between the two gates");

    // strands-cli's form answers the hitl gate; its text is the step's response.
    let done = sandbox.strands(&[
        "run",
        "--resume",
        &id,
        "--hitl-response",
        "formal",
        "--json",
    ]);
    done.expect_code(0);
    let writer = fake.only_call_of("WRITER");
    assert_eq!(
        writer.user(),
        format!(
            "Write to the customer in a formal tone: {}",
            drafts[1].reply_text()
        )
    );
    assert_eq!(done.json()["output"], Value::String(writer.reply_text()));
    assert_eq!(fake.calls_of("CLASSIFIER").len(), 1);
    assert_eq!(fake.calls_of("REFUND DRAFTER").len(), 2);
    assert_eq!(fake.count(), 4);
}

#[test]
fn reject_at_a_route_gate_ends_the_run_and_the_writer_never_runs() {
    let fake = FakeLlm::start_with(per_agent(&[("CLASSIFIER", &["{\"route\": \"billing\"}"])]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("gate.yaml", ROUTE_GATE, &fake);
    let id = run_paused(&sandbox, &spec);
    sandbox
        .strands(&["resume", &id, "--reject", "--reason", "no refunds"])
        .expect_code(21);
    assert!(fake.calls_of("WRITER").is_empty());
    assert_eq!(fake.count(), 2);
}

#[test]
fn a_run_killed_mid_route_resumes_without_asking_the_router_again() {
    // Request 2 (the billing agent) hangs; the router's pick is saved.
    let mut behaviour = per_agent(&[("CLASSIFIER", &["{\"route\": \"billing\"}"])]);
    behaviour.delay = Some((2, Duration::from_secs(30)));
    let fake = FakeLlm::start_with(behaviour);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8")]);
    fake.wait_for_requests(2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill -9 strands");
    let _ = child.wait();
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");

    let resumed = sandbox.strands(&["resume", &id, "--json"]);
    resumed.expect_code(0);
    assert_eq!(fake.calls_of("CLASSIFIER").len(), 1, "the router ran once");
    assert_eq!(
        fake.calls_of("BILLING").len(),
        2,
        "the interrupted step ran again"
    );
    assert_eq!(fake.calls_of("SUMMARIZER").len(), 1);
    assert_eq!(fake.count(), 4);
}

#[test]
fn invalid_routing_specs_exit_3_at_their_location() {
    invalid_spec(
        r#"version: 0
name: bad
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: routing
  config:
    router:
      agent: nobody
      max_retries: -1
      review_router:
        type: hitl
        prompt: ok?
        default: "route:sales"
    routes:
      billing:
        then:
          - agent: ghost
      tech:
        then:
          - agent: a
"#,
        &[
            ("12:14", "router uses undefined agent `nobody`"),
            ("13:20", "router.max_retries is -1"),
            (
                "17:18",
                "default `route:sales` is not an answer the review takes",
            ),
            (
                "21:20",
                "routes.billing.then[0] uses undefined agent `ghost`",
            ),
        ],
    );
    invalid_spec(
        r#"version: 0
name: bad
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: routing
  config:
    router:
      agent: a
      review_router:
        agent: a
    routes:
      billing:
        then:
          - agent: a
"#,
        &[("14:9", "review_router is a human gate, not an agent step")],
    );
    invalid_spec(
        r#"version: 0
name: bad
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: routing
  config:
    router:
      agent: a
    routes:
      billing:
        steps:
          - agent: a
"#,
        &[("15:9", "unknown field `steps`")],
    );
    invalid_spec(
        r#"version: 0
name: bad
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: routing
  config:
    router:
      agent: a
    routes: {}
"#,
        &[("13:13", "routing has no routes")],
    );
}
