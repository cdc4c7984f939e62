//! The workspace and the file tools: `file_read`, `file_write`,
//! `list_files` and `delete_files`.
//!
//! File tools are confined to [`ToolEnv::workspace`]. The workspace is
//! opened once per call as a [`cap_std::fs::Dir`] (the only use of ambient
//! authority here), and every operation — read, write, append, creating
//! parent directories, listing, deleting, metadata — goes through that
//! handle. `cap-std` resolves each path beneath the handle (with
//! `openat2(RESOLVE_BENEATH)` where Linux has it, component by component
//! otherwise), so a path can never leave the workspace: absolute paths,
//! `..` that climbs out, and symbolic links that are absolute or point
//! outside are refused while the path is being opened. The lookups made
//! before an operation only pick the message the model reads; nothing is
//! opened by a path that was checked earlier, so a second process swapping
//! a directory for a link at the same instant gains nothing (the tests
//! race exactly that).
//!
//! On top of that, paths are checked as text first, so that the model gets
//! a clear message: they are relative to the workspace, and `..` and
//! absolute paths are refused outright even when they would land inside.
//! Symbolic links inside the workspace are followed when they are relative
//! and stay inside; an absolute link is refused even when it points into
//! the workspace (the handle cannot tell where the workspace is on the
//! host). Listing shows links without following them. Deleting a link
//! removes the link itself, never what it points to; a link that leads
//! outside or nowhere is refused there too, as every other tool refuses it.
//!
//! This module does not limit how much is written or deleted; the gate in
//! front of `file_write` and `delete_files` does.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, DirEntry, FileType, Metadata, OpenOptions};

use super::text::{cut_note, human_size, lossy_text, short};
use crate::tools::{ToolEnv, ToolResult};

/// Entries `list_files` returns, at most.
pub const MAX_LIST_ENTRIES: usize = 1000;

/// Runs a file operation on a blocking thread with the workspace opened.
pub(super) async fn blocking<F>(env: &ToolEnv, op: F) -> ToolResult
where
    F: FnOnce(&Dir, ToolEnv) -> ToolResult + Send + 'static,
{
    let env = env.clone();
    let task = tokio::task::spawn_blocking(move || match open_workspace(&env.workspace) {
        Ok(dir) => op(&dir, env),
        Err(e) => ToolResult::error(e),
    });
    match task.await {
        Ok(result) => result,
        Err(e) => ToolResult::error(format!("the file operation did not finish: {e}")),
    }
}

/// The workspace, created if missing, canonicalized: where `shell` runs.
pub(crate) fn workspace_root(workspace: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(workspace)
        .map_err(|e| format!("could not create the workspace directory: {e}"))?;
    std::fs::canonicalize(workspace).map_err(|e| format!("could not resolve the workspace: {e}"))
}

/// The workspace, created if missing, opened as the directory every file
/// operation is confined to.
pub(crate) fn open_workspace(workspace: &Path) -> Result<Dir, String> {
    std::fs::create_dir_all(workspace)
        .map_err(|e| format!("could not create the workspace directory: {e}"))?;
    Dir::open_ambient_dir(workspace, ambient_authority())
        .map_err(|e| format!("could not open the workspace: {e}"))
}

/// A path argument, checked as text: relative, without `..`.
#[derive(Debug, Clone)]
struct Rel {
    /// The path's normal components joined; `.` for the workspace itself.
    path: PathBuf,
    /// `a/b.txt` for messages; `.` for the workspace itself.
    shown: String,
}

impl Rel {
    fn is_workspace(&self) -> bool {
        self.path == Path::new(".")
    }

    /// The directory the path is in, unless that is the workspace.
    fn parent(&self) -> Option<&Path> {
        self.path.parent().filter(|p| !p.as_os_str().is_empty())
    }
}

