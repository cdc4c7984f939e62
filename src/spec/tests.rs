//! Spec validation: every problem is an `Error::Spec` diagnostic at the exact
//! file:line:column (with a hint where one helps), unsupported patterns are
//! `Error::Unsupported` (exit 18), and valid specs come out typed.
//!
//! Spec texts are built from numbered lines so each expected location can be
//! read straight off the test: `HEAD` is lines 1–9, `pattern:` is line 10 and
//! the first chain step / workflow task starts on line 14.

use serde_json::{json, Value};
use std::path::Path;

use super::*;
use crate::error::{exit, Diagnostic, Error};

/// Lines 1–9: everything but the pattern, two agents `a` and `b`.
const HEAD: &str = concat!(
    "version: 0\n",            // 1
    "name: t\n",               // 2
    "runtime:\n",              // 3
    "  provider: echo\n",      // 4
    "agents:\n",               // 5
    "  a:\n",                  // 6
    "    prompt: You are a\n", // 7
    "  b:\n",                  // 8
    "    prompt: You are b\n", // 9
);

/// A chain spec; `steps` starts on line 14 (six-space `- ` items).
fn chain(steps: &str) -> String {
    format!("{HEAD}pattern:\n  type: chain\n  config:\n    steps:\n{steps}")
}

/// A workflow spec; `tasks` starts on line 14 (six-space `- ` items).
fn workflow(tasks: &str) -> String {
    format!("{HEAD}pattern:\n  type: workflow\n  config:\n    tasks:\n{tasks}")
}

fn try_parse(text: &str) -> crate::Result<Spec> {
    parse(text, Path::new("f.yaml"))
}

#[track_caller]
fn valid(text: &str) -> Spec {
    match try_parse(text) {
        Ok(s) => s,
        Err(e) => panic!("expected a valid spec, got:\n{e}\n--- spec ---\n{text}"),
    }
}

#[track_caller]
fn diags(text: &str) -> Vec<Diagnostic> {
    match try_parse(text) {
        Err(Error::Spec(d)) => {
            assert!(!d.is_empty(), "Error::Spec without diagnostics");
            d
        }
        Err(other) => panic!("expected Error::Spec, got {other:?}"),
        Ok(_) => panic!("expected an invalid spec, but it validated:\n{text}"),
    }
}

/// The single diagnostic of an invalid spec.
#[track_caller]
fn only(text: &str) -> Diagnostic {
    let mut d = diags(text);
    assert_eq!(d.len(), 1, "expected exactly one diagnostic: {d:#?}");
    d.remove(0)
}

/// Asserts location, a message fragment and the hint (`None`: validate.rs gives none).
#[track_caller]
fn check(d: &Diagnostic, line: u32, column: u32, message: &str, hint: Option<&str>) {
    assert_eq!(d.file, "f.yaml");
    assert_eq!(
        (d.line, d.column),
        (line, column),
        "wrong location for: {}",
        d.message
    );
    assert!(
        d.message.contains(message),
        "message {:?} should contain {message:?}",
        d.message
    );
    match hint {
        Some(h) => assert!(
            d.hint.as_deref().is_some_and(|x| x.contains(h)),
            "hint {:?} should contain {h:?}",
            d.hint
        ),
        None => assert_eq!(d.hint, None, "no hint expected for: {}", d.message),
    }
}

// ---------------------------------------------------------------------------
// Shape errors (reported by the YAML deserializer)
// ---------------------------------------------------------------------------

#[test]
fn unknown_top_level_key() {
    let text = format!(
        "{HEAD}{}",
        concat!(
            "bogus: 1\n",         // 10
            "pattern:\n",         // 11
            "  type: chain\n",    // 12
            "  config:\n",        // 13
            "    steps:\n",       // 14
            "      - agent: a\n", // 15
        )
    );
    let d = only(&text);
    check(
        &d,
        10,
        1,
        "unknown field `bogus`",
        Some("check its spelling"),
    );
    // The message lists what is allowed.
    assert!(d.message.contains("runtime"), "{}", d.message);
    assert_eq!(Error::Spec(vec![d]).exit_code(), exit::SCHEMA);
}

#[test]
fn unknown_key_inside_a_chain_step() {
    let d = only(&chain(concat!(
        "      - agent: a\n", // 14
        "        inptu: x\n", // 15
    )));
    check(
        &d,
        15,
        9,
        "unknown field `inptu`",
        Some("check its spelling"),
    );
}

#[test]
fn missing_runtime() {
    let text = concat!(
        "version: 0\n",       // 1
        "name: t\n",          // 2
        "agents:\n",          // 3
        "  a:\n",             // 4
        "    prompt: hi\n",   // 5
        "pattern:\n",         // 6
        "  type: chain\n",    // 7
        "  config:\n",        // 8
        "    steps:\n",       // 9
        "      - agent: a\n", // 10
    );
    let d = only(text);
    // serde-saphyr attributes a missing field to the last key it read in the
    // mapping that lacks it (here `pattern:`, the last top-level key).
    check(
        &d,
        6,
        1,
        "missing field `runtime`",
        Some("add the required key"),
    );
}

