//! The command line strands-cli users already type, through the real
//! binary: `run --resume ID` alone (asking at a terminal, saying what is
//! needed elsewhere), `-r`, `--force` for artifacts, `--verbose` /
//! `--debug` / `--trace`, `--no-save-session`, `--auto-resume`,
//! `list-sessions`, `sessions delete --force`, `plan`, `explain`,
//! `doctor`, `list-tools`, `list-supported`, `version`, exit 18's
//! remediation — and the friction a new user hit: gate handles counted per
//! gate, timeouts as local times with their fallback, aligned columns,
//! `audit export | head`, `--interactive` with nobody to ask.

use crate::common::{history, session_id, Behaviour, FakeLlm, Sandbox};
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

/// researcher → manual_gate `review` (1 h, then reject) → writer; the
/// writer's answer becomes `report.md`.
const REVIEWED: &str = r#"
version: 0
name: reviewed
runtime:
  provider: openai
  host: $HOST
inputs:
  values:
    topic: tides
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
        input: "Research {{ topic }}."
      - type: manual_gate
        id: review
        prompt: Review the research.
        timeout_minutes: 60
        fallback_action: cancel
      - agent: writer
        input: "Write from: {{ steps[0].response }}"
outputs:
  artifacts:
    - path: "report.md"
      from: "{{ last_response }}"
"#;

/// One agent, no gate; its answer is written to a file named after it
/// (`REPLY.md`: the fake answers `REPLY 1 to: ...`), so the path is only
/// known once the model has answered.
const LATE_PATH: &str = r#"
version: 0
name: late-path
runtime:
  provider: openai
  host: $HOST
agents:
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: Write.
outputs:
  artifacts:
    - path: "{{ last_response[:5] }}.md"
      from: "{{ last_response }}"
"#;

/// One agent and nothing else.
const PLAIN: &str = r#"
version: 0
name: plain
runtime:
  provider: openai
  host: $HOST
inputs:
  values:
    topic: tides
agents:
  writer:
    prompt: You are the WRITER.
pattern:
  type: chain
  config:
    steps:
      - agent: writer
        input: "Write about {{ topic }}."
"#;

/// Two branches, each agent → gate; the same gate ids as the book's
/// introduction (docs/src/introduction.md).
const TWO_REVIEWS: &str = r#"
version: 0
name: two-reviews
runtime:
  provider: openai
  host: $HOST
  max_parallel: 2
agents:
  researcher:
    prompt: You are the RESEARCHER.
pattern:
  type: parallel
  config:
    branches:
      - id: risks
        steps:
          - agent: researcher
            input: "Risks.{% if human_feedback %} {{ human_feedback }}{% endif %}"
          - type: manual_gate
            id: review_risks
            prompt: Review the risks.
      - id: benefits
        steps:
          - agent: researcher
            input: Benefits.
          - type: hitl
            id: review_benefits
            prompt: Anything to add?
"#;

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `spec` to its gate; the session id.
fn paused(sandbox: &Sandbox, spec: &std::path::Path) -> String {
    let run = sandbox.strands(&["run", path(spec), "--json"]);
    run.expect_code(19);
    session_id(&run.json())
}

// ---------------------------------------------------------------------------
// run --resume ID, -r, --auto-resume
// ---------------------------------------------------------------------------

