//! Human-gate flows of the `strands` binary against a fake model server:
//! pause, approve, modify, reject, skip, hitl answers, auto-approve and the
//! interactive terminal.

use crate::common::{history, session_id, FakeLlm, Sandbox};
use serde_json::Value;

/// researcher → manual_gate `review` → writer.
const REVIEW_CHAIN: &str = r#"
version: 0
name: research-review
runtime:
  provider: openai
  model_id: fake-model
  host: $HOST
inputs:
  values:
    topic: durable gates
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
        input: "Research {{ topic }}.{% if human_feedback %} Reviewer feedback: {{ human_feedback }}{% endif %}"
      - type: manual_gate
        id: review
        prompt: Review the research on {{ topic }}.
      - agent: writer
        input: "Write a report from: {{ steps[0].response }}"
"#;

/// Runs REVIEW_CHAIN to its gate and returns the session id.
fn paused_review(sandbox: &Sandbox, fake: &FakeLlm) -> String {
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    assert_eq!(v["status"], "paused", "{v:#}");
    session_id(&v)
}

#[test]
fn approve_continues_the_chain_with_the_first_agents_reply() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, &fake);

    // The run pauses at the gate, telling the human what to type.
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path")]);
    run.expect_code(19);
    let list = sandbox.list();
    assert_eq!(list["count"], 1, "{list:#}");
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "paused");
    assert_eq!(list["sessions"][0]["gate"], "review");
    assert!(
        run.stdout.contains(&format!("Session: {id}")),
        "the session id is printed:\n{}",
        run.stdout
    );
    // The printed command names the store; its program is `strands` or
    // the path the binary was invoked by.
    let tail = format!("--store {} resume {id} --approve", sandbox.store.display());
    let printed = run
        .stdout
        .lines()
        .find(|l| l.trim_end().ends_with(&tail))
        .unwrap_or_else(|| panic!("no resume command ending in `{tail}` in:\n{}", run.stdout));
    let printed = printed.trim().trim_start_matches("Resume:").trim();
    let mut words = printed.split_whitespace();
    let program = words.next().expect("a program");
    assert!(
        program == "strands" || program.ends_with("/strands"),
        "the resume command starts with the program: {printed}"
    );
    assert_eq!(fake.count(), 1, "only the researcher ran before the gate");
    let researcher = fake.request(1);
    assert!(researcher.system().contains("RESEARCHER"));
    assert_eq!(researcher.user(), "Research durable gates.");

    // Typing the printed command (plus --json) finishes the run.
    let mut args: Vec<&str> = words.collect();
    args.extend(["--json", "--as", "tester"]);
    let done = sandbox.strands_verbatim(&args);
    done.expect_code(0);
    let v = done.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(session_id(&v), id);

    assert_eq!(fake.count(), 2);
    let writer = fake.request(2);
    assert!(writer.system().contains("WRITER"), "{writer:#?}");
    assert_eq!(
        writer.user(),
        format!("Write a report from: {}", researcher.reply_text())
    );
    assert_eq!(v["output"], Value::String(writer.reply_text()));

    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["gate"], "review");
    assert_eq!(gates[0]["event"], "answered");
    assert_eq!(gates[0]["decision"]["action"], "approve");
    assert_eq!(gates[0]["by"], "tester");
    assert_eq!(gates[0]["via"], "cli");
    assert!(gates[0]["waited_ms"].is_u64(), "{:#}", gates[0]);
    assert_eq!(v["usage"]["total"]["calls"], 2);
    assert_eq!(v["usage"]["by_agent"]["researcher"]["calls"], 1);
    assert_eq!(v["usage"]["by_agent"]["writer"]["calls"], 1);
    assert_eq!(v["usage"]["total"]["input_tokens"], 24);
    assert_eq!(v["usage"]["total"]["output_tokens"], 14);
}

