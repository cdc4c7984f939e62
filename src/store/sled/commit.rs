//! Group commit: how a write becomes durable, and why its sync waits
//! outside the slot it wrote in.
//!
//! A sled write is fast (a transaction in memory and sled's log buffers);
//! making it durable is not (a flush and an `fdatasync`, ~4 ms on this
//! machine's disk whatever they carry). So callers queue for a sync and one
//! sync covers every write committed before it began ([`SledStore::sync`]).
//!
//! A sync can only cover the writes that were made while the last one ran.
//! `strands serve` runs sled calls in a few slots (one per core:
//! [`super::backend`]); a call that synced inside its slot kept the slot
//! through the whole `fdatasync`, so at most one write per slot waited on
//! each sync and a burst (a thousand approval requests from the queue) was
//! written two sessions per sync. Now a call made through
//! [`super::backend`]'s slots runs [`deferring`]: its `sync()` only notes
//! that one is owed (and its `announce()` keeps the events for after it),
//! the slot is freed for the next writer, and then [`SledStore::settle`]
//! waits for a sync that covers it — so the writes of every caller queued
//! meanwhile share it. The caller still hears `Ok` only once what it wrote
//! is on stable storage, and subscribers hear of its events only then.
//!
//! Anything that copies the store's files holds the sync lock too
//! ([`SledStore::copy_to`]): a sync after the slot must not write the log
//! while a backup reads it.

use std::cell::Cell;

use super::SledStore;
use crate::error::{Error, Result};

/// What a deferring call still owes once its slot is freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Owed {
    /// Its writes asked for a sync.
    sync: bool,
    /// The last event they wrote, to announce after that sync.
    last: Option<u64>,
}

thread_local! {
    /// Set while a deferring call runs on this thread.
    static DEFERRED: Cell<Option<Owed>> = const { Cell::new(None) };
}

/// Puts back what was deferred before, even if the call panicked.
struct Restore(Option<Owed>);

impl Drop for Restore {
    fn drop(&mut self) {
        DEFERRED.set(self.0);
    }
}

/// Runs `f` with its syncs owed instead of made; returns what it returned
/// and what it owes (`None`: it wrote nothing that needs a sync).
pub(super) fn deferring<T>(f: impl FnOnce() -> T) -> (T, Option<Owed>) {
    let restore = Restore(DEFERRED.replace(Some(Owed::default())));
    let out = f();
    let owed = DEFERRED.get().filter(|o| o.sync);
    drop(restore);
    (out, owed)
}

impl SledStore {
    /// Makes everything written so far durable, once per durable state
    /// change. sled's flush writes its log buffers and asks for each with
    /// `sync_file_range` — the data reaches the device, but neither past
    /// a volatile disk cache nor with the file's new size (sled appends
    /// segments), so a power loss could still take the last seconds of
    /// answers. `fdatasync` on the log file then gets both onto stable
    /// storage (ext4 commits the size and sends a cache flush).
    /// Events of writes made before without a sync are announced now.
    ///
    /// Inside [`deferring`], the sync is only owed: see the module doc.
    pub(super) fn sync(&self) -> Result<()> {
        let deferred = DEFERRED.get();
        if let Some(owed) = deferred {
            DEFERRED.set(Some(Owed { sync: true, ..owed }));
            return Ok(());
        }
        self.sync_now()
    }

    /// Whether `last`, the last event of a write just synced, is to be
    /// announced later (after the sync a deferring call owes): then kept.
    pub(super) fn defer_announce(&self, last: Option<u64>) -> bool {
        match DEFERRED.get() {
            Some(owed) if owed.sync => {
                DEFERRED.set(Some(Owed {
                    last: owed.last.max(last),
                    ..owed
                }));
                true
            }
            _ => false,
        }
    }

    /// Pays what a deferring call owes, outside its slot: a sync covering
    /// its writes, then its events announced.
    pub(super) fn settle(&self, owed: Owed) -> Result<()> {
        // Held before the ticket is taken: a sync that covers the ticket
        // announces them.
        self.hold(owed.last);
        self.sync_now()
    }

    /// Group commit: on this machine's disk one `fdatasync` costs ~4 ms
    /// whatever it carries, so callers queue and a sync covers every write
    /// committed before it began — a caller whose write an earlier sync
    /// already covered returns without one.
    fn sync_now(&self) -> Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        // Taken after the caller's write committed.
        let ticket = self.sync_tickets.fetch_add(1, SeqCst) + 1;
        let mut synced = self.sync_lock()?;
        if *synced >= ticket {
            return Ok(());
        }
        let upto = self.sync_tickets.load(SeqCst);
        // Unsynced writes' events committed before this flush: synced by it.
        let held = self.held_events.swap(0, SeqCst);
        let done = self.db.flush().map_err(Error::from).and_then(|_| {
            self.log.sync_data().map_err(|e| {
                Error::io(
                    format!("cannot sync the session store at {}", self.path.display()),
                    e,
                )
            })
        });
        if let Err(e) = done {
            self.held_events.fetch_max(held, SeqCst);
            return Err(e);
        }
        *synced = upto;
        drop(synced);
        self.syncs.fetch_add(1, SeqCst);
        self.announce(Some(held).filter(|h| *h > 0));
        Ok(())
    }

    /// The sync lock: held by a sync, and by whatever reads the store's
    /// files whole.
    pub(super) fn sync_lock(&self) -> Result<std::sync::MutexGuard<'_, u64>> {
        self.synced
            .lock()
            .map_err(|_| Error::Store("the store's sync lock was poisoned".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferring_call_owes_its_sync_and_its_last_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("open");
        let ((), none) = deferring(|| ());
        assert_eq!(none, None, "no write, nothing owed");
        let (r, owed) = deferring(|| {
            store.sync().expect("owed");
            assert!(store.defer_announce(Some(7)));
            assert!(store.defer_announce(Some(3)));
            store.sync()
        });
        r.expect("ok");
        assert_eq!(
            owed,
            Some(Owed {
                sync: true,
                last: Some(7)
            })
        );
        // Outside: syncs at once, announces at once.
        assert!(!store.defer_announce(Some(9)));
        let before = store.syncs.load(std::sync::atomic::Ordering::SeqCst);
        store.sync().expect("sync");
        assert_eq!(
            store.syncs.load(std::sync::atomic::Ordering::SeqCst),
            before + 1
        );
    }

    #[test]
    fn a_panicking_call_leaves_nothing_deferred() {
        let r = std::panic::catch_unwind(|| deferring(|| panic!("boom")));
        assert!(r.is_err());
        assert_eq!(DEFERRED.get(), None);
    }
}
