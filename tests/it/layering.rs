//! The crate's modules form layers, and this test keeps them so: every
//! `crate::…` path in a module's source (tests included) may only name a
//! module of a lower layer. A module needing one that needs it back — a
//! cycle — fails here, naming the file and the line.
//!
//! From the bottom: `error`, `audit`, `template`, `retry` (leaves) →
//! `model` (the durable data and the answer rule) → `provider` (models'
//! wire formats) → `spec` (load and validate) → `config` (settings read
//! once) → `gate` (who may answer,
//! what an answer means) → `tools` → `channel` (the "ask a human" seam) →
//! `store` (the seam over sled) → `engine` (run, intake, timers) →
//! `webhook` (events posted from the store's outbox) → `hub` (the
//! service's core: drives, timers, starts, answers) → `api` (HTTP for
//! code) → `web` (the browser inbox) → `slack` (a room off the channel hall) → `serve` (composes the
//! service) → `cli`.

use std::path::Path;

const LAYERS: &[&str] = &[
    "error", "audit", "template", "retry", "model", "provider", "spec", "config", "gate", "tools",
    "channel", "store", "engine", "webhook", "hub", "api", "web", "slack", "serve", "cli",
];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|m| *m == module)
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let p = entry.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_only_use_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_string();
        let Some(own) = rank(&top) else {
            // lib.rs and main.rs sit above every layer.
            assert!(
                matches!(top.as_str(), "lib" | "main"),
                "{} is a top-level module missing from LAYERS",
                rel.display()
            );
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let mut names: Vec<String> = Vec::new();
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + 7..];
                if let Some(group) = rest.strip_prefix('{') {
                    // `use crate::{a, b::c}`
                    let inner = group.split('}').next().unwrap_or_default();
                    names.extend(
                        inner
                            .split(',')
                            .map(|p| p.trim().split("::").next().unwrap_or_default().to_string()),
                    );
                } else {
                    names.push(
                        rest.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect(),
                    );
                }
            }
            for name in names {
                let Some(theirs) = rank(&name) else {
                    continue; // `crate::Result`, `crate::Error` re-exports
                };
                seen += 1;
                if theirs > own {
                    problems.push(format!(
                        "{}:{}: `{top}` uses `{name}`, a layer above it",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(seen > 200, "the scan found the crate's paths ({seen})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
