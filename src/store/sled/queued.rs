//! Answers that arrive for one of several open gates while the run is busy
//! with another branch (parallel patterns in the bot).
//!
//! The session itself cannot take them: the engine owns it while it runs
//! and checkpoints with a compare-and-swap, so writing it from a click
//! would make the run fail its next checkpoint. The answer waits here
//! instead — first one per gate wins, like a click on a paused run — and
//! the engine records it through the ordinary [`SledStore::record_answer`] as
//! soon as it stops moving (`Engine::apply_queued`).

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::{gate_key, trees, Refusal, SledStore};
use crate::error::{Error, Result};
use crate::model::Answer;
use crate::model::{Session, Status};

impl SledStore {
    /// Queues `answer` for the open gate `handle` of a running session.
    /// Refused when the run is not running, the gate is not open, or an
    /// answer for it is already queued (that one wins).
    #[allow(clippy::result_large_err)] // see `gate::accept`
    pub fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        let queued = self.tree(trees::QUEUED_ANSWERS)?;
        let k = gate_key(id, handle);
        let res = (&self.sessions, &queued).transaction(|(s, q)| {
            let Some(cur) = s.get(id.as_bytes())? else {
                return Err(ConflictableTransactionError::Abort(Ok(Refusal::NotFound)));
            };
            let session: Session = crate::model::wire::decode(&cur).map_err(|e| {
                ConflictableTransactionError::Abort(Err(format!("unreadable session: {e}")))
            })?;
            if session.status != Status::Running {
                return Err(ConflictableTransactionError::Abort(Ok(Refusal::NotOpen(
                    session.status,
                ))));
            }
            if !session.gates.contains_key(handle) {
                return Err(ConflictableTransactionError::Abort(Ok(Refusal::Stale {
                    open: session.first_gate().map(|g| g.handle()),
                })));
            }
            if let Some(prev) = q.get(&k)? {
                let prev: Option<Answer> = serde_json::from_slice(&prev).ok();
                return Err(ConflictableTransactionError::Abort(Ok(match prev {
                    Some(a) => Refusal::AlreadyAnswered(a),
                    None => Refusal::BadAnswer("an answer is already waiting".into()),
                })));
            }
            let bytes = serde_json::to_vec(answer)
                .map_err(|e| ConflictableTransactionError::Abort(Err(e.to_string())))?;
            q.insert(k.clone(), bytes)?;
            Ok(())
        });
        match res {
            Ok(()) => {
                self.sync()?;
                Ok(Ok(()))
            }
            Err(TransactionError::Abort(Ok(refusal))) => Ok(Err(refusal)),
            Err(TransactionError::Abort(Err(msg))) => {
                Err(Error::Store(format!("session {id}: {msg}")))
            }
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    /// The answers queued for a session's gates: (gate handle, answer).
    pub fn queued_answers(&self, id: &str) -> Result<Vec<(String, Answer)>> {
        let queued = self.tree(trees::QUEUED_ANSWERS)?;
        let mut prefix = id.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        for item in queued.scan_prefix(&prefix) {
            let (k, v) = item?;
            let handle = String::from_utf8_lossy(&k[prefix.len()..]).into_owned();
            match serde_json::from_slice::<Answer>(&v) {
                Ok(a) => out.push((handle, a)),
                Err(e) => {
                    tracing::error!(session = %id, gate = %handle, "dropping an unreadable queued answer: {e}");
                    queued.remove(&k)?;
                }
            }
        }
        Ok(out)
    }

    /// Forgets a queued answer (recorded, or its gate closed).
    pub fn drop_queued(&self, id: &str, handle: &str) -> Result<()> {
        self.tree(trees::QUEUED_ANSWERS)?
            .remove(gate_key(id, handle))?;
        self.sync()?;
        Ok(())
    }
}
