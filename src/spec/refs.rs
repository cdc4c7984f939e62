//! Atomic agents: `agents.<id>.$ref: path/to/agent.yaml` (strands-cli).
//!
//! A referenced file is a spec of its own whose one agent is taken, with its
//! `input_schema` / `output_schema` files resolved relative to *that* file,
//! and the fields written beside `$ref` (model, provider, tools, inference)
//! override it. Nested references are refused, as strands-cli does.
//!
//! Resolution happens once, on the text, before validation: each `$ref: X`
//! line becomes `$atomic: {JSON}` carrying the whole agent (schemas loaded).
//! The line count does not change, so every other location stays true, and
//! the result is what a session snapshots: a resume, on any machine, runs the
//! agent that was referenced when the run started, without reading the file.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use serde_saphyr::Spanned;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Diagnostic;

/// The key a resolved reference is written under.
pub const ATOMIC_KEY: &str = "$atomic";

#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    agents: BTreeMap<String, ProbeAgent>,
}

#[derive(Deserialize)]
struct ProbeAgent {
    #[serde(rename = "$ref")]
    reference: Option<Spanned<String>>,
}

/// The referenced file: only its agents (and labels) matter here.
#[derive(Deserialize)]
struct RefFile {
    agents: Option<Map<String, Value>>,
}

/// The text with every `$ref` resolved, or what stops it. A text without a
/// reference (or one that does not parse: validation reports that) is
/// returned as it is.
pub fn inline<'t>(text: &'t str, path: &Path) -> Result<Cow<'t, str>, Vec<Diagnostic>> {
    if !text.contains("$ref") {
        return Ok(Cow::Borrowed(text));
    }
    let Ok(probe) = serde_saphyr::from_str::<Probe>(text) else {
        return Ok(Cow::Borrowed(text));
    };
    let file = path.display().to_string();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut diags = Vec::new();
    for (id, agent) in &probe.agents {
        let Some(r) = &agent.reference else { continue };
        let line = r.referenced.line() as u32;
        let column = r.referenced.column() as u32;
        let diag = |message: String, hint: Option<String>| Diagnostic {
            file: file.clone(),
            line,
            column,
            message,
            hint,
        };
        let resolved = match resolve(&r.value, dir) {
            Ok(v) => v,
            Err((message, hint)) => {
                diags.push(diag(format!("agent `{id}`: {message}"), hint));
                continue;
            }
        };
        let Some(src) = lines.get_mut(line as usize - 1) else {
            continue;
        };
        let Some(key) = src.find("$ref") else {
            continue;
        };
        let start = if key > 0 && matches!(src.as_bytes()[key - 1], b'"' | b'\'') {
            key - 1
        } else {
            key
        };
        if src[..start].contains('{') {
            diags.push(diag(
                format!("agent `{id}`: write `$ref` in block style"),
                Some(format!("  {id}:\n    $ref: {}", r.value)),
            ));
            continue;
        }
        let body = json!({ "ref": r.value, "agent": resolved });
        *src = format!("{}{ATOMIC_KEY}: {body}", &src[..start]);
    }
    if diags.is_empty() {
        Ok(Cow::Owned(lines.join("\n")))
    } else {
        Err(diags)
    }
}

type Problem = (String, Option<String>);

