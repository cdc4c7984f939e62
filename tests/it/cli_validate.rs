//! `strands validate` and the refusals that happen before a run starts, through
//! the real binary, against the fixtures in tests/specs/{valid,invalid}/.
//!
//! Every invalid fixture has an entry in `INVALID` with the exact
//! `file:line:column` its first diagnostic must carry; a fixture without an
//! entry (or an entry without a fixture) fails the test.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXIT_OK: i32 = 0;
const EXIT_SCHEMA: i32 = 3;
const EXIT_UNSUPPORTED: i32 = 18;

/// fixture, line, column, message fragment.
const INVALID: &[(&str, u32, u32, &str)] = &[
    ("artifact_escapes_out.yaml", 15, 13, "contains `..`"),
    ("bad_condition.yaml", 15, 20, "condition of steps[1]"),
    (
        "bad_fallback_action.yaml",
        15,
        26,
        "unknown fallback_action `explode`",
    ),
    (
        "hitl_timeout_minutes.yaml",
        13,
        9,
        "does not take timeout_minutes",
    ),
    (
        "form_enum_default.yaml",
        17,
        18,
        "property `env`: the default \"dev\" does not fit",
    ),
    (
        "form_nested_object.yaml",
        19,
        15,
        "property `target`: type `object`",
    ),
    (
        "form_required_unknown.yaml",
        18,
        21,
        "`required` names `region`, which is not a property",
    ),
    ("manual_gate_no_prompt.yaml", 13, 9, "needs a `prompt`"),
    // serde-saphyr places a missing key at the last key of its mapping.
    ("missing_runtime.yaml", 6, 1, "missing field `runtime`"),
    (
        "neither_agent_nor_type.yaml",
        13,
        9,
        "has neither `agent` nor `type`",
    ),
    // The line inside the block scalar that opens the unclosed `{% if %}`.
    ("template_in_block.yaml", 15, 11, "template syntax error"),
    ("undefined_agent.yaml", 15, 16, "undefined agent `reviewer`"),
    (
        "unknown_pattern.yaml",
        9,
        9,
        "unknown pattern type `pipeline`",
    ),
    ("unknown_step_key.yaml", 13, 9, "unknown field `imput`"),
    (
        "unknown_step_type.yaml",
        13,
        15,
        "unknown step type `approval`",
    ),
    ("unknown_top_key.yaml", 13, 1, "unknown field `outptus`"),
    ("version_bool.yaml", 1, 10, "unsupported version true"),
    (
        "workflow_cycle.yaml",
        12,
        9,
        "tasks one, two, three form a dependency cycle",
    ),
    ("workflow_missing_id.yaml", 14, 9, "tasks[1] has no `id`"),
    (
        "workflow_unknown_dep.yaml",
        18,
        13,
        "depends on unknown task `fecth`",
    ),
    ("yaml_syntax.yaml", 8, 1, "quoted scalar"),
];