#[test]
fn run_resume_alone_says_what_a_paused_gate_needs_and_hitl_response_answers_it() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let id = paused(&sandbox, &spec);

    // Nobody at a terminal: the command says what it needs, and nothing moves.
    for flag in ["--resume", "-r"] {
        let out = sandbox.strands(&["run", flag, &id]);
        out.expect_code(2);
        assert!(
            out.stderr.contains("paused at gate `review`"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("stdin is not a terminal"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("--approve"), "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("strands run --resume {id} --hitl-response TEXT")),
            "{}",
            out.stderr
        );
    }
    // `strands resume ID` says the same.
    let out = sandbox.strands(&["resume", &id]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("paused at gate `review`"),
        "{}",
        out.stderr
    );
    assert_eq!(fake.count(), 1, "nothing ran");
    assert_eq!(sandbox.show(&id)["status"], "paused");

    // A SPEC and --resume together is a usage error, as in strands-cli.
    sandbox
        .strands(&["run", path(&spec), "--resume", &id])
        .expect_code(2);

    // strands-cli's answer form, with the short flag.
    let done = sandbox.strands(&["run", "-r", &id, "--hitl-response", "approved", "--json"]);
    done.expect_code(0);
    let v = done.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(history(&v)[0]["decision"]["action"], "respond");
    assert_eq!(fake.count(), 2);
}

#[test]
fn run_resume_alone_asks_when_stdin_is_a_terminal() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let id = paused(&sandbox, &spec);

    let out = sandbox.strands_tty(&["run", "--resume", &id, "--json"], "a\n");
    out.expect_code(0);
    assert!(
        out.stderr.contains("Review the research."),
        "{}",
        out.stderr
    );
    let v = out.json();
    assert_eq!(v["status"], "completed", "{v:#}");
    assert_eq!(history(&v)[0]["via"], "terminal");
    assert_eq!(history(&v)[0]["decision"]["action"], "approve");

    // `resume ID` at a terminal asks too; Ctrl-D defers (exit 19).
    std::fs::remove_file(sandbox.path().join("artifacts/report.md")).expect("rm");
    let id = paused(&sandbox, &spec);
    let later = sandbox.strands_tty(&["resume", &id], "");
    later.expect_code(19);
    assert_eq!(sandbox.show(&id)["status"], "paused");
}

#[test]
fn run_resume_continues_a_crashed_run() {
    // Request #2 (the writer) hangs long enough to kill the process.
    let fake = FakeLlm::start_with(Behaviour {
        delay: Some((2, Duration::from_secs(20))),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let id = paused(&sandbox, &spec);
    let mut child = sandbox.spawn(&["resume", &id, "--approve"]);
    fake.wait_for_requests(2, Duration::from_secs(20));
    child.kill().expect("kill -9 strands");
    child.wait().expect("reap strands");
    assert_eq!(sandbox.show(&id)["status"], "running");

    let done = sandbox.strands(&["run", "--resume", &id, "--json"]);
    done.expect_code(0);
    assert_eq!(done.json()["status"], "completed");
    assert_eq!(
        fake.calls_of("RESEARCHER").len(),
        1,
        "the research is not redone"
    );
}

#[test]
fn auto_resume_continues_the_latest_session_of_the_same_spec() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let id = paused(&sandbox, &spec);

    // Same spec: that session, answered at the terminal; no new session.
    let out = sandbox.strands_tty(&["run", path(&spec), "--auto-resume", "--json"], "a\n");
    out.expect_code(0);
    assert!(
        out.stderr
            .contains(&format!("auto-resume: continuing session {id}")),
        "{}",
        out.stderr
    );
    assert_eq!(session_id(&out.json()), id);
    assert_eq!(sandbox.list()["count"], 1);

    // Nothing left to continue: a new run (which pauses).
    std::fs::remove_file(sandbox.path().join("artifacts/report.md")).expect("rm");
    let fresh = sandbox.strands(&["run", path(&spec), "--auto-resume", "--json"]);
    fresh.expect_code(19);
    assert_ne!(session_id(&fresh.json()), id);
    assert_eq!(sandbox.list()["count"], 2);

    // A changed spec is another spec: its paused sessions are not picked.
    let changed = sandbox.spec(
        "reviewed.yaml",
        &REVIEWED.replace("Review the research.", "Review it."),
        &fake,
    );
    let other = sandbox.strands(&["run", path(&changed), "--auto-resume", "--json"]);
    other.expect_code(19);
    assert_eq!(sandbox.list()["count"], 3);
}

// ---------------------------------------------------------------------------
// --force and artifacts
// ---------------------------------------------------------------------------

#[test]
fn an_existing_artifact_is_refused_before_any_model_call_and_replaced_with_force() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", &PLAIN.replace(
        "        input: \"Write about {{ topic }}.\"\n",
        "        input: \"Write about {{ topic }}.\"\noutputs:\n  artifacts:\n    - path: \"{{ topic }}.md\"\n      from: \"{{ last_response }}\"\n",
    ), &fake);
    let file = sandbox.path().join("artifacts/tides.md");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, "old").expect("write");

    let refused = sandbox.strands(&["run", path(&spec)]);
    refused.expect_code(12);
    assert!(
        refused.stderr.contains(&file.display().to_string()),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(fake.count(), 0, "refused before any model call");
    assert_eq!(sandbox.list()["count"], 0, "no session was made");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old");

    let forced = sandbox.strands(&["run", path(&spec), "--force", "--json"]);
    forced.expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        fake.last().reply_text()
    );
}

