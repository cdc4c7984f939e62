//! Paused runs whose gates were never posted to a chat room: the only
//! sessions start-up must look at to ask again (`Hub::recover`). The
//! `unposted` tree holds session id → the JSON list of its open gate
//! handles with no posted message; it is written in the same transaction
//! as the session (a pause adds its unposted gates, any other status clears
//! the entry) and in the same one as a room's record of a message: a gate
//! is out once every room that recorded a message for it posted it (Slack
//! and Teams keep a record each), and back in when a room's post failed —
//! so a Teams card that failed beside a posted Slack message is asked again
//! at start-up, and only there. A run that changed status without a write here (an answer
//! recorded) keeps a stale entry until its next checkpoint; start-up skips
//! it after one load.

use sled::transaction::{TransactionalTree, UnabortableTransactionError};

use super::*;

type TxResult<T> = std::result::Result<T, UnabortableTransactionError>;

/// Whether gate `handle` was asked: some room recorded its message, and
/// every room that recorded one posted it (each room keeps its own record:
/// [`crate::model::Notification::record_key`]; a Teams card that failed
/// beside a posted Slack message is asked again at start-up).
fn posted(notes: &TransactionalTree, session: &str, handle: &str) -> TxResult<bool> {
    let mut any = false;
    for key in [handle.to_string(), format!("{handle}@teams")] {
        if let Some(v) = notes.get(gate_key(session, &key))? {
            match serde_json::from_slice::<crate::model::Notification>(&v) {
                Ok(n) if n.ts.is_some() => any = true,
                _ => return Ok(false),
            }
        }
    }
    Ok(any)
}

/// Keeps `session`'s entry right, inside the caller's transaction.
pub(super) fn track(
    unposted: &TransactionalTree,
    notes: &TransactionalTree,
    session: &Session,
) -> TxResult<()> {
    let key = session.id.as_bytes();
    if session.status != Status::Paused {
        unposted.remove(key)?;
        return Ok(());
    }
    let mut left = Vec::new();
    for g in session.open_gates() {
        let h = g.handle();
        if !posted(notes, &session.id, &h)? {
            left.push(h);
        }
    }
    if left.is_empty() {
        unposted.remove(key)?;
    } else {
        unposted.insert(key, serde_json::to_vec(&left).unwrap_or_default())?;
    }
    Ok(())
}

/// After a message for gate `handle` of `session` was recorded (`notes`
/// holds it): the gate leaves the entry when it is asked ([`posted`]), and
/// comes back when a room's post failed.
pub(super) fn recorded(
    unposted: &TransactionalTree,
    notes: &TransactionalTree,
    session: &str,
    handle: &str,
) -> TxResult<()> {
    if !posted(notes, session, handle)? {
        let key = session.as_bytes();
        let mut left: Vec<String> = match unposted.get(key)? {
            Some(v) => serde_json::from_slice(&v).unwrap_or_default(),
            None => Vec::new(),
        };
        if !left.iter().any(|h| h == handle) {
            left.push(handle.to_string());
            unposted.insert(key, serde_json::to_vec(&left).unwrap_or_default())?;
        }
        return Ok(());
    }
    posted_now(unposted, session, handle)
}

/// Takes gate `handle` of `session` out of its entry (its message posted).
fn posted_now(unposted: &TransactionalTree, session: &str, handle: &str) -> TxResult<()> {
    let key = session.as_bytes();
    let Some(v) = unposted.get(key)? else {
        return Ok(());
    };
    let mut left: Vec<String> = serde_json::from_slice(&v).unwrap_or_default();
    left.retain(|h| h != handle);
    if left.is_empty() {
        unposted.remove(key)?;
    } else {
        unposted.insert(key, serde_json::to_vec(&left).unwrap_or_default())?;
    }
    Ok(())
}

impl SledStore {
    /// Up to `limit` sessions after `after` (in id order) that may have a
    /// gate never posted (see the module doc).
    pub fn unposted(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        use std::ops::Bound;
        let t = self.tree(trees::UNPOSTED)?;
        let from = match after {
            Some(a) => Bound::Excluded(a.as_bytes().to_vec()),
            None => Bound::Unbounded,
        };
        let mut out = Vec::new();
        for k in t
            .range::<Vec<u8>, _>((from, Bound::Unbounded))
            .keys()
            .take(limit)
        {
            out.push(String::from_utf8_lossy(&k?).into_owned());
        }
        Ok(out)
    }

