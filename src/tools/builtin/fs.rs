//! The workspace and the file tools: `file_read`, `file_write`,
//! `list_files` and `delete_files`.
//!
//! File tools are confined to [`ToolEnv::workspace`]: every path argument is
//! relative to it; absolute paths and `..` components are refused, and so is
//! anything that resolves outside the canonical workspace once symbolic
//! links are followed (the deepest existing ancestor of the path is
//! canonicalized, so a link pointing outside, dangling or not, never lets a
//! call escape). Opens add `O_NOFOLLOW` where the platform has it. The
//! checks run right before each operation; they do not defend against a
//! second process swapping directories for links at the same instant.

use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use super::text::{cut_note, human_size, lossy_text, short};
use crate::tools::{ToolEnv, ToolResult};

/// Entries `list_files` returns, at most.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// Runs a file operation on a blocking thread with the canonical workspace.
pub(super) async fn blocking<F>(env: &ToolEnv, op: F) -> ToolResult
where
    F: FnOnce(PathBuf, ToolEnv) -> ToolResult + Send + 'static,
{
    let env = env.clone();
    let task = tokio::task::spawn_blocking(move || match workspace_root(&env.workspace) {
        Ok(root) => op(root, env),
        Err(e) => ToolResult::error(e),
    });
    match task.await {
        Ok(result) => result,
        Err(e) => ToolResult::error(format!("the file operation did not finish: {e}")),
    }
}

/// The workspace, created if missing, canonicalized.
pub(crate) fn workspace_root(workspace: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(workspace)
        .map_err(|e| format!("could not create the workspace directory: {e}"))?;
    fs::canonicalize(workspace).map_err(|e| format!("could not resolve the workspace: {e}"))
}

/// A path argument checked and resolved inside the workspace.
#[derive(Debug, Clone)]
struct Resolved {
    /// The path with every existing symbolic link followed; inside `root`.
    real: PathBuf,
    /// The path's normal components, as given (none for the workspace).
    parts: Vec<PathBuf>,
    /// `a/b.txt` for messages; `.` for the workspace itself.
    shown: String,
}