#[test]
fn an_artifact_found_at_the_end_keeps_the_run_for_resume_force() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("late.yaml", LATE_PATH, &fake);
    let file = sandbox.path().join("artifacts/REPLY.md");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, "old").expect("write");

    let refused = sandbox.strands(&["run", path(&spec)]);
    refused.expect_code(12);
    assert!(
        refused.stderr.contains(&file.display().to_string()),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "old");
    let list = sandbox.list();
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running", "{list:#}");
    assert!(
        refused.stderr.contains(&format!("resume {id} --force")),
        "the exact command: {}",
        refused.stderr
    );
    assert_eq!(fake.count(), 1);

    let done = sandbox.strands(&["resume", &id, "--force", "--json"]);
    done.expect_code(0);
    assert_eq!(fake.count(), 1, "no model call is repeated");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        fake.request(1).reply_text()
    );
}

#[test]
fn run_force_is_remembered_by_the_session_across_a_pause() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let file = sandbox.path().join("artifacts/report.md");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, "old").expect("write");

    sandbox.strands(&["run", path(&spec)]).expect_code(12);
    let run = sandbox.strands(&["run", path(&spec), "--force", "--json"]);
    run.expect_code(19);
    let id = session_id(&run.json());
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        fake.last().reply_text()
    );
}

// ---------------------------------------------------------------------------
// --verbose, --debug, --trace
// ---------------------------------------------------------------------------

#[test]
fn log_flags_raise_the_level_and_trace_shows_model_requests_without_secrets() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    let key = "sk-testKEYdoNotPrint1234567890";
    let secret_topic = "sk-proj-TOPSECRETtopic123456789";
    let env = [("OPENAI_API_KEY", key), ("NO_COLOR", "1")];
    let var = format!("topic={secret_topic}");

    let quiet = sandbox.strands_env(&env, &["run", path(&spec), "--var", &var]);
    quiet.expect_code(0);
    assert!(!quiet.stderr.contains("INFO"), "{}", quiet.stderr);

    let verbose = sandbox.strands_env(&env, &["run", path(&spec), "--var", &var, "-v"]);
    verbose.expect_code(0);
    assert!(verbose.stderr.contains("spec loaded"), "{}", verbose.stderr);
    assert!(
        verbose.stderr.contains("session created"),
        "{}",
        verbose.stderr
    );
    assert!(
        !verbose.stderr.contains("calling model"),
        "{}",
        verbose.stderr
    );

    let debug = sandbox.strands_env(&env, &["--debug", "run", path(&spec), "--var", &var]);
    debug.expect_code(0);
    assert!(debug.stderr.contains("calling model"), "{}", debug.stderr);
    assert!(!debug.stderr.contains("model request"), "{}", debug.stderr);

    let trace = sandbox.strands_env(&env, &["run", path(&spec), "--var", &var, "--trace"]);
    trace.expect_code(0);
    assert!(trace.stderr.contains("model request"), "{}", trace.stderr);
    assert!(trace.stderr.contains("model response"), "{}", trace.stderr);
    assert!(
        trace.stderr.contains("You are the WRITER."),
        "{}",
        trace.stderr
    );
    for out in [&quiet, &verbose, &debug, &trace] {
        assert!(
            !out.stderr.contains(key),
            "the API key leaked: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains(secret_topic),
            "a secret in the prompt leaked: {}",
            out.stderr
        );
    }
}

// ---------------------------------------------------------------------------
// --no-save-session
// ---------------------------------------------------------------------------

