//! The approval messages in sled: the record of the message that asked for
//! each gate (`notifications`, session ++ 0 ++ gate), the index a click
//! finds its session and gate by (`messages`, channel/ts), and the first
//! sighting of a chat platform's event or command (`slack_events`).

use sled::transaction::{TransactionError, Transactional};

use super::{encode, gate_key, message_key, trees, unposted, SledStore};
use crate::error::{Error, Result};
use crate::store::MessageTarget;

impl SledStore {
    /// Records the message that asked for gate `n.gate` of `session` (or
    /// why posting it failed) and, when posted, indexes it and its direct
    /// copies by channel + ts — one atomic write, so a click can always find what it answers.
    /// The session itself is not written: a post never races the engine's
    /// checkpoints. The latest record per gate wins.
    pub fn record_notification(&self, session: &str, n: &crate::model::Notification) -> Result<()> {
        let notes = self.tree(trees::NOTIFICATIONS)?;
        let target = encode(
            "message target",
            &MessageTarget {
                session: session.to_string(),
                gate: n.gate.clone(),
            },
        )?;
        // The message, and the copies sent to approvers directly.
        let index: Vec<Vec<u8>> =
            n.ts.iter()
                .map(|ts| message_key(&n.channel, ts))
                .chain(n.copies.iter().map(|(c, ts)| message_key(c, ts)))
                .collect();
        let key = gate_key(session, &n.record_key());
        let record = encode("notification", n)?;
        let unposted = self.tree(trees::UNPOSTED)?;
        let res: std::result::Result<(), TransactionError<String>> =
            (&notes, &self.messages, &unposted).transaction(|(t, msg, up)| {
                t.insert(key.as_slice(), record.as_slice())?;
                for k in &index {
                    msg.insert(k.as_slice(), target.as_slice())?;
                }
                unposted::recorded(up, t, session, &n.gate)?;
                Ok(())
            });
        res.map_err(|e| Error::Store(format!("record notification: {e:?}")))?;
        self.sync()?;
        Ok(())
    }

    /// The messages that asked for a session's gates (the latest per
    /// gate), oldest first.
    pub fn notifications(&self, session: &str) -> Result<Vec<crate::model::Notification>> {
        let notes = self.tree(trees::NOTIFICATIONS)?;
        let mut prefix = session.as_bytes().to_vec();
        prefix.push(0);
        let mut out: Vec<crate::model::Notification> = Vec::new();
        for kv in notes.scan_prefix(&prefix) {
            let (_, v) = kv?;
            match serde_json::from_slice(&v) {
                Ok(n) => out.push(n),
                Err(e) => tracing::warn!(session, "skipping an unreadable notification: {e}"),
            }
        }
        out.sort_by_key(|n| n.at);
        Ok(out)
    }

    /// The session and gate an approval message was posted for.
    pub fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>> {
        match self.messages.get(message_key(channel, ts))? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v)
                .map(Some)
                .map_err(|e| Error::Store(format!("unreadable message index entry: {e}"))),
        }
    }

    /// True the first time `event_id` is seen; false for a retry.
    pub fn first_sighting(&self, event_id: &str) -> Result<bool> {
        let now = self.clock.now().timestamp().to_be_bytes();
        let res = self.slack_events.compare_and_swap(
            event_id.as_bytes(),
            None as Option<&[u8]>,
            Some(&now[..]),
        )?;
        if res.is_ok() {
            self.sync()?;
        }
        Ok(res.is_ok())
    }
}
