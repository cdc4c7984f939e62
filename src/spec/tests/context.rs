//! strands-cli's native tools under `tools.python`, `context_policy`
//! (notes, just-in-time tools, compaction) and the warnings for keys that
//! are accepted and ignored.

use super::*;
use crate::spec::context::NotesFormat;

/// HEAD (lines 1–9) + `extra` (from line 10) + a chain of `a` then `b`.
fn with(extra: &str) -> String {
    format!("{HEAD}{extra}pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n      - agent: b\n")
}

fn tools_of(spec: &Spec, agent: &str) -> Vec<String> {
    spec.agents[agent]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[test]
fn native_tools_under_tools_python_map_to_the_built_ins() {
    let spec = valid(&with(concat!(
        "tools:\n",                                  // 10
        "  python:\n",                               // 11
        "    - calculator\n",                        // 12
        "    - strands_cli.tools.grep\n",            // 13
        "    - callable: strands_tools.file_read\n", // 14
        "    - current_time\n",                      // 15
    )));
    assert_eq!(
        spec.tools.python_tools,
        ["calculator", "grep", "file_read", "current_time"]
    );
    // As in strands-cli, an agent without a `tools` list gets them all.
    assert_eq!(tools_of(&spec, "a"), spec.tools.python_tools);
    // One with a list gets what it lists, by any of the names.
    let text = with("tools:\n  python: [calculator, web_fetch]\n").replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: [strands_cli.tools.calculator]\n",
        1,
    );
    let spec = valid(&text);
    assert_eq!(tools_of(&spec, "b"), ["calculator"]);
    let text = with("tools:\n  python: [calculator]\n").replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: []\n",
        1,
    );
    assert!(valid(&text).agents["b"].tools.is_empty());
}

#[test]
fn python_exec_and_other_callables_are_refused_at_their_line() {
    let d = diags(&with(concat!(
        "tools:\n",                          // 10
        "  python:\n",                       // 11
        "    - calculator\n",                // 12
        "    - python_exec\n",               // 13
        "    - strands_cli.tools.my_tool\n", // 14
    )));
    assert_eq!(d.len(), 2, "{d:#?}");
    check(
        &d[0],
        13,
        7,
        "`python_exec` runs Python code the model writes",
        Some("use `calculator` for arithmetic"),
    );
    check(
        &d[1],
        14,
        7,
        "`strands_cli.tools.my_tool` is a Python callable",
        Some("calculator"),
    );
    let text = with("").replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: [python_exec]\n",
        1,
    );
    check(
        &only(&text),
        10,
        13,
        "agent `b`: `python_exec` runs Python code",
        Some("calculator"),
    );
}

