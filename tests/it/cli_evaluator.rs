//! The `evaluator_optimizer` pattern through the real binary and a fake
//! model: drafts, scores and revisions; `min_score` and `max_iters`; the
//! review gate (`continue`, `stop`, feedback); the seed's manual review
//! (`approve-current`, `continue`, reject, modify); and nothing run twice
//! across pauses, answers and restarts.

use crate::common::{invalid_spec, per_agent, run_paused, FakeLlm, Sandbox};
use serde_json::Value;
use std::time::Duration;

const PLAIN: &str = include_str!("../specs/compat/evaluator-plain.yaml");
const REVIEW: &str = include_str!("../specs/compat/evaluator-review-gate.yaml");
const MANUAL: &str = include_str!("../specs/compat/evaluator-manual-review.yaml");

const DRAFTS: &[&str] = &["DRAFT ONE", "DRAFT TWO", "DRAFT THREE", "DRAFT FOUR"];

#[test]
fn the_score_reaches_min_score_on_the_second_iteration() {
    let fake = FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        (
            "CRITIC",
            &[
                "{\"score\": 60, \"issues\": [\"too short\"], \"fixes\": [\"add examples\"]}",
                "Looks good:\n```json\n{\"score\": 90, \"issues\": [], \"fixes\": []}\n```",
            ],
        ),
    ]));
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
    assert_eq!(v["output"], "DRAFT TWO", "{v:#}");

    let writer = fake.calls_of("WRITER");
    let critic = fake.calls_of("CRITIC");
    assert_eq!((writer.len(), critic.len()), (2, 2));
    assert_eq!(fake.count(), 4);
    // The first draft's input is the producer's own prompt.
    assert_eq!(
        writer[0].user(),
        "You are the WRITER. Write a short blog post about: durable human approval gates\n"
    );
    assert_eq!(
        critic[0].user(),
        "Evaluate this draft about durable human approval gates:\n\nDRAFT ONE\n"
    );
    let revision = writer[1].user();
    assert!(revision.contains("Draft:\nDRAFT ONE"), "{revision}");
    assert!(revision.contains("Score: 60/100"), "{revision}");
    assert!(revision.contains("- Issue: too short"), "{revision}");
    assert!(revision.contains("- Fix: add examples"), "{revision}");
    assert!(critic[1].user().contains("DRAFT TWO"));
    let artifact = std::fs::read_to_string(out_dir.join("optimized.md")).expect("artifact");
    assert_eq!(artifact, "DRAFT TWO");
}

#[test]
fn max_iters_ends_the_loop_with_the_last_draft() {
    let fake = FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        ("CRITIC", &["{\"score\": 50, \"issues\": [\"meh\"]}"]),
    ]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(v["output"], "DRAFT THREE");
    assert_eq!(fake.calls_of("WRITER").len(), 3, "max_iters: 3");
    assert_eq!(fake.calls_of("CRITIC").len(), 3);
    assert_eq!(fake.count(), 6);
}

#[test]
fn a_reply_without_a_score_is_reasked_once() {
    let fake = FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        ("CRITIC", &["Great work, really.", "{\"score\": 99}"]),
    ]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(0);
    assert_eq!(run.json()["output"], "DRAFT ONE");
    let critic = fake.calls_of("CRITIC");
    assert_eq!(critic.len(), 2);
    assert!(
        critic[1]
            .user()
            .starts_with("Your previous response was not valid JSON"),
        "{}",
        critic[1].user()
    );
    assert!(critic[1].user().ends_with("DRAFT ONE"));
    assert_eq!(fake.count(), 3);
}

#[test]
fn an_evaluator_that_never_scores_fails_the_run_quoting_its_reply() {
    let fake = FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        ("CRITIC", &["  I like it a lot.  "]),
    ]));
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    run.expect_code(10);
    let v = run.json();
    let message = v["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("gave no numeric score for iteration 1 in 2 attempts"),
        "{message}"
    );
    assert!(
        message.contains("its last reply: \"I like it a lot.\""),
        "{message}"
    );
    assert_eq!(fake.count(), 3);
}

/// The review-gate spec (min 95, max 3) paused after iteration 1.
fn paused_review(fake: &FakeLlm, sandbox: &Sandbox) -> String {
    let spec = sandbox.spec("review.yaml", REVIEW, fake);
    run_paused(sandbox, &spec)
}

