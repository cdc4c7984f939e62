//! `spec_verify`: strands-cli's tool that lets an agent check a workflow
//! spec it wrote (its spec-builder examples draft a spec, verify it, fix it).
//!
//! Here the spec goes through this build's own validator — the same one
//! `strands validate` runs — and the report keeps strands-cli's shape
//! (`schema_valid`, `pydantic_valid`, `capability_supported`, `errors`,
//! `issues`, `spec_info`), each error with its line and column. Nothing is
//! run and nothing is read from disk: an `$ref` in the text is resolved
//! against no directory and reported like any other error.

use serde_json::{json, Value};

use super::str_arg;
use super::text::short;
use crate::error::Error;
use crate::spec::{self, Limits};
use crate::tools::ToolResult;

/// Largest spec accepted, in bytes (strands-cli's limit).
const MAX_BYTES: usize = 10 * 1024 * 1024;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Validate a workflow spec (YAML or JSON text) and return a structured validation report: \
         whether it is valid, each error with its line and column, and the spec's name, pattern, \
         provider and agent count.",
        json!({
            "type": "object",
            "properties": {
                "spec_content": {
                    "type": "string",
                    "description": "The workflow spec as YAML or JSON text"
                },
                "check_capability": {
                    "type": "boolean",
                    "description": "Also report what this build cannot run (default true)"
                }
            },
            "required": ["spec_content"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe(args: &Value) -> String {
    let text = str_arg(args, "spec_content").unwrap_or_default();
    format!(
        "validate a workflow spec ({} lines): {}",
        text.lines().count(),
        short(text.lines().find(|l| l.starts_with("name:")).unwrap_or("?"))
    )
}

pub(super) fn run(args: &Value) -> ToolResult {
    let text = str_arg(args, "spec_content").unwrap_or_default();
    if text.trim().is_empty() {
        return ToolResult::error(
            report(
                false,
                vec![error("parse", "No spec_content provided")],
                json!([]),
                Value::Null,
            )
            .to_string(),
        );
    }
    if text.len() > MAX_BYTES {
        return ToolResult::error(format!(
            "Error: spec_content is {} bytes, more than the {MAX_BYTES} allowed",
            text.len()
        ));
    }
    let capability = args
        .get("check_capability")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let limits = Limits::default();
    match spec::parse(text, std::path::Path::new("spec.yaml"), &limits) {
        Ok(s) => {
            let unsupported: Vec<Value> = if capability {
                s.agents
                    .values()
                    .filter_map(|a| a.provider.as_deref())
                    .chain(std::iter::once(s.runtime.provider.as_str()))
                    .filter_map(|p| crate::provider::ProviderKind::parse(p).err())
                    .map(|e| json!({"pointer": "/runtime/provider", "reason": e.to_string(), "remediation": "use a provider this build ships"}))
                    .collect()
            } else {
                Vec::new()
            };
            let supported = capability.then_some(unsupported.is_empty());
            let mut r = report(
                true,
                Vec::new(),
                Value::Array(unsupported),
                json!({
                    "name": s.name,
                    "pattern_type": s.pattern.name(),
                    "provider": s.runtime.provider,
                    "agent_count": s.agents.len(),
                    "warnings": s.warnings,
                }),
            );
            r["capability_supported"] = json!(supported);
            ToolResult::ok(r.to_string())
        }
        Err(Error::Spec(diags)) => {
            let errors = diags
                .iter()
                .map(|d| {
                    json!({
                        "phase": "schema",
                        "type": "SchemaValidationError",
                        "message": d.message,
                        "line": d.line,
                        "column": d.column,
                        "hint": d.hint,
                    })
                })
                .collect();
            ToolResult::ok(report(false, errors, json!([]), Value::Null).to_string())
        }
        Err(e) => ToolResult::ok(
            report(
                false,
                vec![error("parse", &e.to_string())],
                json!([]),
                Value::Null,
            )
            .to_string(),
        ),
    }
}

fn error(phase: &str, message: &str) -> Value {
    json!({"phase": phase, "type": "LoadError", "message": message})
}

fn report(valid: bool, errors: Vec<Value>, issues: Value, info: Value) -> Value {
    let mut r = json!({
        "schema_valid": valid,
        "pydantic_valid": valid,
        "capability_supported": null,
        "errors": errors,
        "issues": issues,
    });
    if !info.is_null() {
        r["spec_info"] = info;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_spec_reports_its_info_and_an_invalid_one_its_errors_with_lines() {
        let good = "version: 0\nname: drafted\nruntime:\n  provider: echo\nagents:\n  a:\n    prompt: hi\npattern:\n  type: chain\n  config:\n    steps:\n      - agent: a\n";
        let r = run(&json!({"spec_content": good}));
        assert!(!r.is_error);
        let v: Value = serde_json::from_str(&r.content).expect("json");
        assert_eq!(v["schema_valid"], true);
        assert_eq!(v["capability_supported"], true);
        assert_eq!(v["spec_info"]["name"], "drafted");
        assert_eq!(v["spec_info"]["pattern_type"], "chain");

        let bad = good.replace("agent: a\n", "agent: nobody\n");
        let v: Value =
            serde_json::from_str(&run(&json!({"spec_content": bad})).content).expect("json");
        assert_eq!(v["schema_valid"], false);
        assert_eq!(v["errors"][0]["line"], 12);
        assert!(v["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("undefined agent `nobody`")));

        let v: Value =
            serde_json::from_str(&run(&json!({"spec_content": "- just a list"})).content)
                .expect("json");
        assert_eq!(v["schema_valid"], false);
        assert!(run(&json!({})).is_error);
    }
}