#[test]
fn version_1_is_refused_at_the_value() {
    let text = HEAD.replacen("version: 0", "version: 1", 1)
        + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    let d = only(&text);
    check(&d, 1, 10, "unsupported version 1", Some("`version: 0`"));
}

#[test]
fn version_as_string_zero_is_accepted() {
    let text = HEAD.replacen("version: 0", "version: \"0\"", 1)
        + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    assert_eq!(valid(&text).name, "t");
    let text = HEAD.replacen("version: 0", "version: \"1\"", 1)
        + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    check(
        &only(&text),
        1,
        10,
        "unsupported version",
        Some("version: 0"),
    );
}

// ---------------------------------------------------------------------------
// Steps and gates
// ---------------------------------------------------------------------------

#[test]
fn undefined_agent_points_at_the_agent_value() {
    let d = only(&chain(concat!(
        "      - agent: a\n",   // 14
        "      - agent: zed\n", // 15
    )));
    check(
        &d,
        15,
        16,
        "steps[1] uses undefined agent `zed`",
        Some("defined agents: a, b"),
    );
}

#[test]
fn step_with_neither_agent_nor_type() {
    let d = only(&chain(concat!(
        "      - agent: a\n", // 14
        "      - id: x\n",    // 15
    )));
    check(
        &d,
        15,
        9,
        "steps[1] has neither `agent` nor `type`",
        Some("type: hitl"),
    );
}

#[test]
fn unknown_step_type_points_at_the_type() {
    let d = only(&chain(concat!(
        "      - agent: a\n",       // 14
        "      - type: approval\n", // 15
        "        prompt: ok?\n",    // 16
    )));
    check(
        &d,
        15,
        15,
        "steps[1]: unknown step type `approval`",
        Some("`hitl` (strands-cli) or `manual_gate`"),
    );
    // A pattern name used as a step type gets a hint about pattern.type.
    let d = only(&chain(concat!(
        "      - type: parallel\n", // 14
        "        prompt: ok?\n",    // 15
    )));
    check(
        &d,
        14,
        15,
        "unknown step type `parallel`",
        Some("pattern.type"),
    );
}

#[test]
fn manual_gate_without_prompt() {
    let d = only(&chain(concat!(
        "      - agent: a\n",          // 14
        "      - type: manual_gate\n", // 15
        "        id: review\n",        // 16
    )));
    check(
        &d,
        15,
        9,
        "steps[1]: a `manual_gate` gate needs a `prompt`",
        Some("prompt:"),
    );
}

#[test]
fn hitl_with_timeout_minutes() {
    let d = only(&chain(concat!(
        "      - agent: a\n",           // 14
        "      - type: hitl\n",         // 15
        "        prompt: ok?\n",        // 16
        "        timeout_minutes: 5\n", // 17
    )));
    check(
        &d,
        15,
        9,
        "a `hitl` gate does not take timeout_minutes (hitl uses timeout_seconds)",
        None,
    );
    // ... and the mirror image.
    let d = only(&chain(concat!(
        "      - type: manual_gate\n",  // 14
        "        prompt: ok?\n",        // 15
        "        timeout_seconds: 5\n", // 16
        "        default: approved\n",  // 17
    )));
    check(
        &d,
        14,
        9,
        "a `manual_gate` gate does not take timeout_seconds (manual_gate uses timeout_minutes), default",
        None,
    );
}

#[test]
fn bad_fallback_action_points_at_the_value() {
    let d = only(&chain(concat!(
        "      - agent: a\n",                 // 14
        "      - type: manual_gate\n",        // 15
        "        prompt: ok?\n",              // 16
        "        fallback_action: explode\n", // 17
    )));
    check(
        &d,
        17,
        26,
        "steps[1]: unknown fallback_action `explode`",
        Some("`continue` or `cancel`"),
    );
}

#[test]
fn gate_keys_on_an_agent_step() {
    let d = only(&chain(concat!(
        "      - agent: a\n",           // 14
        "        prompt: ok?\n",        // 15
        "        timeout_minutes: 3\n", // 16
    )));
    check(
        &d,
        14,
        9,
        "steps[0]: prompt, timeout_minutes only make sense on a gate",
        Some("type: hitl"),
    );
}

#[test]
fn duplicate_gate_ids_in_a_chain() {
    // The first gate has no id: it is `step0`, which the second one reuses.
    let d = only(&chain(concat!(
        "      - type: hitl\n",        // 14
        "        prompt: one\n",       // 15
        "      - type: manual_gate\n", // 16
        "        id: step0\n",         // 17
        "        prompt: two\n",       // 18
    )));
    check(&d, 16, 9, "gate id `step0` is used twice", Some("unique"));
}