fn review_fake() -> FakeLlm {
    FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        (
            "CRITIC",
            &[
                "{\"score\": 70, \"issues\": [\"no intro\"], \"fixes\": [\"write an intro\"]}",
                "{\"score\": 80, \"issues\": [\"long\"], \"fixes\": []}",
                "{\"score\": 85, \"issues\": [], \"fixes\": []}",
            ],
        ),
    ]))
}

#[test]
fn review_gate_continue_then_stop_in_separate_processes() {
    let fake = review_fake();
    let sandbox = Sandbox::new();
    let id = paused_review(&fake, &sandbox);
    assert_eq!(fake.count(), 2, "one draft, one evaluation");

    let show = sandbox.show(&id);
    assert_eq!(show["gate"]["id"], "review_gate", "{show:#}");
    assert_eq!(show["gate"]["position"], "iterations[0].review_gate");
    assert!(
        show["gate"]["prompt"]
            .as_str()
            .expect("prompt")
            .starts_with("Review iteration 0 before continuing"),
        "{show:#}"
    );
    let context = show["gate"]["context"].as_str().expect("context");
    assert!(
        context.contains("### Draft (Iteration 1)\nDRAFT ONE..."),
        "{context}"
    );
    assert!(context.contains("**Score:** 70/100"), "{context}");
    assert!(context.contains("- no intro"), "{context}");
    assert!(context.contains("- write an intro"), "{context}");
    // The critic's system prompt read the draft.
    assert!(fake.only_call_of("CRITIC").system().contains("DRAFT ONE"));

    // strands-cli's form: continue → revision, evaluation, the gate again.
    let next = sandbox.strands(&[
        "run",
        "--resume",
        &id,
        "--hitl-response",
        "continue",
        "--json",
    ]);
    next.expect_code(19);
    let v = next.json();
    assert_eq!(v["gate"]["position"], "iterations[1].review_gate", "{v:#}");
    let writer = fake.calls_of("WRITER");
    assert_eq!(writer.len(), 2);
    let revision = writer[1].user();
    assert!(
        revision.contains("**Original Draft:**\nDRAFT ONE"),
        "{revision}"
    );
    assert!(revision.contains("- no intro"), "{revision}");
    assert!(
        !revision.contains("Feedback from a human reviewer"),
        "{revision}"
    );

    // A second process stops: the current draft is the output.
    let done = sandbox.strands(&["resume", &id, "--response", "stop", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["output"], "DRAFT TWO");
    assert_eq!(fake.calls_of("WRITER").len(), 2);
    assert_eq!(fake.calls_of("CRITIC").len(), 2);
    assert_eq!(fake.count(), 4);
}

#[test]
fn review_gate_text_is_feedback_for_the_next_revision_only() {
    let fake = review_fake();
    let sandbox = Sandbox::new();
    let id = paused_review(&fake, &sandbox);
    let next = sandbox.strands(&[
        "resume",
        &id,
        "--response",
        "mention sled by name",
        "--json",
    ]);
    next.expect_code(19);
    let writer = fake.calls_of("WRITER");
    assert!(
        writer[1]
            .user()
            .ends_with("Feedback from a human reviewer:\nmention sled by name"),
        "{}",
        writer[1].user()
    );
    // The next iteration continues without it; max_iters ends the loop.
    let done = sandbox.strands(&["resume", &id, "--response", "continue", "--json"]);
    done.expect_code(0);
    let writer = fake.calls_of("WRITER");
    assert_eq!(writer.len(), 3);
    assert!(
        !writer[2].user().contains("mention sled"),
        "{}",
        writer[2].user()
    );
    assert_eq!(done.json()["output"], "DRAFT THREE");
}

#[test]
fn modify_at_the_review_gate_sends_the_feedback_with_the_revision() {
    let fake = review_fake();
    let sandbox = Sandbox::new();
    let id = paused_review(&fake, &sandbox);
    let next = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "cite two sources",
        "--json",
    ]);
    next.expect_code(19);
    let v = next.json();
    assert_eq!(v["gate"]["position"], "iterations[1].review_gate", "{v:#}");
    let writer = fake.calls_of("WRITER");
    assert_eq!(writer.len(), 2);
    assert!(
        writer[1]
            .user()
            .ends_with("Feedback from a human reviewer:\ncite two sources"),
        "{}",
        writer[1].user()
    );
    assert_eq!(fake.calls_of("CRITIC").len(), 2, "nothing ran twice");
}