/// Checks `raw` (relative to the canonical workspace `root`) and resolves
/// it: absolute paths, `..` components and anything that resolves outside
/// `root` once existing symbolic links are followed are refused.
fn resolve(root: &Path, raw: &str) -> Result<Resolved, String> {
    let given = short(raw);
    if raw.contains('\0') {
        return Err(format!("`{given}`: paths cannot contain NUL bytes"));
    }
    let path = Path::new(raw);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(p) => parts.push(PathBuf::from(p)),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "`{given}` is refused: `..` may not be used; paths are relative to the workspace"
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{given}` is refused: absolute paths may not be used; paths are relative to the workspace"
                ))
            }
        }
    }
    let shown = if parts.is_empty() {
        ".".to_string()
    } else {
        parts
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    };

    // The deepest ancestor that exists (a dangling link counts as existing).
    let mut existing = parts.len();
    loop {
        let candidate: PathBuf = parts[..existing]
            .iter()
            .fold(root.to_path_buf(), |p, c| p.join(c));
        if existing == 0 || fs::symlink_metadata(&candidate).is_ok() {
            let canonical = fs::canonicalize(&candidate).map_err(|e| {
                format!("`{shown}` is refused: it could not be resolved inside the workspace ({e})")
            })?;
            let real = parts[existing..].iter().fold(canonical, |p, c| p.join(c));
            if !real.starts_with(root) {
                return Err(format!(
                    "`{shown}` is refused: it resolves outside the workspace"
                ));
            }
            return Ok(Resolved { real, parts, shown });
        }
        existing -= 1;
    }
}

/// Opens for reading without following a final symbolic link.
fn open_read(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    no_follow(&mut options);
    options.open(path)
}

#[cfg(unix)]
fn no_follow(options: &mut fs::OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW);
}

#[cfg(not(unix))]
fn no_follow(_options: &mut fs::OpenOptions) {}

pub(super) fn file_read(root: &Path, raw: &str, max_bytes: usize) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    let meta = match fs::metadata(&target.real) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolResult::error(format!("`{shown}` does not exist"))
        }
        Err(e) => return ToolResult::error(format!("could not read `{shown}`: {e}")),
    };
    if meta.is_dir() {
        return ToolResult::error(format!(
            "`{shown}` is a directory: use list_files to see what it holds"
        ));
    }
    if !meta.is_file() {
        return ToolResult::error(format!("`{shown}` is not a regular file"));
    }
    let mut bytes = Vec::new();
    let read = open_read(&target.real).and_then(|f| {
        let mut limited = f.take(max_bytes as u64 + 1);
        limited.read_to_end(&mut bytes)
    });
    if let Err(e) = read {
        return ToolResult::error(format!("could not read `{shown}`: {e}"));
    }
    let total = meta.len().max(bytes.len() as u64);
    let was_cut = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let mut text = lossy_text(&bytes, was_cut);
    if was_cut {
        text.push_str("\n\n");
        text.push_str(&cut_note("file", bytes.len(), total, true));
    }
    ToolResult::ok(text)
}

pub(super) fn file_write(root: &Path, raw: &str, content: &str, append: bool) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    if target.parts.is_empty() || target.real == root {
        return ToolResult::error("the workspace itself cannot be written to: name a file in it");
    }
    if target.real.is_dir() {
        return ToolResult::error(format!("`{shown}` is a directory"));
    }
    let mut created_dirs = false;
    if let Some(parent) = target.real.parent() {
        if !parent.exists() {
            if let Err(e) = fs::create_dir_all(parent) {
                return ToolResult::error(format!(
                    "could not create the directories for `{shown}`: {e}"
                ));
            }
            created_dirs = true;
        }
    }
    let mut options = fs::OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    no_follow(&mut options);
    let written = options
        .open(&target.real)
        .and_then(|mut f| f.write_all(content.as_bytes()).and_then(|()| f.flush()));
    if let Err(e) = written {
        return ToolResult::error(format!("could not write `{shown}`: {e}"));
    }
    let verb = if append { "appended" } else { "wrote" };
    let size = human_size(content.len() as u64);
    let dirs = if created_dirs {
        " (created missing directories)"
    } else {
        ""
    };
    let exact = if content.len() >= 1024 {
        format!(" ({} bytes)", content.len())
    } else {
        String::new()
    };
    ToolResult::ok(format!("{verb} {size}{exact} to {shown}{dirs}"))
}

/// `rel/path`, with `/` after directories and `@` after symbolic links.
fn entry_name(root: &Path, path: &Path, kind: fs::FileType) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut name = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    if kind.is_symlink() {
        name.push('@');
    } else if kind.is_dir() {
        name.push('/');
    }
    name
}

/// The entries of `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(PathBuf, fs::FileType)>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        entries.push((entry.path(), entry.file_type()?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

pub(super) fn list_files(root: &Path, raw: &str, recursive: bool) -> ToolResult {
    let target = match resolve(root, raw) {
        Ok(t) => t,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &target.shown;
    let meta = match fs::metadata(&target.real) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolResult::error(format!("`{shown}` does not exist"))
        }
        Err(e) => return ToolResult::error(format!("could not list `{shown}`: {e}")),
    };
    if !meta.is_dir() {
        return ToolResult::ok(format!("`{shown}` is a file ({})", human_size(meta.len())));
    }
    let place = if target.real == root {
        "the workspace".to_string()
    } else {
        format!("`{shown}`")
    };
    let mut lines: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut stopped = false;
    let mut symlinks = false;
    // Depth-first, in name order: a directory is listed before its contents.
    let mut stack: Vec<(PathBuf, fs::FileType)> = match sorted_entries(&target.real) {
        Ok(mut e) => {
            e.reverse();
            e
        }
        Err(e) => return ToolResult::error(format!("could not list `{shown}`: {e}")),
    };
    while let Some((path, kind)) = stack.pop() {
        if lines.len() >= MAX_LIST_ENTRIES {
            stopped = true;
            break;
        }
        symlinks |= kind.is_symlink();
        lines.push(entry_name(root, &path, kind));
        if recursive && kind.is_dir() {
            match sorted_entries(&path) {
                Ok(children) => stack.extend(children.into_iter().rev()),
                Err(e) => problems.push(format!(
                    "[could not list `{}`: {e}]",
                    entry_name(root, &path, kind)
                )),
            }
        }
    }
    if lines.is_empty() && problems.is_empty() {
        return ToolResult::ok(format!("{place} is empty"));
    }
    let rec = if recursive { ", recursively" } else { "" };
    let mut out = format!(
        "{} entries in {place}{rec} (paths relative to the workspace):\n",
        lines.len()
    );
    out.push_str(&lines.join("\n"));
    for p in &problems {
        out.push('\n');
        out.push_str(p);
    }
    if symlinks {
        out.push_str("\n[`@` marks a symbolic link; links are not followed]");
    }
    if stopped {
        out.push_str(&format!(
            "\n[listing stopped at {MAX_LIST_ENTRIES} entries: list a subdirectory to see more]"
        ));
    }
    ToolResult::ok(out)
}

/// Deletes one path; `Ok` says what was deleted.
fn delete_one(root: &Path, raw: &str, recursive: bool) -> Result<String, String> {
    let target = resolve(root, raw)?;
    let shown = target.shown.clone();
    if target.parts.is_empty() || target.real == root {
        return Err(format!(
            "`{shown}` is refused: the workspace itself cannot be deleted"
        ));
    }
    // A symbolic link is removed itself, never what it points to. Its
    // directory is resolved first so that the link that is removed is the
    // one inside the workspace.
    let (parent_parts, name) = target.parts.split_at(target.parts.len() - 1);
    let parent_raw = parent_parts
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let parent = resolve(root, &parent_raw)?;
    let lexical = name.iter().fold(parent.real, |p, c| p.join(c));
    let meta = match fs::symlink_metadata(&lexical) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("`{shown}` does not exist"))
        }
        Err(e) => return Err(format!("`{shown}`: {e}")),
    };
    if meta.file_type().is_symlink() {
        fs::remove_file(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
        return Ok(format!("{shown} (symbolic link)"));
    }
    if meta.is_dir() {
        if recursive {
            fs::remove_dir_all(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
            return Ok(format!("{shown}/ (directory and its contents)"));
        }
        return match fs::remove_dir(&lexical) {
            Ok(()) => Ok(format!("{shown}/ (empty directory)")),
            Err(_) if fs::read_dir(&lexical).map(|mut d| d.next().is_some()).unwrap_or(false) => {
                Err(format!(
                    "`{shown}` is a directory that is not empty: pass recursive: true to delete it with its contents"
                ))
            }
            Err(e) => Err(format!("`{shown}`: {e}")),
        };
    }
    fs::remove_file(&lexical).map_err(|e| format!("`{shown}`: {e}"))?;
    Ok(shown)
}

pub(super) fn delete_files(root: &Path, paths: &[String], recursive: bool) -> ToolResult {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for raw in paths {
        match delete_one(root, raw, recursive) {
            Ok(what) => deleted.push(format!("deleted: {what}")),
            Err(why) => failed.push(format!("not deleted: {why}")),
        }
    }
    let mut out = format!("{} of {} deleted", deleted.len(), paths.len());
    for line in deleted.iter().chain(failed.iter()) {
        out.push('\n');
        out.push_str(line);
    }
    if failed.is_empty() {
        ToolResult::ok(out)
    } else {
        ToolResult::error(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fixture, outside_untouched};
    use super::super::Builtin;
    use super::*;
    use serde_json::json;

    // -- files -----------------------------------------------------------

    #[tokio::test]
    async fn write_read_append_and_list() {
        let f = fixture();
        assert!(!f.ws().exists());
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports/q3/summary.md", "content": "hello"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error, "{}", r.content);
        assert_eq!(
            r.content,
            "wrote 5 bytes to reports/q3/summary.md (created missing directories)"
        );
        assert!(f.ws().is_dir(), "the workspace is created");
        let r = call(
            Builtin::FileWrite,
            json!({"path": "./reports/q3/summary.md", "content": " world", "append": true}),
            &f.env,
        )
        .await;
        assert_eq!(r.content, "appended 6 bytes to reports/q3/summary.md");
        let r = call(
            Builtin::FileRead,
            json!({"path": "reports/q3/summary.md"}),
            &f.env,
        )
        .await;
        assert_eq!(r, ToolResult::ok("hello world"));
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports/q3/summary.md", "content": "new"}),
            &f.env,
        )
        .await;
        assert!(!r.is_error);
        assert_eq!(
            fs::read_to_string(f.ws().join("reports/q3/summary.md")).expect("read"),
            "new"
        );
        call(
            Builtin::FileWrite,
            json!({"path": "a.txt", "content": ""}),
            &f.env,
        )
        .await;

        let r = call(Builtin::ListFiles, json!({}), &f.env).await;
        assert!(!r.is_error, "{}", r.content);
        assert!(
            r.content.starts_with("2 entries in the workspace"),
            "{}",
            r.content
        );
        assert!(r.content.ends_with("\na.txt\nreports/"), "{}", r.content);
        let r = call(
            Builtin::ListFiles,
            json!({"path": ".", "recursive": true}),
            &f.env,
        )
        .await;
        assert!(
            r.content
                .ends_with("\na.txt\nreports/\nreports/q3/\nreports/q3/summary.md"),
            "{}",
            r.content
        );
        let r = call(Builtin::ListFiles, json!({"path": "reports"}), &f.env).await;
        assert!(r.content.ends_with("\nreports/q3/"), "{}", r.content);
        let r = call(Builtin::ListFiles, json!({"path": "a.txt"}), &f.env).await;
        assert_eq!(r.content, "`a.txt` is a file (0 bytes)");
        let r = call(Builtin::ListFiles, json!({"path": "nope"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("does not exist"),
            "{}",
            r.content
        );
        let r = call(Builtin::FileRead, json!({"path": "reports"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("directory"),
            "{}",
            r.content
        );
        let r = call(Builtin::FileRead, json!({"path": "missing.txt"}), &f.env).await;
        assert!(
            r.is_error && r.content.contains("does not exist"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::FileWrite,
            json!({"path": "reports", "content": "x"}),
            &f.env,
        )
        .await;
        assert!(
            r.is_error && r.content.contains("directory"),
            "{}",
            r.content
        );
    }

    #[tokio::test]
    async fn file_read_is_cut_to_max_bytes() {
        let f = fixture();
        fs::create_dir_all(f.ws()).expect("ws");
        fs::write(f.ws().join("big.txt"), "b".repeat(5000)).expect("write");
        let r = call(Builtin::FileRead, json!({"path": "big.txt"}), &f.env).await;
        assert!(!r.is_error);
        assert!(r.content.starts_with(&"b".repeat(1000)), "{}", r.content);
        assert!(!r.content.contains(&"b".repeat(1001)));
        assert!(
            r.content
                .ends_with("[file cut: showing the first 1000 of 5000 bytes; 4000 bytes cut]"),
            "{}",
            r.content
        );
        // Invalid UTF-8 is replaced, not refused.
        fs::write(f.ws().join("bin.dat"), [b'o', b'k', 0xff]).expect("write");
        let r = call(Builtin::FileRead, json!({"path": "bin.dat"}), &f.env).await;
        assert_eq!(r, ToolResult::ok("ok\u{fffd}"));
    }

    #[tokio::test]
    async fn listing_stops_at_1000_entries() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("many")).expect("dir");
        for i in 0..1005 {
            fs::write(f.ws().join(format!("many/f{i:04}")), "").expect("file");
        }
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(!r.is_error);
        assert!(
            r.content.starts_with("1000 entries"),
            "{}",
            &r.content[..80]
        );
        assert!(r.content.contains("\nmany/\nmany/f0000\n"));
        assert!(r.content.contains("many/f0998\n"));
        assert!(!r.content.contains("many/f0999"));
        assert!(r
            .content
            .ends_with("[listing stopped at 1000 entries: list a subdirectory to see more]"));
    }

    #[tokio::test]
    async fn delete_files_reports_each_path() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("build/sub")).expect("dirs");
        fs::create_dir_all(f.ws().join("empty")).expect("dirs");
        fs::write(f.ws().join("a.log"), "a").expect("a");
        fs::write(f.ws().join("b.log"), "b").expect("b");
        fs::write(f.ws().join("build/sub/x.o"), "x").expect("x");

        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["a.log", "b.log", "empty"]}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok(
                "3 of 3 deleted\ndeleted: a.log\ndeleted: b.log\ndeleted: empty/ (empty directory)"
            )
        );
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["build", "a.log"]}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("0 of 2 deleted"), "{}", r.content);
        assert!(r.content.contains("pass recursive: true"), "{}", r.content);
        assert!(
            r.content.contains("`a.log` does not exist"),
            "{}",
            r.content
        );
        assert!(f.ws().join("build/sub/x.o").exists());

        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["build"], "recursive": true}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok("1 of 1 deleted\ndeleted: build/ (directory and its contents)")
        );
        assert!(!f.ws().join("build").exists());

        for root in [".", "", "./", "sub/.."] {
            let r = call(
                Builtin::DeleteFiles,
                json!({"paths": [root], "recursive": true}),
                &f.env,
            )
            .await;
            assert!(r.is_error, "{root}: {}", r.content);
            assert!(r.content.contains("refused"), "{root}: {}", r.content);
        }
        assert!(f.ws().is_dir(), "the workspace survives");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_inside_are_fine_and_are_deleted_as_links() {
        let f = fixture();
        fs::create_dir_all(f.ws().join("real")).expect("dir");
        fs::write(f.ws().join("real/data.txt"), "data").expect("file");
        std::os::unix::fs::symlink(f.ws().join("real"), f.ws().join("alias")).expect("link");
        let r = call(Builtin::FileRead, json!({"path": "alias/data.txt"}), &f.env).await;
        assert_eq!(r, ToolResult::ok("data"));
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(
            r.content.contains("\nalias@\nreal/\nreal/data.txt"),
            "{}",
            r.content
        );
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": ["alias"], "recursive": true}),
            &f.env,
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok("1 of 1 deleted\ndeleted: alias (symbolic link)")
        );
        assert!(f.ws().join("real/data.txt").exists(), "the target survives");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn escapes_are_refused_and_touch_nothing() {
        let f = fixture();
        let ws = f.ws();
        fs::create_dir_all(&ws).expect("ws");
        fs::write(ws.join("inside.txt"), "inside").expect("inside");
        let outside = f.base.join("outside");
        std::os::unix::fs::symlink(&outside, ws.join("link_out")).expect("dir link");
        std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link_file"))
            .expect("file link");
        std::os::unix::fs::symlink(outside.join("new.txt"), ws.join("dangling"))
            .expect("dangling link");
        let abs_secret = outside.join("secret.txt").display().to_string();
        let abs_new = outside.join("x.txt").display().to_string();

        let escapes = [
            "../outside/secret.txt",
            "sub/../../outside/secret.txt",
            abs_secret.as_str(),
            "link_out/secret.txt",
            "link_file",
            "link_out",
        ];
        for path in escapes {
            let r = call(Builtin::FileRead, json!({ "path": path }), &f.env).await;
            assert!(r.is_error, "read {path}: {}", r.content);
            assert!(r.content.contains("refused"), "read {path}: {}", r.content);
            assert!(!r.content.contains("top secret"), "read {path}");

            let r = call(Builtin::ListFiles, json!({ "path": path }), &f.env).await;
            assert!(
                r.is_error && r.content.contains("refused"),
                "list {path}: {}",
                r.content
            );
        }
        for path in [
            "../outside/x.txt",
            abs_new.as_str(),
            abs_secret.as_str(),
            "link_out/x.txt",
            "link_out/deeper/x.txt",
            "link_file",
            "dangling",
        ] {
            for append in [false, true] {
                let r = call(
                    Builtin::FileWrite,
                    json!({ "path": path, "content": "pwned", "append": append }),
                    &f.env,
                )
                .await;
                assert!(r.is_error, "write {path}: {}", r.content);
                assert!(r.content.contains("refused"), "write {path}: {}", r.content);
            }
        }
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": escapes, "recursive": true}),
            &f.env,
        )
        .await;
        assert!(r.is_error);
        assert!(r.content.starts_with("0 of 6 deleted"), "{}", r.content);
        assert_eq!(r.content.matches("refused").count(), 6, "{}", r.content);
        let r = call(Builtin::DeleteFiles, json!({"paths": ["dangling"]}), &f.env).await;
        assert!(r.is_error && r.content.contains("refused"), "{}", r.content);

        outside_untouched(&f);
        // The links themselves are still there, and nothing else moved.
        for link in ["link_out", "link_file", "dangling"] {
            assert!(fs::symlink_metadata(ws.join(link))
                .expect(link)
                .is_symlink());
        }
        assert_eq!(
            fs::read_to_string(ws.join("inside.txt")).expect("inside"),
            "inside"
        );
        assert!(!ws.join("sub").exists());
        // Listing the workspace shows the links without following them.
        let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
        assert!(!r.content.contains("secret"), "{}", r.content);
    }
}
