//! Cancelling a running run: an operator (CLI, API, web) asks, the engine
//! driving the run — in this process or another — stops at its next
//! checkpoint and ends the run `cancelled`.
//!
//! The request is one field of the session ([`Session::cancel`]) written
//! with the store's ordinary checkpoint (a compare-and-swap on the
//! session's revision): no new store operation. That write bumps the
//! revision, so the driving engine's next checkpoint fails; it then reads
//! the session, finds the request (and nothing else changed: the revision
//! moved by exactly one) and ends the run, keeping what it did since its
//! last checkpoint — a tool call that finished is recorded, never lost and
//! never run again. While it waits on a model, it also reads the session
//! every [`POLL`] and abandons the call when a request is there: the
//! call's answer, if one ever comes, is dropped unread.
//!
//! Paused runs are not cancelled here: their open gate is rejected through
//! the intake (`sessions cancel` and the API do that), as before.

use std::time::Duration;

use super::Engine;
use crate::audit::{AuditEvent, AuditKind};
use crate::channel::{HumanChannel, Progress};
use crate::error::{Error, Result};
use crate::model::{CancelRequest, EventKind, Session, Status};
use crate::spec::Spec;

/// How often an engine waiting on a model reads whether its run was
/// cancelled.
pub(super) const POLL: Duration = Duration::from_millis(250);

/// What a cancel request did.
#[derive(Debug)]
pub enum CancelOutcome {
    /// Recorded now: the engine driving the run stops at its next
    /// checkpoint (or a `resume` ends it, if none drives it).
    Requested(Session),
    /// Someone asked before (this is the session as it stands): nothing
    /// changed.
    AlreadyRequested(Session),
    /// The run is already `cancelled`: nothing changed.
    AlreadyCancelled(Session),
    /// The run waits at a gate: reject that gate instead (nothing changed).
    Paused(Session),
}

impl CancelOutcome {
    pub fn session(&self) -> &Session {
        match self {
            CancelOutcome::Requested(s)
            | CancelOutcome::AlreadyRequested(s)
            | CancelOutcome::AlreadyCancelled(s)
            | CancelOutcome::Paused(s) => s,
        }
    }
}

/// The cancel a session's stored copy carries that `ours` (the engine's
/// copy, at revision `ours.rev`) does not, when that request is the only
/// write since: the session becomes ours with the request and the stored
/// revision.
pub(super) fn merge(ours: &mut Session, stored: &Session) -> bool {
    match &stored.cancel {
        Some(c)
            if ours.cancel.is_none()
                && stored.status == Status::Running
                && stored.rev == ours.rev + 1 =>
        {
            ours.cancel = Some(c.clone());
            ours.rev = stored.rev;
            true
        }
        _ => false,
    }
}

