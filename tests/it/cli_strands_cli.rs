//! strands-cli's specs as written (issue 13): what the compat rows cannot
//! see from the outside — what the model was sent, what was written, and
//! that a missing variable is named before any model call is paid for.

use crate::common::{session_id, FakeLlm, Sandbox};
use serde_json::Value;
use std::path::Path;

fn compat(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/specs/compat")
        .join(name);
    std::fs::read_to_string(p).expect("read a compat row")
}

fn copy_agents(sandbox: &Sandbox) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs/compat/agents");
    let to = sandbox.path().join("agents");
    std::fs::create_dir_all(to.join("schemas")).expect("mkdir");
    for f in [
        "summarizer.yaml",
        "schemas/input.json",
        "schemas/output.json",
    ] {
        std::fs::copy(from.join(f), to.join(f)).expect("copy");
    }
}

#[test]
fn a_variable_no_input_defines_is_named_before_the_first_model_call() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = "version: 0\nname: t\nruntime:\n  provider: openai\n  host: $HOST\nagents:\n  a:\n    prompt: You write.\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n        input: Write about {{ topic }}.\n      - agent: a\n        input: \"{{ steps[0].response }} for {{ audience }}\"\n";
    let spec = sandbox.spec("needs.yaml", yaml, &fake);
    let spec = spec.to_str().expect("utf-8");
    let v = sandbox.strands(&["validate", spec]);
    v.expect_code(0);
    assert!(v.stderr.contains("needs.yaml:14: the input of steps[0] reads `topic`, which is not a declared input: pass --var topic=..."), "{}", v.stderr);
    assert!(v.stderr.contains("needs.yaml:16:"), "{}", v.stderr);

    let out = sandbox.strands(&["run", spec, "--var", "topic=gates"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("missing required input: audience (read by the input of steps[1] at ")
            && out.stderr.contains("needs.yaml:16)"),
        "{}",
        out.stderr
    );
    assert_eq!(
        fake.count(),
        0,
        "no model call before the inputs are complete"
    );
    assert!(sandbox.list()["sessions"]
        .as_array()
        .is_some_and(|s| s.is_empty()));

    let out = sandbox.strands(&["run", spec, "--var", "topic=gates", "--var", "audience=ops"]);
    out.expect_code(0);
    assert!(fake.request(2).user().ends_with("for ops"));
}

#[test]
fn an_undefined_value_at_run_time_names_the_expression_and_the_template() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = "version: 0\nname: t\nruntime:\n  provider: openai\n  host: $HOST\nagents:\n  a:\n    prompt: You write.\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n        input: Go.\n      - agent: a\n        input: \"Again: {{ steps[0].respone }}\"\n";
    let spec = sandbox.spec("typo.yaml", yaml, &fake);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8")]);
    out.expect_code(10);
    assert!(
        out.stderr
            .contains("`{{ steps[0].respone }}` is undefined in the input of steps[1]"),
        "{}",
        out.stderr
    );
}

#[test]
fn atomic_agents_reach_the_model_and_survive_their_file_being_gone() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    copy_agents(&sandbox);
    // The row with a gate between the two atomic agents.
    let yaml = compat("chain-atomic-ref.yaml").replace(
        "      - agent: classify\n",
        "      - type: hitl\n        prompt: Classify it?\n      - agent: classify\n",
    );
    let spec = sandbox.spec("atomic.yaml", &yaml, &fake);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    out.expect_code(19);
    let id = session_id(&out.json());
    let first = fake.request(1);
    assert!(
        first.system().contains("ATOMIC SUMMARIZER"),
        "{}",
        first.system()
    );
    assert_eq!(first.body["model"], "gpt-4o-mini");
    assert_eq!(first.user(), r#"{"subject": "Server outage"}"#);

    // The session holds the agent it started with: the file may go.
    std::fs::remove_dir_all(sandbox.path().join("agents")).expect("rm agents");
    let out = sandbox.strands(&["resume", &id, "--response", "go", "--json"]);
    out.expect_code(0);
    let second = fake.request(2);
    assert!(second.system().contains("ATOMIC SUMMARIZER"));
    assert_eq!(
        second.body["model"], "big-model",
        "the override beside $ref wins"
    );
}

#[test]
fn agent_prompts_with_unknown_names_are_sent_as_written_and_filters_render_as_strands_cli() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let spec = sandbox.spec("f.yaml", &compat("chain-filters-artifacts.yaml"), &fake);
    let out = sandbox.strands(&["run", spec.to_str().expect("utf-8"), "--json"]);
    out.expect_code(19);
    let id = session_id(&out.json());
    let first = fake.request(1);
    assert!(
        first
            .system()
            .contains("iteration {{ current_number }} of the topic"),
        "{}",
        first.system()
    );
    assert_eq!(first.user(), "Topic: Durable Human Gates");
    sandbox
        .strands(&["resume", &id, "--approve"])
        .expect_code(0);
    assert_eq!(
        fake.request(2).user(),
        r#"Data: {"t": "durable human gates"} score 42"#
    );
    let report = std::fs::read_to_string(
        sandbox
            .path()
            .join("artifacts/out/filters-and-artifacts.md"),
    )
    .expect("artifact named by {{ name }}");
    assert!(
        report.starts_with("# filters-and-artifacts at 20"),
        "{report}"
    );
    assert!(report.contains("steps: 2"), "{report}");
    let trace: Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.path().join("artifacts/out/trace.json"))
            .expect("TRACE artifact"),
    )
    .expect("TRACE is JSON");
    assert_eq!(trace["spec_name"], "filters-and-artifacts");
    assert_eq!(trace["trace_id"], id.as_str());
}

#[test]
fn tool_overrides_replace_the_agents_tools_for_that_step_and_task_status_reaches_artifacts() {
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    let yaml = compat("workflow-task-status.yaml").replace(
        "        deps: [overview]\n        input: \"Detail on {{ tasks.overview.response | truncate(30) }}\"\n        tool_overrides: []\n",
        "        deps: [overview]\n        input: \"Detail on {{ tasks.overview.response | truncate(30) }}\"\n",
    );
    let spec = sandbox.spec("w.yaml", &yaml, &fake);
    sandbox
        .strands(&["run", spec.to_str().expect("utf-8")])
        .expect_code(0);
    let offered = |n: usize| {
        fake.request(n).body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].to_string())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert!(
        offered(1).is_empty(),
        "tool_overrides: [] offers no tool: {:?}",
        offered(1)
    );
    assert_eq!(
        offered(2),
        vec!["\"weather\"".to_string()],
        "the agent's own tools"
    );
    let status =
        std::fs::read_to_string(sandbox.path().join("artifacts/status.md")).expect("artifact");
    assert_eq!(status.trim(), "overview success, detail success");
}
