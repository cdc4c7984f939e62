//! The crate's modules form layers, and this test keeps them so: every
//! `crate::…` path in a module's code (tests included; comments are not
//! code, string literals are) may only name a module of a lower layer. A
//! module needing one that needs it back — a cycle — fails here, naming
//! the file and the line.
//!
//! From the bottom: `error`, `clock`, `audit`, `template`, `retry` (leaves) →
//! `model` (the durable data and the answer rule) → `traces` (span names,
//! a run's trace) → `provider` (models' wire formats) → `spec` (load and
//! validate) → `config` (settings read
//! once) → `gate` (who may answer,
//! what an answer means) → `tools` → `channel` (the "ask a human" seam) →
//! `store` (the seam over sled) → `engine` (run, intake, timers) →
//! `webhook` (events posted from the store's outbox) → `hub` (the
//! service's core: drives, timers, starts, answers, and what the doors
//! share) → the doors: `api` (HTTP for code), `web` (the browser inbox),
//! `slack` (a room off the channel hall), `teams`, `email` →
//! `serve` (composes the service) → `cli`.
//!
//! Doors sit side by side, not on each other: a door uses the hub and what
//! is below it, never another door, and the hub uses no door (nor `serve`
//! or `cli`). What two doors need alike moves down into the hub.

use std::path::Path;

const LAYERS: &[&str] = &[
    "error", "clock", "audit", "template", "retry", "model", "traces", "provider", "spec",
    "config", "gate", "tools", "channel", "store", "engine", "webhook", "hub", "api", "web",
    "slack", "teams", "email", "serve", "cli",
];

/// The ways in from outside, each off the hub; none may use another.
const DOORS: &[&str] = &["slack", "teams", "web", "api", "email"];

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

/// `text` with its comments (`//…` to the end of the line, `/* … */`,
/// nested) blanked and everything else kept, newlines included (so line
/// numbers stay). String literals — plain, byte, raw (`r#"…"#`) — and char
/// literals are code: a `//` or `/*` inside one starts no comment.
fn strip_comments(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Copies c[from..to] to `out`.
    let keep = |out: &mut String, from: usize, to: usize| out.extend(&c[from..to.min(c.len())]);
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied();
        match c[i] {
            '/' if at(1) == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(1) == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            // A raw string: r"…", r#"…"#, br"…" (not the end of a name
            // such as `for"`: the `r` starts a token).
            'r' | 'b'
                if {
                    let starts = i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_');
                    let r = if c[i] == 'b' { 1 } else { 0 };
                    let mut j = i + r;
                    let is_r = c.get(j) == Some(&'r');
                    j += 1;
                    while c.get(j) == Some(&'#') {
                        j += 1;
                    }
                    starts && is_r && c.get(j) == Some(&'"')
                } =>
            {
                let from = i;
                if c[i] == 'b' {
                    i += 1;
                }
                i += 1; // the `r`
                let mut hashes = 0;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                i += 1; // the opening quote
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                keep(&mut out, from, i);
            }
            '"' => {
                let from = i;
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                keep(&mut out, from, i);
            }
            // A char literal ('x', '\n', '\'', '\u{2014}'), not a lifetime
            // ('a, 'static).
            '\'' if at(1) == Some('\\') || (at(1).is_some() && at(2) == Some('\'')) => {
                let from = i;
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                keep(&mut out, from, i);
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

#[test]
fn the_comment_stripper_reads_strings_as_code() {
    let src = "let u = \"http://x\"; // crate::web\n\
               let v = format!(r#\"a//\"b\"#, crate::serve::x); /* crate::slack\n\
               crate::api */ let c = '/'; let d = '\\''; let e: &'static str = \"//\";\n\
               let f = b\"//\"; // crate::teams";
    let code = strip_comments(src);
    assert!(code.contains("\"http://x\""), "{code}");
    assert!(code.contains("r#\"a//\"b\"#, crate::serve::x"), "{code}");
    assert!(code.contains("let c = '/';"), "{code}");
    assert!(code.contains("let e: &'static str = \"//\";"), "{code}");
    assert!(code.contains("let f = b\"//\";"), "{code}");
    for comment in ["crate::web", "crate::slack", "crate::api", "crate::teams"] {
        assert!(
            !code.contains(comment),
            "kept the comment {comment}: {code}"
        );
    }
    assert_eq!(code.lines().count(), src.lines().count(), "{code}");
}

/// The top-level modules `code` names by `crate::…` paths.
fn names_in(code: &str) -> Vec<String> {
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
    names
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
        let code = strip_comments(&text);
        for (n, line) in code.lines().enumerate() {
            for name in names_in(line) {
                let at = format!("{}:{}", rel.display(), n + 1);
                if name != top && DOORS.contains(&top.as_str()) && DOORS.contains(&name.as_str()) {
                    problems.push(format!(
                        "{at}: door `{top}` uses door `{name}`; doors share only through `hub`"
                    ));
                    continue;
                }
                if top == "hub"
                    && (DOORS.contains(&name.as_str()) || name == "serve" || name == "cli")
                {
                    problems.push(format!(
                        "{at}: `hub` uses `{name}`; the hub uses no door, nor `serve` or `cli`"
                    ));
                    continue;
                }
                let Some(theirs) = rank(&name) else {
                    continue; // `crate::Result`, `crate::Error` re-exports
                };
                seen += 1;
                if theirs > own {
                    problems.push(format!("{at}: `{top}` uses `{name}`, a layer above it"));
                }
            }
        }
    }
    assert!(seen > 200, "the scan found the crate's paths ({seen})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
