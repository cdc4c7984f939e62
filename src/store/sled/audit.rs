//! The audit chain in sled: entries by sequence number, the head beside
//! them, appended inside the transaction of the change they describe.

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::{SledStore, HEAD_KEY};
use crate::error::{Error, Result};

/// Appends events to the audit chain inside a transaction.
pub(super) fn append_in(
    log: &sled::transaction::TransactionalTree,
    head: &sled::transaction::TransactionalTree,
    events: &[crate::audit::AuditEvent],
) -> std::result::Result<(), String> {
    use crate::audit::{entry_hash, AuditEntry, Head, GENESIS};
    if events.is_empty() {
        return Ok(());
    }
    let mut last: Head = match head.get(HEAD_KEY).map_err(|e| e.to_string())? {
        Some(b) => serde_json::from_slice(&b).map_err(|e| format!("unreadable audit head: {e}"))?,
        None => Head {
            seq: 0,
            hash: GENESIS.to_string(),
        },
    };
    for event in events {
        let seq = last.seq + 1;
        let hash = entry_hash(seq, &last.hash, event);
        let entry = AuditEntry {
            seq,
            prev: last.hash.clone(),
            hash: hash.clone(),
            event: event.clone(),
        };
        let bytes = serde_json::to_vec(&entry).map_err(|e| e.to_string())?;
        log.insert(&seq.to_be_bytes(), bytes)
            .map_err(|e| e.to_string())?;
        last = Head { seq, hash };
    }
    let bytes = serde_json::to_vec(&last).map_err(|e| e.to_string())?;
    head.insert(HEAD_KEY, bytes).map_err(|e| e.to_string())?;
    Ok(())
}

impl SledStore {
    /// Appends events that belong to no session write (refused clicks, ...).
    pub fn append_audit(&self, events: &[crate::audit::AuditEvent]) -> Result<()> {
        let res: std::result::Result<(), TransactionError<String>> =
            (&self.audit, &self.audit_head).transaction(|(log, head)| {
                append_in(log, head, events).map_err(ConflictableTransactionError::Abort)
            });
        res.map_err(|e| Error::Store(format!("audit log: {e:?}")))?;
        self.sync()?;
        Ok(())
    }

    /// Every audit entry in order, as stored (for verify and export).
    /// Up to `limit` audit entries after sequence number `after`, in order,
    /// as stored (for verify and export, page by page).
    pub fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        let start = after.saturating_add(1).to_be_bytes();
        for kv in self.audit.range(start..).take(limit) {
            let (k, v) = kv?;
            let Ok(bytes) = <[u8; 8]>::try_from(k.as_ref()) else {
                continue;
            };
            out.push((u64::from_be_bytes(bytes), v.to_vec()));
        }
        Ok(out)
    }

    pub fn audit_head(&self) -> Result<Option<crate::audit::Head>> {
        match self.audit_head.get(HEAD_KEY)? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| Error::Store(format!("unreadable audit head: {e}"))),
        }
    }
}
