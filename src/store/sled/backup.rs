//! Copies of a sled store that open as a store, and the record of them.
//!
//! Why this exists (issue 23: no store is ever lost silently): a sled
//! store sled can no longer open takes every paused run with it, and the
//! only way back is a copy made while it was sound. A copy is sled's own
//! files as they are once everything written is flushed and synced and
//! nothing writes: `conf`, the log `db`, the finished snapshots
//! (`snap.<LSN>`, never `*.generating`) and `blobs/`. sled opens such a
//! copy as it opens the store after a clean stop.
//!
//! Every backup made is appended to `<store>/backups.log`
//! (`<RFC 3339 time>\t<absolute DEST>`; sled ignores files it does not
//! know), so that the error of a store that no longer opens, and `strands
//! doctor`, can name the way back.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::SledStore;
use crate::error::{Error, Result};

/// The record of backups in a store directory.
pub const LOG: &str = "backups.log";

/// What a copy wrote.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Copied {
    pub files: usize,
    pub bytes: u64,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::io(what, e)
}

/// Whether sled file `name` belongs in a copy.
fn copied(name: &str) -> bool {
    name == "conf"
        || name == "db"
        || name == "blobs"
        || (name.starts_with("snap.") && !super::repair::unfinished_snapshot(name))
}

/// Refuses `dest` unless it does not exist or is an empty directory.
pub fn check_dest(dest: &Path) -> Result<()> {
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::Usage(format!(
                    "{} exists and is not empty; a backup goes into a new or empty directory",
                    dest.display()
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Err(Error::Usage(format!(
            "{} exists and is not a directory",
            dest.display()
        ))),
        Err(e) => Err(Error::io(format!("cannot read {}", dest.display()), e)),
    }
}

/// Copies the sled files of the store at `src` into `dest` (new or
/// empty), each file and directory synced. The caller makes sure nothing
/// writes meanwhile and everything written is flushed.
pub fn copy_files(src: &Path, dest: &Path) -> Result<Copied> {
    check_dest(dest)?;
    std::fs::create_dir_all(dest).map_err(io(format!("cannot create {}", dest.display())))?;
    let mut done = Copied::default();
    copy_dir(src, dest, true, &mut done)?;
    // The new directory's entry in its parent.
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(done)
}

fn copy_dir(src: &Path, dest: &Path, top: bool, done: &mut Copied) -> Result<()> {
    let entries = std::fs::read_dir(src).map_err(io(format!("cannot read {}", src.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("cannot read {}", src.display())))?;
        let name = entry.file_name();
        if top && !copied(&name.to_string_lossy()) {
            continue;
        }
        let from = entry.path();
        let to = dest.join(&name);
        let kind = entry
            .file_type()
            .map_err(io(format!("cannot read {}", from.display())))?;
        if kind.is_dir() {
            std::fs::create_dir_all(&to).map_err(io(format!("cannot create {}", to.display())))?;
            copy_dir(&from, &to, false, done)?;
        } else if kind.is_file() {
            let bytes = match std::fs::copy(&from, &to) {
                Ok(n) => n,
                // An older snapshot sled removed once a newer one was made.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && top => continue,
                Err(e) => {
                    return Err(Error::io(
                        format!("cannot copy {} to {}", from.display(), to.display()),
                        e,
                    ))
                }
            };
            std::fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(io(format!("cannot sync {}", to.display())))?;
            done.files += 1;
            done.bytes += bytes;
        }
    }
    sync_dir(dest)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io(format!("cannot sync {}", dir.display())))
}

/// Appends `dest`, made `at`, to the store's `backups.log`, synced.
pub fn record(store: &Path, dest: &Path, at: chrono::DateTime<chrono::Utc>) -> Result<()> {
    let line = format!(
        "{}\t{}\n",
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        dest.display()
    );
    let path = store.join(LOG);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io(format!("cannot open {}", path.display())))?;
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(io(format!("cannot write {}", path.display())))
}

/// The last backup `backups.log` in `store` names: (when, where).
pub fn last(store: &Path) -> Option<(String, PathBuf)> {
    let text = std::fs::read_to_string(store.join(LOG)).ok()?;
    text.lines().rev().find_map(|l| {
        let (at, dest) = l.split_once('\t')?;
        (!dest.trim().is_empty()).then(|| (at.to_string(), PathBuf::from(dest.trim())))
    })
}

/// The way back from a store that does not open, for its error and
/// `strands doctor`.
pub fn way_back(store: &Path) -> String {
    match last(store) {
        Some((at, dest)) => format!(
            "the last backup is {}, made {at}: to restore, move this store aside and copy the backup in its place, or run with --store {}",
            dest.display(),
            dest.display()
        ),
        None => format!(
            "no backup of it was made (`strands store backup DEST`); keep the directory as it is and run `strands doctor --store {}`",
            store.display()
        ),
    }
}

impl SledStore {
    /// Flushes and syncs the store, then copies it into `dest`. The caller
    /// makes sure no other call on the store runs meanwhile.
    pub fn copy_to(&self, dest: &Path) -> Result<Copied> {
        check_dest(dest)?;
        // No sync (one owed by a call whose slot is already free) may
        // write the log while it is copied.
        let _no_sync = self.sync_lock()?;
        self.db.flush()?;
        self.log.sync_data().map_err(io(format!(
            "cannot sync the session store at {}",
            self.path.display()
        )))?;
        copy_files(&self.path, dest)
    }

    /// Every key of the raw `sessions` tree, decodable or not (`strands
    /// store verify` finds an undecodable record instead of skipping it).
    pub fn session_ids(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for k in self.sessions.iter().keys() {
            out.push(String::from_utf8_lossy(&k?).into_owned());
        }
        Ok(out)
    }

    /// Copies the store, before an upgrade of its format rewrites anything,
    /// to `<store>.before-format-<to>-<YYYYMMDDTHHMMSS>` beside it; where.
    pub(super) fn backup_before_upgrade(&self, to: u32) -> Result<PathBuf> {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store".into());
        let dest = self.path.with_file_name(format!(
            "{name}.before-format-{to}-{}",
            self.clock.now().format("%Y%m%dT%H%M%S")
        ));
        self.copy_to(&dest)?;
        record(&self.path, &dest, self.clock.now())?;
        Ok(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_backup_is_the_last_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(last(dir.path()).is_none());
        assert!(way_back(dir.path()).contains("no backup"));
        let at = crate::clock::test_epoch();
        record(dir.path(), Path::new("/b/one"), at).expect("record");
        record(dir.path(), Path::new("/b/two"), at).expect("record");
        let (_, dest) = last(dir.path()).expect("a backup");
        assert_eq!(dest, PathBuf::from("/b/two"));
        assert!(way_back(dir.path()).contains("--store /b/two"));
    }

    #[test]
    fn a_non_empty_destination_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        check_dest(dir.path()).expect("empty is fine");
        std::fs::write(dir.path().join("x"), b"x").expect("write");
        assert!(check_dest(dir.path()).is_err());
        assert!(copied("snap.00000000000000AB"));
        assert!(!copied("snap.00000000000000AB.generating"));
        assert!(!copied("serve.json"));
        assert!(!copied(LOG));
    }
}
