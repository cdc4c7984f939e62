//! The crate's modules form layers, and this test keeps them so: every
//! `crate::…` path in a module's code (tests included; comments are not
//! code, string literals are) may only name a module of a lower layer. A
//! module needing one that needs it back — a cycle — fails here, naming
//! the file and the line.
//!
//! From the bottom: `error`, `clock`, `audit`, `template`, `retry`, `http` (leaves) →
//! `model` (the durable data and the answer rule) → `traces` (span names,
//! a run's trace) → `provider` (models' wire formats) → `spec` (load and
//! validate) → `config` (settings read
//! once) → `gate` (who may answer,
//! what an answer means) → `tools` → `channel` (the "ask a human" seam) →
//! `store` (the seam over sled) → `engine` (run, intake, timers) →
//! `webhook` (events posted from the store's outbox) → `hub` (the
//! service's core: drives, timers, starts, answers, and what the doors
//! share) → the doors: `api` (HTTP for code), `web` (the browser inbox),
//! `slack` (a room off the channel hall), `teams`, `email`, `amqp` (the
//! queue room) →
//! `serve` (composes the service) → `cli`.
//!
//! Doors sit side by side, not on each other: a door uses the hub and what
//! is below it, never another door, and the hub uses no door (nor `serve`
//! or `cli`). What two doors need alike moves down into the hub. A door
//! never names the engine or the store: every answer goes in through the
//! hub's one entry (`hub::door`), and what a door reads, it reads through
//! the hub.
//!
//! And a module says what it takes from its parent: no `use super::*`
//! outside tests, so its imports list what it depends on.
//!
//! Inside a layer, files do not go round in circles: no file needs, directly
//! or through others, a file that needs it back (every strongly connected
//! set of files fails, named with the lines that close it). A file *needs*
//! another when its code names an item the other defines: by `use`
//! (`crate::…`, `super::…`, `self::…`, a submodule's name, a name another
//! `use` brought in) or by a path in code (`super::home::opened(…)`),
//! followed through `use`s and re-exports to the file that defines the
//! item (`super::X`, re-exported by `foo/mod.rs` from `foo/x.rs`, is a need
//! of `foo/x.rs`). What is not a need:
//!
//! - the module tree: declaring a submodule (`mod bar;`), and importing a
//!   module's name alone (`use super::blocks;` — the paths through it are
//!   the needs);
//! - a re-export (`pub use bar::X;`) the file's own code does not use: it
//!   passes a name through;
//! - what a file takes from the files of the modules it is inside (`super::X`
//!   defined in `foo.rs` or `foo/mod.rs`, `crate::Result`): a submodule is
//!   written inside them and sees even their private items, as an inner
//!   scope sees an outer one. The other way round — a module's file using
//!   its submodules' items — is a need. So `foo.rs` and `foo/bar.rs` are not
//!   a circle by themselves (the module's face and one of its parts, the
//!   face built on its parts as a factory or a router is); two files neither
//!   of which is inside the other, each needing the other, are.
//! - test code: an inline `#[cfg(test)] mod …` is a node of its own
//!   (`file (tests)`), and a `#[cfg(test)] mod x;` file is test code; tests
//!   need what they test and nothing needs them, so they close no circle
//!   with the code.

use std::path::Path;

const LAYERS: &[&str] = &[
    "error", "clock", "audit", "template", "retry", "http", "model", "traces", "provider", "spec",
    "config", "gate", "tools", "channel", "store", "engine", "webhook", "hub", "api", "web",
    "slack", "teams", "email", "amqp", "mcp", "serve", "cli",
];

/// The ways in from outside, each off the hub; none may use another.
const DOORS: &[&str] = &["slack", "teams", "web", "api", "email", "amqp", "mcp"];

/// What only the hub reaches: a door hands its answer to the hub (one
/// way in, `hub::door`) and reads through it, never calling the engine or
/// the store itself.
const BEHIND_THE_HUB: &[&str] = &["engine", "store"];

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
    scrub(text, false)
}