#[test]
fn modify_reruns_the_researcher_with_feedback_and_asks_again() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let id = paused_review(&sandbox, &fake);
    let first = fake.request(1);
    assert!(
        !first.user().contains("Reviewer feedback"),
        "no feedback on the first run: {}",
        first.user()
    );

    let modified = sandbox.strands(&[
        "resume",
        &id,
        "--modify",
        "--feedback",
        "use 2025 sources",
        "--json",
    ]);
    modified.expect_code(19);
    let v = modified.json();
    assert_eq!(v["status"], "paused", "{v:#}");
    assert_eq!(v["gate"]["id"], "review");
    assert_eq!(v["gate"]["instance"], 2);
    assert_eq!(v["gate"]["handle"], "review#2");
    assert_eq!(fake.count(), 2, "only the researcher re-ran");
    let rerun = fake.request(2);
    assert!(rerun.system().contains("RESEARCHER"), "{rerun:#?}");
    assert_eq!(
        rerun.user(),
        "Research durable gates. Reviewer feedback: use 2025 sources"
    );
    // The gate shows the new research, not the old.
    assert_eq!(v["gate"]["preview"], Value::String(rerun.reply_text()));

    let done = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    done.expect_code(0);
    let v = done.json();
    assert_eq!(fake.count(), 3, "researcher, researcher again, writer");
    let writer = fake.request(3);
    assert!(writer.system().contains("WRITER"));
    assert_eq!(
        writer.user(),
        format!("Write a report from: {}", rerun.reply_text()),
        "the writer sees the re-run research"
    );
    assert_eq!(v["output"], Value::String(writer.reply_text()));
    let gates = history(&v);
    assert_eq!(gates.len(), 2, "{gates:#?}");
    assert_eq!(gates[0]["instance"], 1);
    assert_eq!(gates[0]["decision"]["action"], "modify");
    assert_eq!(gates[0]["decision"]["feedback"], "use 2025 sources");
    assert_eq!(gates[1]["instance"], 2);
    assert_eq!(gates[1]["decision"]["action"], "approve");
}

#[test]
fn reject_ends_the_run_and_the_writer_never_runs() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let id = paused_review(&sandbox, &fake);

    let rejected = sandbox.strands(&["resume", &id, "--reject", "--reason", "not good"]);
    rejected.expect_code(21);

    let show = sandbox.show(&id);
    assert_eq!(show["status"], "rejected", "{show:#}");
    assert_eq!(show["exit_code"], 21);
    assert!(show["gate"].is_null(), "no gate stays open: {show:#}");
    let gates = history(&show);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["decision"]["action"], "reject");
    assert_eq!(gates[0]["decision"]["reason"], "not good");
    assert_eq!(gates[0]["by"], "tester");
    assert_eq!(fake.count(), 1, "the writer was never called");
    assert!(fake.calls_of("WRITER").is_empty());
}

const CONDITIONAL_CHAIN: &str = r#"
version: 0
name: conditional-review
runtime:
  provider: openai
  host: $HOST
inputs:
  optional:
    needs_review:
      type: boolean
      default: false
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
        input: Research it.
      - type: manual_gate
        id: review
        prompt: Review it.
        condition: "{{ needs_review }}"
      - agent: writer
"#;

#[test]
fn a_gate_whose_condition_is_false_is_skipped() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("cond.yaml", CONDITIONAL_CHAIN, &fake);
    let spec = spec.to_str().expect("utf-8 path");

    let run = sandbox.strands(&["run", spec, "--json"]);
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["gate"], "review");
    assert_eq!(gates[0]["event"], "skipped");
    assert_eq!(gates[0]["condition"], "{{ needs_review }}");
    assert_eq!(fake.count(), 2);
    // With no input, the writer gets the previous response — the skipped
    // gate contributes nothing.
    assert_eq!(fake.request(2).user(), fake.request(1).reply_text());
    assert_eq!(v["output"], Value::String(fake.request(2).reply_text()));

    // The same spec with the condition true does pause.
    let run = sandbox.strands(&["run", spec, "--var", "needs_review=true", "--json"]);
    run.expect_code(19);
    assert_eq!(run.json()["gate"]["id"], "review");
}

const HITL_CHAIN: &str = r#"
version: 0
name: hitl-chain
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
        input: Draft the release notes.
      - type: hitl
        prompt: Ship this draft?
        context_display: "Draft: {{ steps[0].response }}"
      - agent: publisher
        input: "Decision: {{ steps[1].response }} / latest answer: {{ hitl_response }}"
"#;

#[test]
fn hitl_gate_takes_a_free_text_answer_in_the_strands_cli_form() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("hitl.yaml", HITL_CHAIN, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    assert_eq!(v["gate"]["kind"], "hitl", "{v:#}");
    assert_eq!(v["gate"]["prompt"], "Ship this draft?");
    assert_eq!(
        v["gate"]["preview"],
        Value::String(format!("Draft: {}", fake.request(1).reply_text()))
    );

    let done = sandbox.strands(&[
        "run",
        "--resume",
        &id,
        "--hitl-response",
        "ship it",
        "--json",
    ]);
    done.expect_code(0);
    let v = done.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(fake.count(), 2);
    let publisher = fake.request(2);
    assert!(publisher.system().contains("PUBLISHER"));
    assert_eq!(
        publisher.user(),
        "Decision: ship it / latest answer: ship it"
    );
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["decision"]["action"], "respond");
    assert_eq!(gates[0]["decision"]["text"], "ship it");
}

