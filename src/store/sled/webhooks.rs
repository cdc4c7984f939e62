//! The webhook outbox in sled: a cursor per endpoint over the event log
//! (`webhook_cursors`), the deliveries not yet settled (`webhook_pending`,
//! with `webhook_due` ordering them by when they are due next) and the ones
//! given up on (`webhook_failed`).
//!
//! Each change is one transaction: a cursor moves together with the
//! deliveries it queued (an event is queued once per endpoint, never
//! skipped, even across a crash); a delivery taken for an attempt is
//! re-scheduled to the end of its lease as it is taken (nothing else takes
//! it meanwhile); a settled delivery leaves the pending trees in the write
//! that records its outcome.
//!
//! Only events on stable storage are queued (announced, or there when the
//! store was opened): a delivery never tells of a write that a crash could
//! still take back. Queueing and taking are not synced on their own: they
//! are durable with the process's next synced write, at the latest the
//! settle of what they took (sled writes its log in order, so a sync
//! covers every write before it). A crash before that loses only the
//! redo: the cursor's events are queued again under the same keys, and a
//! delivery taken is due again at once rather than when its lease ends —
//! sent a second time with the same message id, which consumers drop. One
//! process holds a sled store, so no other replica can have taken it
//! meanwhile. Synced, each look a burst's deliverer takes at the store
//! would wait on two syncs, and its publishes and settles behind them.

use sled::Transactional;
use std::time::Duration;

use super::events::EVENT_HEAD;
use chrono::{DateTime, Utc};

use super::{abort, trees, txn_error, SledStore};
use crate::error::{Error, Result};
use crate::model::webhook::{Delivery, Settle};
use crate::model::Event;

/// The `meta` key of the store's random id.
const STORE_ID: &[u8] = b"store_id";

/// endpoint ++ 0 ++ seq: a delivery's key in `webhook_pending`.
fn ident(endpoint: &str, seq: u64) -> Vec<u8> {
    let mut k = endpoint.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Milliseconds since the epoch (times before it sort first).
fn millis(at: DateTime<Utc>) -> u64 {
    u64::try_from(at.timestamp_millis()).unwrap_or(0)
}

/// `at` in ms ++ `ident`: a key of `webhook_due` or `webhook_failed`.
fn timed(at: DateTime<Utc>, ident: &[u8]) -> Vec<u8> {
    let mut k = millis(at).to_be_bytes().to_vec();
    k.extend_from_slice(ident);
    k
}

fn be_u64(bytes: &[u8], what: &str) -> std::result::Result<u64, String> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| format!("unreadable {what}"))
}

fn decode_delivery(bytes: &[u8]) -> std::result::Result<Delivery, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("unreadable webhook delivery: {e}"))
}

fn encode_delivery(d: &Delivery) -> std::result::Result<Vec<u8>, String> {
    serde_json::to_vec(d).map_err(|e| format!("encode webhook delivery: {e}"))
}

impl SledStore {
    /// The store's random id, made the first time it is asked for.
    fn store_id(&self) -> Result<String> {
        let meta = self.tree(trees::META)?;
        if meta.get(STORE_ID)?.is_none() {
            let fresh = uuid::Uuid::new_v4().simple().to_string();
            // Whoever writes first wins; everyone reads the winner below.
            let _ =
                meta.compare_and_swap(STORE_ID, None as Option<&[u8]>, Some(fresh.as_bytes()))?;
            self.sync()?;
        }
        match meta.get(STORE_ID)? {
            Some(v) => Ok(String::from_utf8_lossy(&v).into_owned()),
            None => Err(Error::Store("the store id vanished".into())),
        }
    }

