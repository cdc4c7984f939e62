//! The strands-cli compatibility suite: every spec in `tests/specs/compat`
//! is a workflow written in the strands-cli 0.5 "v0" format (one per
//! pattern × gate position), run unchanged but for the provider's host.
//!
//! Each row is validated (`strands validate`, exit 0), then run against a
//! fake OpenAI-compatible server and answered gate by gate — every answer
//! in a new `strands resume` process, so every pause is also a restart —
//! until it ends as the file says. A row's header comments script it:
//!
//! ```text
//! # answers: approve; response:continue; modify:more detail; gate=web_review response:ok
//! # expect: completed            (or rejected)
//! # reply-if critic => {"score": 97, "issues": [], "fixes": []}
//! ```
//!
//! Replies not scripted are one JSON object every pattern can read (a
//! route, a score, a task list), numbered so no two replies are alike; so
//! no two requests may be alike either: a request sent twice means a step
//! ran twice.
//!
//! `tests/specs/compat/invalid/*.yaml` must be refused with exit 3 at the
//! location their `# error: LINE` header names.

use crate::common::{session_id, Behaviour, FakeLlm, Sandbox};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct Row {
    path: PathBuf,
    text: String,
    answers: Vec<String>,
    expect: String,
    replies: Vec<(String, String)>,
}

fn header<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    let tag = format!("# {key}:");
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(&tag))
        .map(str::trim)
        .collect()
}

fn rows(dir: &Path) -> Vec<Row> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read a compat spec");
            let answers = header(&text, "answers")
                .into_iter()
                .flat_map(|l| l.split(';'))
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect();
            let expect = header(&text, "expect")
                .first()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "completed".into());
            let replies = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix("# reply-if "))
                .filter_map(|l| l.split_once(" => "))
                .map(|(n, r)| (n.trim().to_string(), r.trim().to_string()))
                .collect();
            Row {
                path,
                text,
                answers,
                expect,
                replies,
            }
        })
        .collect()
}

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs/compat")
}

/// `approve`, `reject`, `response:TEXT`, `modify:TEXT`, optionally after
/// `gate=ID ` → the resume flags.
fn answer_args(answer: &str) -> Vec<String> {
    let (gate, rest) = match answer.strip_prefix("gate=") {
        Some(r) => {
            let (g, rest) = r.split_once(' ').unwrap_or((r, "approve"));
            (Some(g.to_string()), rest.trim())
        }
        None => (None, answer),
    };
    let mut args: Vec<String> = match rest.split_once(':') {
        Some(("response", t)) => vec!["--response".into(), t.into()],
        Some(("modify", t)) => vec!["--modify".into(), "--feedback".into(), t.into()],
        Some(("reject", t)) => vec!["--reject".into(), "--reason".into(), t.into()],
        _ if rest == "approve" => vec!["--approve".into()],
        _ if rest == "reject" => vec!["--reject".into()],
        other => panic!("unknown compat answer `{other:?}`"),
    };
    if let Some(g) = gate {
        args.extend(["--gate".into(), g]);
    }
    args
}

