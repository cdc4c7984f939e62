//! A local check against strands-cli's own example specs, which the project
//! does not ship: `STRANDS_CLI_EXAMPLES=/path/to/strands-cli/examples cargo
//! test --test it strands_cli_examples -- --ignored --nocapture`.
//!
//! Every `*.yaml` there is validated, then run against the fake
//! OpenAI-compatible model (the provider and host rewritten to it, required
//! inputs given a sample value, every pause approved in a new `strands
//! resume` process) in a copy of the examples directory, so `$ref` agents and
//! data files resolve as they do for a user. It prints one line per example
//! and the counts the issue asks for, and fails when an example outside
//! [`OUT_OF_REACH`] does not complete.

use crate::common::{Behaviour, FakeLlm};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Examples that cannot complete for reasons strands-cli shares or that are
/// out of reach (each with why).
const OUT_OF_REACH: &[(&str, &str)] = &[
    (
        "atomic-ref-demo-openai.yaml",
        "references agents/atomic/classify_from_summary, which strands-cli's repository lacks",
    ),
    (
        "customer-support-intake-composite-openai.yaml",
        "references agents/atomic/classify_from_summary, which strands-cli's repository lacks",
    ),
    (
        "evaluator-optimizer-writing-ollama.yaml",
        "a template syntax error (strands-cli refuses it too)",
    ),
    (
        "graph-resume-demo-openai.yaml",
        "a `contains` operator that is not Jinja (strands-cli refuses it too)",
    ),
    (
        "evaluator-optimizer-resume-demo-openai.yaml",
        "an artifact reads `execution_context`, undefined in strands-cli too",
    ),
    (
        "python-exec-demo-openai.yaml",
        "needs Python code execution",
    ),
    (
        "skills-demo.yaml",
        "its data-processor agent needs python_exec",
    ),
    (
        "multi-agent-unsupported.yaml",
        "strands-cli's own negative example",
    ),
    (
        "multi-step-unsupported.yaml",
        "strands-cli's own negative example",
    ),
];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read examples").flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).expect("copy an example file");
        }
    }
}

