//! Spec validation: every problem is an `Error::Spec` diagnostic at the exact
//! file:line:column (with a hint where one helps), unsupported patterns are
//! `Error::Unsupported` (exit 18), and valid specs come out typed.
//!
//! Spec texts are built from numbered lines so each expected location can be
//! read straight off the test: `HEAD` is lines 1–9, `pattern:` is line 10 and
//! the first chain step / workflow task starts on line 14.
//!
//! This file holds the helpers, the shape of a document, templates,
//! artifacts and patterns; the submodules follow `validate/`: chain steps
//! and gates (`steps`), `workflow`, `inputs` and `agents`.

use serde_json::{json, Value};
use std::path::Path;

use super::*;
use crate::error::{exit, Diagnostic, Error};

mod agents;
mod context;
mod inputs;
mod steps;
mod workflow;

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
    parse(text, Path::new("f.yaml"), &Limits::default())
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

/// Asserts location, a message fragment and the hint (`None`: the validator gives none).
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
fn any_integer_or_string_version_is_accepted_as_strands_cli_does() {
    let body = "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    for v in ["0", "1", "\"0\"", "\"1.0.0\"", "2"] {
        let text = HEAD.replacen("version: 0", &format!("version: {v}"), 1) + body;
        assert_eq!(valid(&text).name, "t", "version {v}");
    }
}

#[test]
fn a_version_that_is_neither_integer_nor_string_is_refused_at_the_value() {
    let body = "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    let text = HEAD.replacen("version: 0", "version: true", 1) + body;
    check(
        &only(&text),
        1,
        10,
        "unsupported version true",
        Some("`version: 0`"),
    );
    let text = HEAD.replacen("version: 0", "version: \"\"", 1) + body;
    check(
        &only(&text),
        1,
        10,
        "unsupported version",
        Some("`version: 0`"),
    );
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
// Outputs and patterns
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
        let e = try_parse(&text).expect_err(p);
        assert_eq!(e.exit_code(), exit::SCHEMA, "{p}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("whatever"), "{p}: {msg}");
        assert!(msg.contains("f.yaml:"), "{p}: {msg}");
    }
}

#[test]
fn several_errors_in_one_file_are_all_reported() {
    let text = concat!(
        "version: true\n",              // 1
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
    check(&d[0], 1, 10, "unsupported version true", Some("version: 0"));
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

#[test]
fn limits_read_max_timeout_days_as_the_environment_writes_them() {
    let days = |raw: Option<&str>| Limits::with_max_timeout_days(raw).max_timeout_secs / 86_400;
    assert_eq!(Limits::default().max_timeout_secs, 7 * 86_400);
    assert_eq!(days(None), 7);
    assert_eq!(days(Some("30")), 30);
    assert_eq!(days(Some(" 3 ")), 3);
    for ignored in ["", "0", "-1", "1.5", "two"] {
        assert_eq!(days(Some(ignored)), 7, "{ignored:?}");
    }
}
