//! strands-cli's just-in-time retrieval tools, `grep`, `head`, `tail` and
//! `search`: look at part of a text file instead of reading all of it.
//!
//! They take strands-cli's arguments and answer in its format (`Found 2
//! match(es) in notes.md:` …, line numbers as `   3 | text`, `>>>match<<<`
//! highlights), with one difference on purpose: paths are relative to the
//! workspace and opened through the same handle as the file tools
//! (`super::fs::open_file`), so absolute paths, `..` and links that lead out
//! are refused. strands-cli resolves them against its working directory.
//!
//! Regular expressions are Rust's `regex` (linear time: no look-around or
//! back-references, and no pattern can make a search run away). A file
//! whose first 8 KiB hold a NUL byte is binary and refused. `grep` and
//! `search` read at most [`READ_LIMIT`] bytes of a file and say so when the
//! file is longer; results longer than the workflow's output limit are cut.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use cap_std::fs::Dir;
use regex::{Regex, RegexBuilder};
use serde_json::{json, Value};

use super::str_arg;
use super::text::{cut_note, lossy_text, short};
use crate::tools::ToolResult;

/// Bytes of a file `grep` and `search` read, at most.
pub const READ_LIMIT: u64 = 32 << 20;
/// Bytes checked for a NUL to call a file binary.
const BINARY_SNIFF: usize = 8192;
/// Compiled size allowed for a model's pattern.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

fn int_arg(args: &Value, key: &str, default: u64) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn bool_or(args: &Value, key: &str, default: bool) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(default)
}

fn path_prop() -> Value {
    json!({"type": "string", "description": "Path of the file, relative to the workspace (e.g. `logs/app.log`)."})
}

