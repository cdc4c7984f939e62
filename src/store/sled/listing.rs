//! Listing without a scan: the `session_order` tree keeps every session's
//! place four times — among all sessions, among those of its status, among
//! those of its workflow and among those of its workflow and status — keyed
//! newest first (`[prefix] ++ (u64::MAX − created nanos) ++ id`, the
//! workflow orders' prefix being `W ++ [status or 0] ++ workflow ++ 0`),
//! and the number of sessions per status (`#` ++ status → u64). All change
//! in the same transaction as the summary they index ([`put_summary`],
//! [`remove_summary`]), so a page of `sessions list` (with `--workflow`
//! too) reads `limit` keys and `/metrics` reads five counters, whatever the
//! store holds. Stores made before an index get it once, at open
//! ([`SledStore::build_order`]).

use sled::transaction::{TransactionalTree, UnabortableTransactionError};

use chrono::{DateTime, Utc};

use super::trees::built::{
    AWAITING as AWAITING_BUILT, SESSION_ORDER as BUILT, WORKFLOW_ORDERS as WORKFLOWS_BUILT,
};
use super::trees::newest_first_key;
use super::{trees, SledStore};
use crate::error::Result;
use crate::model::{Status, Summary};

type TxResult<T> = std::result::Result<T, UnabortableTransactionError>;

/// The prefix of the "every session" order.
const ALL: u8 = 0;
/// The prefix of the per-status counters.
const COUNT: u8 = b'#';
/// The prefix of the per-workflow orders.
const WORKFLOW: u8 = b'W';

fn status_byte(s: Status) -> u8 {
    match s {
        Status::Running => 1,
        Status::Paused => 2,
        Status::Completed => 3,
        Status::Failed => 4,
        Status::Rejected => 5,
        Status::Cancelled => 6,
    }
}

/// The key of `id` created at `created` in order `prefix`.
pub(super) fn order_key(prefix: u8, created: DateTime<Utc>, id: &str) -> Vec<u8> {
    newest_first_key(&[prefix], created, id)
}

/// The prefix of the order of `workflow`'s sessions (of `status`, or all).
fn workflow_prefix(workflow: &str, status: Option<Status>) -> Vec<u8> {
    let mut p = Vec::with_capacity(workflow.len() + 3);
    p.push(WORKFLOW);
    p.push(status.map(status_byte).unwrap_or(ALL));
    p.extend_from_slice(workflow.as_bytes());
    p.push(0);
    p
}

/// Every order key of `s`: all, its status, its workflow, both.
fn entries(s: &Summary) -> [Vec<u8>; 4] {
    [
        order_key(ALL, s.created_at, &s.id),
        order_key(status_byte(s.status), s.created_at, &s.id),
        newest_first_key(&workflow_prefix(&s.workflow, None), s.created_at, &s.id),
        newest_first_key(
            &workflow_prefix(&s.workflow, Some(s.status)),
            s.created_at,
            &s.id,
        ),
    ]
}

fn count_key(s: Status) -> [u8; 2] {
    [COUNT, status_byte(s)]
}

fn read_count(v: Option<sled::IVec>) -> u64 {
    v.and_then(|b| b.as_ref().try_into().ok().map(u64::from_be_bytes))
        .unwrap_or(0)
}

fn bump(ix: &TransactionalTree, s: Status, up: bool) -> TxResult<()> {
    let k = count_key(s);
    let n = read_count(ix.get(k)?);
    let n = if up { n + 1 } else { n.saturating_sub(1) };
    ix.insert(&k, &n.to_be_bytes())?;
    Ok(())
}

fn decode(bytes: &[u8]) -> Option<Summary> {
    serde_json::from_slice(bytes).ok()
}

/// Writes `new` as the summary at `key`, moving its index entries and
/// counters, inside the caller's transaction.
pub(super) fn put_summary(
    m: &TransactionalTree,
    ix: &TransactionalTree,
    key: &[u8],
    new: &Summary,
    bytes: &[u8],
) -> TxResult<()> {
    let old = m.get(key)?.and_then(|b| decode(&b));
    let same = old.as_ref().is_some_and(|o| {
        o.status == new.status && o.created_at == new.created_at && o.workflow == new.workflow
    });
    if !same {
        if let Some(o) = &old {
            for k in entries(o) {
                ix.remove(k)?;
            }
            bump(ix, o.status, false)?;
        }
        for k in entries(new) {
            ix.insert(k, &[])?;
        }
        bump(ix, new.status, true)?;
    }
    m.insert(key, bytes)?;
    Ok(())
}

/// Removes the summary at `key` with its index entries and count.
pub(super) fn remove_summary(
    m: &TransactionalTree,
    ix: &TransactionalTree,
    key: &[u8],
) -> TxResult<()> {
    if let Some(o) = m.remove(key)?.and_then(|b| decode(&b)) {
        for k in entries(&o) {
            ix.remove(k)?;
        }
        bump(ix, o.status, false)?;
    }
    Ok(())
}

