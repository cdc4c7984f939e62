//! The large texts of sessions, apart from their records
//! (`store::outputs`): the `outputs` tree holds session id ++ 0 ++ SHA-256
//! (hex) → the text, so a session's texts are one key range that
//! [`SledStore::delete`] drops with it. A text is written before the
//! session write that refers to it, and only when its key is not there
//! yet (content-addressed: a leftover from a write that then failed is
//! harmless, and a checkpoint never rewrites a text already stored); sled
//! recovers writes in order, so a crash never leaves a session referring
//! to a text that is not there. Writes that decode and re-encode a session
//! inside a transaction (an answer, a timeout) read and write the tree in
//! that transaction.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use sled::transaction::{TransactionalTree, UnabortableTransactionError};

use super::{gate_key, trees, SledStore};
use crate::error::{Error, Result};
use crate::model::Session;
use crate::store::outputs;

type TxResult<T> = std::result::Result<T, UnabortableTransactionError>;

fn output_key(session: &str, hash: &str) -> Vec<u8> {
    gate_key(session, hash)
}

/// The key range of a session's texts.
fn prefix(session: &str) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.push(0);
    k
}

/// Reads stored session `id` inside a transaction, its texts put back
/// from `out` (its spec text is not: the caller writes it back as it was).
/// `Ok(Err(why))`: unreadable.
pub(super) fn decode_in(
    out: &TransactionalTree,
    id: &str,
    bytes: &[u8],
) -> TxResult<std::result::Result<Session, String>> {
    let parsed = match outputs::parse(bytes) {
        Ok(p) => p,
        Err(e) => return Ok(Err(format!("unreadable session: {e}"))),
    };
    let mut texts = HashMap::new();
    for h in parsed.hashes() {
        if let Some(v) = out.get(output_key(id, h))? {
            texts.insert(h.to_string(), String::from_utf8_lossy(&v).into_owned());
        }
    }
    Ok(parsed.fill(&texts).map_err(|m| match m {
        outputs::Missing::Output(h) => format!("its output (sha256 {h}) is missing"),
        outputs::Missing::Unreadable(e) => format!("unreadable session: {e}"),
    }))
}

/// Writes the texts of `session` not stored yet, inside a transaction;
/// how many.
pub(super) fn put_in(
    out: &TransactionalTree,
    session: &str,
    texts: &[(String, String)],
) -> TxResult<u64> {
    let mut n = 0;
    for (hash, text) in texts {
        let k = output_key(session, hash);
        if out.get(&k)?.is_none() {
            out.insert(k, text.as_bytes())?;
            n += 1;
        }
    }
    Ok(n)
}

impl SledStore {
    pub(super) fn outputs(&self) -> Result<sled::Tree> {
        self.tree(trees::OUTPUTS)
    }

    /// Writes the texts of `session` not stored yet (before the session
    /// write that refers to them).
    pub(super) fn put_outputs(&self, session: &str, texts: &[(String, String)]) -> Result<()> {
        if texts.is_empty() {
            return Ok(());
        }
        let out = self.outputs()?;
        for (hash, text) in texts {
            let k = output_key(session, hash);
            if !out.contains_key(&k)? {
                out.insert(k, text.as_bytes())?;
                self.outputs_written.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Counts texts a transaction wrote.
    pub(super) fn wrote_outputs(&self, n: u64) {
        self.outputs_written.fetch_add(n, Ordering::Relaxed);
    }

    /// The keys of a session's texts (a delete removes them).
    pub(super) fn output_keys(&self, session: &str) -> Result<Vec<sled::IVec>> {
        let mut keys = Vec::new();
        for k in self.outputs()?.scan_prefix(prefix(session)).keys() {
            keys.push(k?);
        }
        Ok(keys)
    }

    /// A stored session, whole: its texts and its spec put back.
    pub(super) fn decode_stored(&self, id: &str, bytes: &[u8]) -> Result<Session> {
        let location = self.path.display().to_string();
        let parsed = outputs::parse(bytes)
            .map_err(|e| Error::Store(format!("session {id} in {location} is unreadable: {e}")))?;
        let mut texts = HashMap::new();
        let out = self.outputs()?;
        for h in parsed.hashes() {
            if let Some(v) = out.get(output_key(id, h))? {
                texts.insert(h.to_string(), String::from_utf8_lossy(&v).into_owned());
            }
        }
        let mut session = parsed.fill(&texts).map_err(|m| m.error(id, &location))?;
        self.hydrate(&mut session)?;
        Ok(session)
    }

    /// How many texts this store has written apart since it was opened.
    pub fn outputs_written(&self) -> u64 {
        self.outputs_written.load(Ordering::Relaxed)
    }

    /// Test access: the stored record of `id` (if any) and how many texts
    /// it has apart.
    #[cfg(test)]
    pub(crate) fn stored_raw(&self, id: &str) -> Result<(Option<Vec<u8>>, usize)> {
        let body = self.sessions.get(id.as_bytes())?.map(|b| b.to_vec());
        Ok((body, self.output_keys(id)?.len()))
    }

    /// Test access: replaces the stored record of `id` (as an earlier
    /// release wrote it).
    #[cfg(test)]
    pub(crate) fn put_raw(&self, id: &str, body: &[u8]) -> Result<()> {
        self.sessions.insert(id.as_bytes(), body)?;
        Ok(())
    }
}