/// The spec with every provider pointed at the fake.
fn rewrite(text: &str, url: &str) -> String {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let provider = t.strip_prefix("provider:").map(|v| {
            v.split('#')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\''])
        });
        if provider.is_some_and(|p| {
            [
                "openai",
                "ollama",
                "anthropic",
                "bedrock",
                "gemini",
                "azure_openai",
            ]
            .contains(&p)
        }) {
            out.push(format!("{indent}provider: openai"));
        } else if t.starts_with("host:") {
            continue;
        } else if t.starts_with("runtime:") {
            out.push(line.to_string());
            out.push(format!("{indent}  host: \"{url}\""));
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

/// `--var k=v` as the example's usage comment gives them, then a sample for
/// every other required input without a default.
fn vars(text: &str) -> Vec<String> {
    let v: Value = serde_saphyr::from_str(text).unwrap_or(Value::Null);
    let mut out = Vec::new();
    let re = regex::Regex::new(r#"--var\s+([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|\S+)"#)
        .expect("regex");
    let mut seen = std::collections::BTreeSet::new();
    for c in re.captures_iter(text) {
        if seen.insert(c[1].to_string()) {
            out.push("--var".into());
            out.push(format!("{}={}", &c[1], c[2].trim_matches(['"', '\''])));
        }
    }
    if let Some(req) = v["inputs"]["required"].as_object() {
        for (k, def) in req {
            if def.get("default").is_none() && !seen.contains(k) {
                if let Some(first) = def
                    .get("enum")
                    .and_then(|e| e.get(0))
                    .and_then(Value::as_str)
                {
                    out.push("--var".into());
                    out.push(format!("{k}={first}"));
                    continue;
                }
                let sample = match def
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or(def.as_str().unwrap_or("string"))
                {
                    "integer" | "number" => "3".to_string(),
                    "boolean" => "true".to_string(),
                    _ => format!("sample {k}"),
                };
                out.push("--var".into());
                out.push(format!("{k}={sample}"));
            }
        }
    }
    out
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn strands(dir: &Path, store: &Path, fake: &FakeLlm, args: &[String]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_strands"))
        .arg("--store")
        .arg(store)
        .args(["--as", "tester"])
        .args(args)
        .current_dir(dir)
        .env("OPENAI_BASE_URL", &fake.url)
        .env("OPENAI_API_KEY", "sk-test")
        .env("STRANDS_RETRY_BASE_MS", "10")
        .env("STRANDS_LLM_TIMEOUT_SECS", "30")
        .env_remove("STRANDS_STORE")
        .stdin(Stdio::null())
        .output()
        .expect("run strands");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .find(|l| l.contains('✗') || l.starts_with("error"))
        .or_else(|| {
            s.lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with("warning"))
        })
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// `Ok(())` when it completed, else what stopped it.
fn check(dir: &Path, name: &str, fake: &FakeLlm) -> (bool, Result<(), String>) {
    let store = dir.join(format!(".store-{name}"));
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).expect("read example");
    let spec = format!("{name}.fake.yaml");
    std::fs::write(dir.join(&spec), rewrite(&text, &fake.url)).expect("write");
    let valid = strands(dir, &store, fake, &["validate".into(), spec.clone()]);
    if valid.code != 0 {
        return (
            false,
            Err(format!(
                "validate exit {}: {}",
                valid.code,
                first_line(&format!("{}{}", valid.stderr, valid.stdout))
            )),
        );
    }
    // Each example writes its artifacts apart, as separate runs by a user would.
    let mut args = vec![
        "run".to_string(),
        spec,
        "--json".into(),
        "--out".into(),
        format!("out-{name}"),
    ];
    args.extend(vars(&text));
    let mut out = strands(dir, &store, fake, &args);
    // What a user does next: give the inputs the refusal names.
    if out.code == 2 {
        if let Some(names) = out.stderr.split("missing required input").nth(1) {
            let re = regex::Regex::new(r"--var ([A-Za-z_][A-Za-z0-9_]*)=").expect("regex");
            for c in re.captures_iter(names) {
                args.push("--var".into());
                args.push(format!("{}=sample {}", &c[1], &c[1]));
            }
            out = strands(dir, &store, fake, &args);
        }
    }
    let mut rounds = 0;
    while out.code == 19 && rounds < 30 {
        rounds += 1;
        let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
        let Some(id) = v["session_id"].as_str() else {
            return (
                true,
                Err(format!("paused without a session id: {}", out.stdout)),
            );
        };
        out = strands(
            dir,
            &store,
            fake,
            &[
                "resume".into(),
                id.into(),
                "--approve".into(),
                "--json".into(),
            ],
        );
        if out.code == 2 || out.code == 3 {
            out = strands(
                dir,
                &store,
                fake,
                &[
                    "resume".into(),
                    id.into(),
                    "--response".into(),
                    "ok".into(),
                    "--json".into(),
                ],
            );
        }
    }
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap_or(Value::Null);
    if out.code == 0 && v["status"] == "completed" {
        (true, Ok(()))
    } else {
        (
            true,
            Err(format!(
                "run exit {} status {}: {}",
                out.code,
                v["status"],
                first_line(&format!("{}{}", out.stderr, v["error"]))
            )),
        )
    }
}

#[test]
#[ignore = "needs STRANDS_CLI_EXAMPLES: a local copy of strands-cli's examples"]
fn strands_cli_examples_validate_and_complete() {
    let Ok(src) = std::env::var("STRANDS_CLI_EXAMPLES") else {
        panic!("set STRANDS_CLI_EXAMPLES to strands-cli's examples directory");
    };
    let only = std::env::var("STRANDS_CLI_ONLY").ok();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("examples");
    copy_dir(Path::new(&src), &dir);
    let fake = FakeLlm::start_with(Behaviour {
        reply: std::sync::Arc::new(|n, body: &Value| {
            let all = body["messages"].to_string();
            if let Some((_, rest)) = all.rsplit_once("is one of: ") {
                let first: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                return format!(r#"{{"route": "{first}", "reasoning": "reply {n}"}}"#);
            }
            format!(
                r#"{{"route": "general", "reasoning": "reply {n}", "score": 95, "issues": [], "fixes": [], "tasks": [{{"task": "part one of reply {n}"}}, {{"task": "part two of reply {n}"}}]}}"#
            )
        }),
        ..Behaviour::default()
    });
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read examples")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    names.sort();
    let (mut validated, mut completed, mut unexpected) = (0, 0, Vec::new());
    for p in &names {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let (valid, result) = check(&dir, &name, &fake);
        validated += usize::from(valid);
        let why = OUT_OF_REACH
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, w)| *w);
        match (&result, why) {
            (Ok(()), _) => {
                completed += 1;
                println!("ok    {name}");
            }
            (Err(e), Some(w)) => println!("skip  {name}: {w} ({e})"),
            (Err(e), None) => {
                println!("FAIL  {name}: {e}");
                unexpected.push(name.clone());
            }
        }
    }
    println!(
        "\n{} examples: {validated} validate, {completed} complete, {} unexpected failures",
        names.len(),
        unexpected.len()
    );
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}