// ---------------------------------------------------------------------------
// Templates and conditions
// ---------------------------------------------------------------------------

#[test]
fn template_syntax_error_in_a_single_line_input() {
    let d = only(&chain(concat!(
        "      - agent: a\n",                   // 14
        "        input: \"Hello {{ topic \"\n", // 15
    )));
    // Points at the value (its opening quote).
    check(
        &d,
        15,
        16,
        "template syntax error in the input of steps[0]",
        Some("Jinja"),
    );
}

#[test]
fn template_syntax_error_inside_a_block_scalar_points_at_its_line() {
    let d = only(&chain(concat!(
        "      - agent: a\n",               // 14
        "        input: |\n",               // 15
        "          line one {{ ok }}\n",    // 16
        "          line two {{ oops( }}\n", // 17
        "          line three\n",           // 18
    )));
    check(
        &d,
        17,
        11,
        "template syntax error in the input of steps[0]",
        Some("Jinja"),
    );

    // An unclosed block is reported on the line that opens it.
    let d = only(&chain(concat!(
        "      - agent: a\n",                // 14
        "        input: |\n",                // 15
        "          line one {{ ok }}\n",     // 16
        "          line two\n",              // 17
        "          line three {% if x %}\n", // 18
    )));
    check(&d, 18, 11, "expected end of block", Some("Jinja"));

    // The first line of a block: the block's first content line.
    let d = only(&chain(concat!(
        "      - agent: a\n",               // 14
        "        input: |\n",               // 15
        "          line one {{ oops( }}\n", // 16
        "          line two\n",             // 17
    )));
    check(&d, 16, 11, "template syntax error", Some("Jinja"));

    // An agent prompt in a block scalar.
    let text = concat!(
        "version: 0\n",             // 1
        "name: t\n",                // 2
        "runtime:\n",               // 3
        "  provider: echo\n",       // 4
        "agents:\n",                // 5
        "  a:\n",                   // 6
        "    prompt: |\n",          // 7
        "      You are a.\n",       // 8
        "      {% for x in y %}\n", // 9
        "pattern:\n",               // 10
        "  type: chain\n",          // 11
        "  config:\n",              // 12
        "    steps:\n",             // 13
        "      - agent: a\n",       // 14
    );
    check(
        &only(text),
        9,
        7,
        "template syntax error in the prompt of agent `a`",
        Some("Jinja"),
    );
}

/// Template lines and file lines differ when a scalar uses escapes, folding or
/// leading blank lines; the diagnostic must still land on the right line, never
/// on a line outside the value.
#[test]
fn template_error_lines_follow_the_yaml_not_the_template() {
    // `\n` escape: both template lines are on file line 15.
    let d = only(&chain(concat!(
        "      - agent: a\n",                                   // 14
        "        input: \"line one\\nline two {{ oops( }}\"\n", // 15
        "      - agent: b\n",                                   // 16
    )));
    check(&d, 15, 27, "template syntax error", Some("Jinja"));

    // Folded scalar with a blank line: template line 2 is file line 18.
    let d = only(&chain(concat!(
        "      - agent: a\n",               // 14
        "        input: >\n",               // 15
        "          line one\n",             // 16
        "\n",                               // 17 (folded away)
        "          line two {{ oops( }}\n", // 18
    )));
    check(&d, 18, 11, "template syntax error", Some("Jinja"));

    // Keep-chomping block starting with a blank line.
    let d = only(&chain(concat!(
        "      - agent: a\n",               // 14
        "        input: |+\n",              // 15
        "\n",                               // 16
        "          line two {{ oops( }}\n", // 17
    )));
    check(&d, 17, 11, "template syntax error", Some("Jinja"));

    // Multi-line double-quoted scalar.
    let d = only(&chain(concat!(
        "      - agent: a\n",                 // 14
        "        input: \"line one\n",        // 15
        "\n",                                 // 16
        "          line two {{ oops( }}\"\n", // 17
    )));
    check(&d, 17, 11, "template syntax error", Some("Jinja"));
}

#[test]
fn bad_condition_syntax_points_at_the_condition() {
    let d = only(&chain(concat!(
        "      - agent: a\n",                                  // 14
        "      - type: manual_gate\n",                         // 15
        "        prompt: ok?\n",                               // 16
        "        condition: \"steps[0].response|length >\"\n", // 17
    )));
    check(
        &d,
        17,
        20,
        "condition of steps[1]: syntax error",
        Some("a condition is an expression"),
    );
    // Conditions may be written with {{ }} too.
    let d = only(&chain(concat!(
        "      - agent: a\n",                        // 14
        "      - type: manual_gate\n",               // 15
        "        prompt: ok?\n",                     // 16
        "        condition: \"{{ steps[0] > }}\"\n", // 17
    )));
    check(&d, 17, 20, "condition of steps[1]", Some("expression"));
}