#[test]
fn resuming_a_finished_or_unknown_session_changes_nothing_and_only_a_retry_exits_0() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let id = paused_review(&sandbox, &fake);
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    let before = sandbox.show(&id);
    assert_eq!(before["status"], "completed");
    let calls = fake.count();

    // The same answer again is a retry: the run as it ended, exit 0.
    let same = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    same.expect_code(0);
    assert_eq!(same.json()["status"], "completed", "{}", same.stdout);
    for args in [
        vec!["resume", id.as_str(), "--reject"],
        vec!["resume", id.as_str()],
        vec![
            "run",
            "--resume",
            id.as_str(),
            "--hitl-response",
            "approved",
        ],
    ] {
        let again = sandbox.strands(&args);
        again.expect_code(17);
        assert!(
            again.stderr.contains("completed"),
            "{args:?}: stderr should say the session is completed:\n{}",
            again.stderr
        );
    }
    let after = sandbox.show(&id);
    assert_eq!(before, after, "the session did not change");
    assert_eq!(before["updated_at"], after["updated_at"]);
    assert_eq!(history(&before).len(), history(&after).len());
    assert_eq!(fake.count(), calls, "no model call");

    let unknown = sandbox.strands(&[
        "resume",
        "00000000-0000-4000-8000-000000000000",
        "--approve",
    ]);
    unknown.expect_code(17);
    assert!(
        unknown
            .stderr
            .contains("00000000-0000-4000-8000-000000000000"),
        "{}",
        unknown.stderr
    );
    assert_eq!(sandbox.list()["count"], 1, "no session was created");
}

#[test]
fn auto_approve_runs_straight_through_and_says_so() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, &fake);

    let run = sandbox.strands(&[
        "run",
        spec.to_str().expect("utf-8 path"),
        "--auto-approve",
        "--json",
    ]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("auto-approving"),
        "stderr warns about auto-approval:\n{}",
        run.stderr
    );
    let v = run.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["gate"], "review");
    assert_eq!(gates[0]["decision"]["action"], "approve");
    assert_eq!(gates[0]["via"], "auto-approve");
    assert_eq!(fake.count(), 2);
    assert_eq!(v["output"], Value::String(fake.request(2).reply_text()));
}

#[test]
fn interactive_approve_on_stdin() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, &fake);

    let run = sandbox.strands_stdin(
        &[
            "run",
            spec.to_str().expect("utf-8 path"),
            "--interactive",
            "--json",
        ],
        "a\n",
    );
    run.expect_code(0);
    let v = run.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert!(run.stderr.contains("Review the research on durable gates."));
    let gates = history(&v);
    assert_eq!(gates.len(), 1, "{gates:#?}");
    assert_eq!(gates[0]["decision"]["action"], "approve");
    assert_eq!(gates[0]["via"], "terminal");
    assert_eq!(fake.count(), 2);
}

#[test]
fn interactive_end_of_input_leaves_the_session_paused() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, &fake);

    // Piped input that ends unanswered: nobody could be asked, which is
    // said (exit 2); the session waits for an answer.
    let run = sandbox.strands_stdin(
        &[
            "run",
            spec.to_str().expect("utf-8 path"),
            "--interactive",
            "--json",
        ],
        "",
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("--interactive cannot ask"),
        "{}",
        run.stderr
    );
    let id = sandbox.list()["sessions"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let show = sandbox.show(&id);
    assert_eq!(show["status"], "paused", "{show:#}");
    assert_eq!(show["gate"]["handle"], "review#1");
    assert!(history(&show).is_empty(), "nothing was answered");
    assert_eq!(fake.count(), 1);

    // Someone answers later.
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert_eq!(fake.count(), 2);
}