    /// For each endpoint, queues a delivery (due `now`) of every event
    /// after its cursor that webhooks carry, moving the cursor in the same
    /// transaction. An endpoint seen for the first time starts at the last
    /// event: it gets what happens from now on, not the history. Events are
    /// looked at in batches of `limit`, and at most `limit` deliveries are
    /// queued per endpoint per call. Returns how many were queued.
    pub fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize> {
        if endpoints.is_empty() {
            return Ok(0);
        }
        let batch = limit.max(1);
        let store_id = self.store_id()?;
        let cursors = self.tree(trees::WEBHOOK_CURSORS)?;
        let pending = self.tree(trees::WEBHOOK_PENDING)?;
        let due = self.tree(trees::WEBHOOK_DUE)?;
        // Only events known to be on stable storage: what goes out must
        // not be lost with a write still waiting on its sync (its events
        // are announced with it, and pulled then).
        let durable = self.durable_event();
        let (mut queued, mut started) = (0, false);
        for endpoint in endpoints {
            let key = endpoint.as_bytes();
            let mut for_this = 0;
            loop {
                let room = batch - for_this;
                let res = (&cursors, &pending, &due, &self.events, &self.audit_head).transaction(
                    |(c, p, d, ev, head)| {
                        let last = match head.get(EVENT_HEAD)? {
                            Some(b) => be_u64(&b, "event head").or_else(abort)?,
                            None => 0,
                        }
                        .min(durable);
                        let Some(cur) = c.get(key)? else {
                            c.insert(key, &last.to_be_bytes())?;
                            return Ok((0, true, true)); // started
                        };
                        let start = be_u64(&cur, "webhook cursor").or_else(abort)?;
                        let mut seq = start;
                        let (mut made, mut looked) = (0, 0);
                        while seq < last && made < room && looked < batch {
                            seq += 1;
                            looked += 1;
                            let Some(bytes) = ev.get(seq.to_be_bytes())? else {
                                continue;
                            };
                            let event: Event = serde_json::from_slice(&bytes)
                                .map_err(|e| format!("unreadable event {seq}: {e}"))
                                .or_else(abort)?;
                            if !event.what.is_webhook() {
                                continue;
                            }
                            let row = Delivery::new(endpoint, &store_id, event, now);
                            let id = ident(endpoint, seq);
                            p.insert(id.as_slice(), encode_delivery(&row).or_else(abort)?)?;
                            d.insert(timed(now, &id), &[] as &[u8])?;
                            made += 1;
                        }
                        if seq != start {
                            c.insert(key, &seq.to_be_bytes())?;
                        }
                        Ok((made, seq >= last, false))
                    },
                );
                let (made, caught_up, fresh) = res.map_err(|e| txn_error("webhooks", e))?;
                started |= fresh;
                for_this += made;
                if caught_up || for_this >= batch {
                    break;
                }
            }
            queued += for_this;
        }
        // Durable with the next synced write (the module doc says why) —
        // but for an endpoint's first cursor: redone later, it would start
        // at a later event and skip the ones between.
        if started {
            self.sync()?;
        }
        Ok(queued)
    }