// ---------------------------------------------------------------------------
// Workflow tasks
// ---------------------------------------------------------------------------

#[test]
fn workflow_task_without_id() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "      - agent: b\n", // 16
    )));
    check(&d, 16, 9, "tasks[1] has no `id`", Some("unique `id`"));
}

#[test]
fn workflow_duplicate_task_id() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "      - id: t1\n",   // 16
        "        agent: b\n", // 17
    )));
    check(&d, 16, 9, "task id `t1` is used twice", Some("unique"));
}

#[test]
fn workflow_unknown_dep_points_at_the_dep() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",           // 14
        "        agent: a\n",         // 15
        "      - id: t2\n",           // 16
        "        agent: b\n",         // 17
        "        deps: [t1, nope]\n", // 18
    )));
    check(
        &d,
        18,
        20,
        "task `t2` depends on unknown task `nope`",
        Some("tasks: t1, t2"),
    );
}

#[test]
fn workflow_self_dep_points_at_the_dep() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "        deps:\n",    // 16
        "          - t1\n",   // 17
    )));
    check(&d, 17, 13, "task `t1` depends on itself", None);
}

#[test]
fn workflow_three_task_cycle() {
    let d = only(&workflow(concat!(
        "      - id: start\n", // 14
        "        agent: a\n",  // 15
        "      - id: x\n",     // 16
        "        agent: a\n",  // 17
        "        deps: [z]\n", // 18
        "      - id: y\n",     // 19
        "        agent: b\n",  // 20
        "        deps: [x]\n", // 21
        "      - id: z\n",     // 22
        "        agent: a\n",  // 23
        "        deps: [y]\n", // 24
    )));
    check(
        &d,
        16,
        9,
        "tasks x, y, z form a dependency cycle",
        Some("a workflow is a DAG"),
    );
}

/// A task that merely depends on a cycle is not part of it: the diagnostic
/// should name the cycle's tasks only and point at one of them.
#[test]
fn workflow_cycle_does_not_blame_tasks_downstream_of_it() {
    let d = only(&workflow(concat!(
        "      - id: w\n",     // 14  depends on the cycle, is not in it
        "        agent: a\n",  // 15
        "        deps: [x]\n", // 16
        "      - id: x\n",     // 17
        "        agent: a\n",  // 18
        "        deps: [z]\n", // 19
        "      - id: y\n",     // 20
        "        agent: b\n",  // 21
        "        deps: [x]\n", // 22
        "      - id: z\n",     // 23
        "        agent: a\n",  // 24
        "        deps: [y]\n", // 25
    )));
    check(
        &d,
        17,
        9,
        "tasks x, y, z form a dependency cycle",
        Some("a workflow is a DAG"),
    );
    assert!(!d.message.contains('w'), "{}", d.message);
}

// ---------------------------------------------------------------------------
// Outputs, inputs, patterns
// ---------------------------------------------------------------------------

#[test]
fn artifact_paths_absolute_and_dotdot() {
    let text = chain("      - agent: a\n") // 14
        + concat!(
            "outputs:\n",                          // 15
            "  artifacts:\n",                      // 16
            "    - path: /etc/passwd\n",           // 17
            "      from: \"{{ last_response }}\"\n", // 18
            "    - path: \"out/../../x.md\"\n",    // 19
            "      from: \"{{ last_response }}\"\n", // 20
            "    - path: \"reports/{{ topic }}.md\"\n", // 21
            "      from: \"{{ last_response }}\"\n", // 22
        );
    let d = diags(&text);
    assert_eq!(d.len(), 2, "{d:#?}");
    check(
        &d[0],
        17,
        13,
        "artifact path `/etc/passwd` is absolute",
        Some("relative to --out"),
    );
    check(
        &d[1],
        19,
        13,
        "artifact path `out/../../x.md` contains `..`",
        Some("relative to --out"),
    );
}

/// An input with a bad declaration should be reported on its own line, not
/// on the first entry of its section.
#[test]
fn input_declaration_errors_point_at_the_input() {
    let text = concat!(
        "version: 0\n",                         // 1
        "name: t\n",                            // 2
        "runtime:\n",                           // 3
        "  provider: echo\n",                   // 4
        "inputs:\n",                            // 5
        "  optional:\n",                        // 6
        "    n: {type: integer, default: 3}\n", // 7
        "    flag: boolean\n",                  // 8
        "    bogus: {type: float64}\n",         // 9
        "agents:\n",                            // 10
        "  a:\n",                               // 11
        "    prompt: hi\n",                     // 12
        "pattern:\n",                           // 13
        "  type: chain\n",                      // 14
        "  config:\n",                          // 15
        "    steps:\n",                         // 16
        "      - agent: a\n",                   // 17
    );
    let d = only(text);
    assert!(
        d.message.contains("input `bogus` has an invalid type"),
        "{d}"
    );
    assert!(d.hint.as_deref().is_some_and(|h| h.contains("integer")));
    // The key (column 5) or its value (column 12) would both be right.
    assert!(
        d.line == 9 && (d.column == 5 || d.column == 12),
        "expected f.yaml:9:5 or f.yaml:9:12 (the `bogus` input), got {}:{}",
        d.line,
        d.column
    );
}

