//! The hall: the rooms a long-running service asks people in.
//!
//! `strands serve` may ask in several places at once — Slack today, any
//! later chat tool — and a gate is answered in whichever room a person
//! uses. Each is a [`Room`]: it asks (posts a message), shows progress, and
//! does its part when a gate's timers fire (a reminder, an escalated copy,
//! a timeout shown on the messages that asked). The [`Hall`] is the one
//! [`HumanChannel`] the service's engine talks to; it fans every call out
//! to its rooms. Answers never come back through here: every room hands
//! them to the engine's intake, which holds the rules of who may answer and
//! what an answer means. The HTTP API and the web inbox are not rooms —
//! they ask nobody; they read the gates and events the store keeps.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{HumanChannel, Progress, Reply};
use crate::error::Result;
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::{OpenGate, Session};
use crate::spec::EscalationTarget;

/// A boxed future, so rooms can sit behind `dyn Room`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// `(place, id)` of a message that asked (Slack: channel and `ts`).
pub type MessageRef = (String, String);

/// A place where people are asked and answer.
pub trait Room: Send + Sync {
    /// For logs (`slack`, ...).
    fn name(&self) -> &'static str;
    /// `session` was saved paused: ask for each of its open gates not
    /// asked here yet. Failures are the room's to record and log.
    fn ask<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()>;
    /// The run moved on; show it or not.
    fn progress<'a>(&'a self, session: &'a Session, event: &'a Progress) -> BoxFuture<'a, ()>;
    /// Whether an open gate of `session` was never asked here (start-up
    /// recovery asks again).
    fn unasked<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, bool>;
    /// The messages that asked for gate `handle`.
    fn messages<'a>(
        &'a self,
        session: &'a Session,
        handle: &'a str,
    ) -> BoxFuture<'a, Vec<MessageRef>>;
    /// Reminder `n` of `of` for `gate`.
    fn remind<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        n: u32,
        of: u32,
    ) -> BoxFuture<'a, ()>;
    /// Asks again, of `targets`; the copies posted (empty: none).
    fn escalate<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        targets: &'a [EscalationTarget],
        why: &'a EscalationWhy,
    ) -> BoxFuture<'a, Vec<MessageRef>>;
    /// A timeout answered: show it on the messages that asked. Idempotent.
    fn timed_out<'a>(&'a self, session: &'a Session, fired: &'a Fired) -> BoxFuture<'a, ()>;
    /// Whether this room can re-post a request to someone else.
    fn can_escalate(&self) -> bool;
}

/// Every room of a service; the service's [`HumanChannel`].
#[derive(Clone, Default)]
pub struct Hall {
    rooms: Vec<Arc<dyn Room>>,
}

impl Hall {
    pub fn new(rooms: Vec<Arc<dyn Room>>) -> Hall {
        Hall { rooms }
    }

    pub fn rooms(&self) -> &[Arc<dyn Room>] {
        &self.rooms
    }

    /// Whether some room never asked for an open gate of `session`.
    pub async fn unasked(&self, session: &Session) -> bool {
        for r in &self.rooms {
            if r.unasked(session).await {
                return true;
            }
        }
        false
    }

    /// The messages of every room that asked for gate `handle`.
    pub async fn messages(&self, session: &Session, handle: &str) -> Vec<MessageRef> {
        let mut out = Vec::new();
        for r in &self.rooms {
            out.extend(r.messages(session, handle).await);
        }
        out
    }

    pub async fn remind(&self, session: &Session, gate: &OpenGate, n: u32, of: u32) {
        for r in &self.rooms {
            r.remind(session, gate, n, of).await;
        }
    }

    /// Escalates in every room that can; every copy posted.
    pub async fn escalate(
        &self,
        session: &Session,
        gate: &OpenGate,
        targets: &[EscalationTarget],
        why: &EscalationWhy,
    ) -> Vec<MessageRef> {
        let mut out = Vec::new();
        for r in self.rooms.iter().filter(|r| r.can_escalate()) {
            out.extend(r.escalate(session, gate, targets, why).await);
        }
        out
    }

    pub async fn timed_out(&self, session: &Session, fired: &Fired) {
        for r in &self.rooms {
            r.timed_out(session, fired).await;
        }
    }

    pub fn can_escalate(&self) -> bool {
        self.rooms.iter().any(|r| r.can_escalate())
    }
}

impl HumanChannel for Hall {
    async fn ask(&mut self, session: &Session) -> Result<Reply> {
        for r in &self.rooms {
            r.ask(session).await;
        }
        // Nobody answers inside the engine's call: the session waits in
        // the store, and an answer comes back through the intake.
        Ok(Reply::Later)
    }

    async fn progress(&mut self, session: &Session, event: &Progress) {
        for r in &self.rooms {
            r.progress(session, event).await;
        }
    }
}