#[test]
fn interactive_modify_then_approve() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("review.yaml", REVIEW_CHAIN, &fake);

    let run = sandbox.strands_stdin(
        &[
            "run",
            spec.to_str().expect("utf-8 path"),
            "--interactive",
            "--json",
        ],
        "m\nmore detail\na\n",
    );
    run.expect_code(0);
    let v = run.json();
    assert_eq!(fake.count(), 3, "researcher, researcher again, writer");
    assert_eq!(
        fake.request(2).user(),
        "Research durable gates. Reviewer feedback: more detail"
    );
    assert_eq!(
        fake.request(3).user(),
        format!("Write a report from: {}", fake.request(2).reply_text())
    );
    let gates = history(&v);
    let actions: Vec<&Value> = gates.iter().map(|g| &g["decision"]["action"]).collect();
    assert_eq!(actions, ["modify", "approve"], "{gates:#?}");
    assert_eq!(gates[0]["decision"]["feedback"], "more detail");
}

#[test]
fn free_text_on_a_manual_gate_is_a_usage_error_and_changes_nothing() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let id = paused_review(&sandbox, &fake);
    let before = sandbox.show(&id);

    let bad = sandbox.strands(&["resume", &id, "--response", "maybe"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("maybe"), "{}", bad.stderr);

    let after = sandbox.show(&id);
    assert_eq!(after["status"], "paused");
    assert_eq!(before, after, "the session did not change");
    assert_eq!(fake.count(), 1);

    // It can still be answered properly.
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
}

const TYPED_REVIEW: &str = r#"
version: 0
name: typed-review
runtime:
  provider: openai
  host: $HOST
inputs:
  required:
    topic: string
    n: integer
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
        input: "Research {{ topic }} with {{ n }} sources."
      - type: manual_gate
        id: review
        prompt: Enough sources?
      - agent: writer
        input: "Write about {{ topic }} using {{ n + 1 }} sources."
"#;

#[test]
fn resume_var_overrides_are_typed_and_keep_the_runs_other_inputs() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("typed.yaml", TYPED_REVIEW, &fake);

    let run = sandbox.strands(&[
        "run",
        spec.to_str().expect("utf-8 path"),
        "--var",
        "topic=gates",
        "--var",
        "n=1",
        "--json",
    ]);
    run.expect_code(19);
    let id = session_id(&run.json());
    assert_eq!(fake.request(1).user(), "Research gates with 1 sources.");
    let before = sandbox.show(&id);

    // A value of the wrong type is refused and changes nothing.
    let bad = sandbox.strands(&["resume", &id, "--approve", "--var", "n=many"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("n=many"), "{}", bad.stderr);
    assert_eq!(sandbox.show(&id), before);

    // `topic` was given to `run`; overriding only `n` must not lose it.
    let done = sandbox.strands(&["resume", &id, "--approve", "--var", "n=5", "--json"]);
    done.expect_code(0);
    assert_eq!(fake.count(), 2);
    assert_eq!(
        fake.request(2).user(),
        "Write about gates using 6 sources.",
        "n is an integer 5 and topic is kept"
    );
    let show = sandbox.show(&id);
    assert_eq!(show["variables"]["n"], 5);
    assert_eq!(show["variables"]["topic"], "gates");
}

#[test]
fn resume_without_a_decision_on_an_open_gate_is_a_usage_error() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let id = paused_review(&sandbox, &fake);
    let before = sandbox.show(&id);

    let bare = sandbox.strands(&["resume", &id]);
    bare.expect_code(2);
    assert!(bare.stderr.contains("--approve"), "{}", bare.stderr);
    assert_eq!(sandbox.show(&id), before);

    // An interactive resume asks at the terminal instead.
    let answered = sandbox.strands_stdin(&["resume", &id, "--interactive", "--json"], "a\n");
    answered.expect_code(0);
    let gates = history(&answered.json());
    assert_eq!(gates[0]["via"], "terminal");
    assert_eq!(fake.count(), 2);
}