#[test]
fn unknown_pattern_type_is_a_schema_error() {
    let text = format!("{HEAD}pattern:\n  type: pipeline\n  config: {{}}\n");
    let d = only(&text);
    check(
        &d,
        11,
        9,
        "unknown pattern type `pipeline`",
        Some("chain, workflow, parallel"),
    );
    assert_eq!(Error::Spec(vec![d]).exit_code(), exit::SCHEMA);
}

#[test]
fn every_strands_cli_pattern_is_checked_with_located_errors() {
    for p in [
        "parallel",
        "routing",
        "graph",
        "evaluator_optimizer",
        "orchestrator_workers",
    ] {
        // Each pattern's config has its own shape: an unknown key is an error
        // at its line, never "unsupported".
        let text = format!("{HEAD}pattern:\n  type: {p}\n  config:\n    whatever: 1\n");
        let e = parse(&text, Path::new("f.yaml")).expect_err(p);
        assert_eq!(e.exit_code(), exit::SCHEMA, "{p}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("whatever"), "{p}: {msg}");
        assert!(msg.contains("f.yaml:"), "{p}: {msg}");
    }
}

#[test]
fn several_errors_in_one_file_are_all_reported() {
    let text = concat!(
        "version: 2\n",                 // 1
        "name: t\n",                    // 2
        "runtime:\n",                   // 3
        "  provider: echo\n",           // 4
        "agents:\n",                    // 5
        "  a:\n",                       // 6
        "    prompt: hi\n",             // 7
        "pattern:\n",                   // 8
        "  type: chain\n",              // 9
        "  config:\n",                  // 10
        "    steps:\n",                 // 11
        "      - agent: zz\n",          // 12
        "      - type: manual_gate\n",  // 13
        "        id: g\n",              // 14
        "      - agent: a\n",           // 15
        "        input: \"{{ x \"\n",   // 16
        "      - type: hitl\n",         // 17
        "        prompt: ok\n",         // 18
        "        timeout_minutes: 5\n", // 19
        "outputs:\n",                   // 20
        "  artifacts:\n",               // 21
        "    - path: ../up.md\n",       // 22
        "      from: x\n",              // 23
    );
    let d = diags(text);
    let got: Vec<(u32, u32)> = d.iter().map(|d| (d.line, d.column)).collect();
    assert_eq!(
        got,
        vec![(1, 10), (22, 13), (12, 16), (13, 9), (16, 16), (17, 9)],
        "{d:#?}"
    );
    check(&d[0], 1, 10, "unsupported version 2", Some("version: 0"));
    check(&d[1], 22, 13, "contains `..`", Some("--out"));
    check(
        &d[2],
        12,
        16,
        "undefined agent `zz`",
        Some("defined agents: a"),
    );
    check(&d[3], 13, 9, "needs a `prompt`", Some("prompt:"));
    check(&d[4], 16, 16, "template syntax error", Some("Jinja"));
    check(
        &d[5],
        17,
        9,
        "does not take timeout_minutes (hitl uses timeout_seconds)",
        None,
    );
    // All of them in the rendered error, one per line with hints.
    let rendered = Error::Spec(d).to_string();
    for loc in [
        "f.yaml:1:10:",
        "f.yaml:12:16:",
        "f.yaml:13:9:",
        "f.yaml:16:16:",
    ] {
        assert!(rendered.contains(loc), "{loc} missing from:\n{rendered}");
    }
    assert!(rendered.contains("\n  hint: "), "{rendered}");
}

#[test]
fn yaml_syntax_errors_are_located() {
    let d = only("version: 0\nname: t\nruntime: [\n");
    assert_eq!(d.line, 3, "{d}");
    let d = only("");
    check(&d, 1, 1, "unexpected end of input", None);
}

// ---------------------------------------------------------------------------
// Valid specs
// ---------------------------------------------------------------------------

#[test]
fn chain_with_hitl_and_manual_gate() {
    let spec = valid(&chain(concat!(
        "      - agent: a\n",
        "        input: \"Research {{ topic }}\"\n",
        "        vars: {depth: 2}\n",
        "      - type: hitl\n",
        "        prompt: \"Approve {{ steps[0].response }}?\"\n",
        "        context_display: \"{{ steps[0].response }}\"\n",
        "        default: approved\n",
        "        timeout_seconds: 90\n",
        "      - type: manual_gate\n",
        "        id: review\n",
        "        prompt: Review it\n",
        "        condition: \"steps[0].response|length > 10\"\n",
        "        timeout_minutes: 2\n",
        "        fallback_action: continue\n",
        "        show_preview: false\n",
        "        preview_length: 40\n",
        "      - type: manual_gate\n",
        "        prompt: Again\n",
        "        timeout_minutes: 0\n",
        "      - agent: b\n",
    )));
    assert_eq!(spec.name, "t");
    assert_eq!(spec.runtime.provider, "echo");
    assert_eq!(spec.pattern.name(), "chain");
    assert_eq!(spec.agent_ids(), vec!["a", "b"]);
    assert_eq!(spec.hash, sha256_hex(&spec.text));
    assert!(spec.warnings.is_empty(), "{:?}", spec.warnings);
    let PatternSpec::Chain { steps } = &spec.pattern else {
        panic!("not a chain")
    };
    assert_eq!(steps.len(), 5);
    let ChainStep::Agent(a) = &steps[0] else {
        panic!("step 0 is not an agent step")
    };
    assert_eq!(a.agent, "a");
    assert_eq!(a.input.as_deref(), Some("Research {{ topic }}"));
    assert_eq!(a.vars.get("depth"), Some(&json!(2)));

    let ChainStep::Gate(h) = &steps[1] else {
        panic!("step 1 is not a gate")
    };
    assert_eq!(h.kind, GateKind::Hitl);
    assert_eq!(h.id, "step1", "an unnamed gate is named after its position");
    assert_eq!(h.default.as_deref(), Some("approved"));
    assert_eq!(h.timeout_secs, Some(90));
    assert_eq!(
        h.context_display.as_deref(),
        Some("{{ steps[0].response }}")
    );
    assert!(h.show_preview);
    assert_eq!(h.preview_length, DEFAULT_PREVIEW_LENGTH);

    let ChainStep::Gate(m) = &steps[2] else {
        panic!("step 2 is not a gate")
    };
    assert_eq!(m.kind, GateKind::ManualGate);
    assert_eq!(m.id, "review");
    assert_eq!(m.timeout_secs, Some(120), "timeout_minutes are minutes");
    assert_eq!(m.fallback, Fallback::Continue);
    assert_eq!(
        m.condition.as_deref(),
        Some("steps[0].response|length > 10")
    );
    assert!(!m.show_preview);
    assert_eq!(m.preview_length, 40);

    let ChainStep::Gate(z) = &steps[3] else {
        panic!("step 3 is not a gate")
    };
    assert_eq!(z.id, "step3");
    assert_eq!(z.timeout_secs, None, "0 means no timeout");
    assert_eq!(
        z.fallback,
        Fallback::Cancel,
        "the default fallback is cancel"
    );
    assert!(matches!(&steps[4], ChainStep::Agent(s) if s.agent == "b" && s.input.is_none()));
}

fn layer_ids(spec: &Spec) -> Vec<Vec<String>> {
    let PatternSpec::Workflow { tasks, layers } = &spec.pattern else {
        panic!("not a workflow")
    };
    layers
        .iter()
        .map(|l| {
            let mut ids: Vec<String> = l.iter().map(|&i| tasks[i].id.clone()).collect();
            ids.sort();
            ids
        })
        .collect()
}

#[test]
fn workflow_diamond_layers() {
    // Written out of order on purpose: d needs b and c, which need a.
    let spec = valid(&workflow(concat!(
        "      - id: d\n",
        "        agent: a\n",
        "        deps: [b, c]\n",
        "      - id: b\n",
        "        agent: b\n",
        "        deps: [a]\n",
        "      - id: a\n",
        "        agent: a\n",
        "        description: the root\n",
        "      - id: c\n",
        "        agent: b\n",
        "        deps: [a, a]\n",
        "      - id: review\n",
        "        type: hitl\n",
        "        prompt: \"Ship {{ tasks.d.response }}?\"\n",
        "        deps: [d]\n",
    )));
    assert_eq!(spec.pattern.name(), "workflow");
    assert_eq!(
        layer_ids(&spec),
        vec![
            vec!["a".to_string()],
            vec!["b".to_string(), "c".to_string()],
            vec!["d".to_string()],
            vec!["review".to_string()],
        ]
    );
    let PatternSpec::Workflow { tasks, layers } = &spec.pattern else {
        unreachable!()
    };
    // Layers hold indexes into `tasks`, in file order.
    assert_eq!(layers, &vec![vec![2], vec![1, 3], vec![0], vec![4]]);
    let review = &tasks[4];
    assert_eq!(review.deps, vec!["d"]);
    let TaskBody::Gate(g) = &review.body else {
        panic!("review is not a gate")
    };
    assert_eq!(g.id, "review", "a task gate takes the task id");
    assert_eq!(g.kind, GateKind::Hitl);
}

#[test]
fn workflow_independent_tasks_share_one_layer() {
    let spec = valid(&workflow(concat!(
        "      - id: one\n",
        "        agent: a\n",
        "      - id: two\n",
        "        agent: b\n",
        "      - id: three\n",
        "        agent: a\n",
    )));
    assert_eq!(layer_ids(&spec), vec![vec!["one", "three", "two"]]);
}

const INPUTS: &str = concat!(
    "version: 0\n",
    "name: typed\n",
    "runtime:\n",
    "  provider: echo\n",
    "inputs:\n",
    "  required:\n",
    "    topic: string\n",
    "  optional:\n",
    "    n: {type: integer, default: 3, enum: [1, 2, 3, 5]}\n",
    "    flag:\n",
    "      type: boolean\n",
    "      description: a switch\n",
    "      default: false\n",
    "    ratio: number\n",
    "    tags: array\n",
    "    opts: object\n",
    "    level: {type: string, enum: [low, high]}\n",
    "agents:\n",
    "  a:\n",
    "    prompt: hi\n",
    "pattern:\n",
    "  type: chain\n",
    "  config:\n",
    "    steps:\n",
    "      - agent: a\n",
);

fn vars(spec: &Spec, overrides: &[(&str, &str)]) -> crate::Result<serde_json::Map<String, Value>> {
    let o: Vec<(String, String)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    spec.resolve_variables(&o)
}

#[track_caller]
fn usage_error(r: crate::Result<serde_json::Map<String, Value>>) -> String {
    match r {
        Err(e @ Error::Usage(_)) => {
            assert_eq!(e.exit_code(), exit::USAGE);
            e.to_string()
        }
        other => panic!("expected Error::Usage, got {other:?}"),
    }
}

#[test]
fn inputs_with_types_defaults_and_enums() {
    let spec = valid(INPUTS);
    let decl = |name: &str| {
        spec.inputs
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no input {name}"))
    };
    assert!(decl("topic").required);
    assert_eq!(decl("topic").ty, InputType::String);
    let n = decl("n");
    assert!(!n.required);
    assert_eq!(n.ty, InputType::Integer);
    assert_eq!(n.default, Some(json!(3)));
    assert_eq!(
        n.allowed,
        Some(vec![json!(1), json!(2), json!(3), json!(5)])
    );
    assert_eq!(decl("flag").ty, InputType::Boolean);
    assert_eq!(decl("flag").default, Some(json!(false)));
    assert_eq!(decl("ratio").ty, InputType::Number);
    assert_eq!(decl("tags").ty, InputType::Array);
    assert_eq!(decl("opts").ty, InputType::Object);
    assert_eq!(
        decl("level").allowed,
        Some(vec![json!("low"), json!("high")])
    );
}

#[test]
fn resolve_variables_applies_defaults_values_and_overrides() {
    let spec = valid(INPUTS);
    let v = vars(&spec, &[("topic", "sled")]).unwrap();
    assert_eq!(v.get("topic"), Some(&json!("sled")));
    assert_eq!(v.get("n"), Some(&json!(3)), "default applied");
    assert_eq!(v.get("flag"), Some(&json!(false)), "default applied");
    assert_eq!(v.get("ratio"), None, "no default, not given");

    let v = vars(
        &spec,
        &[
            ("topic", "x"),
            ("n", " 5 "),
            ("flag", "yes"),
            ("ratio", "0.25"),
            ("tags", "[1, \"a\"]"),
            ("opts", "{\"k\": true}"),
            ("level", "high"),
            ("extra", "42"),
        ],
    )
    .unwrap();
    assert_eq!(v.get("n"), Some(&json!(5)));
    assert_eq!(v.get("flag"), Some(&json!(true)));
    assert_eq!(v.get("ratio"), Some(&json!(0.25)));
    assert_eq!(v.get("tags"), Some(&json!([1, "a"])));
    assert_eq!(v.get("opts"), Some(&json!({"k": true})));
    assert_eq!(v.get("level"), Some(&json!("high")));
    assert_eq!(v.get("extra"), Some(&json!("42")), "undeclared: a string");

    // `inputs.values` sit between defaults and --var.
    let with_values = INPUTS.replace(
        "agents:\n",
        "  values:\n    topic: from-file\n    n: 2\nagents:\n",
    );
    let spec = valid(&with_values);
    let v = vars(&spec, &[]).unwrap();
    assert_eq!(v.get("topic"), Some(&json!("from-file")));
    assert_eq!(v.get("n"), Some(&json!(2)));
    let v = vars(&spec, &[("n", "1")]).unwrap();
    assert_eq!(v.get("n"), Some(&json!(1)));
}

#[test]
fn var_coercion_errors_name_the_input_and_type() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "abc")]));
    assert!(msg.contains("--var n=abc"), "{msg}");
    assert!(msg.contains("not an integer"), "{msg}");
    assert!(msg.contains("input `n`"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "2.5")]));
    assert!(msg.contains("not an integer"), "{msg}");

    let msg = usage_error(vars(&spec, &[("topic", "x"), ("flag", "maybe")]));
    assert!(msg.contains("--var flag=maybe"), "{msg}");
    assert!(msg.contains("not a boolean"), "{msg}");
    assert!(msg.contains("input `flag`"), "{msg}");

    let msg = usage_error(vars(&spec, &[("topic", "x"), ("ratio", "lots")]));
    assert!(msg.contains("not a number"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("tags", "{\"a\": 1}")]));
    assert!(msg.contains("not an array"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("opts", "[")]));
    assert!(msg.contains("not valid JSON"), "{msg}");

    assert_eq!(coerce("FALSE", InputType::Boolean), Ok(json!(false)));
    assert_eq!(coerce("0", InputType::Boolean), Ok(json!(false)));
    assert_eq!(coerce("-7", InputType::Integer), Ok(json!(-7)));
    assert!(coerce("NaN", InputType::Number).is_err());
}