#[test]
fn context_policy_with_defaults_and_jit_tools_for_every_agent() {
    let spec = valid(&with(concat!(
        "context_policy:\n",                      // 10
        "  notes:\n",                             // 11
        "    file: ./artifacts/notes.md\n",       // 12
        "  compaction:\n",                        // 13
        "    when_tokens_over: 5000\n",           // 14
        "    summarization_model: gpt-4o-mini\n", // 15
        "  retrieval:\n",                         // 16
        "    jit_tools: [grep, head, grep]\n",    // 17
    )));
    let notes = spec.context.notes.clone().expect("notes");
    assert_eq!(notes.file, std::path::PathBuf::from("artifacts/notes.md"));
    assert_eq!(
        (notes.include_last, notes.format),
        (12, NotesFormat::Markdown)
    );
    let c = spec.context.compaction.clone().expect("compaction");
    assert_eq!(c.when_tokens_over, 5000);
    assert_eq!(c.summary_ratio, 0.35);
    assert_eq!(c.preserve_recent_messages, 12);
    assert_eq!(c.summarization_model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(spec.context.jit_tools, ["grep", "head"]);
    assert_eq!(tools_of(&spec, "a"), ["grep", "head"]);
    assert_eq!(tools_of(&spec, "b"), ["grep", "head"]);
    assert!(spec.warnings.is_empty(), "{:?}", spec.warnings);
    // `enabled: false` turns compaction off.
    let off = valid(&with(
        "context_policy:\n  compaction:\n    enabled: false\n",
    ));
    assert!(off.context.compaction.is_none());
}

#[test]
fn bad_context_policy_values_are_errors_at_their_lines() {
    let d = diags(&with(concat!(
        "context_policy:\n",                  // 10
        "  notes:\n",                         // 11
        "    file: /etc/notes.md\n",          // 12
        "  compaction:\n",                    // 13
        "    when_tokens_over: 10\n",         // 14
        "    summary_ratio: 1.5\n",           // 15
        "    preserve_recent_messages: 0\n",  // 16
        "  retrieval:\n",                     // 17
        "    jit_tools: [grep, telepathy]\n", // 18
    )));
    let at: Vec<(u32, &str)> = d.iter().map(|d| (d.line, d.message.as_str())).collect();
    assert_eq!(d.len(), 5, "{at:#?}");
    assert!(
        at.iter()
            .any(|(l, m)| *l == 12 && m.contains("leaves the working directory")),
        "{at:#?}"
    );
    assert!(
        at.iter().any(|(l, m)| *l == 14 && m.contains("below 1000")),
        "{at:#?}"
    );
    assert!(
        at.iter()
            .any(|(l, m)| *l == 15 && m.contains("not between 0 and 1")),
        "{at:#?}"
    );
    assert!(
        at.iter().any(|(l, m)| *l == 16 && m.contains("at least 1")),
        "{at:#?}"
    );
    assert!(
        at.iter()
            .any(|(l, m)| *l == 18 && m.contains("`telepathy` is not a built-in tool")),
        "{at:#?}"
    );
    // Unknown keys are errors, as in strands-cli's schema.
    let d = only(&with(
        "context_policy:\n  notes:\n    file: n.md\n    style: terse\n",
    ));
    check(
        &d,
        13,
        5,
        "unknown field `style`",
        Some("check its spelling"),
    );
    let d = only(&with("context_policy:\n  notes:\n    file: ../n.md\n"));
    assert_eq!(d.line, 12, "{d:?}");
}

#[test]
fn accepted_and_ignored_keys_are_warnings_with_their_lines() {
    let text = format!(
        "{}{}",
        HEAD.replacen(
            "  provider: echo\n",
            "  provider: echo\n  region: eu-west-1\n  failure_policy:\n    retries: 2\n",
            1
        )
        .replacen(
            "    prompt: You are b\n",
            "    prompt: You are b\n    output_schema: {type: object}\n",
            1
        ),
        concat!(
            "telemetry:\n  otel: {}\n",                               // 14
            "skills:\n  - id: pdf\n",                                 // 16
            "env:\n  secrets: []\n",                                  // 18
            "context_policy:\n  retrieval:\n    mcp_servers: [fs]\n", // 20
            "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n",
        )
    );
    let spec = valid(&text);
    let w = spec.warnings.join("\n");
    assert!(
        !w.contains("runtime.region"),
        "bedrock reads runtime.region: {w}"
    );
    for (line, key) in [
        (6, "runtime.failure_policy"),
        (13, "agents.b.output_schema"),
        (14, "telemetry"),
        (16, "skills"),
        (18, "env"),
        (22, "context_policy.retrieval.mcp_servers"),
    ] {
        assert!(
            w.contains(&format!(
                "f.yaml:{line}: `{key}` is accepted for strands-cli compatibility and ignored"
            )),
            "{key} at {line} in:\n{w}"
        );
    }
}

#[test]
fn tavily_is_located_for_the_key_warning() {
    let spec = valid(&with(
        "tools:\n  python:\n    - duckduckgo_search\n    - tavily_search\n",
    ));
    assert_eq!(spec.tools.tavily_at.as_deref(), Some("f.yaml:13"));
    let spec = valid(&with("tools:\n  python: [calculator]\n"));
    assert_eq!(spec.tools.tavily_at, None);
}

#[test]
fn a_spec_s_own_tool_named_after_a_native_tool_replaces_it() {
    let executor = "tools:\n  http_executors:\n    - id: search\n      base_url: https://search.internal\n      require_approval: true\n";
    let text = with(executor).replacen(
        "    prompt: You are b\n",
        "    prompt: You are b\n    tools: [search]\n",
        1,
    );
    let spec = valid(&text);
    assert_eq!(tools_of(&spec, "b"), ["search"]);
    // The executor's policy: it is the executor, not the native `search`.
    assert_eq!(
        spec.agents["b"].tools[0].policy.require_approval,
        Some(true)
    );
    // Naming both is a conflict, at the line that asks for the native tool.
    let d = only(&with(&format!("{executor}  python: [search]\n")));
    check(
        &d,
        15,
        12,
        "tools.python names the native tool `search`",
        Some("rename the executor"),
    );
    // The six original built-ins stay reserved.
    let d = only(&with(
        "tools:\n  http_executors:\n    - id: file_read\n      base_url: https://x.internal\n",
    ));
    assert!(d.message.contains("reserved built-in"), "{d:?}");
}
