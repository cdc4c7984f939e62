//! E-mail as a room off the service's hall ([`crate::channel::hall::Room`]).
//!
//! - **Asking.** When a run pauses, each of its open gates with people to
//!   mail ([`crate::hub::recipients::emails_for`]) gets one mail per
//!   address, queued in the store's outbox ([`crate::model::mail`]) and sent
//!   by [`super::send::Sender`]. The gate's record (a
//!   [`Notification`] in place `email:`, its copies one per address, each
//!   with the gate's Message-ID) says it was asked, so start-up recovery
//!   asks only gates never asked; the outbox queues a mail id once, so
//!   asking twice (a restart, two replicas) mails once.
//! - **Reminders** (the gate's timers) mail each address again, in the
//!   gate's thread; one that comes due after an answer is not sent.
//! - **Answers.** When the gate is decided — anywhere, or by its timeout —
//!   each address gets the outcome: who decided, how, when.
//!
//! What this room does not do: escalate (a mail cannot be re-posted to
//! someone else yet), or take answers — its links lead to the web door.

use std::sync::Arc;

use crate::channel::hall::{BoxFuture, MessageRef, Room};
use crate::channel::Progress;
use crate::hub::recipients::emails_for;
use crate::hub::Hub;
use crate::model::mail::{Mail, MailKind};
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::Place;
use crate::model::{GateEventKind, Notification, OpenGate, Session, Status};
use crate::spec::EscalationTarget;

use super::compose::message_id;

pub struct EmailRoom {
    pub hub: Hub,
    /// The right side of Message-IDs (the sender's domain).
    pub domain: String,
    /// Rings the sender when mail is queued.
    pub wake: Arc<tokio::sync::Notify>,
}

/// The e-mail room's record of gate `handle`, if it asked.
fn note<'a>(notes: &'a [Notification], handle: &str) -> Option<&'a Notification> {
    notes
        .iter()
        .rev()
        .find(|n| n.gate == handle && matches!(Place::parse(&n.channel), Place::Email(_)))
}

/// The addresses a record says were asked.
fn asked(n: &Notification) -> Vec<String> {
    n.copies
        .iter()
        .filter_map(|(place, _)| match Place::parse(place) {
            Place::Email(address) => address,
            _ => None,
        })
        .collect()
}

impl EmailRoom {
    /// The gates of `session` to ask here that were not asked yet.
    fn unasked_gates<'a>(&self, session: &'a Session, notes: &[Notification]) -> Vec<&'a OpenGate> {
        if session.status != Status::Paused {
            return Vec::new();
        }
        let people = self.hub.people();
        let now = self.hub.clock.now();
        session
            .open_gates()
            .filter(|g| {
                !emails_for(g, &people, now).is_empty() && note(notes, &g.handle()).is_none()
            })
            .collect()
    }

    async fn notes(&self, session: &str) -> Vec<Notification> {
        match self.hub.store.notifications(session).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(session, "cannot read the e-mail room's records: {e}");
                Vec::new()
            }
        }
    }

    /// Queues `kind` for each of `to`; whether any was new.
    async fn queue(&self, session: &str, handle: &str, kind: MailKind, to: &[String]) -> bool {
        let now = self.hub.clock.now();
        let mut any = false;
        for addr in to {
            let mail = Mail::new(session, handle, kind.clone(), addr, now);
            match self.hub.store.mail_queue(&mail).await {
                Ok(new) => any |= new,
                Err(e) => tracing::error!(session, gate = handle, "cannot queue a mail: {e}"),
            }
        }
        if any {
            self.wake.notify_one();
        }
        any
    }

    async fn ask_all(&self, session: &Session) {
        let notes = self.notes(&session.id).await;
        for gate in self.unasked_gates(session, &notes) {
            let handle = gate.handle();
            let to = emails_for(gate, &self.hub.people(), self.hub.clock.now());
            self.queue(&session.id, &handle, MailKind::Ask, &to).await;
            let id = message_id(&session.id, &handle, None, &self.domain);
            let n = Notification {
                gate: handle.clone(),
                channel: Place::Email(None).to_string(),
                ts: Some(id.clone()),
                thread_ts: None,
                at: self.hub.clock.now(),
                error: None,
                copies: to
                    .iter()
                    .map(|a| (Place::Email(Some(a.clone())).to_string(), id.clone()))
                    .collect(),
            };
            if let Err(e) = self.hub.store.record_notification(&session.id, &n).await {
                tracing::error!(session = %session.id, gate = %handle, "cannot record the mails asked: {e}");
            }
        }
    }

    /// Gate `handle` was decided: each address asked gets the outcome.
    async fn tell_outcome(&self, session: &Session, handle: &str) {
        let notes = self.notes(&session.id).await;
        if let Some(n) = note(&notes, handle) {
            self.queue(&session.id, handle, MailKind::Outcome, &asked(n))
                .await;
        }
    }
}

impl Room for EmailRoom {
    fn name(&self) -> &'static str {
        "email"
    }

    fn ask<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(self.ask_all(session))
    }

    fn progress<'a>(&'a self, session: &'a Session, event: &'a Progress) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Progress::GateAnswered { gate, .. } = event else {
                return;
            };
            let handle = session.history.iter().rev().find_map(|e| match &e.what {
                GateEventKind::Answered { .. } if &e.gate == gate => {
                    Some(format!("{}#{}", e.gate, e.instance))
                }
                _ => None,
            });
            if let Some(handle) = handle {
                self.tell_outcome(session, &handle).await;
            }
        })
    }

    fn unasked<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let notes = self.notes(&session.id).await;
            !self.unasked_gates(session, &notes).is_empty()
        })
    }

    fn messages<'a>(
        &'a self,
        _session: &'a Session,
        _handle: &'a str,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        // A mail is not updated in place: nothing for the timers to show.
        Box::pin(async { Vec::new() })
    }

    fn remind<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        n: u32,
        of: u32,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let handle = gate.handle();
            let notes = self.notes(&session.id).await;
            if let Some(note) = note(&notes, &handle) {
                self.queue(
                    &session.id,
                    &handle,
                    MailKind::Reminder { n, of },
                    &asked(note),
                )
                .await;
            }
        })
    }

    fn escalate<'a>(
        &'a self,
        _session: &'a Session,
        _gate: &'a OpenGate,
        _targets: &'a [EscalationTarget],
        _why: &'a EscalationWhy,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(async { Vec::new() })
    }

    fn timed_out<'a>(&'a self, session: &'a Session, fired: &'a Fired) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // Queued once per address, whether the answer's progress also
            // came through here or not.
            self.tell_outcome(session, &fired.gate.handle()).await;
        })
    }

    fn can_escalate(&self) -> bool {
        false
    }
}