    /// Up to `limit` pending deliveries due by `now`, earliest first, each
    /// taken for an attempt: its attempt counted and its next due time
    /// moved to `now + lease` in the transaction that takes it.
    pub fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>> {
        let pending = self.tree(trees::WEBHOOK_PENDING)?;
        let due = self.tree(trees::WEBHOOK_DUE)?;
        let until = now + chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX / 2);
        let cutoff = millis(now);
        // The keys first: a taken delivery is re-keyed, and a zero lease
        // would put it back in the range being read.
        let mut keys = Vec::new();
        for kv in due.iter().keys() {
            let k = kv?;
            let Some(at) = k.get(..8).and_then(|b| be_u64(b, "").ok()) else {
                continue;
            };
            if at > cutoff || keys.len() >= limit {
                break;
            }
            keys.push(k);
        }
        let mut out = Vec::new();
        for k in keys {
            let id = &k[8..];
            let res = (&pending, &due).transaction(|(p, d)| {
                if d.get(&k)?.is_none() {
                    return Ok(None); // taken or settled meanwhile
                }
                d.remove(&k)?;
                let Some(row) = p.get(id)? else {
                    return Ok(None); // an index entry left behind
                };
                let mut taken = decode_delivery(&row).or_else(abort)?;
                taken.attempts += 1;
                taken.first_attempt_at.get_or_insert(now);
                taken.last_attempt_at = Some(now);
                taken.next_at = until;
                d.insert(timed(until, id), &[] as &[u8])?;
                p.insert(id, encode_delivery(&taken).or_else(abort)?)?;
                Ok(Some(taken))
            });
            if let Some(taken) = res.map_err(|e| txn_error("webhooks", e))? {
                out.push(taken);
            }
        }
        // Durable with the next synced write, at the latest their settle.
        Ok(out)
    }

    /// When the earliest pending delivery is due.
    pub fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        let due = self.tree(trees::WEBHOOK_DUE)?;
        for kv in due.iter().keys() {
            let k = kv?;
            if let Some(ms) = k.get(..8).and_then(|b| be_u64(b, "").ok()) {
                let ms = i64::try_from(ms).unwrap_or(i64::MAX);
                return Ok(DateTime::from_timestamp_millis(ms));
            }
        }
        Ok(None)
    }

    /// Records, in one write, what became of attempts on deliveries (as
    /// [`SledStore::webhook_due`] returned them): delivered deletes one,
    /// retry re-schedules it, gave-up moves it to the failed ones. A retry
    /// or a give-up from an attempt that a later one has replaced (its
    /// lease ran out) changes nothing: the later attempt decides.
    pub fn webhook_settle(&self, settled: &[(Delivery, Settle)]) -> Result<()> {
        if settled.is_empty() {
            return Ok(());
        }
        let pending = self.tree(trees::WEBHOOK_PENDING)?;
        let due = self.tree(trees::WEBHOOK_DUE)?;
        let failed = self.tree(trees::WEBHOOK_FAILED)?;
        let ids: Vec<Vec<u8>> = settled
            .iter()
            .map(|(taken, _)| ident(&taken.endpoint, taken.seq()))
            .collect();
        let res = (&pending, &due, &failed).transaction(|(p, d, f)| {
            for ((taken, outcome), id) in settled.iter().zip(&ids) {
                let Some(row) = p.get(id)? else {
                    continue; // settled already
                };
                let mut cur = decode_delivery(&row).or_else(abort)?;
                match outcome {
                    Settle::Delivered => {
                        p.remove(id.as_slice())?;
                        d.remove(timed(cur.next_at, id))?;
                    }
                    _ if cur.attempts != taken.attempts => {}
                    Settle::Retry { at, error } => {
                        d.remove(timed(cur.next_at, id))?;
                        cur.next_at = *at;
                        cur.last_error = Some(error.clone());
                        d.insert(timed(cur.next_at, id), &[] as &[u8])?;
                        p.insert(id.as_slice(), encode_delivery(&cur).or_else(abort)?)?;
                    }
                    Settle::GaveUp { error } => {
                        p.remove(id.as_slice())?;
                        d.remove(timed(cur.next_at, id))?;
                        cur.last_error = Some(error.clone());
                        let at = cur.last_attempt_at.unwrap_or(cur.next_at);
                        f.insert(timed(at, id), encode_delivery(&cur).or_else(abort)?)?;
                    }
                }
            }
            Ok(())
        });
        res.map_err(|e| txn_error("webhooks", e))?;
        self.sync()?;
        Ok(())
    }

    /// Puts deliveries given up on back in the queue, due `now`: those
    /// whose message id is in `msg_ids`, or all of them. Each leaves the
    /// failed ones in the write that queues it again. Returns how many.
    pub fn webhook_requeue(&self, msg_ids: Option<&[String]>, now: DateTime<Utc>) -> Result<usize> {
        let pending = self.tree(trees::WEBHOOK_PENDING)?;
        let due = self.tree(trees::WEBHOOK_DUE)?;
        let failed = self.tree(trees::WEBHOOK_FAILED)?;
        let mut chosen = Vec::new();
        for kv in failed.iter() {
            let (k, v) = kv?;
            let d = decode_delivery(&v).map_err(Error::Store)?;
            if msg_ids.is_none_or(|ids| ids.contains(&d.msg_id)) {
                chosen.push((k, d));
            }
        }
        let mut n = 0;
        for (k, d) in chosen {
            let id = ident(&d.endpoint, d.seq());
            let again = d.requeued(now);
            let res = (&pending, &due, &failed).transaction(|(p, q, f)| {
                if f.remove(&k)?.is_none() {
                    return Ok(false); // requeued meanwhile
                }
                if p.get(id.as_slice())?.is_none() {
                    p.insert(id.as_slice(), encode_delivery(&again).or_else(abort)?)?;
                    q.insert(timed(now, &id), &[] as &[u8])?;
                }
                Ok(true)
            });
            if res.map_err(|e| txn_error("webhooks", e))? {
                n += 1;
            }
        }
        if n > 0 {
            self.sync()?;
        }
        Ok(n)
    }

    /// Up to `limit` deliveries given up on, latest first.
    pub fn webhook_failed(&self, limit: usize) -> Result<Vec<Delivery>> {
        let failed = self.tree(trees::WEBHOOK_FAILED)?;
        let mut out = Vec::new();
        for kv in failed.iter().rev().take(limit) {
            let (_, v) = kv?;
            out.push(decode_delivery(&v).map_err(Error::Store)?);
        }
        Ok(out)
    }
}