#[test]
fn enum_violations_are_usage_errors() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("n", "4")]));
    assert!(msg.contains("input `n` is 4"), "{msg}");
    assert!(msg.contains("not one of [1,2,3,5]"), "{msg}");
    let msg = usage_error(vars(&spec, &[("topic", "x"), ("level", "medium")]));
    assert!(msg.contains("input `level`"), "{msg}");
    assert!(msg.contains("\"medium\""), "{msg}");
    assert!(msg.contains("[\"low\",\"high\"]"), "{msg}");
}

#[test]
fn missing_required_inputs_are_named() {
    let spec = valid(INPUTS);
    let msg = usage_error(vars(&spec, &[]));
    assert_eq!(msg, "missing required input: topic (pass --var topic=...)");
    let two = INPUTS.replace("  optional:\n", "    audience: string\n  optional:\n");
    let spec = valid(&two);
    let msg = usage_error(vars(&spec, &[]));
    assert!(msg.starts_with("missing required inputs: "), "{msg}");
    assert!(msg.contains("audience") && msg.contains("topic"), "{msg}");
    assert!(msg.contains("--var audience=..."), "{msg}");
}

#[test]
fn parse_var_splits_on_the_first_equals() {
    assert_eq!(parse_var("q=a=b"), Ok(("q".to_string(), "a=b".to_string())));
    assert_eq!(parse_var(" k =v"), Ok(("k".to_string(), "v".to_string())));
    assert!(parse_var("novalue").is_err());
    assert!(parse_var("=v").is_err());
}