/// [`strip_comments`], and with `blank_literals` string and char literals
/// blanked too (spaces, newlines kept): what is left is names and
/// punctuation, for reading paths.
fn scrub(text: &str, blank_literals: bool) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Copies the literal c[from..to] to `out`, or blanks it.
    let keep = |out: &mut String, from: usize, to: usize| {
        let literal = &c[from..to.min(c.len())];
        if blank_literals {
            out.extend(
                literal
                    .iter()
                    .map(|&ch| if ch == '\n' { '\n' } else { ' ' }),
            );
        } else {
            out.extend(literal);
        }
    };
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
    let (problems, seen) = layer_problems(&src);
    assert!(seen > 200, "the scan found the crate's paths ({seen})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_door_naming_the_engine_or_the_store_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &src);
    let (before, _) = layer_problems(&src);
    assert!(before.is_empty(), "{}", before.join("\n"));
    for (file, line) in [
        ("slack/decide.rs", "use crate::engine::Accepted;"),
        ("teams/room.rs", "use crate::store::MessageTarget;"),
    ] {
        let path = src.join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, format!("{text}\n{line}\n")).expect("write");
    }
    let (found, _) = layer_problems(&src);
    assert_eq!(found.len(), 2, "{}", found.join("\n"));
    assert!(found[0].starts_with("slack/decide.rs:"), "{}", found[0]);
    assert!(
        found[0].contains("door `slack` uses `engine`"),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("door `teams` uses `store`"),
        "{}",
        found[1]
    );
}

/// Every path in `src` that names a module it may not, and how many
/// paths to the crate's layers the scan read.
fn layer_problems(src: &Path) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(src).expect("under src");
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
                if DOORS.contains(&top.as_str()) && BEHIND_THE_HUB.contains(&name.as_str()) {
                    problems.push(format!(
                        "{at}: door `{top}` uses `{name}`; a door goes through the hub (`hub::door` for answers)"
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
    (problems, seen)
}

/// The module files of `src` that are tests: declared `#[cfg(test)] mod
/// name;` in their parent, with everything in their folder.
fn test_module_files(files: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // A `foo.rs`'s modules are in `foo/`; a `mod.rs`'s or `lib.rs`'s
        // beside it.
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let here = if matches!(stem, "mod" | "lib" | "main") {
            file.parent().expect("a folder").to_path_buf()
        } else {
            file.with_extension("")
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for pair in lines.windows(2) {
            if !pair[0].starts_with("#[cfg(test)]") {
                continue;
            }
            let decl = pair[1]
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                dirs.push(here.join(name));
            }
        }
    }
    files
        .iter()
        .filter(|f| {
            dirs.iter()
                .any(|d| f.starts_with(d) || **f == d.with_extension("rs"))
        })
        .cloned()
        .collect()
}

/// `file:line` of each `use super::*` outside tests: test module files,
/// and what follows a `#[cfg(test)] mod … {` in a file.
fn super_globs(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files.sort();
    let tests = test_module_files(&files);
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !tests.contains(f)) {
        let rel = file.strip_prefix(src).expect("under src");
        let code = strip_comments(&std::fs::read_to_string(file).expect("read source"));
        let lines: Vec<&str> = code.lines().collect();
        // Inside a `#[cfg(test)] mod … {`: its braces still open.
        let mut test_depth = 0i64;
        for (i, line) in lines.iter().enumerate() {
            let line = line.trim();
            let opens_test_mod = i > 0
                && lines[i - 1].trim().starts_with("#[cfg(test)]")
                && line.contains("mod ")
                && line.ends_with('{');
            if test_depth > 0 || opens_test_mod {
                test_depth += line.matches('{').count() as i64;
                test_depth -= line.matches('}').count() as i64;
                continue;
            }
            let glob = line.split_whitespace().collect::<String>();
            if glob.ends_with("usesuper::*;") {
                found.push(format!("src/{}:{}: {line}", rel.display(), i + 1));
            }
        }
    }
    found
}

#[test]
fn modules_name_what_they_take_from_their_parent() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = super_globs(&src);
    assert!(
        found.is_empty(),
        "`use super::*` outside tests hides what a module depends on; import the names \
         it uses (`use super::{{A, B}}`, `use crate::…`):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_glob_rule_finds_a_glob_outside_tests_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("b")).expect("mkdir");
    let write = |f: &str, text: &str| std::fs::write(src.join(f), text).expect("write");
    write("lib.rs", "pub mod a;\n#[cfg(test)]\nmod b;\n");
    write(
        "a.rs",
        "// use super::*;\nuse super::*;\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write("b.rs", "use super::*;\nmod c;\n");
    write("b/c.rs", "use super::*;\n");
    assert_eq!(super_globs(&src), ["src/a.rs:2: use super::*;"]);
}

/// Copies the files of `from` (recursively) into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read a folder").flatten() {
        let (p, q) = (entry.path(), to.join(entry.file_name()));
        if p.is_dir() {
            copy_tree(&p, &q);
        } else {
            std::fs::copy(&p, &q).expect("copy a file");
        }
    }
}

mod cycles;