#[test]
fn reject_at_the_review_gate_ends_the_run() {
    let fake = review_fake();
    let sandbox = Sandbox::new();
    let id = paused_review(&fake, &sandbox);
    sandbox
        .strands(&["resume", &id, "--reject", "--reason", "off topic"])
        .expect_code(21);
    assert_eq!(sandbox.show(&id)["status"], "rejected");
    assert_eq!(fake.count(), 2);
}

/// The manual-review spec (min 8 of 10, max 4, review after 2 iterations)
/// with an editor that gives 5: paused at iteration 2's manual review.
fn paused_manual(sandbox: &Sandbox) -> (FakeLlm, String) {
    let fake = FakeLlm::start_with(per_agent(&[
        ("WRITER", DRAFTS),
        (
            "EDITOR",
            &["{\"score\": 5, \"feedback\": \"needs diagrams\"}"],
        ),
    ]));
    let spec = sandbox.spec("manual.yaml", MANUAL, &fake);
    let id = run_paused(sandbox, &spec);
    let show = sandbox.show(&id);
    assert_eq!(show["gate"]["id"], "manual_review", "{show:#}");
    assert_eq!(show["gate"]["position"], "iterations[1].manual_review");
    assert_eq!(
        show["gate"]["prompt"],
        "Quality not meeting threshold after 2 iterations (score 5). Approve current version?"
    );
    assert_eq!(fake.count(), 4, "two drafts, two evaluations");
    (fake, id)
}

#[test]
fn manual_review_approve_current_ends_with_the_current_draft() {
    let sandbox = Sandbox::new();
    let (fake, id) = paused_manual(&sandbox);
    let editor = fake.calls_of("EDITOR");
    assert_eq!(editor[0].user(), "Evaluate: DRAFT ONE");
    let writer = fake.calls_of("WRITER");
    assert_eq!(
        writer[0].user(),
        "Write blog post about Microservices Architecture"
    );
    assert!(
        writer[1].user().contains("Issues:\n- needs diagrams"),
        "the built-in revision input: {}",
        writer[1].user()
    );
    let done = sandbox.strands(&["resume", &id, "--response", "approve-current", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["output"], "DRAFT TWO");
    assert_eq!(fake.count(), 4);
}

#[test]
fn manual_review_continue_runs_another_iteration_and_approve_ends_it() {
    let sandbox = Sandbox::new();
    let (fake, id) = paused_manual(&sandbox);
    let next = sandbox.strands(&["resume", &id, "--response", "continue", "--json"]);
    next.expect_code(19);
    let v = next.json();
    assert_eq!(
        v["gate"]["position"], "iterations[2].manual_review",
        "{v:#}"
    );
    assert_eq!(fake.count(), 6);

    let last = sandbox.strands(&["resume", &id, "--response", "continue", "--json"]);
    last.expect_code(19);
    assert_eq!(
        last.json()["gate"]["position"],
        "iterations[3].manual_review"
    );
    assert_eq!(fake.count(), 8);

    // After the last iteration, continue and modify are refused.
    let refused = sandbox.strands(&["resume", &id, "--response", "continue"]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("max_iters (4) is reached"),
        "{}",
        refused.stderr
    );
    sandbox
        .strands(&["resume", &id, "--modify", "--feedback", "more"])
        .expect_code(2);

    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["output"], "DRAFT FOUR");
    assert_eq!(fake.calls_of("WRITER").len(), 4);
    assert_eq!(fake.calls_of("EDITOR").len(), 4);
}

#[test]
fn manual_review_reject_ends_the_run_rejected() {
    let sandbox = Sandbox::new();
    let (fake, id) = paused_manual(&sandbox);
    sandbox
        .strands(&["resume", &id, "--reject"])
        .expect_code(21);
    assert_eq!(sandbox.show(&id)["status"], "rejected");

    // The word works too.
    let sandbox = Sandbox::new();
    let (fake2, id2) = paused_manual(&sandbox);
    sandbox
        .strands(&["resume", &id2, "--response", "reject"])
        .expect_code(21);
    let show = sandbox.show(&id2);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_eq!(fake.count(), 4);
    assert_eq!(fake2.count(), 4);
}