    /// Builds the index of a store made before it (once).
    pub(super) fn build_unposted(&self) -> Result<bool> {
        const BUILT: &[u8] = b"index/unposted";
        let meta = self.tree(trees::META)?;
        if meta.get(BUILT)?.is_some() {
            return Ok(false);
        }
        let t = self.tree(trees::UNPOSTED)?;
        let notes = self.tree(trees::NOTIFICATIONS)?;
        for id in self.list(Some(Status::Paused))?.into_iter().map(|s| s.id) {
            let Some(s) = self.load(&id)? else { continue };
            let res: std::result::Result<(), TransactionError<String>> =
                (&t, &notes).transaction(|(u, n)| Ok(track(u, n, &s)?));
            res.map_err(|e| Error::Store(format!("index unposted gates: {e:?}")))?;
        }
        meta.insert(BUILT, &[1u8])?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::paused_session;
    use super::*;

    #[test]
    fn a_paused_run_is_listed_until_its_gate_is_posted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("store");
        store.create(&mut paused_session("p1")).expect("create");
        store.create(&mut paused_session("p2")).expect("create");
        let mut done = paused_session("d1");
        done.status = Status::Completed;
        done.gates.clear();
        store.create(&mut done).expect("create");
        assert_eq!(store.unposted(None, 10).expect("read"), ["p1", "p2"]);
        let handle = store
            .load("p1")
            .expect("load")
            .expect("p1")
            .first_gate()
            .expect("gate")
            .handle();
        // A failed post leaves it listed; a posted message takes it out.
        let mut n = crate::model::Notification {
            gate: handle.clone(),
            channel: "C1".into(),
            ts: None,
            thread_ts: None,
            at: crate::clock::test_epoch(),
            error: Some("ratelimited".into()),
            copies: Vec::new(),
        };
        store.record_notification("p1", &n).expect("record");
        assert_eq!(store.unposted(None, 10).expect("read"), ["p1", "p2"]);
        n.ts = Some("1.2".into());
        n.error = None;
        store.record_notification("p1", &n).expect("record");
        assert_eq!(store.unposted(None, 10).expect("read"), ["p2"]);
        // A checkpoint of a posted gate does not bring it back; leaving the
        // pause clears the entry.
        let mut p1 = store.load("p1").expect("load").expect("p1");
        store.checkpoint(&mut p1).expect("checkpoint");
        assert_eq!(store.unposted(None, 10).expect("read"), ["p2"]);
        let mut p2 = store.load("p2").expect("load").expect("p2");
        p2.status = Status::Completed;
        store.checkpoint(&mut p2).expect("checkpoint");
        assert!(store.unposted(None, 10).expect("read").is_empty());
    }

    #[test]
    fn the_index_is_read_a_page_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("store");
        for id in ["p3", "p1", "p5", "p2", "p4"] {
            store.create(&mut paused_session(id)).expect("create");
        }
        assert_eq!(store.unposted(None, 2).expect("read"), ["p1", "p2"]);
        assert_eq!(store.unposted(Some("p2"), 2).expect("read"), ["p3", "p4"]);
        assert_eq!(store.unposted(Some("p4"), 2).expect("read"), ["p5"]);
        assert!(store.unposted(Some("p5"), 2).expect("read").is_empty());
        // `after` need not be in the index.
        assert_eq!(
            store.unposted(Some("p20"), 9).expect("read"),
            ["p3", "p4", "p5"]
        );
    }

    #[test]
    fn each_room_keeps_its_own_record_of_a_gate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("store");
        store.create(&mut paused_session("p1")).expect("create");
        let handle = store
            .load("p1")
            .expect("load")
            .expect("p1")
            .first_gate()
            .expect("gate")
            .handle();
        let note = |channel: &str, ts: &str| crate::model::Notification {
            gate: handle.clone(),
            channel: channel.into(),
            ts: Some(ts.into()),
            thread_ts: None,
            at: crate::clock::test_epoch(),
            error: None,
            copies: Vec::new(),
        };
        store
            .record_notification("p1", &note("teams:19:a@thread.tacv2", "act-1"))
            .expect("record");
        // Posted by Teams alone: taken out, and a checkpoint keeps it out.
        assert!(store.unposted(None, 10).expect("read").is_empty());
        let mut p1 = store.load("p1").expect("load").expect("p1");
        store.checkpoint(&mut p1).expect("checkpoint");
        assert!(store.unposted(None, 10).expect("read").is_empty());
        // Slack's message does not replace the card, nor the card Slack's.
        store
            .record_notification("p1", &note("C1", "1.2"))
            .expect("record");
        let notes = store.notifications("p1").expect("notes");
        let mut places: Vec<&str> = notes.iter().map(|n| n.channel.as_str()).collect();
        places.sort();
        assert_eq!(places, ["C1", "teams:19:a@thread.tacv2"]);
        for (place, ts) in [("C1", "1.2"), ("teams:19:a@thread.tacv2", "act-1")] {
            let t = store
                .message_target(place, ts)
                .expect("read")
                .expect("indexed");
            assert_eq!(t.gate, handle);
        }
    }
}