impl SledStore {
    pub(super) fn order(&self) -> Result<sled::Tree> {
        self.tree(trees::SESSION_ORDER)
    }

    /// Builds the order index and counters of a store made before them,
    /// and the per-workflow orders of one made before those (once each;
    /// later writes keep them). Whether it wrote anything.
    pub(super) fn build_order(&self) -> Result<bool> {
        let meta = self.tree(trees::META)?;
        let ix = self.order()?;
        if meta.get(BUILT)?.is_none() {
            // The tree holds other indexes too: they are built again after.
            ix.clear()?;
            meta.remove(AWAITING_BUILT)?;
            let mut counts = [0u64; Status::ALL.len()];
            for kv in self.summaries.iter() {
                let (_, v) = kv?;
                let Some(s) = decode(&v) else { continue };
                for k in entries(&s) {
                    ix.insert(k, &[])?;
                }
                counts[usize::from(status_byte(s.status) - 1)] += 1;
            }
            for s in Status::ALL {
                ix.insert(
                    count_key(s),
                    &counts[usize::from(status_byte(s) - 1)].to_be_bytes(),
                )?;
            }
            meta.insert(BUILT, &[1u8])?;
            meta.insert(WORKFLOWS_BUILT, &[1u8])?;
            return Ok(true);
        } else if meta.get(WORKFLOWS_BUILT)?.is_none() {
            for kv in self.summaries.iter() {
                let (_, v) = kv?;
                let Some(s) = decode(&v) else { continue };
                for k in entries(&s) {
                    ix.insert(k, &[])?;
                }
            }
            meta.insert(WORKFLOWS_BUILT, &[1u8])?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Up to `limit` summaries, newest first (ties by id), of `status` (or
    /// all), strictly after `after` (a created time and id, as cursors
    /// carry them): `limit` index reads, never a scan.
    pub fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        let prefix = [status.map(status_byte).unwrap_or(ALL)];
        self.page_of(&prefix, after, limit, |_| true)
    }

    /// [`SledStore::list_page`] among the sessions of `workflow`.
    pub fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        let prefix = workflow_prefix(workflow, status);
        // A workflow name holding a NUL byte could share a prefix: the
        // summary says whose it is.
        self.page_of(&prefix, after, limit, |s| s.workflow == workflow)
    }

    /// Up to `limit` summaries of the order whose keys start with `prefix`.
    fn page_of(
        &self,
        prefix: &[u8],
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
        keep: impl Fn(&Summary) -> bool,
    ) -> Result<Vec<Summary>> {
        let ix = self.order()?;
        let start = match &after {
            Some((at, id)) => {
                let mut k = newest_first_key(prefix, *at, id);
                // Strictly after: the smallest key greater than the cursor's.
                k.push(0);
                k
            }
            None => prefix.to_vec(),
        };
        let mut out = Vec::new();
        for kv in ix.range(start..) {
            let (k, _) = kv?;
            if !k.starts_with(prefix) || out.len() >= limit {
                break;
            }
            let Some(id) = k.get(prefix.len() + 8..) else {
                continue;
            };
            if let Some(v) = self.summaries.get(id)? {
                if let Some(s) = decode(&v).filter(|s| keep(s)) {
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    /// Up to `limit` running sessions, oldest first (by creation, then id),
    /// strictly after `after`: the status order read backwards, `limit`
    /// keys whatever the store holds. One process opens a sled store, so
    /// none is leased by another (`unleased_running`).
    pub fn running_oldest_first(
        &self,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<(DateTime<Utc>, String)>> {
        let ix = self.order()?;
        let prefix = [status_byte(Status::Running)];
        let decode = |k: &[u8]| -> Option<(u64, String)> {
            let nanos = <[u8; 8]>::try_from(k.get(1..9)?).ok()?;
            let id = String::from_utf8_lossy(k.get(9..)?).into_owned();
            Some((u64::MAX - u64::from_be_bytes(nanos), id))
        };
        let at =
            |nanos: u64| DateTime::from_timestamp_nanos(i64::try_from(nanos).unwrap_or(i64::MAX));
        // The order is newest first, ties by id: read backwards, each run of
        // equal times put back in id order.
        let mut out: Vec<(u64, String)> = Vec::new();
        let mut group: Vec<(u64, String)> = Vec::new();
        let flush = |group: &mut Vec<(u64, String)>, out: &mut Vec<(u64, String)>| {
            group.sort();
            out.append(group);
        };
        let end = match &after {
            Some((t, id)) => {
                // Those created at the cursor's time with a greater id come
                // first; then everything older (smaller keys backwards).
                let same = newest_first_key(&prefix, *t, "");
                for kv in ix.scan_prefix(&same) {
                    let (k, _) = kv?;
                    if let Some(e) = decode(&k).filter(|(_, i)| i > id) {
                        group.push(e);
                    }
                }
                flush(&mut group, &mut out);
                same
            }
            None => vec![prefix[0] + 1],
        };
        for kv in ix.range(prefix.to_vec()..end).rev() {
            let (k, _) = kv?;
            let Some(e) = decode(&k) else { continue };
            if group.first().is_some_and(|(n, _)| *n != e.0) {
                flush(&mut group, &mut out);
                if out.len() >= limit {
                    break;
                }
            }
            group.push(e);
        }
        flush(&mut group, &mut out);
        out.truncate(limit);
        Ok(out.into_iter().map(|(n, id)| (at(n), id)).collect())
    }

    /// How many sessions have each status (kept, not counted).
    pub fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        let ix = self.order()?;
        let mut out = Vec::new();
        for s in Status::ALL {
            out.push((s, read_count(ix.get(count_key(s))?)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::paused_session;
    use super::*;
    use chrono::TimeDelta;

    fn ids(v: &[Summary]) -> Vec<&str> {
        v.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn pages_follow_the_index_newest_first_and_counts_follow_every_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("store");
        let t0 = crate::clock::test_epoch();
        for (i, id) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            let mut s = paused_session(id);
            s.created_at = t0 + TimeDelta::seconds(i as i64);
            store.create(&mut s).expect("create");
        }
        let first = store.list_page(None, None, 2).expect("page");
        assert_eq!(ids(&first), ["e", "d"]);
        let after = first.last().map(|s| (s.created_at, s.id.clone()));
        let second = store.list_page(None, after, 2).expect("page");
        assert_eq!(ids(&second), ["c", "b"]);
        let cursor = crate::model::parse_cursor(&second[1].cursor());
        assert_eq!(
            ids(&store.list_page(None, cursor, 10).expect("page")),
            ["a"]
        );

        // A status change moves the session between the status orders.
        let mut c = store.load("c").expect("load").expect("c");
        c.status = Status::Completed;
        store.checkpoint(&mut c).expect("checkpoint");
        let paused = store
            .list_page(Some(Status::Paused), None, 10)
            .expect("page");
        assert_eq!(ids(&paused), ["e", "d", "b", "a"]);
        let done = store
            .list_page(Some(Status::Completed), None, 10)
            .expect("page");
        assert_eq!(ids(&done), ["c"]);
        let counts: Vec<u64> = store
            .status_counts()
            .expect("counts")
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(counts, [0, 4, 1, 0, 0, 0]);

        // An answer recorded moves it to running; a delete takes it out.
        let a = crate::model::Answer {
            decision: crate::model::Decision::Approve,
            by: "bob".into(),
            at: crate::clock::test_epoch(),
            via: "api".into(),
            vars: Default::default(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        };
        store
            .record_answer("d", None, &a)
            .expect("io")
            .expect("recorded");
        store.delete("a").expect("delete");
        let counts: Vec<u64> = store
            .status_counts()
            .expect("counts")
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(counts, [1, 2, 1, 0, 0, 0]);
        assert_eq!(
            ids(&store
                .list_page(Some(Status::Running), None, 10)
                .expect("page")),
            ["d"]
        );
        assert_eq!(
            ids(&store.list_page(None, None, 10).expect("page")),
            ["e", "d", "c", "b"]
        );
        // Whatever was written, the index agrees with a full scan.
        let scan: Vec<String> = store
            .list(None)
            .expect("list")
            .into_iter()
            .map(|s| s.id)
            .collect();
        let paged: Vec<String> = store
            .list_page(None, None, 100)
            .expect("page")
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(scan, paged);
    }

    #[test]
    fn a_store_made_before_the_index_gets_it_once_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = SledStore::open(dir.path()).expect("store");
            for id in ["x", "y"] {
                store.create(&mut paused_session(id)).expect("create");
            }
            // As an older release left it: no index, no mark.
            store.order().expect("tree").clear().expect("clear");
            store
                .tree(trees::META)
                .expect("meta")
                .remove(BUILT)
                .expect("unmark");
            store.db.flush().expect("flush");
        }
        let store = SledStore::open(dir.path()).expect("reopen");
        assert_eq!(
            store
                .list_page(Some(Status::Paused), None, 10)
                .expect("page")
                .len(),
            2
        );
        assert_eq!(
            store.status_counts().expect("counts")[1],
            (Status::Paused, 2)
        );
        // The other indexes of the tree were built again too.
        assert_eq!(
            store
                .workflow_page("wf", None, None, 10)
                .expect("page")
                .len(),
            2
        );
        assert_eq!(
            store
                .awaiting(&[crate::store::awaiting::ANYONE.to_string()])
                .expect("awaiting")
                .len(),
            2
        );
    }
}