#[test]
fn no_save_session_drops_finished_runs_and_refuses_specs_with_gates() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let plain = sandbox.spec("plain.yaml", PLAIN, &fake);
    let out = sandbox.strands(&["run", path(&plain), "--no-save-session"]);
    out.expect_code(0);
    assert!(out.stderr.contains("not kept"), "{}", out.stderr);
    assert_eq!(sandbox.list()["count"], 0);
    // strands-cli's default spelled out is accepted.
    sandbox
        .strands(&["run", path(&plain), "--save-session"])
        .expect_code(0);
    assert_eq!(sandbox.list()["count"], 1);

    let gated = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let refused = sandbox.strands(&["run", path(&gated), "--no-save-session"]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("human gates"), "{}", refused.stderr);
    assert_eq!(sandbox.list()["count"], 1);
}

// ---------------------------------------------------------------------------
// sessions: list-sessions, aligned columns, delete --force, show
// ---------------------------------------------------------------------------

#[test]
fn list_sessions_is_sessions_list_with_aligned_columns() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let short = sandbox.spec("plain.yaml", PLAIN, &fake);
    let long = sandbox.spec(
        "long.yaml",
        &REVIEWED.replace(
            "name: reviewed",
            "name: a-workflow-with-a-rather-long-name-indeed",
        ),
        &fake,
    );
    sandbox.strands(&["run", path(&short)]).expect_code(0);
    sandbox.strands(&["run", path(&long)]).expect_code(19);

    let json = sandbox.strands(&["list-sessions", "--json"]);
    json.expect_code(0);
    assert_eq!(json.json()["count"], 2);
    assert_eq!(json.json(), sandbox.list());

    let text = sandbox.strands(&["list-sessions"]);
    text.expect_code(0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", text.stdout);
    let header = lines[0];
    for col in ["STATUS", "UPDATED", "WORKFLOW", "GATE"] {
        let at = header
            .find(col)
            .unwrap_or_else(|| panic!("no {col}: {header}"));
        for row in &lines[1..] {
            let before = &row[..at];
            assert!(
                before.ends_with("  ") && !row[at..].starts_with(' '),
                "column {col} does not line up:\n{}",
                text.stdout
            );
        }
    }
    let paused = sandbox.strands(&["list-sessions", "--status", "paused", "--json"]);
    assert_eq!(paused.json()["count"], 1);
}

#[test]
fn sessions_delete_asks_and_force_does_not() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let id = paused(&sandbox, &spec);

    let refused = sandbox.strands(&["sessions", "delete", &id]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(sandbox.list()["count"], 1);

    let no = sandbox.strands_tty(&["sessions", "delete", &id], "n\n");
    no.expect_code(0);
    assert!(no.stderr.contains("[y/N]"), "{}", no.stderr);
    assert!(no.stderr.contains("cancelled"), "{}", no.stderr);
    assert_eq!(sandbox.list()["count"], 1);

    let yes = sandbox.strands_tty(&["sessions", "delete", &id], "y\n");
    yes.expect_code(0);
    assert_eq!(sandbox.list()["count"], 0);

    let other = paused(&sandbox, &spec);
    sandbox
        .strands(&["sessions", "delete", &other, "-f"])
        .expect_code(0);
    assert_eq!(sandbox.list()["count"], 0);
    sandbox
        .strands(&["sessions", "cleanup", "--max-age-days", "0", "--force"])
        .expect_code(0);
}

#[test]
fn gate_handles_count_per_gate() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("two.yaml", TWO_REVIEWS, &fake);
    let run = sandbox.strands(&["run", path(&spec), "--json"]);
    run.expect_code(19);
    let v = run.json();
    let id = session_id(&v);
    let mut handles: Vec<String> = v["open_gates"]
        .as_array()
        .expect("open gates")
        .iter()
        .map(|g| g["handle"].as_str().expect("handle").to_string())
        .collect();
    handles.sort();
    assert_eq!(
        handles,
        vec!["review_benefits#1", "review_risks#1"],
        "{v:#}"
    );

    // A re-ask of one gate is its second asking; the other keeps its own.
    let modified = sandbox.strands(&[
        "resume",
        &id,
        "--gate",
        "review_risks",
        "--modify",
        "--feedback",
        "more",
        "--json",
    ]);
    modified.expect_code(19);
    let v = modified.json();
    let mut handles: Vec<String> = v["open_gates"]
        .as_array()
        .expect("open gates")
        .iter()
        .map(|g| g["handle"].as_str().expect("handle").to_string())
        .collect();
    handles.sort();
    assert_eq!(
        handles,
        vec!["review_benefits#1", "review_risks#2"],
        "{v:#}"
    );
    let show = sandbox.strands(&["sessions", "show", &id]);
    assert!(
        show.stdout
            .contains("review_benefits#1 (branches.benefits.steps[1], hitl)"),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("manual_gate"), "{}", show.stdout);
    assert!(!show.stdout.contains("ManualGate"), "{}", show.stdout);
    assert!(
        show.stdout.contains("review_risks#1 modified by tester"),
        "{}",
        show.stdout
    );
}

