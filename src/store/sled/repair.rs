//! What a SIGKILL can leave in a sled 0.34.7 directory that sled itself
//! would read as corruption, cleared before sled opens the store.
//!
//! Why this exists (issue 23, `shared/docs/STORE.md`): every open of a
//! store whose log moved on writes a snapshot of sled's page table into
//! `snap.<LSN>.generating`, `sync_all`s it and renames it to `snap.<LSN>`;
//! the rename is the commit. A process killed before the rename leaves the
//! half-written file, and 0.34.7's `get_snapshot_files` skips only names
//! ending in `.in___motion` — so the next open sorts `snap.X.generating`
//! after every finished snapshot, reads it, fails its CRC and returns
//! "Read corrupted data": every session in the store unreachable, for
//! good. Upstream fixed the filter after 0.34.7 (c5763094, never
//! released). The rule here is upstream's: an unfinished snapshot is not a
//! snapshot. Removing it loses nothing — the finished snapshot before it
//! and the log it was made from are untouched until a rename succeeds.
//!
//! The same holds for sled's `conf` (segment size, compression, version),
//! written once when a store is created in two `write` calls and never
//! synced: a kill between them leaves text without its CRC, which sled
//! then fails to parse. Its content follows only from the settings
//! `SledStore::open` always uses, so a `conf` whose CRC does not match is
//! removed and sled writes it again.
//!
//! Nothing is touched unless this process holds the same exclusive lock
//! sled takes on `db`: a live process's snapshot in progress is never
//! removed. What this does not do: repair sled's log — sled's recovery
//! truncates a torn tail itself, and the crash loop (`cargo bench --bench
//! crash_loop`) is the evidence that nothing else needs it.

use fs2::FileExt;
use std::path::{Path, PathBuf};

/// What was cleared, for the log and `strands doctor`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Unfinished snapshots removed.
    pub snapshots: Vec<PathBuf>,
    /// A torn `conf` removed (sled rewrites it).
    pub conf: bool,
}

/// Whether `name` is a snapshot sled had not finished writing.
pub fn unfinished_snapshot(name: &str) -> bool {
    name.starts_with("snap.") && name.ends_with(".generating")
}

/// Clears what a killed process can leave in the sled store at `dir`
/// (see the module doc). Does nothing when another process holds the
/// store, or when the store does not exist yet.
pub fn clear_after_crash(dir: &Path) -> std::io::Result<Cleared> {
    let mut cleared = Cleared::default();
    let db = dir.join("db");
    let lock = match std::fs::OpenOptions::new().read(true).write(true).open(&db) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cleared),
        Err(e) => return Err(e),
    };
    if lock.try_lock_exclusive().is_err() {
        // In use: sled's own open reports it, and the holder's files are
        // its business.
        return Ok(cleared);
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if unfinished_snapshot(&name.to_string_lossy()) {
            std::fs::remove_file(entry.path())?;
            cleared.snapshots.push(entry.path());
        }
    }
    let conf = dir.join("conf");
    if let Ok(bytes) = std::fs::read(&conf) {
        if bytes.len() > 8 && !crc_holds(&bytes) {
            std::fs::remove_file(&conf)?;
            cleared.conf = true;
        }
    }
    if !cleared.snapshots.is_empty() || cleared.conf {
        // The removals are durable before sled reads the directory.
        std::fs::File::open(dir)?.sync_all()?;
    }
    drop(lock);
    Ok(cleared)
}

/// sled's framing of `conf`: the text, then its CRC-32 little-endian.
fn crc_holds(bytes: &[u8]) -> bool {
    let (text, crc) = bytes.split_at(bytes.len() - 4);
    let mut expected = [0u8; 4];
    expected.copy_from_slice(crc);
    crc32fast::hash(text) == u32::from_le_bytes(expected)
}

#[cfg(test)]
mod tests {
    use super::{clear_after_crash, Cleared};
    use fs2::FileExt;