fn run_row(row: &Row) -> Result<(), String> {
    let name = row
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("spec")
        .to_string();
    let scripted = row.replies.clone();
    let fake = FakeLlm::start_with(Behaviour {
        reply: std::sync::Arc::new(move |n, body: &Value| {
            let system = body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            for (needle, reply) in &scripted {
                if system.contains(needle.as_str()) {
                    return reply.replace("{n}", &n.to_string());
                }
            }
            format!(
                r#"{{"route": "general", "reasoning": "reply {n}", "score": 95, "issues": [], "fixes": [], "tasks": [{{"task": "part one of reply {n}"}}, {{"task": "part two of reply {n}"}}]}}"#
            )
        }),
        ..Behaviour::default()
    });
    let sandbox = Sandbox::new();
    let spec = sandbox.spec(&name, &row.text, &fake);
    let spec = spec.to_str().ok_or("non-utf-8 path")?.to_string();

    let valid = sandbox.strands(&["validate", &spec]);
    if valid.code != 0 {
        return Err(format!("validate exit {}: {}", valid.code, valid.stderr));
    }
    let mut out = sandbox.strands(&["run", &spec, "--json"]);
    let mut answers = row.answers.iter();
    let mut id = None;
    let mut steps = Vec::new();
    while out.code == 19 {
        let v = out.json();
        let sid = id.get_or_insert_with(|| session_id(&v)).clone();
        let Some(answer) = answers.next() else {
            return Err(format!(
                "paused at {} but the row has no answer left: {v:#}",
                v["gate"]["handle"]
            ));
        };
        steps.push(format!("{} ← {answer}", v["gate"]["handle"]));
        let mut args: Vec<String> = vec!["resume".into(), sid.clone()];
        args.extend(answer_args(answer));
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        out = sandbox.strands(&args);
    }
    let code = out.code;
    let v: Value = serde_json::from_str(out.stdout.trim()).map_err(|e| {
        format!(
            "exit {code}, no JSON ({e}) after {steps:?}\n{}\n{}",
            out.stdout, out.stderr
        )
    })?;
    if v["status"] != row.expect.as_str() {
        return Err(format!(
            "expected {} but got {} (exit {code}) after {steps:?}: {v:#}",
            row.expect, v["status"]
        ));
    }
    if let Some(left) = answers.next() {
        return Err(format!("ended before the answer `{left}` was used"));
    }
    // Nothing ran twice: every request differs from every other.
    let mut seen = BTreeSet::new();
    for e in fake.requests() {
        let key = e.body["messages"].to_string();
        if !seen.insert(key.clone()) {
            return Err(format!("the same request was sent twice: {key}"));
        }
    }
    if fake.count() == 0 {
        return Err("no model request at all".into());
    }
    Ok(())
}

#[test]
fn every_row_of_the_compatibility_suite_validates_and_runs_to_its_end() {
    let rows = rows(&compat_dir());
    let patterns: BTreeSet<String> = rows
        .iter()
        .filter_map(|r| {
            r.text
                .lines()
                .skip_while(|l| !l.starts_with("pattern:"))
                .find_map(|l| l.trim().strip_prefix("type:"))
                .map(|t| t.trim().trim_matches('"').to_string())
        })
        .collect();
    for p in [
        "chain",
        "workflow",
        "parallel",
        "routing",
        "evaluator_optimizer",
        "orchestrator_workers",
        "graph",
    ] {
        assert!(
            patterns.contains(p),
            "no compat row for `{p}` (have {patterns:?})"
        );
    }
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            run_row(r)
                .err()
                .map(|e| format!("{}: {e}", r.path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_invalid_row_is_refused_with_exit_3_at_its_line() {
    let dir = compat_dir().join("invalid");
    let rows = rows(&dir);
    assert!(!rows.is_empty(), "no invalid rows in {}", dir.display());
    let fake = FakeLlm::start();
    let sandbox = Sandbox::new();
    for r in rows {
        let name = r.path.file_name().and_then(|n| n.to_str()).expect("name");
        let line = header(&r.text, "error")
            .first()
            .map(|s| s.to_string())
            .unwrap_or_else(|| panic!("{name} has no `# error: LINE` header"));
        let spec = sandbox.spec(name, &r.text, &fake);
        let out = sandbox.strands(&["validate", spec.to_str().expect("utf-8")]);
        assert_eq!(out.code, 3, "{name}: {}{}", out.stdout, out.stderr);
        let all = format!("{}{}", out.stdout, out.stderr);
        let (line, message) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        assert!(
            all.contains(&format!("{name}:{line}:")),
            "{name}: expected a problem at line {line}: {all}"
        );
        assert!(all.contains(message.trim()), "{name}: {all}");
    }
}