#[test]
fn timeouts_read_as_local_times_with_their_fallback() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let run = sandbox.strands_env(&[("TZ", "UTC0")], &["run", path(&spec)]);
    run.expect_code(19);
    let id = sandbox.list()["sessions"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let at = sandbox.show(&id)["gate"]["timeout_at"]
        .as_str()
        .expect("timeout_at")
        .to_string();
    let at = chrono::DateTime::parse_from_rfc3339(&at).expect("RFC 3339");
    // Today's time reads as `HH:MM`; a time on another day (the timeout
    // crosses midnight) with its weekday first.
    let reads = |out: &str, prefix: &str, t: chrono::DateTime<chrono::FixedOffset>| {
        out.contains(&format!("{prefix}{} ", t.format("%H:%M")))
            || out.contains(&format!("{prefix}{} ", t.format("%a %H:%M")))
            || out.contains(&format!("{prefix}{}\n", t.format("%H:%M")))
            || out.contains(&format!("{prefix}{}\n", t.format("%a %H:%M")))
    };
    assert!(
        reads(&run.stdout, "Timeout: auto-rejects at ", at)
            && run.stdout.contains("Timeout: auto-rejects at ")
            && run.stdout.contains(" (in "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(") if nobody answers"), "{}", run.stdout);
    assert!(
        !run.stdout.contains(&at.to_rfc3339()),
        "no RFC 3339 for people: {}",
        run.stdout
    );

    // In another time zone, the same instant reads in that zone's time.
    let kolkata =
        at.with_timezone(&chrono::FixedOffset::east_opt(5 * 3600 + 30 * 60).expect("UTC+5:30"));
    // A POSIX TZ rule (UTC+5:30), so no time zone database is needed.
    let show = sandbox.strands_env(&[("TZ", "IST-5:30")], &["sessions", "show", &id]);
    show.expect_code(0);
    assert!(
        reads(&show.stdout, "Timeout:   auto-rejects at ", kolkata),
        "{}",
        show.stdout
    );
}

// ---------------------------------------------------------------------------
// --interactive with nobody to ask
// ---------------------------------------------------------------------------

#[test]
fn interactive_without_a_terminal_says_it_cannot_ask() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let out = sandbox.strands(&["run", path(&spec), "--interactive"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("--interactive cannot ask"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("stdin is not a terminal"),
        "{}",
        out.stderr
    );
    let list = sandbox.list();
    assert_eq!(
        list["sessions"][0]["status"], "paused",
        "the session waits: {list:#}"
    );
    let id = list["sessions"][0]["id"].as_str().expect("id");
    assert!(
        out.stderr.contains(&format!("resume {id} --approve")),
        "{}",
        out.stderr
    );

    // The same through `resume --interactive`.
    let again = sandbox.strands(&["resume", id, "--interactive"]);
    again.expect_code(2);
    assert!(
        again.stderr.contains("--interactive cannot ask"),
        "{}",
        again.stderr
    );
}

// ---------------------------------------------------------------------------
// audit export | head
// ---------------------------------------------------------------------------

#[test]
fn audit_export_into_a_closed_pipe_exits_quietly() {
    // Gate prompts of 100 KB: the export is larger than any pipe buffer,
    // so it is still writing when the reader goes away.
    let fake = FakeLlm::start_with(Behaviour {
        reply: Arc::new(|_, _| "x".repeat(100_000)),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec(
        "big.yaml",
        &REVIEWED.replace(
            "prompt: Review the research.",
            "prompt: \"Review: {{ steps[0].response }}\"",
        ),
        &fake,
    );
    for _ in 0..3 {
        sandbox
            .strands(&["run", path(&spec), "--auto-approve", "--force"])
            .expect_code(0);
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strands"))
        .args(["--store", path(&sandbox.store), "audit", "export"])
        .current_dir(sandbox.path())
        .env_remove("STRANDS_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strands audit export");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("the first line");
    assert!(first.contains("\"seq\":1"), "{first}");
    drop(stdout); // `head -1` exits.
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "", "no error text, no panic");
}

// ---------------------------------------------------------------------------
// plan, explain, exit 18, list-supported, list-tools, version, doctor
// ---------------------------------------------------------------------------

#[test]
fn plan_shows_the_pattern_step_by_step() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("reviewed.yaml", REVIEWED, &fake);
    let text = sandbox.strands(&["plan", path(&spec)]);
    text.expect_code(0);
    for want in [
        "Workflow plan: reviewed",
        "steps[0]  agent researcher",
        "steps[1]  gate review (manual_gate; after 1 h without an answer: reject)",
        "steps[2]  agent writer",
        "report.md",
        "✓ Runs with this build.",
    ] {
        assert!(
            text.stdout.contains(want),
            "no `{want}` in:\n{}",
            text.stdout
        );
    }
    let json = sandbox.strands(&["plan", path(&spec), "--format", "json"]);
    json.expect_code(0);
    let v = json.json();
    assert_eq!(v["name"], "reviewed");
    assert_eq!(v["supported"], true);
    assert_eq!(v["pattern"], "chain");
    assert_eq!(v["agents"], serde_json::json!(["researcher", "writer"]));
    assert_eq!(v["issues"], 0);
    assert_eq!(v["gates"][0]["kind"], "manual_gate");
    assert_eq!(v["gates"][0]["timeout_seconds"], 3600);
    // A broken spec is exit 3, as validate.
    let bad = sandbox.spec("bad.yaml", "version: 0\nname: x\n", &fake);
    sandbox.strands(&["plan", path(&bad)]).expect_code(3);
    assert_eq!(fake.count(), 0, "plan runs nothing");
}

#[test]
fn explain_and_exit_18_say_what_to_do_about_an_unsupported_provider() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let bedrock = sandbox.spec(
        "danskegpt.yaml",
        &PLAIN.replace("provider: openai", "provider: danskegpt"),
        &fake,
    );
    let explain = sandbox.strands(&["explain", path(&bedrock)]);
    explain.expect_code(0);
    assert!(
        explain.stdout.contains("/runtime/provider"),
        "{}",
        explain.stdout
    );
    assert!(
        explain
            .stdout
            .contains("provider `danskegpt` is not supported"),
        "{}",
        explain.stdout
    );
    assert!(explain.stdout.contains("Remediation"), "{}", explain.stdout);
    assert!(
        explain.stdout.contains("provider: openai"),
        "{}",
        explain.stdout
    );
    let json = sandbox.strands(&["explain", path(&bedrock), "--json"]);
    let v = json.json();
    assert_eq!(v["supported"], false);
    assert_eq!(v["issues"][0]["pointer"], "/runtime/provider");

    let run = sandbox.strands(&["run", path(&bedrock)]);
    run.expect_code(18);
    assert!(run.stderr.contains("/runtime/provider"), "{}", run.stderr);
    assert!(
        run.stderr.contains("→ use `provider: openai`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("strands explain SPEC"),
        "{}",
        run.stderr
    );
    assert_eq!(sandbox.list()["count"], 0);

    let fine = sandbox.spec("plain.yaml", PLAIN, &fake);
    let ok = sandbox.strands(&["explain", path(&fine)]);
    ok.expect_code(0);
    assert!(
        ok.stdout.contains("No unsupported features"),
        "{}",
        ok.stdout
    );
}

#[test]
fn list_supported_list_tools_and_version() {
    let sandbox = Sandbox::new();
    let supported = sandbox.strands(&["list-supported"]);
    supported.expect_code(0);
    for want in [
        "chain",
        "orchestrator_workers",
        "graph",
        "anthropic",
        "manual_gate",
        "--force",
    ] {
        assert!(
            supported.stdout.contains(want),
            "no `{want}`:\n{}",
            supported.stdout
        );
    }
    let v = sandbox.strands(&["list-supported", "--json"]).json();
    assert!(
        v["features"].as_array().is_some_and(|f| f.len() > 5),
        "{v:#}"
    );

    let tools = sandbox.strands(&["list-tools"]);
    tools.expect_code(0);
    for want in ["http_request", "file_read", "file_write", "shell"] {
        assert!(
            tools.stdout.contains(want),
            "no `{want}`:\n{}",
            tools.stdout
        );
    }
    let v = sandbox.strands(&["list-tools", "--json"]).json();
    assert!(v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .any(|t| t["strands_cli"] == "strands_tools.file_read"));

    let version = sandbox.strands(&["version"]);
    version.expect_code(0);
    assert!(
        version
            .stdout
            .contains(&format!("strands {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        version.stdout
    );
    assert_eq!(
        sandbox.strands(&["version", "--json"]).json()["version"],
        env!("CARGO_PKG_VERSION")
    );
}

#[test]
fn doctor_checks_the_store_and_names_credentials_without_showing_them() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("plain.yaml", PLAIN, &fake);
    sandbox.strands(&["run", path(&spec)]).expect_code(0);
    let key = "sk-doctorKEYdoNotPrint123456";
    let ok = sandbox.strands_env(&[("OPENAI_API_KEY", key)], &["doctor"]);
    ok.expect_code(0);
    assert!(ok.stdout.contains("1 session(s)"), "{}", ok.stdout);
    assert!(ok.stdout.contains("OPENAI_API_KEY is set"), "{}", ok.stdout);
    assert!(!ok.stdout.contains(key) && !ok.stderr.contains(key));
    let v = sandbox.strands(&["doctor", "--json"]).json();
    assert_eq!(v["ok"], true, "{v:#}");

    // A server that does not answer is a failure (exit 10, as strands-cli).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let down = sandbox.strands_env(
        &[
            ("STRANDS_SERVER", &format!("http://127.0.0.1:{port}")),
            ("STRANDS_TOKEN", "stk_x"),
        ],
        &["doctor", "--json"],
    );
    down.expect_code(10);
    let v = down.json();
    assert_eq!(v["ok"], false);
    assert!(v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .any(|c| c["name"] == "server" && c["status"] == "fail"));
    assert!(!down.stdout.contains("stk_x"), "the token is never shown");
}

// ---------------------------------------------------------------------------
// The same spellings through a server (client mode)
// ---------------------------------------------------------------------------

#[test]
fn through_a_server_the_same_spellings_answer_the_same_way() {
    let w = super::api::World::start();
    let remote = |args: &[&str]| {
        w.sandbox.strands_as(
            "x",
            &[
                ("STRANDS_SERVER", w.svc.url.as_str()),
                ("STRANDS_TOKEN", w.ci.as_str()),
            ],
            args,
        )
    };
    let out = remote(&["run", "deploy", "--json"]);
    out.expect_code(19);
    let id = session_id(&out.json());

    let list = remote(&["list-sessions", "--json"]);
    list.expect_code(0);
    assert_eq!(list.json()["count"], 1);
    let text = remote(&["list-sessions"]);
    text.expect_code(0);
    assert!(text.stdout.starts_with("ID "), "{}", text.stdout);
    assert!(text.stdout.contains(&id), "{}", text.stdout);

    // `run --resume ID` with no answer: what is needed, as offline.
    let out = remote(&["run", "-r", &id]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("paused at gate `review`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--hitl-response TEXT"),
        "{}",
        out.stderr
    );

    // What needs the store is refused, saying why.
    let out = remote(&["run", "deploy", "--auto-resume"]);
    out.expect_code(2);
    assert!(out.stderr.contains("need the store"), "{}", out.stderr);

    let show = remote(&["sessions", "show", &id]);
    show.expect_code(0);
    assert!(
        show.stdout.contains("review#1 (steps[1], manual_gate)"),
        "{}",
        show.stdout
    );
}
