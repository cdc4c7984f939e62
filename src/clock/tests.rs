use super::{Clock, FixedClock, SharedClock, TokioClock};
use chrono::TimeDelta;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[test]
fn a_fixed_clock_moves_only_when_told() {
    let clock = FixedClock::at(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
    clock.advance(TimeDelta::minutes(5));
    assert_eq!(clock.now(), super::test_epoch() + TimeDelta::minutes(5));
    clock.set(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
}

#[test]
fn a_closure_is_a_clock() {
    let at = super::test_epoch();
    let clock: SharedClock = Arc::new(move || at);
    assert_eq!(clock.now(), at);
}

#[tokio::test(start_paused = true)]
async fn a_tokio_clock_follows_paused_time() {
    let clock = TokioClock::starting_at(super::test_epoch());
    assert_eq!(clock.now(), super::test_epoch());
    tokio::time::advance(std::time::Duration::from_secs(90)).await;
    assert_eq!(clock.now(), super::test_epoch() + TimeDelta::seconds(90));
}

/// What reads the system's time of day.
const READS_THE_TIME: [&str; 3] = ["Utc::now", "SystemTime::now", "Local::now"];

/// Files that may read it, and why.
const ALLOWED: [(&str, &str); 3] = [
    ("src/clock.rs", "the process's real clock"),
    ("src/clock/tests.rs", "names what it looks for"),
    (
        "src/retry.rs",
        "a Retry-After HTTP-date is an instant on the server's wall clock (retry_after_value)",
    ),
];

/// Nothing but this module reads the time of day, in the code or in its
/// tests (which use a paused or fixed clock): everything else is handed
/// the process's clock.
#[test]
fn only_the_clock_reads_the_time_of_day() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for top in ["src/lib.rs", "src/main.rs"] {
        scan(root, &root.join(top), &mut found);
    }
    assert!(
        found.is_empty(),
        "these read the time of day instead of the clock they are given \
         (crate::clock; tests: FixedClock or a paused TokioClock):\n{}",
        found.join("\n")
    );
}

/// Scans `file` and the modules it declares, adding `path:line` of each
/// read of the time of day.
fn scan(root: &Path, file: &Path, found: &mut Vec<String>) {
    let shown = file
        .strip_prefix(root)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            found.push(format!("{shown}: unreadable: {e}"));
            return;
        }
    };
    let allowed = ALLOWED.iter().any(|(f, _)| *f == shown);
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if let Some(name) = declared_module(code) {
            match module_file(file, name) {
                Some(child) => scan(root, &child, found),
                None => found.push(format!("{shown}:{}: no file for `mod {name};`", n + 1)),
            }
        }
        if allowed || code.starts_with("//") {
            continue;
        }
        if READS_THE_TIME.iter().any(|r| code.contains(r)) {
            found.push(format!("{shown}:{}: {}", n + 1, code));
        }
    }
}

/// `name` of a line `mod name;` (any visibility).
fn declared_module(code: &str) -> Option<&str> {
    let (before, name) = code.strip_suffix(';')?.split_once("mod ")?;
    let name = name.trim();
    ((before.is_empty() || before.starts_with("pub"))
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// The file of module `name` declared in `parent`.
fn module_file(parent: &Path, name: &str) -> Option<PathBuf> {
    let dir = match parent.file_name().and_then(|f| f.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => parent.parent()?.to_path_buf(),
        _ => parent.with_extension(""),
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[test]
fn module_declarations_are_read() {
    assert_eq!(declared_module("mod tests;"), Some("tests"));
    assert_eq!(declared_module("pub mod clock;"), Some("clock"));
    assert_eq!(declared_module("pub(crate) mod fake;"), Some("fake"));
    assert_eq!(declared_module("mod tests {"), None);
    assert_eq!(declared_module("let x = 1;"), None);
}

#[test]
fn the_scan_follows_modules_and_names_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    };
    write("src/lib.rs", "pub mod a;\n#[cfg(test)]\nmod b;\n");
    write(
        "src/a.rs",
        "// Utc::now() in a comment is fine\nfn f() {\n    let _ = Utc::now();\n}\n",
    );
    write("src/b/mod.rs", "mod tests;\n");
    write("src/b/tests.rs", "\nfn t() { SystemTime::now(); }\n");
    write("src/unused.rs", "fn u() { Utc::now(); }\n");
    let mut found = Vec::new();
    scan(root, &root.join("src/lib.rs"), &mut found);
    assert_eq!(
        found,
        [
            "src/a.rs:3: let _ = Utc::now();",
            "src/b/tests.rs:2: fn t() { SystemTime::now(); }",
        ]
    );
}