pub(super) fn grep_spec() -> (&'static str, Value) {
    (
        "Search for a regex pattern in a file and return matching lines with context. \
         Useful for finding specific content without loading entire files.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression pattern to search for"},
                "path": path_prop(),
                "context_lines": {"type": "integer", "minimum": 0, "description": "Number of context lines before and after each match (default: 3)"},
                "ignore_case": {"type": "boolean", "description": "Perform case-insensitive search (default: false)"},
                "max_matches": {"type": "integer", "minimum": 1, "description": "Maximum number of matches to return (default: 100)"}
            },
            "required": ["pattern", "path"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn head_spec() -> (&'static str, Value) {
    (
        "Read the first N lines from a file. Useful for previewing file contents or reading \
         headers without loading entire files.",
        json!({
            "type": "object",
            "properties": {
                "path": path_prop(),
                "lines": {"type": "integer", "minimum": 1, "description": "Number of lines to read from start (default: 10)"},
                "bytes_limit": {"type": "integer", "minimum": 1, "description": "Maximum bytes to read (default: 1MB, prevents loading huge files)"}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn tail_spec() -> (&'static str, Value) {
    (
        "Read the last N lines from a file. Useful for reading recent log entries or file \
         endings without loading entire files.",
        json!({
            "type": "object",
            "properties": {
                "path": path_prop(),
                "lines": {"type": "integer", "minimum": 1, "description": "Number of lines to read from end (default: 10)"},
                "bytes_limit": {"type": "integer", "minimum": 1, "description": "Maximum bytes to read (default: 10MB)"}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn search_spec() -> (&'static str, Value) {
    (
        "Search for a keyword or regex pattern in a file and return matching lines with line \
         numbers. Simpler than grep - no context lines, just direct matches, each highlighted \
         as >>>match<<<.",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query (plain text or regex)"},
                "path": path_prop(),
                "is_regex": {"type": "boolean", "description": "Treat query as regex pattern (default: false, plain text)"},
                "ignore_case": {"type": "boolean", "description": "Perform case-insensitive search (default: true)"},
                "max_matches": {"type": "integer", "minimum": 1, "description": "Maximum number of matches to return (default: 50)"}
            },
            "required": ["query", "path"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe_grep(args: &Value) -> String {
    format!(
        "search {} for /{}/",
        short(str_arg(args, "path").unwrap_or("?")),
        short(str_arg(args, "pattern").unwrap_or("?"))
    )
}

pub(super) fn describe_search(args: &Value) -> String {
    format!(
        "search {} for `{}`",
        short(str_arg(args, "path").unwrap_or("?")),
        short(str_arg(args, "query").unwrap_or("?"))
    )
}

pub(super) fn describe_head(args: &Value, tail: bool) -> String {
    let n = int_arg(args, "lines", 10);
    let which = if tail { "last" } else { "first" };
    format!(
        "read the {which} {n} lines of {}",
        short(str_arg(args, "path").unwrap_or("?"))
    )
}

/// `text`, cut to `max` bytes with a note saying how much was cut.
pub(super) fn fit(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut out = lossy_text(&text.as_bytes()[..max], true);
    out.push_str("\n\n");
    out.push_str(&cut_note("result", max, text.len() as u64, true));
    out
}

/// Opens `raw` and refuses binary files; `what` says what could not be
/// done with one ("search", "read as text").
fn open_text(dir: &Dir, raw: &str, what: &str) -> Result<(String, cap_std::fs::File), String> {
    let (shown, mut file) = super::fs::open_file(dir, raw)?;
    let mut head = Vec::with_capacity(BINARY_SNIFF);
    let sniffed = (&mut file)
        .take(BINARY_SNIFF as u64)
        .read_to_end(&mut head)
        .and_then(|_| file.seek(SeekFrom::Start(0)));
    if let Err(e) = sniffed {
        return Err(format!("Failed to read file `{shown}`: {e}"));
    }
    if head.contains(&0) {
        return Err(format!("Binary file detected (cannot {what}): {shown}"));
    }
    Ok((shown, file))
}

/// The file's lines (at most [`READ_LIMIT`] bytes of it) and whether it was
/// longer.
fn read_lines(file: cap_std::fs::File, shown: &str) -> Result<(Vec<String>, bool), String> {
    let mut bytes = Vec::new();
    file.take(READ_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("Failed to read file `{shown}`: {e}"))?;
    let longer = bytes.len() as u64 > READ_LIMIT;
    bytes.truncate(READ_LIMIT as usize);
    let text = lossy_text(&bytes, longer);
    Ok((text.lines().map(str::to_string).collect(), longer))
}

fn compile(pattern: &str, ignore_case: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("Invalid regex pattern: {e}"))
}

fn longer_note(longer: bool) -> &'static str {
    if longer {
        "\n\n[only the first 32 MB of the file were searched]"
    } else {
        ""
    }
}

pub(super) fn grep(dir: &Dir, args: &Value, max_out: usize) -> ToolResult {
    let pattern = str_arg(args, "pattern").unwrap_or_default();
    let path = str_arg(args, "path").unwrap_or_default();
    if pattern.is_empty() {
        return ToolResult::error("No search pattern provided");
    }
    if path.is_empty() {
        return ToolResult::error("No file path provided");
    }
    let context = int_arg(args, "context_lines", 3) as usize;
    let max_matches = int_arg(args, "max_matches", 100).max(1) as usize;
    let re = match compile(pattern, bool_or(args, "ignore_case", false)) {
        Ok(r) => r,
        Err(e) => return ToolResult::error(e),
    };
    let (shown, file) = match open_text(dir, path, "search") {
        Ok(f) => f,
        Err(e) => return ToolResult::error(e),
    };
    let (lines, longer) = match read_lines(file, &shown) {
        Ok(l) => l,
        Err(e) => return ToolResult::error(e),
    };
    let matches: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, _)| i + 1)
        .take(max_matches)
        .collect();
    if matches.is_empty() {
        return ToolResult::ok(format!(
            "No matches found for pattern '{pattern}' in {shown}{}",
            longer_note(longer)
        ));
    }
    let mut out = vec![format!("Found {} match(es) in {shown}:\n", matches.len())];
    for &m in &matches {
        let start = m.saturating_sub(context).max(1);
        let end = (m + context).min(lines.len());
        out.push(format!("\n--- Match at line {m} ---"));
        for n in start..=end {
            let prefix = if n == m { ">" } else { " " };
            out.push(format!("{prefix} {n:4} | {}", lines[n - 1].trim_end()));
        }
    }
    if matches.len() >= max_matches {
        out.push(format!("\n(Showing first {max_matches} matches only)"));
    }
    ToolResult::ok(fit(out.join("\n") + longer_note(longer), max_out))
}

pub(super) fn search(dir: &Dir, args: &Value, max_out: usize) -> ToolResult {
    let query = str_arg(args, "query").unwrap_or_default();
    let path = str_arg(args, "path").unwrap_or_default();
    if query.is_empty() {
        return ToolResult::error("No search query provided");
    }
    if path.is_empty() {
        return ToolResult::error("No file path provided");
    }
    let max_matches = int_arg(args, "max_matches", 50).max(1) as usize;
    let pattern = if bool_or(args, "is_regex", false) {
        query.to_string()
    } else {
        regex::escape(query)
    };
    let re = match compile(&pattern, bool_or(args, "ignore_case", true)) {
        Ok(r) => r,
        Err(e) => return ToolResult::error(e),
    };
    let (shown, file) = match open_text(dir, path, "search") {
        Ok(f) => f,
        Err(e) => return ToolResult::error(e),
    };
    let (lines, longer) = match read_lines(file, &shown) {
        Ok(l) => l,
        Err(e) => return ToolResult::error(e),
    };
    let matches: Vec<(usize, &String)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, l)| (i + 1, l))
        .take(max_matches)
        .collect();
    if matches.is_empty() {
        return ToolResult::ok(format!(
            "No matches found for '{query}' in {shown}{}",
            longer_note(longer)
        ));
    }
    let mut out = vec![format!(
        "Found {} match(es) for '{query}' in {shown}:\n",
        matches.len()
    )];
    for (n, line) in &matches {
        let lit = re.replace_all(line.trim_end(), ">>>$0<<<");
        out.push(format!("{n:4} | {lit}"));
    }
    if matches.len() >= max_matches {
        out.push(format!("\n(Showing first {max_matches} matches only)"));
    }
    ToolResult::ok(fit(out.join("\n") + longer_note(longer), max_out))
}

/// `head` (`tail: false`) and `tail`: lines are read from the start until
/// `bytes_limit` bytes have been read, as strands-cli reads them.
pub(super) fn head_or_tail(dir: &Dir, args: &Value, tail: bool, max_out: usize) -> ToolResult {
    let path = str_arg(args, "path").unwrap_or_default();
    if path.is_empty() {
        return ToolResult::error("No file path provided");
    }
    let wanted = int_arg(args, "lines", 10);
    if wanted < 1 {
        return ToolResult::error("Number of lines must be at least 1");
    }
    let wanted = wanted as usize;
    let default_limit = if tail { 10 << 20 } else { 1 << 20 };
    let bytes_limit = int_arg(args, "bytes_limit", default_limit);
    let (shown, file) = match open_text(dir, path, "read as text") {
        Ok(f) => f,
        Err(e) => return ToolResult::error(e),
    };
    let mut reader = BufReader::new(file);
    // (line number, text), at most `wanted` of them.
    let mut kept: std::collections::VecDeque<(usize, String)> = Default::default();
    let mut read: u64 = 0;
    let mut truncated = false;
    let mut number = 0usize;
    let mut buf = Vec::new();
    loop {
        if !tail && kept.len() >= wanted {
            break;
        }
        buf.clear();
        // A line longer than what may be shown is cut while it is read.
        let got = match (&mut reader)
            .take(bytes_limit.saturating_sub(read) + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(n) => n as u64,
            Err(e) => return ToolResult::error(format!("Failed to read file `{shown}`: {e}")),
        };
        if got == 0 {
            break;
        }
        if read + got > bytes_limit {
            truncated = true;
            break;
        }
        read += got;
        number += 1;
        let text = String::from_utf8_lossy(&buf);
        kept.push_back((number, text.trim_end().to_string()));
        if tail && kept.len() > wanted {
            kept.pop_front();
        }
    }
    if kept.is_empty() && !truncated {
        return ToolResult::ok(format!("File is empty: {shown}"));
    }
    let which = if tail { "Last" } else { "First" };
    let mut out = vec![format!("{which} {} line(s) from {shown}:\n", kept.len())];
    if tail && truncated {
        out.push(format!(
            "[Note: File truncated at {bytes_limit} bytes limit]\n"
        ));
    }
    for (n, line) in &kept {
        out.push(format!("{n:4} | {line}"));
    }
    if !tail && truncated {
        out.push(format!(
            "\n[Truncated: byte limit ({bytes_limit} bytes) reached]"
        ));
    }
    ToolResult::ok(fit(out.join("\n"), max_out))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fixture, outside_untouched};
    use super::super::Builtin;
    use serde_json::json;
    use std::fs;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[tokio::test]
    async fn grep_shows_matches_with_context() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("src")).expect("ws");
        fs::write(
            f.ws().join("src/app.py"),
            "import os\n\nclass Alpha:\n    pass\n\nclass Beta:\n    pass\n",
        )
        .expect("write");
        let r = call(
            Builtin::Grep,
            json!({"pattern": "^class ", "path": "src/app.py", "context_lines": 1}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(
            r.content,
            "Found 2 match(es) in src/app.py:\n\n\n--- Match at line 3 ---\n     2 | \n>    3 | class Alpha:\n     4 |     pass\n\n--- Match at line 6 ---\n     5 | \n>    6 | class Beta:\n     7 |     pass"
        );
        let r = call(
            Builtin::Grep,
            json!({"pattern": "ALPHA", "path": "src/app.py", "ignore_case": true, "context_lines": 0, "max_matches": 1}),
            &f.env,
        )
        .await;
        assert!(
            r.content
                .ends_with(">    3 | class Alpha:\n\n(Showing first 1 matches only)"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::Grep,
            json!({"pattern": "zzz", "path": "src/app.py"}),
            &f.env,
        )
        .await;
        assert_eq!(
            r.content,
            "No matches found for pattern 'zzz' in src/app.py"
        );
        let r = call(
            Builtin::Grep,
            json!({"pattern": "(", "path": "src/app.py"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.starts_with("Invalid regex pattern"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn search_highlights_literal_or_regex_matches() {
        let f = fixture();
        fs::create_dir_all(f.ws()).expect("ws");
        fs::write(f.ws().join("n.md"), "TODO: a.b\nnothing\ntodo later (x)\n").expect("w");
        let r = call(
            Builtin::Search,
            json!({"query": "todo", "path": "n.md"}),
            &f.env,
        )
        .await;
        assert_eq!(
            r.content,
            "Found 2 match(es) for 'todo' in n.md:\n\n   1 | >>>TODO<<<: a.b\n   3 | >>>todo<<< later (x)"
        );
        // Plain text is literal: `.` and `(` are not regex syntax.
        let r = call(
            Builtin::Search,
            json!({"query": "(x)", "path": "n.md"}),
            &f.env,
        )
        .await;
        assert!(
            r.content.contains("   3 | todo later >>>(x)<<<"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::Search,
            json!({"query": "a.b", "path": "n.md", "is_regex": true, "ignore_case": false}),
            &f.env,
        )
        .await;
        assert!(
            r.content.contains("   1 | TODO: >>>a.b<<<"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn head_and_tail_number_lines() {
        let f = fixture();
        fs::create_dir_all(f.ws()).expect("ws");
        fs::write(f.ws().join("log.txt"), numbered(30)).expect("w");
        let r = call(
            Builtin::Head,
            json!({"path": "log.txt", "lines": 2}),
            &f.env,
        )
        .await;
        assert_eq!(
            r.content,
            "First 2 line(s) from log.txt:\n\n   1 | line 1\n   2 | line 2"
        );
        let r = call(
            Builtin::Tail,
            json!({"path": "log.txt", "lines": 2}),
            &f.env,
        )
        .await;
        assert_eq!(
            r.content,
            "Last 2 line(s) from log.txt:\n\n  29 | line 29\n  30 | line 30"
        );
        // A byte limit stops reading, and says so.
        let r = call(
            Builtin::Head,
            json!({"path": "log.txt", "lines": 5, "bytes_limit": 15}),
            &f.env,
        )
        .await;
        assert_eq!(
            r.content,
            "First 2 line(s) from log.txt:\n\n   1 | line 1\n   2 | line 2\n\n[Truncated: byte limit (15 bytes) reached]"
        );
        let r = call(
            Builtin::Tail,
            json!({"path": "log.txt", "lines": 1, "bytes_limit": 15}),
            &f.env,
        )
        .await;
        assert!(
            r.content
                .contains("[Note: File truncated at 15 bytes limit]\n\n   2 | line 2"),
            "{}",
            r.content
        );
        fs::write(f.ws().join("empty.txt"), "").expect("w");
        let r = call(Builtin::Tail, json!({"path": "empty.txt"}), &f.env).await;
        assert_eq!(r.content, "File is empty: empty.txt");
    }

    #[tokio::test]
    async fn reading_tools_stay_in_the_workspace() {
        let f = fixture();
        fs::create_dir_all(f.ws()).expect("ws");
        std::os::unix::fs::symlink(f.base.join("outside/secret.txt"), f.ws().join("abs-link"))
            .expect("link");
        std::os::unix::fs::symlink("../outside/secret.txt", f.ws().join("rel-link")).expect("link");
        let secret = f.base.join("outside/secret.txt").display().to_string();
        for path in [
            secret.as_str(),
            "../outside/secret.txt",
            "abs-link",
            "rel-link",
        ] {
            for (b, args) in [
                (Builtin::Grep, json!({"pattern": "secret", "path": path})),
                (Builtin::Search, json!({"query": "secret", "path": path})),
                (Builtin::Head, json!({"path": path})),
                (Builtin::Tail, json!({"path": path})),
            ] {
                let r = call(b, args, &f.env).await;
                assert!(r.is_error, "{b:?} {path}: {}", r.content);
                assert!(r.content.contains("refused"), "{b:?} {path}: {}", r.content);
                assert!(!r.content.contains("top secret"), "{}", r.content);
            }
        }
        outside_untouched(&f);
    }

    #[tokio::test]
    async fn binary_missing_and_directories_are_errors() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("dir")).expect("ws");
        fs::write(f.ws().join("bin"), b"ab\0cd").expect("w");
        let r = call(Builtin::Head, json!({"path": "bin"}), &f.env).await;
        assert_eq!(r.content, "Binary file detected (cannot read as text): bin");
        let r = call(
            Builtin::Grep,
            json!({"pattern": "a", "path": "bin"}),
            &f.env,
        )
        .await;
        assert_eq!(r.content, "Binary file detected (cannot search): bin");
        let r = call(Builtin::Tail, json!({"path": "nope.txt"}), &f.env).await;
        assert!(
            r.is_error && r.content.starts_with("File not found"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::Search,
            json!({"query": "x", "path": "dir"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.starts_with("Path is not a file"),
            "{}",
            r.content
        );
    }

    #[test]
    fn long_results_are_cut() {
        let out = super::fit("x".repeat(50), 10);
        assert!(out.starts_with("xxxxxxxxxx\n\n[result cut"), "{out}");
    }
}
