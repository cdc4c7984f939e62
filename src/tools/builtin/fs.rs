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
mod tests;
