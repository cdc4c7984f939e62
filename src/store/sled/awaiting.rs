//! The index by approver of open gates ([`crate::store::awaiting`]) in
//! sled. It lives in the `session_order` tree, which every session write
//! already holds in its transaction:
//!
//! - `A` ++ approver ++ 0 ++ (u64::MAX − created nanos) ++ session id ++ 0
//!   ++ gate handle → nothing: one entry per approver key of each open gate
//!   of a paused session, newest session first under each approver;
//! - `R` ++ session id → the `A` keys written for it (each u16 big-endian
//!   length ++ key), so the next write of the session takes out exactly
//!   what it put in without reading the previous session.
//!
//! [`track`] keeps a session's entries right inside the caller's
//! transaction (a gate opening, an answer, a timeout, a status change);
//! [`forget`] takes them out with the session. Stores made before the index
//! get it once, at open ([`SledStore::build_awaiting`]).

use sled::transaction::{TransactionalTree, UnabortableTransactionError};

use sled::transaction::TransactionError;

use super::trees::built::AWAITING as BUILT;
use super::trees::newest_first_key;
use super::{trees, SledStore};
use crate::error::{Error, Result};
use crate::model::{Session, Status};

type TxResult<T> = std::result::Result<T, UnabortableTransactionError>;

const ENTRY: u8 = b'A';
const REVERSE: u8 = b'R';

/// `A ++ approver ++ 0`: where an approver's entries start.
fn approver_prefix(approver: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(approver.len() + 2);
    p.push(ENTRY);
    p.extend_from_slice(approver.as_bytes());
    p.push(0);
    p
}

fn reverse_key(session: &str) -> Vec<u8> {
    let mut k = vec![REVERSE];
    k.extend_from_slice(session.as_bytes());
    k
}

/// The entry keys `session` should have, sorted.
fn keys_of(session: &Session) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = crate::store::awaiting::entries(session)
        .into_iter()
        .map(|(gate, approver)| {
            let mut k =
                newest_first_key(&approver_prefix(&approver), session.created_at, &session.id);
            k.push(0);
            k.extend_from_slice(gate.as_bytes());
            k
        })
        .collect();
    keys.sort();
    keys
}

fn pack(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for k in keys {
        let len = u16::try_from(k.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&k[..usize::from(len)]);
    }
    out
}

fn unpack(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let [a, b, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*a, *b]));
        let Some(k) = tail.get(..len) else { break };
        out.push(k.to_vec());
        rest = &tail[len..];
    }
    out
}

/// Makes `session`'s entries what its open gates say, inside the caller's
/// transaction (nothing written when they did not change).
pub(super) fn track(ix: &TransactionalTree, session: &Session) -> TxResult<()> {
    let rkey = reverse_key(&session.id);
    let old = ix.get(&rkey)?.map(|v| unpack(&v)).unwrap_or_default();
    // Keys longer than a u16 cannot be packed: such a gate is not indexed
    // under that approver (ids and handles are far shorter).
    let new: Vec<Vec<u8>> = keys_of(session)
        .into_iter()
        .filter(|k| k.len() <= usize::from(u16::MAX))
        .collect();
    if old == new {
        return Ok(());
    }
    for k in old.iter().filter(|k| !new.contains(k)) {
        ix.remove(k.as_slice())?;
    }
    for k in new.iter().filter(|k| !old.contains(k)) {
        ix.insert(k.as_slice(), &[])?;
    }
    if new.is_empty() {
        ix.remove(rkey)?;
    } else {
        ix.insert(rkey, pack(&new))?;
    }
    Ok(())
}

/// Takes session `id`'s entries out, inside the caller's transaction.
pub(super) fn forget(ix: &TransactionalTree, id: &str) -> TxResult<()> {
    if let Some(v) = ix.remove(reverse_key(id))? {
        for k in unpack(&v) {
            ix.remove(k)?;
        }
    }
    Ok(())
}

/// The session id in entry key `k` of an approver whose prefix is `plen`
/// bytes long.
fn session_of(k: &[u8], plen: usize) -> Option<String> {
    let rest = k.get(plen + 8..)?;
    let end = rest.iter().position(|b| *b == 0)?;
    std::str::from_utf8(&rest[..end]).ok().map(str::to_string)
}