/// The referenced file's one agent, with its schemas loaded.
fn resolve(reference: &str, dir: &Path) -> Result<Value, Problem> {
    let file = dir.join(reference);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        (
            format!(
                "agent reference `{reference}` cannot be read ({}): {e}",
                file.display()
            ),
            Some("`$ref` is a path relative to the spec that holds it".into()),
        )
    })?;
    let parsed: RefFile = serde_saphyr::from_str(&text).map_err(|e| {
        (
            format!(
                "agent reference `{reference}` is not a valid spec: {}",
                e.without_snippet()
            ),
            None,
        )
    })?;
    let agents = parsed.agents.unwrap_or_default();
    let mut it = agents.into_iter();
    let (Some((_, agent)), None) = (it.next(), it.next()) else {
        return Err((
            format!("agent reference `{reference}` must define exactly one agent"),
            Some("an atomic agent file has one entry under `agents:`".into()),
        ));
    };
    let Value::Object(mut agent) = agent else {
        return Err((
            format!("agent reference `{reference}`: its agent is not a mapping"),
            None,
        ));
    };
    if agent.contains_key("$ref") || agent.contains_key("ref") {
        return Err((
            format!("agent reference `{reference}` contains another `$ref`"),
            Some("atomic agents are self-contained: nested references are not allowed".into()),
        ));
    }
    let base = file.parent().unwrap_or(Path::new("."));
    for key in ["input_schema", "output_schema"] {
        if let Some(Value::String(p)) = agent.get(key) {
            let schema_file = base.join(p);
            let schema = std::fs::read_to_string(&schema_file)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
                .and_then(|s| {
                    jsonschema::validator_for(&s)
                        .map(|_| s)
                        .map_err(|e| format!("not a JSON Schema: {e}"))
                })
                .map_err(|e| {
                    (
                        format!(
                            "the {key} `{p}` of agent reference `{reference}` ({}): {e}",
                            schema_file.display()
                        ),
                        Some("schema paths are relative to the atomic agent's file".into()),
                    )
                })?;
            agent.insert(key.into(), schema);
        }
    }
    Ok(Value::Object(agent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::create_dir_all(dir.join("specs")).expect("mkdir specs");
        std::fs::write(p, text).expect("write");
    }

    const SPEC: &str = "version: 0\nname: t\nagents:\n  s:\n    $ref: ../agents/sum.yaml  # atomic\n    model_id: big\n";

    #[test]
    fn a_reference_becomes_one_line_carrying_the_agent_and_its_schemas() {
        let tmp = tempfile::tempdir().expect("tmp");
        write(
            tmp.path(),
            "agents/sum.yaml",
            "version: 0\nagents:\n  summarize:\n    prompt: Sum {{ x }}\n    output_schema: ./schemas/out.json\n",
        );
        write(
            tmp.path(),
            "agents/schemas/out.json",
            r#"{"type": "object"}"#,
        );
        let out = inline(SPEC, &tmp.path().join("specs/w.yaml")).expect("resolves");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), SPEC.lines().count());
        assert!(lines[4].starts_with("    $atomic: {"), "{}", lines[4]);
        let v: Value =
            serde_json::from_str(lines[4].trim_start_matches("    $atomic: ")).expect("json");
        assert_eq!(v["agent"]["prompt"], "Sum {{ x }}");
        assert_eq!(v["agent"]["output_schema"]["type"], "object");
        assert_eq!(v["ref"], "../agents/sum.yaml");
        assert_eq!(lines[5], "    model_id: big");
    }

    #[test]
    fn a_missing_file_is_an_error_at_the_reference() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(tmp.path().join("specs")).expect("mkdir");
        let e = inline(SPEC, &tmp.path().join("specs/w.yaml")).expect_err("missing");
        assert_eq!((e[0].line, e[0].column), (5, 11));
        assert!(
            e[0].message
                .contains("agent `s`: agent reference `../agents/sum.yaml` cannot be read"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn nested_references_and_bad_schemas_are_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        write(
            tmp.path(),
            "agents/sum.yaml",
            "agents:\n  a:\n    $ref: other.yaml\n",
        );
        let e = inline(SPEC, &tmp.path().join("specs/w.yaml")).expect_err("nested");
        assert!(
            e[0].message.contains("contains another `$ref`"),
            "{}",
            e[0].message
        );
        write(
            tmp.path(),
            "agents/sum.yaml",
            "agents:\n  a:\n    prompt: p\n    input_schema: in.json\n",
        );
        write(tmp.path(), "agents/in.json", "{not json");
        let e = inline(SPEC, &tmp.path().join("specs/w.yaml")).expect_err("schema");
        assert!(
            e[0].message.contains("the input_schema `in.json`"),
            "{}",
            e[0].message
        );
        write(
            tmp.path(),
            "agents/sum.yaml",
            "agents:\n  a:\n    prompt: p\n  b:\n    prompt: q\n",
        );
        let e = inline(SPEC, &tmp.path().join("specs/w.yaml")).expect_err("two");
        assert!(
            e[0].message.contains("exactly one agent"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn text_without_references_is_untouched() {
        let t = "version: 0\nagents:\n  a:\n    prompt: hi\n";
        assert!(matches!(
            inline(t, Path::new("x.yaml")),
            Ok(Cow::Borrowed(_))
        ));
    }
}