#[test]
fn unsupported_providers_are_warnings_at_validation() {
    let text = HEAD.replacen("provider: echo", "provider: bedrock", 1)
        + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    let spec = valid(&text);
    assert_eq!(spec.runtime.provider, "bedrock");
    assert!(
        spec.warnings.iter().any(|w| w.contains("bedrock")),
        "{:?}",
        spec.warnings
    );
}

#[test]
fn agent_tools_resolve_to_built_ins_with_their_policies() {
    let with_tools = HEAD.replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools:\n      - file_read\n      - strands_tools.file_write\n      - name: delete_files\n        require_approval: true\n        approval_prompt: \"Delete {{ args.paths|length }} files?\"\n        risk: critical\n    allowed_tools: [\"*\", \"!delete_files\"]\n    enable_trust: true\n",
        1,
    ) + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: b\n";
    let spec = valid(&with_tools);
    let b = &spec.agents["b"];
    let names: Vec<&str> = b.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["file_read", "file_write", "delete_files"]);
    assert_eq!(b.tools[2].policy.require_approval, Some(true));
    assert_eq!(b.tools[2].policy.risk, Some(crate::tools::Risk::Critical));
    assert!(b.enable_trust);
    assert!(spec.agents["a"].tools.is_empty());
}

#[test]
fn python_tools_unknown_tools_and_shell_without_opt_in_are_refused() {
    let python = HEAD.to_string()
        + "tools:\n  python:\n    - callable: my_pkg.transfer_money\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    let d = only(&python);
    assert!(d.message.contains("my_pkg.transfer_money"), "{d:?}");
    let unknown = HEAD.replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: [web_search]\n",
        1,
    ) + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: b\n";
    let d = only(&unknown);
    assert!(d.message.contains("unknown tool `web_search`"), "{d:?}");
    let shell = HEAD.replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: [shell]\n",
        1,
    ) + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: b\n";
    let d = only(&shell);
    assert!(d.message.contains("shell"), "{d:?}");
}