fn specs(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("specs")
        .join(kind)
}

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(specs(kind))
        .unwrap_or_else(|e| panic!("read tests/specs/{kind}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    v.sort();
    v
}

/// The binary, isolated from the caller's environment and store.
fn strands() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strands"));
    c.env_remove("STRANDS_STORE")
        .env_remove("STRANDS_LOG")
        .env_remove("STRANDS_LOG_FORMAT")
        .env("NO_COLOR", "1");
    c
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("spawn strands");
    (
        status.code().expect("exited by signal"),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

fn sessions_count(store: &Path) -> u64 {
    let (code, out, err) = run(strands()
        .arg("--store")
        .arg(store)
        .args(["sessions", "list", "--json"]));
    assert_eq!(code, EXIT_OK, "sessions list: {err}");
    let v: Value = serde_json::from_str(out.trim()).expect("sessions list --json is JSON");
    v["count"].as_u64().expect("count")
}

#[test]
fn valid_fixtures_validate() {
    let files = fixtures("valid");
    assert!(files.len() >= 6, "expected the valid fixtures: {files:?}");
    for f in files {
        let (code, out, err) = run(strands().arg("validate").arg(&f));
        assert_eq!(code, EXIT_OK, "{} should be valid:\n{err}", f.display());
        assert!(out.contains("is valid"), "{}: {out}", f.display());
        assert!(!err.contains("error"), "{}: {err}", f.display());

        let (code, out, _) = run(strands().arg("validate").arg("--json").arg(&f));
        assert_eq!(code, EXIT_OK);
        let v: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{}: not one JSON object ({e}): {out}", f.display()));
        assert_eq!(v["valid"], true, "{out}");
    }
}

#[test]
fn invalid_fixtures_exit_3_at_their_location() {
    let files = fixtures("invalid");
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut listed: Vec<&str> = INVALID.iter().map(|e| e.0).collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "every fixture in tests/specs/invalid/ needs an entry in INVALID (and vice versa)"
    );
    for &(name, line, column, fragment) in INVALID {
        let path = specs("invalid").join(name);
        let (code, out, err) = run(strands().arg("validate").arg(&path));
        assert_eq!(code, EXIT_SCHEMA, "{name}: stderr:\n{err}");
        assert!(out.is_empty(), "{name}: nothing on stdout, got {out}");
        let loc = format!("{}:{line}:{column}: ", path.display());
        let first = err
            .lines()
            .find(|l| l.contains(&format!("{}:", path.display())))
            .unwrap_or_else(|| panic!("{name}: no file:line:column in stderr:\n{err}"));
        assert!(
            first.contains(&loc),
            "{name}: expected {loc} in the first diagnostic, got:\n{err}"
        );
        assert!(
            first.contains(fragment),
            "{name}: expected {fragment:?} in:\n{first}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}

#[test]
fn validate_json_prints_one_object_with_located_errors() {
    let path = specs("invalid").join("undefined_agent.yaml");
    let (code, out, err) = run(strands().args(["validate", "--json"]).arg(&path));
    assert_eq!(code, EXIT_SCHEMA, "{err}");
    let trimmed = out.trim();
    assert_eq!(trimmed.lines().count(), 1, "exactly one JSON line: {out}");
    let v: Value = serde_json::from_str(trimmed).expect("stdout is one JSON object");
    assert!(v.is_object(), "{v}");
    assert_eq!(v["exit_code"], 3, "{v}");
    let errors = v["errors"].as_array().expect("errors[]");
    assert_eq!(errors.len(), 1, "{v}");
    let e = &errors[0];
    assert_eq!(e["line"], 15, "{e}");
    assert_eq!(e["column"], 16, "{e}");
    assert_eq!(e["file"], path.display().to_string(), "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("undefined agent `reviewer`")),
        "{e}"
    );
    assert!(
        e["hint"]
            .as_str()
            .is_some_and(|h| h.contains("researcher, writer")),
        "{e}"
    );
    // The human text still goes to stderr.
    assert!(err.contains(&format!("{}:15:16:", path.display())), "{err}");
}

#[test]
fn validate_json_reports_every_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.yaml");
    std::fs::write(
        &path,
        concat!(
            "version: [7]\n",          // 1
            "name: t\n",               // 2
            "runtime:\n",              // 3
            "  provider: echo\n",      // 4
            "agents:\n",               // 5
            "  a:\n",                  // 6
            "    prompt: hi\n",        // 7
            "pattern:\n",              // 8
            "  type: workflow\n",      // 9
            "  config:\n",             // 10
            "    tasks:\n",            // 11
            "      - id: x\n",         // 12
            "        agent: nobody\n", // 13
            "        deps: [ghost]\n", // 14
        ),
    )
    .unwrap();
    let (code, out, _) = run(strands().args(["validate", "--json"]).arg(&path));
    assert_eq!(code, EXIT_SCHEMA);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let got: Vec<(u64, u64)> = v["errors"]
        .as_array()
        .expect("errors[]")
        .iter()
        .map(|e| (e["line"].as_u64().unwrap(), e["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, vec![(1, 10), (13, 16), (14, 16)], "{v}");
}

#[test]
fn every_strands_cli_pattern_validates_and_runs_offline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parallel.yaml");
    std::fs::write(
        &path,
        concat!(
            "version: 0\n",
            "name: fan-out\n",
            "runtime:\n",
            "  provider: echo\n",
            "agents:\n",
            "  a:\n",
            "    prompt: hi\n",
            "pattern:\n",
            "  type: parallel\n",
            "  config:\n",
            "    branches:\n",
            "      - id: one\n",
            "        steps:\n",
            "          - agent: a\n",
            "      - id: two\n",
            "        steps:\n",
            "          - agent: a\n",
            "    reduce:\n",
            "      type: hitl\n",
            "      prompt: merge?\n",
        ),
    )
    .unwrap();
    let (code, _, err) = run(strands().arg("validate").arg(&path));
    assert_eq!(code, 0, "{err}");

    // With the rehearsal provider it runs to the reduce gate and waits.
    let store = dir.path().join("store");
    let (code, out, err) = run(strands()
        .arg("--store")
        .arg(&store)
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, 19, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("merge?"), "{out}");
    assert_eq!(sessions_count(&store), 1);
}

#[test]
fn run_refuses_an_unknown_provider_before_creating_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (code, out, err) = run(strands()
        .arg("--store")
        .arg(&store)
        .arg("run")
        .arg(specs("valid").join("unknown_provider.yaml"))
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, EXIT_UNSUPPORTED, "stdout:\n{out}\nstderr:\n{err}");
    assert!(err.contains("danskegpt"), "{err}");
    assert!(
        !out.contains("Session:"),
        "no session may be announced: {out}"
    );
    assert!(!dir.path().join("art").exists(), "no artifacts");
    assert_eq!(sessions_count(&store), 0, "a refused run leaves no session");

    // --json: still one object, with the code.
    let (code, out, _) = run(strands()
        .arg("--store")
        .arg(&store)
        .arg("run")
        .arg("--json")
        .arg(specs("valid").join("unknown_provider.yaml"))
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, EXIT_UNSUPPORTED);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["exit_code"], 18, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("danskegpt")),
        "{v}"
    );
    assert_eq!(sessions_count(&store), 0);
}

#[test]
fn an_agent_with_tools_runs_and_its_session_pauses_at_the_gate() {
    // The rehearsal provider never calls tools: the step answers, the gate pauses.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (code, out, err) = run(strands()
        .arg("--store")
        .arg(&store)
        .arg("run")
        .arg(specs("valid").join("agent_tools.yaml"))
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, 19, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(sessions_count(&store), 1);
}

#[test]
fn run_of_an_invalid_spec_exits_3_with_the_location() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = specs("invalid").join("undefined_agent.yaml");
    let (code, _, err) = run(strands()
        .arg("--store")
        .arg(&store)
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("art")));
    assert_eq!(code, EXIT_SCHEMA, "{err}");
    assert!(err.contains(&format!("{}:15:16:", path.display())), "{err}");
    assert_eq!(sessions_count(&store), 0);
}

#[test]
fn run_with_a_bad_var_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = specs("valid").join("inputs_typed.yaml");
    let base = |extra: &[&str]| {
        let mut c = strands();
        c.arg("--store")
            .arg(&store)
            .arg("run")
            .arg(&path)
            .arg("--out")
            .arg(dir.path().join("art"))
            .args(extra);
        run(&mut c)
    };
    let (code, _, err) = base(&["--var", "topic=x", "--var", "depth=deep"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an integer"), "{err}");
    let (code, _, err) = base(&["--var", "topic=x", "--var", "tone=rude"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("input `tone`"), "{err}");
    let (code, _, err) = base(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing required input: topic"), "{err}");
    assert_eq!(sessions_count(&store), 0);

    // With good values it runs to completion (no gates, echo provider).
    let (code, _, err) = base(&["--var", "topic=x", "--var", "strict=true"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(sessions_count(&store), 1);
}