    fn files(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    fn store_with_data() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new()
            .path(dir.path())
            .open()
            .expect("open sled");
        db.insert(b"k", b"v").expect("insert");
        db.flush().expect("flush");
        drop(db);
        released(dir.path());
        // A second open writes a finished snapshot.
        let db = sled::Config::new()
            .path(dir.path())
            .open()
            .expect("reopen sled");
        db.insert(b"k2", b"v2").expect("insert");
        db.flush().expect("flush");
        drop(db);
        released(dir.path());
        dir
    }

    /// Waits (at most 10 s) until no handle holds the store's lock: sled
    /// releases it from a background thread some time after the last
    /// handle is dropped, and the repair leaves a locked store alone.
    fn released(dir: &std::path::Path) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let db = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(dir.join("db"))
                .expect("db");
            if db.try_lock_exclusive().is_ok() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sled still holds its lock 10 s after the last handle was dropped"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Asserts that sled on its own refuses the store at `dir`, and for
    /// what is in it, not because a handle still holds its lock; then
    /// waits for the failed open to let go of the lock.
    fn refused(dir: &std::path::Path, opened: &str) {
        match sled::Config::new().path(dir).open() {
            Ok(_) => panic!("{opened}"),
            Err(e) => assert!(
                !e.to_string().contains("could not acquire lock"),
                "refused for the lock, not for what is in the store: {e}"
            ),
        }
        released(dir);
    }

    #[test]
    fn an_unfinished_snapshot_is_removed_and_the_store_opens_with_its_data() {
        let dir = store_with_data();
        // What a process killed in the middle of writing its snapshot leaves.
        std::fs::write(
            dir.path().join("snap.FFFFFFFFFFFFFFFF.generating"),
            b"half a snap",
        )
        .expect("write");
        // sled 0.34.7 on its own refuses the store: the fault this guards.
        refused(dir.path(), "sled 0.34.7 reads the unfinished snapshot");
        let cleared = clear_after_crash(dir.path()).expect("clear");
        assert_eq!(cleared.snapshots.len(), 1, "{cleared:?}");
        assert!(!files(dir.path()).iter().any(|f| f.ends_with(".generating")));
        let db = sled::Config::new()
            .path(dir.path())
            .open()
            .expect("opens after clearing");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
        assert_eq!(db.get(b"k2").expect("get").as_deref(), Some(&b"v2"[..]));
    }

    #[test]
    fn a_torn_conf_is_removed_and_rewritten_by_sled() {
        let dir = store_with_data();
        let conf = dir.path().join("conf");
        let whole = std::fs::read(&conf).expect("conf");
        // Killed between sled's two writes: the text without its CRC.
        std::fs::write(&conf, &whole[..whole.len() - 4]).expect("tear conf");
        refused(dir.path(), "sled opened a torn conf");
        let cleared = clear_after_crash(dir.path()).expect("clear");
        assert!(cleared.conf);
        let db = sled::Config::new()
            .path(dir.path())
            .open()
            .expect("opens after clearing");
        assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
        drop(db);
        assert_eq!(std::fs::read(&conf).expect("conf"), whole);
    }

    #[test]
    fn a_store_in_use_is_left_alone() {
        let dir = store_with_data();
        let generating = dir.path().join("snap.FFFFFFFFFFFFFFFF.generating");
        std::fs::write(&generating, b"being written").expect("write");
        let holder = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.path().join("db"))
            .expect("db");
        holder.try_lock_exclusive().expect("lock");
        let cleared = clear_after_crash(dir.path()).expect("clear");
        assert_eq!(cleared, Cleared::default());
        assert!(generating.exists(), "another process's snapshot is kept");
    }

    #[test]
    fn a_new_store_is_not_created_here() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cleared = clear_after_crash(dir.path()).expect("clear");
        assert_eq!(cleared, Cleared::default());
        assert!(files(dir.path()).is_empty());
    }
}
