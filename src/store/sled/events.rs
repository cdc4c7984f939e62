//! Events in sled: `events` (seq → event), `session_events` (session ++ 0
//! ++ seq → nothing, a session's events in order), and the last number in
//! the `audit_head` tree under `event_head` — all written inside the
//! transaction of the change they report, so the sequence has no gaps a
//! reader could skip. A write that added events tells this process's
//! subscribers the new last number.

use chrono::{DateTime, Utc};

use super::SledStore;
use crate::error::{Error, Result};
use crate::model::Session;
use crate::model::{Event, EventKind};

pub(super) const EVENT_HEAD: &[u8] = b"event_head";

fn session_key(session: &str, seq: u64) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Appends `kinds` for `session` inside a transaction; the last number
/// written, if any.
pub(super) fn append_events(
    log: &sled::transaction::TransactionalTree,
    by_session: &sled::transaction::TransactionalTree,
    heads: &sled::transaction::TransactionalTree,
    session: &Session,
    kinds: &[EventKind],
    at: DateTime<Utc>,
) -> std::result::Result<Option<u64>, String> {
    if kinds.is_empty() {
        return Ok(None);
    }
    let mut seq = match heads.get(EVENT_HEAD).map_err(|e| e.to_string())? {
        Some(b) => u64::from_be_bytes(
            b.as_ref()
                .try_into()
                .map_err(|_| "unreadable event head".to_string())?,
        ),
        None => 0,
    };
    for what in kinds {
        seq += 1;
        let event = Event {
            seq,
            at,
            session: session.id.clone(),
            workflow: session.workflow.clone(),
            trace_id: session.trace_id().map(str::to_string),
            what: what.clone(),
        };
        let bytes = serde_json::to_vec(&event).map_err(|e| e.to_string())?;
        log.insert(&seq.to_be_bytes(), bytes)
            .map_err(|e| e.to_string())?;
        by_session
            .insert(session_key(&session.id, seq), &[] as &[u8])
            .map_err(|e| e.to_string())?;
    }
    heads
        .insert(EVENT_HEAD, &seq.to_be_bytes())
        .map_err(|e| e.to_string())?;
    Ok(Some(seq))
}

impl SledStore {
    /// Up to `limit` events after number `after`, in order.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>> {
        let mut out = Vec::new();
        for kv in self
            .events
            .range(after.saturating_add(1).to_be_bytes()..)
            .take(limit)
        {
            let (_, v) = kv?;
            out.push(
                serde_json::from_slice(&v)
                    .map_err(|e| Error::Store(format!("unreadable event: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Up to `limit` events of one session after number `after`, in order.
    pub fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let start = session_key(session, after.saturating_add(1));
        let mut prefix = session.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        for kv in self.session_events.range(start..).take(limit) {
            let (k, _) = kv?;
            if !k.starts_with(&prefix) {
                break;
            }
            let Ok(seq) = <[u8; 8]>::try_from(&k[prefix.len()..]) else {
                continue;
            };
            if let Some(v) = self.events.get(seq)? {
                out.push(
                    serde_json::from_slice(&v)
                        .map_err(|e| Error::Store(format!("unreadable event: {e}")))?,
                );
            }
        }
        Ok(out)
    }

    /// The number of the last event written.
    pub fn last_event(&self) -> Result<u64> {
        Ok(match self.audit_head.get(EVENT_HEAD)? {
            Some(b) => u64::from_be_bytes(
                b.as_ref()
                    .try_into()
                    .map_err(|_| Error::Store("unreadable event head".into()))?,
            ),
            None => 0,
        })
    }

    /// Told the number of the last event each time events are written by
    /// this process.
    pub fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        self.event_tx.subscribe()
    }

    /// The number of the last event on stable storage as far as this
    /// process knows: announced since it opened the store, or there then.
    /// Events after it may belong to writes whose sync is still under way.
    pub(super) fn durable_event(&self) -> u64 {
        (*self.event_tx.borrow()).max(self.events_at_open)
    }

    /// Keeps back the events of a write not synced yet: subscribers hear
    /// of them with the next synced write.
    pub(super) fn hold(&self, last: Option<u64>) {
        if let Some(seq) = last {
            self.held_events
                .fetch_max(seq, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// Tells subscribers about events of writes now synced.
    /// Inside a deferring call they wait for the sync it owes
    /// ([`super::commit`]).
    pub(super) fn announce(&self, last: Option<u64>) {
        if self.defer_announce(last) {
            return;
        }
        if let Some(seq) = last {
            self.event_tx.send_if_modified(|cur| {
                if seq > *cur {
                    *cur = seq;
                    true
                } else {
                    false
                }
            });
        }
    }
}