#[test]
fn sessions_are_listed_filtered_found_by_prefix_deleted_and_cleaned_up() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let paused = paused_review(&sandbox, &fake);
    let finished = paused_review(&sandbox, &fake);
    // A unique prefix of at least 4 characters names a session.
    let prefix = &finished[..8];
    assert!(!paused.starts_with(prefix), "uuids differ in 8 chars");
    sandbox
        .strands(&["resume", prefix, "--approve"])
        .expect_code(0);

    // The ids `sessions list --status S` shows, checked against its count.
    let ids_with = |status: &str| -> Vec<String> {
        let out = sandbox.strands(&["sessions", "list", "--status", status, "--json"]);
        out.expect_code(0);
        let v = out.json();
        let ids: Vec<String> = v["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["id"].as_str().expect("id").to_string())
            .collect();
        assert_eq!(v["count"], ids.len());
        ids
    };
    assert_eq!(ids_with("paused"), vec![paused.clone()]);
    assert_eq!(ids_with("completed"), vec![finished.clone()]);
    assert!(ids_with("rejected").is_empty());
    assert_eq!(sandbox.list()["count"], 2);

    // Cleanup removes finished sessions only; the paused one is kept.
    let cleaned = sandbox.strands(&["sessions", "cleanup", "--max-age-days", "0", "--json"]);
    cleaned.expect_code(0);
    assert_eq!(cleaned.json()["deleted"], serde_json::json!([finished]));
    assert_eq!(ids_with("paused"), vec![paused.clone()]);
    assert_eq!(sandbox.list()["count"], 1);

    sandbox
        .strands(&["sessions", "delete", &paused, "--force"])
        .expect_code(0);
    assert_eq!(sandbox.list()["count"], 0);
    sandbox
        .strands(&["sessions", "show", &paused])
        .expect_code(17);
}

const PREVIEWED_GATE: &str = r#"
version: 0
name: previewed
runtime:
  provider: openai
  host: $HOST
agents:
  researcher:
    prompt: You are the RESEARCHER.
pattern:
  type: chain
  config:
    steps:
      - agent: researcher
        input: Research a long topic in depth.
      - type: manual_gate
        id: short_preview
        prompt: Look.
        preview_length: 12
      - type: manual_gate
        id: no_preview
        prompt: Look again.
        show_preview: false
"#;

#[test]
fn gate_previews_are_cut_to_preview_length_and_can_be_hidden() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("preview.yaml", PREVIEWED_GATE, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    let full = fake.request(1).reply_text();
    let shown: String = full.chars().take(12).collect();
    assert_eq!(v["gate"]["preview"], Value::String(shown), "{v:#}");
    assert_eq!(v["gate"]["preview_cut_chars"], full.chars().count() - 12);
    assert_eq!(
        sandbox.show(&id)["gate"]["context"],
        Value::String(full.clone()),
        "show has the whole context"
    );

    let next = sandbox.strands(&["resume", &id, "--approve", "--json"]);
    next.expect_code(19);
    let v = next.json();
    assert_eq!(v["gate"]["id"], "no_preview", "{v:#}");
    assert!(v["gate"]["preview"].is_null(), "{v:#}");
    assert!(!next.stderr.contains(&full), "{}", next.stderr);

    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
}

const GATE_THEN_IMPLICIT_INPUT: &str = r#"
version: 0
name: implicit-input
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
        input: Research it.
      - type: manual_gate
        id: review
        prompt: Review it.
      - agent: writer
"#;

/// The seed's manual gate only lets the run continue (approve = `continue`
/// in seeds/000's executor); it produces no text of its own. A step without
/// `input` gets "the previous step's response", which here is the research
/// the human approved — not the word "approved".
#[test]
fn an_approved_manual_gate_passes_the_reviewed_text_to_a_step_without_input() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("implicit.yaml", GATE_THEN_IMPLICIT_INPUT, &fake);

    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);

    let research = fake.only_call_of("RESEARCHER");
    let writer = fake.only_call_of("WRITER");
    assert_eq!(
        writer.user(),
        research.reply_text(),
        "the writer should get the approved research as its input"
    );
}

#[test]
fn a_gate_that_requires_a_reason_refuses_a_bare_reject_and_changes_nothing() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = REVIEW_CHAIN.replace(
        "        prompt: Review the research on {{ topic }}.\n",
        "        prompt: Review the research on {{ topic }}.\n        require_reason: true\n",
    );
    let spec = sandbox.spec("review.yaml", &yaml, &fake);
    let run = sandbox.strands(&["run", spec.to_str().expect("utf-8 path"), "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());
    let before = sandbox.show(&id);

    let bare = sandbox.strands(&["resume", &id, "--reject"]);
    bare.expect_code(2);
    assert!(bare.stderr.contains("needs a reason"), "{}", bare.stderr);
    assert_eq!(
        sandbox.show(&id),
        before,
        "a refused answer changes nothing"
    );

    sandbox
        .strands(&["resume", &id, "--reject", "--reason", "sources are too old"])
        .expect_code(21);
    let after = sandbox.show(&id);
    assert_eq!(after["status"], "rejected");
    assert_eq!(
        history(&after)[0]["decision"]["reason"],
        "sources are too old"
    );
}