/// Checks `raw`, a path relative to the workspace: NUL bytes, `..`
/// components and absolute paths are refused with a message that says so.
/// Where the path leads is left to the [`Dir`] that opens it.
fn relative(raw: &str) -> Result<Rel, String> {
    let given = short(raw);
    if raw.contains('\0') {
        return Err(format!("`{given}`: paths cannot contain NUL bytes"));
    }
    let mut path = PathBuf::new();
    let mut shown = Vec::new();
    for component in Path::new(raw).components() {
        match component {
            Component::Normal(p) => {
                path.push(p);
                shown.push(p.to_string_lossy().into_owned());
            }
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
    if shown.is_empty() {
        return Ok(Rel {
            path: PathBuf::from("."),
            shown: ".".to_string(),
        });
    }
    Ok(Rel {
        path,
        shown: shown.join("/"),
    })
}

/// Whether `err` is cap-std refusing a path that would leave the workspace
/// (a symbolic link on the way is absolute or climbs out). cap-std reports
/// that as a permission error of its own, with no OS error code; a real
/// `EACCES` carries one.
fn is_escape(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none()
}

/// The refusal for a path that leads outside the workspace.
fn escape_refusal(shown: &str) -> String {
    format!(
        "`{shown}` is refused: it resolves outside the workspace (symbolic links are followed \
         only when they are relative and stay inside it)"
    )
}

/// The refusal for a symbolic link that leads nowhere.
fn unresolved_refusal(shown: &str, err: &io::Error) -> String {
    format!("`{shown}` is refused: it could not be resolved inside the workspace ({err})")
}

/// Whether the last component of `rel` is a symbolic link.
fn is_link(dir: &Dir, rel: &Rel) -> bool {
    dir.symlink_metadata(&rel.path)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false)
}

/// What is at a path once symbolic links are followed, inside the
/// workspace only.
enum Lookup {
    Found(Metadata),
    /// Nothing is there (and the path is not a dangling link).
    Missing,
    /// The path leads outside the workspace or through a dangling link:
    /// the message says which.
    Refused(String),
    /// The lookup failed otherwise (permissions, a file where a directory
    /// should be, ...).
    Failed(io::Error),
}

fn lookup(dir: &Dir, rel: &Rel) -> Lookup {
    match dir.metadata(&rel.path) {
        Ok(meta) => Lookup::Found(meta),
        Err(e) if is_escape(&e) => Lookup::Refused(escape_refusal(&rel.shown)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if is_link(dir, rel) {
                Lookup::Refused(unresolved_refusal(&rel.shown, &e))
            } else {
                Lookup::Missing
            }
        }
        Err(e) => Lookup::Failed(e),
    }
}

/// An I/O error of an operation on `shown`: an escape is a refusal,
/// anything else is ``{failed} `shown`: error``.
fn io_failure(shown: &str, failed: &str, err: &io::Error) -> String {
    if is_escape(err) {
        escape_refusal(shown)
    } else {
        format!("{failed} `{shown}`: {err}")
    }
}

pub(super) fn file_read(dir: &Dir, raw: &str, max_bytes: usize) -> ToolResult {
    let rel = match relative(raw) {
        Ok(r) => r,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &rel.shown;
    let meta = match lookup(dir, &rel) {
        Lookup::Found(m) => m,
        Lookup::Missing => return ToolResult::error(format!("`{shown}` does not exist")),
        Lookup::Refused(why) => return ToolResult::error(why),
        Lookup::Failed(e) => return ToolResult::error(format!("could not read `{shown}`: {e}")),
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
    let read = dir.open(&rel.path).and_then(|f| {
        let mut limited = f.take(max_bytes as u64 + 1);
        limited.read_to_end(&mut bytes)
    });
    if let Err(e) = read {
        return ToolResult::error(io_failure(shown, "could not read", &e));
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

/// Opens the regular file at `raw` (relative to the workspace) for reading,
/// with `file_read`'s checks and messages: its path as shown to the model
/// and the open file. The reading tools `grep`, `head`, `tail` and `search`
/// read through this.
pub(super) fn open_file(dir: &Dir, raw: &str) -> Result<(String, cap_std::fs::File), String> {
    let rel = relative(raw)?;
    let shown = rel.shown.clone();
    let meta = match lookup(dir, &rel) {
        Lookup::Found(m) => m,
        Lookup::Missing => return Err(format!("File not found: `{shown}` does not exist")),
        Lookup::Refused(why) => return Err(why),
        Lookup::Failed(e) => return Err(format!("could not read `{shown}`: {e}")),
    };
    if meta.is_dir() {
        return Err(format!(
            "Path is not a file: `{shown}` is a directory (use list_files to see what it holds)"
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "Path is not a file: `{shown}` is not a regular file"
        ));
    }
    let file = dir
        .open(&rel.path)
        .map_err(|e| io_failure(&shown, "could not read", &e))?;
    Ok((shown, file))
}

pub(super) fn file_write(dir: &Dir, raw: &str, content: &str, append: bool) -> ToolResult {
    let rel = match relative(raw) {
        Ok(r) => r,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &rel.shown;
    if rel.is_workspace() {
        return ToolResult::error("the workspace itself cannot be written to: name a file in it");
    }
    match lookup(dir, &rel) {
        Lookup::Found(meta) if meta.is_dir() => {
            return ToolResult::error(format!("`{shown}` is a directory"))
        }
        Lookup::Refused(why) => return ToolResult::error(why),
        // A new file, or a failure the open below reports.
        Lookup::Found(_) | Lookup::Missing | Lookup::Failed(_) => {}
    }
    let mut created_dirs = false;
    if let Some(parent) = rel.parent() {
        match dir.metadata(parent) {
            Ok(_) => {}
            Err(e) if is_escape(&e) => return ToolResult::error(escape_refusal(shown)),
            Err(_) => {
                if let Err(e) = dir.create_dir_all(parent) {
                    return ToolResult::error(io_failure(
                        shown,
                        "could not create the directories for",
                        &e,
                    ));
                }
                created_dirs = true;
            }
        }
    }
    let mut options = OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    let written = dir
        .open_with(&rel.path, &options)
        .and_then(|mut f| f.write_all(content.as_bytes()).and_then(|()| f.flush()));
    if let Err(e) = written {
        return ToolResult::error(io_failure(shown, "could not write", &e));
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

/// One entry met while listing: its path relative to the workspace, its
/// kind (a symbolic link is a link, not what it points to) and the entry,
/// through which a directory is opened if it is listed in turn.
struct Listed {
    name: String,
    kind: FileType,
    entry: DirEntry,
}

/// `rel/path`, with `/` after directories and `@` after symbolic links.
fn marked(name: &str, kind: FileType) -> String {
    let mut name = name.to_string();
    if kind.is_symlink() {
        name.push('@');
    } else if kind.is_dir() {
        name.push('/');
    }
    name
}

/// The entries of `dir`, whose path relative to the workspace is `prefix`
/// (empty for the workspace itself), sorted by name.
fn sorted_entries(dir: &Dir, prefix: &str) -> io::Result<Vec<Listed>> {
    let mut entries: Vec<(OsString, Listed)> = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let file_name = entry.file_name();
        let shown = file_name.to_string_lossy();
        let name = if prefix.is_empty() {
            shown.into_owned()
        } else {
            format!("{prefix}/{shown}")
        };
        let kind = entry.file_type()?;
        entries.push((file_name, Listed { name, kind, entry }));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries.into_iter().map(|(_, listed)| listed).collect())
}

pub(super) fn list_files(dir: &Dir, raw: &str, recursive: bool) -> ToolResult {
    let rel = match relative(raw) {
        Ok(r) => r,
        Err(e) => return ToolResult::error(e),
    };
    let shown = &rel.shown;
    let meta = match lookup(dir, &rel) {
        Lookup::Found(m) => m,
        Lookup::Missing => return ToolResult::error(format!("`{shown}` does not exist")),
        Lookup::Refused(why) => return ToolResult::error(why),
        Lookup::Failed(e) => return ToolResult::error(format!("could not list `{shown}`: {e}")),
    };
    if !meta.is_dir() {
        return ToolResult::ok(format!("`{shown}` is a file ({})", human_size(meta.len())));
    }
    let (place, prefix) = if rel.is_workspace() {
        ("the workspace".to_string(), "")
    } else {
        (format!("`{shown}`"), shown.as_str())
    };
    let mut lines: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut stopped = false;
    let mut symlinks = false;
    // Depth-first, in name order: a directory is listed before its contents.
    let first = dir
        .open_dir(&rel.path)
        .and_then(|top| sorted_entries(&top, prefix));
    let mut stack: Vec<Listed> = match first {
        Ok(mut e) => {
            e.reverse();
            e
        }
        Err(e) => return ToolResult::error(io_failure(shown, "could not list", &e)),
    };
    while let Some(item) = stack.pop() {
        if lines.len() >= MAX_LIST_ENTRIES {
            stopped = true;
            break;
        }
        symlinks |= item.kind.is_symlink();
        lines.push(marked(&item.name, item.kind));
        if recursive && item.kind.is_dir() {
            let children = item
                .entry
                .open_dir()
                .and_then(|sub| sorted_entries(&sub, &item.name));
            match children {
                Ok(children) => stack.extend(children.into_iter().rev()),
                Err(e) => problems.push(format!(
                    "[could not list `{}`: {e}]",
                    marked(&item.name, item.kind)
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

/// A failed deletion of `shown`: an escape is a refusal.
fn delete_failure(shown: &str, err: &io::Error) -> String {
    if is_escape(err) {
        escape_refusal(shown)
    } else {
        format!("`{shown}`: {err}")
    }
}

/// Deletes one path; `Ok` says what was deleted.
fn delete_one(dir: &Dir, raw: &str, recursive: bool) -> Result<String, String> {
    let rel = relative(raw)?;
    let shown = rel.shown.as_str();
    if rel.is_workspace() {
        return Err(format!(
            "`{shown}` is refused: the workspace itself cannot be deleted"
        ));
    }
    let meta = match dir.symlink_metadata(&rel.path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("`{shown}` does not exist"))
        }
        Err(e) => return Err(delete_failure(shown, &e)),
    };
    if meta.file_type().is_symlink() {
        // A symbolic link is removed itself, never what it points to; one
        // that leads outside the workspace, or nowhere, is refused here as
        // the other file tools refuse it.
        match lookup(dir, &rel) {
            Lookup::Found(_) => {}
            Lookup::Refused(why) => return Err(why),
            Lookup::Missing => {
                let e = io::Error::from(io::ErrorKind::NotFound);
                return Err(unresolved_refusal(shown, &e));
            }
            Lookup::Failed(e) => return Err(unresolved_refusal(shown, &e)),
        }
        dir.remove_file(&rel.path)
            .map_err(|e| delete_failure(shown, &e))?;
        return Ok(format!("{shown} (symbolic link)"));
    }
    if meta.is_dir() {
        if recursive {
            // cap-std removes links found inside as links; it never
            // descends through them.
            dir.remove_dir_all(&rel.path)
                .map_err(|e| delete_failure(shown, &e))?;
            return Ok(format!("{shown}/ (directory and its contents)"));
        }
        return match dir.remove_dir(&rel.path) {
            Ok(()) => Ok(format!("{shown}/ (empty directory)")),
            Err(_)
                if dir
                    .read_dir(&rel.path)
                    .map(|mut d| d.next().is_some())
                    .unwrap_or(false) =>
            {
                Err(format!(
                    "`{shown}` is a directory that is not empty: pass recursive: true to delete it with its contents"
                ))
            }
            Err(e) => Err(delete_failure(shown, &e)),
        };
    }
    dir.remove_file(&rel.path)
        .map_err(|e| delete_failure(shown, &e))?;
    Ok(shown.to_string())
}

pub(super) fn delete_files(dir: &Dir, paths: &[String], recursive: bool) -> ToolResult {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for raw in paths {
        match delete_one(dir, raw, recursive) {
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
