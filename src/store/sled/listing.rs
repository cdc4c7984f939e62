//! Listing without a scan: the `session_order` tree keeps every session's
//! place twice — among all sessions and among those of its status — keyed
//! newest first (`[prefix] ++ (u64::MAX − created nanos) ++ id`), and the
//! number of sessions per status (`#` ++ status → u64). Both change in the
//! same transaction as the summary they index ([`put_summary`],
//! [`remove_summary`]), so a page of `sessions list` reads `limit` keys and
//! `/metrics` reads five counters, whatever the store holds. Stores made
//! before the index get it once, at open ([`SledStore::build_order`]).

use sled::transaction::{TransactionalTree, UnabortableTransactionError};

use super::*;

type TxResult<T> = std::result::Result<T, UnabortableTransactionError>;

/// The prefix of the "every session" order.
const ALL: u8 = 0;
/// The prefix of the per-status counters.
const COUNT: u8 = b'#';
/// `meta` key: the order index is built.
const BUILT: &[u8] = b"index/session_order";

fn status_byte(s: Status) -> u8 {
    match s {
        Status::Running => 1,
        Status::Paused => 2,
        Status::Completed => 3,
        Status::Failed => 4,
        Status::Rejected => 5,
    }
}

const STATUSES: [Status; 5] = [
    Status::Running,
    Status::Paused,
    Status::Completed,
    Status::Failed,
    Status::Rejected,
];

/// The key of `id` created at `created` in order `prefix`.
pub(super) fn order_key(prefix: u8, created: DateTime<Utc>, id: &str) -> Vec<u8> {
    let nanos = created.timestamp_nanos_opt().unwrap_or(0).max(0) as u64;
    let mut k = Vec::with_capacity(9 + id.len());
    k.push(prefix);
    k.extend_from_slice(&(u64::MAX - nanos).to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
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
    match &old {
        Some(o) if o.status == new.status && o.created_at == new.created_at => {}
        Some(o) => {
            ix.remove(order_key(status_byte(o.status), o.created_at, &o.id))?;
            ix.remove(order_key(ALL, o.created_at, &o.id))?;
            bump(ix, o.status, false)?;
            ix.insert(
                order_key(status_byte(new.status), new.created_at, &new.id),
                &[],
            )?;
            ix.insert(order_key(ALL, new.created_at, &new.id), &[])?;
            bump(ix, new.status, true)?;
        }
        None => {
            ix.insert(
                order_key(status_byte(new.status), new.created_at, &new.id),
                &[],
            )?;
            ix.insert(order_key(ALL, new.created_at, &new.id), &[])?;
            bump(ix, new.status, true)?;
        }
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
        ix.remove(order_key(status_byte(o.status), o.created_at, &o.id))?;
        ix.remove(order_key(ALL, o.created_at, &o.id))?;
        bump(ix, o.status, false)?;
    }
    Ok(())
}

impl SledStore {
    pub(super) fn order(&self) -> Result<sled::Tree> {
        self.tree(trees::SESSION_ORDER)
    }

    /// Builds the order index and counters of a store made before them
    /// (once; later writes keep them).
    pub(super) fn build_order(&self) -> Result<bool> {
        let meta = self.tree(trees::META)?;
        if meta.get(BUILT)?.is_some() {
            return Ok(false);
        }
        let ix = self.order()?;
        ix.clear()?;
        let mut counts = [0u64; 5];
        for kv in self.summaries.iter() {
            let (_, v) = kv?;
            let Some(s) = decode(&v) else { continue };
            ix.insert(order_key(status_byte(s.status), s.created_at, &s.id), &[])?;
            ix.insert(order_key(ALL, s.created_at, &s.id), &[])?;
            counts[usize::from(status_byte(s.status) - 1)] += 1;
        }
        for s in STATUSES {
            ix.insert(
                count_key(s),
                &counts[usize::from(status_byte(s) - 1)].to_be_bytes(),
            )?;
        }
        meta.insert(BUILT, &[1u8])?;
        Ok(true)
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
        let prefix = status.map(status_byte).unwrap_or(ALL);
        let ix = self.order()?;
        let start = match &after {
            Some((at, id)) => {
                let mut k = order_key(prefix, *at, id);
                // Strictly after: the smallest key greater than the cursor's.
                k.push(0);
                k
            }
            None => vec![prefix],
        };
        let mut out = Vec::new();
        for kv in ix.range(start..) {
            let (k, _) = kv?;
            if k.first() != Some(&prefix) || out.len() >= limit {
                break;
            }
            let id = &k[9..];
            if let Some(v) = self.summaries.get(id)? {
                if let Some(s) = decode(&v) {
                    out.push(s);
                }
            }
        }
        Ok(out)
    }

    /// How many sessions have each status (kept, not counted).
    pub fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        let ix = self.order()?;
        let mut out = Vec::new();
        for s in STATUSES {
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
        let t0 = Utc::now();
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
        assert_eq!(counts, [0, 4, 1, 0, 0]);

        // An answer recorded moves it to running; a delete takes it out.
        let a = crate::model::Answer {
            decision: crate::model::Decision::Approve,
            by: "bob".into(),
            at: Utc::now(),
            via: "api".into(),
            vars: Default::default(),
            call: None,
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
        assert_eq!(counts, [1, 2, 1, 0, 0]);
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
    }
}