impl SledStore {
    /// Ids of paused sessions with an open gate listing any of `approvers`
    /// (see [`crate::store::Backend::awaiting`]): reads their entries only.
    pub fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>> {
        let ix = self.order()?;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for a in approvers {
            let prefix = approver_prefix(a);
            for k in ix.scan_prefix(&prefix).keys() {
                if let Some(id) = session_of(&k?, prefix.len()) {
                    if seen.insert(id.clone()) {
                        out.push(id);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The group ids listed as approvers of open gates: one seek per
    /// distinct approver whose key starts with `S`, not one per entry.
    pub fn awaiting_groups(&self) -> Result<Vec<String>> {
        let ix = self.order()?;
        let end = vec![ENTRY, b'S' + 1];
        let mut from = vec![ENTRY, b'S'];
        let mut out = Vec::new();
        while let Some(kv) = ix.range(from.clone()..end.clone()).next() {
            let (k, _) = kv?;
            let Some(len) = k[1..].iter().position(|b| *b == 0) else {
                break;
            };
            let approver = String::from_utf8_lossy(&k[1..1 + len]).into_owned();
            // Past every key of this approver: its prefix with the 0 made 1.
            from = k[..1 + len].to_vec();
            from.push(1);
            if let Some(g) = crate::model::Approver::parse(&approver).slack_group() {
                out.push(g.to_string());
            }
        }
        Ok(out)
    }

    /// Builds the index of a store made before it (once): the paused
    /// sessions, read from the status order. Whether it wrote anything.
    pub(super) fn build_awaiting(&self) -> Result<bool> {
        let meta = self.tree(trees::META)?;
        if meta.get(BUILT)?.is_some() {
            return Ok(false);
        }
        let ix = self.order()?;
        let mut after = None;
        loop {
            let page = self.list_page(Some(Status::Paused), after, 512)?;
            let Some(last) = page.last() else { break };
            after = Some((last.created_at, last.id.clone()));
            for summary in &page {
                let Some(s) = self.load(&summary.id)? else {
                    continue;
                };
                let res: std::result::Result<(), TransactionError<String>> =
                    ix.transaction(|t| Ok(track(t, &s)?));
                res.map_err(|e| Error::Store(format!("index open gates by approver: {e:?}")))?;
            }
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
    fn a_store_made_before_the_indexes_gets_them_once_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let u1 = vec!["U1".to_string()];
        {
            let store = SledStore::open(dir.path()).expect("store");
            let mut a = paused_session("a");
            a.workflow = "wf-x".into();
            for g in a.gates.values_mut() {
                g.approvers = vec!["U1".into()];
            }
            store.create(&mut a).expect("create");
            let mut b = paused_session("b");
            b.workflow = "wf-y".into();
            store.create(&mut b).expect("create");
            assert_eq!(store.awaiting(&u1).expect("awaiting"), ["a"]);
            // As an older release left it: no workflow orders, no entries
            // by approver, no marks.
            let ix = store.order().expect("tree");
            for k in ix.iter().keys() {
                let k = k.expect("key");
                if matches!(k.first(), Some(b'W' | b'A' | b'R')) {
                    ix.remove(k).expect("remove");
                }
            }
            let meta = store.tree(trees::META).expect("meta");
            meta.remove(BUILT).expect("unmark");
            meta.remove(super::super::trees::built::WORKFLOW_ORDERS)
                .expect("unmark");
            store.db.flush().expect("flush");
            assert!(store.awaiting(&u1).expect("awaiting").is_empty());
            assert!(store
                .workflow_page("wf-x", None, None, 10)
                .expect("page")
                .is_empty());
        }
        let store = SledStore::open(dir.path()).expect("reopen");
        assert_eq!(store.awaiting(&u1).expect("awaiting"), ["a"]);
        assert_eq!(
            store
                .awaiting(&[crate::store::awaiting::ANYONE.to_string()])
                .expect("awaiting"),
            ["b"]
        );
        let page = store
            .workflow_page("wf-y", Some(Status::Paused), None, 10)
            .expect("page");
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].id, "b");
    }
}
