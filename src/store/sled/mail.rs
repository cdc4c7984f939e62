//! The mail outbox in sled: every mail ever queued by id (`mail`: the
//! mail while pending, a mark once sent or given up, so an id is queued
//! once), the pending ones by when they are due (`mail_due`) and the ones
//! given up on (`mail_failed`).
//!
//! As with webhooks, a mail taken for an attempt is re-scheduled to the end
//! of its lease in the transaction that takes it, and a settled mail leaves
//! the pending trees in the write that records its outcome: a mail the
//! server took is never sent again.

use sled::Transactional;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{abort, trees, txn_error, SledStore};
use crate::error::{Error, Result};
use crate::model::mail::{Mail, Settle};

/// The `mail` value of a sent mail.
const SENT: &[u8] = b"";
/// The `mail` value of a mail given up on.
const GAVE_UP: &[u8] = b"!";

fn millis(at: DateTime<Utc>) -> u64 {
    u64::try_from(at.timestamp_millis()).unwrap_or(0)
}

fn timed(at: DateTime<Utc>, id: &[u8]) -> Vec<u8> {
    let mut k = millis(at).to_be_bytes().to_vec();
    k.extend_from_slice(id);
    k
}

fn decode(bytes: &[u8]) -> std::result::Result<Mail, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("unreadable mail: {e}"))
}

fn encode(m: &Mail) -> std::result::Result<Vec<u8>, String> {
    serde_json::to_vec(m).map_err(|e| format!("encode mail: {e}"))
}

impl SledStore {
    /// Queues `mail` (due at its `next_at`) unless its id was ever queued;
    /// whether it was.
    pub fn mail_queue(&self, mail: &Mail) -> Result<bool> {
        let all = self.tree(trees::MAIL)?;
        let due = self.tree(trees::MAIL_DUE)?;
        let id = mail.id.as_bytes();
        let res = (&all, &due).transaction(|(a, d)| {
            if a.get(id)?.is_some() {
                return Ok(false);
            }
            a.insert(id, encode(mail).or_else(abort)?)?;
            d.insert(timed(mail.next_at, id), &[] as &[u8])?;
            Ok(true)
        });
        let queued = res.map_err(|e| txn_error("mail", e))?;
        if queued {
            self.sync()?;
        }
        Ok(queued)
    }

    /// Up to `limit` pending mails due by `now`, each taken for an attempt
    /// (counted, due again at `now + lease`) as it is read.
    pub fn mail_due(&self, now: DateTime<Utc>, lease: Duration, limit: usize) -> Result<Vec<Mail>> {
        let all = self.tree(trees::MAIL)?;
        let due = self.tree(trees::MAIL_DUE)?;
        let until = now + chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX / 2);
        let cutoff = millis(now);
        let mut keys = Vec::new();
        for kv in due.iter().keys() {
            let k = kv?;
            let Some(at) = k
                .get(..8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_be_bytes)
            else {
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
            let res = (&all, &due).transaction(|(a, d)| {
                if d.get(&k)?.is_none() {
                    return Ok(None); // taken or settled meanwhile
                }
                d.remove(&k)?;
                let Some(row) = a.get(id)?.filter(|r| r.len() > 1) else {
                    return Ok(None);
                };
                let mut taken = decode(&row).or_else(abort)?;
                taken.attempts += 1;
                taken.first_attempt_at.get_or_insert(now);
                taken.last_attempt_at = Some(now);
                taken.next_at = until;
                d.insert(timed(until, id), &[] as &[u8])?;
                a.insert(id, encode(&taken).or_else(abort)?)?;
                Ok(Some(taken))
            });
            if let Some(taken) = res.map_err(|e| txn_error("mail", e))? {
                out.push(taken);
            }
        }
        if !out.is_empty() {
            self.sync()?;
        }
        Ok(out)
    }

    /// Records what became of an attempt on `taken`: sent (marked, never
    /// sent again), retry (re-scheduled), gave up (to the failed ones). A
    /// retry or give-up from an attempt a later one replaced changes
    /// nothing.
    pub fn mail_settle(&self, taken: &Mail, outcome: Settle) -> Result<()> {
        let all = self.tree(trees::MAIL)?;
        let due = self.tree(trees::MAIL_DUE)?;
        let failed = self.tree(trees::MAIL_FAILED)?;
        let id = taken.id.as_bytes();
        let res = (&all, &due, &failed).transaction(|(a, d, f)| {
            let Some(row) = a.get(id)?.filter(|r| r.len() > 1) else {
                return Ok(()); // settled already
            };
            let mut cur = decode(&row).or_else(abort)?;
            match &outcome {
                Settle::Delivered => {
                    a.insert(id, SENT)?;
                    d.remove(timed(cur.next_at, id))?;
                }
                _ if cur.attempts != taken.attempts => {}
                Settle::Retry { at, error } => {
                    d.remove(timed(cur.next_at, id))?;
                    cur.next_at = *at;
                    cur.last_error = Some(error.clone());
                    d.insert(timed(cur.next_at, id), &[] as &[u8])?;
                    a.insert(id, encode(&cur).or_else(abort)?)?;
                }
                Settle::GaveUp { error } => {
                    a.insert(id, GAVE_UP)?;
                    d.remove(timed(cur.next_at, id))?;
                    cur.last_error = Some(error.clone());
                    let at = cur.last_attempt_at.unwrap_or(cur.next_at);
                    f.insert(timed(at, id), encode(&cur).or_else(abort)?)?;
                }
            }
            Ok(())
        });
        res.map_err(|e| txn_error("mail", e))?;
        self.sync()?;
        Ok(())
    }

    /// Up to `limit` mails given up on, latest first.
    pub fn mail_failed(&self, limit: usize) -> Result<Vec<Mail>> {
        let failed = self.tree(trees::MAIL_FAILED)?;
        let mut out = Vec::new();
        for kv in failed.iter().rev().take(limit) {
            let (_, v) = kv?;
            out.push(decode(&v).map_err(Error::Store)?);
        }
        Ok(out)
    }
}