impl Engine<'_> {
    /// Records `request` on running session `id` (compare-and-swap, retried
    /// when the engine checkpointed in between). A finished run is refused
    /// naming its status; asking twice changes nothing.
    pub async fn request_cancel(&self, id: &str, request: CancelRequest) -> Result<CancelOutcome> {
        loop {
            let mut session = self.store.get(id).await?;
            match session.status {
                Status::Cancelled => return Ok(CancelOutcome::AlreadyCancelled(session)),
                Status::Paused => return Ok(CancelOutcome::Paused(session)),
                Status::Running if session.cancel.is_some() => {
                    return Ok(CancelOutcome::AlreadyRequested(session))
                }
                Status::Running => {}
                status => {
                    return Err(Error::Finished {
                        id: session.id,
                        status: status.to_string(),
                    })
                }
            }
            let mut ev = AuditEvent::new(
                AuditKind::Outcome,
                &session.id,
                &session.workflow,
                self.clock.now(),
            );
            ev.who = Some(request.by.clone());
            ev.via = Some(request.via.clone());
            ev.detail = Some(match &request.reason {
                Some(r) => format!("cancel requested by {}: {r}", request.by),
                None => format!("cancel requested by {}", request.by),
            });
            session.audit.push(ev);
            session.cancel = Some(request.clone());
            session.stamp_audit();
            match self.store.checkpoint(&mut session).await {
                Ok(()) => {
                    tracing::info!(session = %session.id, by = %request.by, "cancel requested");
                    return Ok(CancelOutcome::Requested(session));
                }
                // The engine checkpointed since we read: read again.
                Err(Error::Session(m)) if m.contains("changed by another writer") => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// After a failed checkpoint of `session`: whether a cancel request is
    /// why (the session then carries it, at the stored revision).
    pub(super) async fn cancel_arrived(&self, session: &mut Session) -> Result<bool> {
        match self.store.load(&session.id).await? {
            Some(stored) => Ok(merge(session, &stored)),
            None => Ok(false),
        }
    }

    /// Resolves when a cancel request for session `id` is in the store
    /// (read every [`POLL`]); never otherwise. Raced against model calls.
    pub(super) async fn cancel_signal(&self, id: &str) -> Result<()> {
        loop {
            tokio::time::sleep(POLL).await;
            if let Some(s) = self.store.load(id).await? {
                if s.cancel.is_some() && s.status == Status::Running {
                    return Ok(());
                }
            }
        }
    }

    /// A model call was raced against [`Self::cancel_signal`] and lost:
    /// the call is abandoned; the run stops here if the request merges.
    pub(super) async fn abandon_call(&self, session: &mut Session, what: &str) -> Result<Error> {
        if self.cancel_arrived(session).await? {
            let mut ev = AuditEvent::new(
                AuditKind::Outcome,
                &session.id,
                &session.workflow,
                self.clock.now(),
            );
            ev.detail = Some(format!(
                "{what}: the model request in flight was abandoned (its answer is not used)"
            ));
            session.audit.push(ev);
            Ok(Error::Cancelled(session.id.clone()))
        } else {
            Err(Error::Store(format!(
                "session {} was changed by another writer while its model call ran",
                session.id
            )))
        }
    }

    /// Ends a run that carries a cancel request: `cancelled`, with the run
    /// event and an audit entry naming who cancelled and why.
    pub(super) async fn end_cancelled<C: HumanChannel>(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        channel: &mut C,
    ) -> Result<()> {
        let Some(c) = session.cancel.clone() else {
            return Err(Error::Internal(format!(
                "session {} stopped for a cancel it does not carry",
                session.id
            )));
        };
        session.status = Status::Cancelled;
        // As a rejection does: no gate stays open, no timer of one armed.
        session.gates.clear();
        session.arm.clear();
        session.events.push(EventKind::RunCancelled {
            by: c.by.clone(),
            reason: c.reason.clone(),
        });
        let mut ev = AuditEvent::new(
            AuditKind::Outcome,
            &session.id,
            &session.workflow,
            self.clock.now(),
        );
        ev.who = Some(c.by.clone());
        ev.via = Some(c.via.clone());
        ev.detail = Some(spec.redactor.redact(&match &c.reason {
            Some(r) => format!("cancelled by {}: {r}", c.by),
            None => format!("cancelled by {}", c.by),
        }));
        session.audit.push(ev);
        self.save(session).await?;
        tracing::info!(session = %session.id, by = %c.by, "run cancelled");
        channel
            .progress(
                session,
                &Progress::Cancelled {
                    by: c.by,
                    reason: c.reason,
                },
            )
            .await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{World, CHAIN};

    fn request(by: &str) -> CancelRequest {
        CancelRequest {
            by: by.into(),
            via: "cli".into(),
            reason: None,
            at: crate::clock::test_epoch(),
        }
    }

    /// The engine takes a stored cancel only when it is the one write
    /// since its own copy: anything else is a real conflict.
    #[tokio::test]
    async fn a_cancel_merges_only_when_it_is_the_one_write_since() {
        let w = World::new();
        let mut ours = w.paused(&CHAIN.replace("$GATE", "")).await;
        ours.status = Status::Running;
        let mut stored = ours.clone();
        stored.cancel = Some(request("ops"));
        stored.rev = ours.rev + 1;

        let mut two_ahead = stored.clone();
        two_ahead.rev += 1;
        assert!(!merge(&mut ours.clone(), &two_ahead), "another write too");
        let mut ended = stored.clone();
        ended.status = Status::Cancelled;
        assert!(!merge(&mut ours.clone(), &ended), "already ended");
        let mut none = stored.clone();
        none.cancel = None;
        assert!(!merge(&mut ours.clone(), &none), "no cancel");

        assert!(merge(&mut ours, &stored));
        assert_eq!(ours.rev, stored.rev);
        assert_eq!(ours.cancel.as_ref().map(|c| c.by.as_str()), Some("ops"));
        // Ours already carries it: nothing more to take.
        let mut again = stored.clone();
        again.rev = ours.rev + 1;
        assert!(!merge(&mut ours, &again));
    }

    /// A finished run is refused naming its status and left as it was.
    #[tokio::test]
    async fn a_finished_run_is_refused_unchanged() {
        let w = World::new();
        let mut s = w.paused(&CHAIN.replace("$GATE", "")).await;
        s.status = Status::Completed;
        s.gates.clear();
        w.store.checkpoint(&mut s).await.expect("checkpoint");
        let rev = s.rev;
        let err = w
            .engine()
            .request_cancel(&s.id, request("ops"))
            .await
            .expect_err("refused");
        assert!(err.to_string().contains("is completed"), "{err}");
        assert_eq!(err.exit_code(), crate::error::exit::SESSION);
        let after = w.store.get(&s.id).await.expect("session");
        assert_eq!(after.rev, rev);
        assert!(after.cancel.is_none());
    }
}
