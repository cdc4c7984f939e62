//! Slack as a room off the service's hall ([`crate::channel::hall::Room`]):
//! asking posts a Block Kit approval message ([`super::post`]) and leaves
//! the session paused (the click comes back through the HTTP routes and the
//! service's intake); progress goes into the run's thread
//! ([`super::progress`]); reminders, escalated copies and timeouts are
//! posted and shown by [`super::timers`]. The top of the room: it uses the
//! parts, none of them uses it.

use crate::channel::hall::{BoxFuture, MessageRef, Room};
use crate::channel::Progress;
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::{OpenGate, Session};
use crate::spec::EscalationTarget;

use super::app::App;
use super::asked::posted;
use super::{post, progress, timers};

pub struct SlackRoom {
    pub app: App,
}

impl Room for SlackRoom {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn ask<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(post::ask(&self.app, session))
    }

    fn progress<'a>(&'a self, session: &'a Session, event: &'a Progress) -> BoxFuture<'a, ()> {
        Box::pin(progress::on_progress(&self.app, session, event))
    }

    fn unasked<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let notes = self
                .app
                .hub
                .store
                .notifications(&session.id)
                .await
                .unwrap_or_default();
            !session.open_gates().all(|g| posted(&notes, &g.handle()))
        })
    }

    fn messages<'a>(
        &'a self,
        session: &'a Session,
        handle: &'a str,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(timers::messages(&self.app, session, handle))
    }

    fn remind<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        n: u32,
        of: u32,
    ) -> BoxFuture<'a, ()> {
        Box::pin(timers::remind(&self.app, session, gate, n, of))
    }

    fn escalate<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        targets: &'a [EscalationTarget],
        why: &'a EscalationWhy,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(timers::escalate(&self.app, session, gate, targets, why))
    }

    fn timed_out<'a>(&'a self, session: &'a Session, fired: &'a Fired) -> BoxFuture<'a, ()> {
        Box::pin(timers::timed_out(&self.app, session, fired))
    }

    fn can_escalate(&self) -> bool {
        true
    }
}
