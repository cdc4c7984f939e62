//! Reads every tree of a sled store into a backend-neutral
//! [`crate::store::migrate::Dump`] (for `strands store migrate`).

use super::{encode, trees, MessageTarget, SledStore};
use crate::error::{Error, Result};
use crate::store::migrate::Dump;

/// Splits `session ++ 0 ++ gate`.
fn split_gate(key: &[u8]) -> Option<(String, String)> {
    let at = key.iter().position(|b| *b == 0)?;
    Some((
        String::from_utf8_lossy(&key[..at]).into_owned(),
        String::from_utf8_lossy(&key[at + 1..]).into_owned(),
    ))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl SledStore {
    pub fn export(&self) -> Result<Dump> {
        let mut d = Dump::default();
        for kv in self.sessions.iter() {
            let (k, body) = kv?;
            let summary = self
                .summaries
                .get(&k)?
                .ok_or_else(|| Error::Store(format!("session {} has no summary", text(&k))))?;
            // Whole, as another backend stores it: the spec text put back
            // where this store keeps a reference to its `specs` tree, and
            // its texts kept apart put back in it.
            let session = self.decode_stored(&text(&k), &body)?;
            let body = serde_json::to_vec(&session)
                .map_err(|e| Error::Internal(format!("encode session: {e}")))?;
            d.sessions.push((body, summary.to_vec()));
        }
        for kv in self.messages.iter() {
            let (k, v) = kv?;
            let key = text(&k);
            let Some((channel, ts)) = key.split_once('/') else {
                continue;
            };
            let target: MessageTarget = serde_json::from_slice(&v)
                .map_err(|e| Error::Store(format!("message index {key}: {e}")))?;
            d.messages.push((channel.into(), ts.into(), target));
        }
        for k in self.slack_events.iter().keys() {
            d.chat_events.push(text(&k?));
        }
        for kv in self.events.iter() {
            d.events.push(kv?.1.to_vec());
        }
        d.last_event = self.last_event()?;
        d.audit = self.audit_page(0, usize::MAX)?;
        d.audit_head = self.audit_head()?;
        for kv in self.tree(trees::TIMERS)?.iter() {
            d.timers.push(kv?.1.to_vec());
        }
        for kv in self.tree(trees::TIMER_GATES)?.iter() {
            let (k, v) = kv?;
            // Older stores: session → its one gate handle.
            d.timer_marks
                .push(split_gate(&k).unwrap_or_else(|| (text(&k), text(&v))));
        }
        for (tree, into) in [
            (trees::ESCALATIONS, &mut d.escalations),
            (trees::NOTIFICATIONS, &mut d.notifications),
            (trees::QUEUED_ANSWERS, &mut d.queued),
        ] {
            for kv in self.tree(tree)?.iter() {
                let (k, v) = kv?;
                if let Some((s, g)) = split_gate(&k) {
                    into.push((s, g, v.to_vec()));
                }
            }
        }
        for kv in self.tree(trees::META)?.iter() {
            let (k, v) = kv?;
            let key = text(&k);
            if key == "store_id" || key.starts_with("key/") {
                d.meta.push((key, v.to_vec()));
            }
        }
        for kv in self.tree(trees::TOKENS)?.iter() {
            d.tokens.push(kv?.1.to_vec());
        }
        for kv in self.tree(trees::WEBHOOK_CURSORS)?.iter() {
            let (k, v) = kv?;
            let seq = <[u8; 8]>::try_from(v.as_ref())
                .map(u64::from_be_bytes)
                .map_err(|_| Error::Store("unreadable webhook cursor".into()))?;
            d.webhook_cursors.push((text(&k), seq));
        }
        for kv in self.tree(trees::WEBHOOK_PENDING)?.iter() {
            d.webhook_pending.push(kv?.1.to_vec());
        }
        for kv in self.tree(trees::WEBHOOK_FAILED)?.iter() {
            d.webhook_failed.push(kv?.1.to_vec());
        }
        for kv in self.tree(trees::WEB_LOGINS)?.iter() {
            let (k, v) = kv?;
            d.logins.push((text(&k), v.to_vec()));
        }
        for kv in self.tree(trees::TEAMS_CONVERSATIONS)?.iter() {
            d.teams_conversations.push(kv?.1.to_vec());
        }
        for p in self.people()? {
            d.people.push(encode("person", &p)?);
        }
        for kv in self.tree(trees::GRANTS)?.iter() {
            d.grants.push(kv?.1.to_vec());
        }
        Ok(d)
    }
}
