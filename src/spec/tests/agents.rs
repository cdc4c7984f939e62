//! Agents and their tools: providers this build lacks are warnings, tools
//! resolve to built-ins with their approval policies, and Python callables,
//! unknown tools and `shell` without opt-in are refused.

use super::*;

#[test]
fn unsupported_providers_are_warnings_at_validation() {
    let text = HEAD.replacen("provider: echo", "provider: danskegpt", 1)
        + "pattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
    let spec = valid(&text);
    assert_eq!(spec.runtime.provider, "danskegpt");
    assert!(
        spec.warnings.iter().any(|w| w.contains("danskegpt")),
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
    assert_eq!(b.tools[2].policy.risk, Some(crate::model::Risk::Critical));
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