#[test]
fn manual_review_modify_sends_the_feedback_to_the_next_producer_request() {
    let sandbox = Sandbox::new();
    let (fake, id) = paused_manual(&sandbox);
    let next = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "add a sequence diagram",
        "--json",
    ]);
    next.expect_code(19);
    let writer = fake.calls_of("WRITER");
    assert_eq!(writer.len(), 3);
    assert!(
        writer[2]
            .user()
            .ends_with("Feedback from a human reviewer:\nadd a sequence diagram"),
        "{}",
        writer[2].user()
    );
    let body = writer[2].body.to_string();
    assert!(body.contains("add a sequence diagram"), "{body}");
    assert_eq!(fake.calls_of("EDITOR").len(), 3);
}

#[test]
fn manual_review_refuses_other_answers_and_stays_answerable() {
    let sandbox = Sandbox::new();
    let (fake, id) = paused_manual(&sandbox);
    let before = sandbox.show(&id);
    let out = sandbox.strands(&["resume", &id, "--response", "maybe later"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("takes approve-current (--approve), continue, reject (--reject)"),
        "{}",
        out.stderr
    );
    let after = sandbox.show(&id);
    assert_eq!(after["state"], before["state"]);
    assert_eq!(after["gate"], before["gate"]);
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert_eq!(fake.count(), 4);
}

#[test]
fn a_run_killed_mid_revision_resumes_without_redoing_finished_steps() {
    // Request 3 (the first revision) hangs; draft 1 and its score are saved.
    let mut behaviour = per_agent(&[
        ("WRITER", DRAFTS),
        ("CRITIC", &["{\"score\": 10}", "{\"score\": 99}"]),
    ]);
    behaviour.delay = Some((3, Duration::from_secs(30)));
    let fake = FakeLlm::start_with(behaviour);
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let mut child = sandbox.spawn(&["run", spec.to_str().expect("utf-8")]);
    fake.wait_for_requests(3, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill -9 strands");
    let _ = child.wait();
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");

    let resumed = sandbox.strands(&["resume", &id, "--json"]);
    resumed.expect_code(0);
    let v = resumed.json();
    // The writer's third request is the interrupted revision, asked again.
    let writer = fake.calls_of("WRITER");
    assert_eq!(writer.len(), 3, "draft, interrupted revision, revision");
    assert_eq!(writer[1].user(), writer[2].user());
    assert_eq!(fake.calls_of("CRITIC").len(), 2, "each draft scored once");
    assert_eq!(v["output"], Value::String(writer[2].reply_text()));
}

#[test]
fn invalid_evaluator_specs_exit_3_at_their_location() {
    invalid_spec(
        r#"version: 0
name: bad
runtime:
  provider: openai
agents:
  a:
    prompt: A
pattern:
  type: evaluator_optimizer
  config:
    producer: writer
    evaluator:
      agent: critic
    accept:
      min_score: 120
      max_iters: 0
      manual_review:
        after_iterations: 0
        prompt: ok?
    review_gate:
      agent: a
"#,
        &[
            ("11:15", "producer uses undefined agent `writer`"),
            ("13:14", "evaluator uses undefined agent `critic`"),
            ("15:18", "accept.min_score is 120"),
            ("16:18", "accept.max_iters is 0"),
            ("18:27", "after_iterations is 0"),
            ("21:7", "review_gate is a human gate, not an agent step"),
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
  type: evaluator_optimizer
  config:
    producer:
      agent: a
      inptu: "x"
    evaluator:
      agent: a
    accept:
      min_score: 50
"#,
        &[("13:7", "unknown field `inptu`")],
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
  type: evaluator_optimizer
  config:
    producer: a
    evaluator:
      agent: a
      input: "{{ draft"
    accept:
      min_score: -1
      max_iters: 2
      manual_review:
        after_iterations: 3
        prompt: ok?
"#,
        &[
            (
                "14:14",
                "template syntax error in the input of the evaluator",
            ),
            ("16:18", "accept.min_score is -1"),
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
  type: evaluator_optimizer
  config:
    producer: a
    evaluator:
      agent: a
    accept:
      min_score: 50
      max_iters: 2
      manual_review:
        after_iterations: 3
        prompt: ok?
"#,
        &[(
            "18:27",
            "more than max_iters (2): the review would never be asked",
        )],
    );
}
