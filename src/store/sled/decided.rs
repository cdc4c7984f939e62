//! The audit's decisions (`audit::decided`) in sled, for reports: built
//! from the chain when read, never in the write that appends an entry, so
//! the hot path of every answer is unchanged. The records and the mark of
//! how far the chain was read go in one batch, so a crash leaves either
//! both or neither; reading again is harmless (the same key, the same
//! record).

use chrono::{DateTime, Utc};

use super::{trees, SledStore};
use crate::error::{Error, Result};

/// The key of the last audit entry looked at (not 8 bytes: never a seq).
const BUILT: &[u8] = b"~built";
/// Audit entries read per batch.
const PAGE: usize = 4096;

/// `at` as the index orders it: nanoseconds since the epoch, clamped.
fn nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

impl SledStore {
    /// Brings the index up to the audit's head.
    fn catch_up_decided(&self, tree: &sled::Tree) -> Result<()> {
        let mut done = match tree.get(BUILT)? {
            Some(v) => u64::from_be_bytes(
                v.as_ref()
                    .try_into()
                    .map_err(|_| Error::Store("unreadable decisions index mark".into()))?,
            ),
            None => 0,
        };
        loop {
            let page = self.audit_page(done, PAGE)?;
            let Some(&(last, _)) = page.last() else {
                return Ok(());
            };
            let mut batch = sled::Batch::default();
            for (seq, bytes) in &page {
                if let Some((at, record)) =
                    crate::audit::decided::project(*seq, bytes).map_err(Error::Store)?
                {
                    let mut v = Vec::with_capacity(8 + record.len());
                    v.extend_from_slice(&nanos(at).to_be_bytes());
                    v.extend(record);
                    batch.insert(&seq.to_be_bytes(), v);
                }
            }
            batch.insert(BUILT, &last.to_be_bytes());
            tree.apply_batch(batch)?;
            done = last;
            if page.len() < PAGE {
                return Ok(());
            }
        }
    }

    /// See [`crate::store::Backend::decided`].
    pub fn decided(
        &self,
        since: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        let tree = self.tree(trees::DECIDED)?;
        if after == 0 {
            self.catch_up_decided(&tree)?;
        }
        let since = nanos(since);
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        for kv in tree.range(after.saturating_add(1).to_be_bytes()..) {
            let (k, v) = kv?;
            let Ok(seq) = <[u8; 8]>::try_from(k.as_ref()) else {
                continue;
            };
            let Some((at, record)) = v.split_first_chunk::<8>() else {
                continue;
            };
            if i64::from_be_bytes(*at) < since {
                continue;
            }
            out.push((u64::from_be_bytes(seq), record.to_vec()));
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    }
}
