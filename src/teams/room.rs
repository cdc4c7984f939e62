//! Teams as a room off the service's hall ([`crate::channel::hall::Room`]):
//! a run started from a Teams conversation (its origin's approval place is
//! `teams:<conversation id>`) is asked there with an approval card
//! ([`super::card`]) when it pauses, once per open gate. Each card posted
//! is recorded with the run (`record_notification`, place
//! `teams:<conversation id>`, the card's activity id), so asking again
//! after a restart never posts twice; a failed post is recorded with its
//! error.
//!
//! When a gate is answered — on the card, in the browser, by the CLI, a
//! `cancel` or a timeout — its cards are updated to show the decision,
//! without buttons.
//!
//! What this room does not do yet: progress lines, reminders, escalated
//! copies, or cards for tool-call gates.

use std::sync::Arc;

use chrono::Utc;

use super::card;
use super::commands::PLACE_PREFIX;
use super::connector::Connector;
use crate::channel::hall::{BoxFuture, MessageRef, Room};
use crate::channel::Progress;
use crate::error::Result;
use crate::hub::Hub;
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::{Answer, GateEventKind, Notification, OpenGate, Session, Status};
use crate::spec::EscalationTarget;

pub struct TeamsRoom {
    pub hub: Hub,
    pub connector: Arc<Connector>,
}

/// The Teams conversation a run is asked in, if it was started from one.
fn conversation_of(session: &Session) -> Option<&str> {
    session
        .origin
        .as_ref()
        .and_then(|o| o.approval_channel.strip_prefix(PLACE_PREFIX))
}

/// Whether a card for gate `handle` was posted.
fn posted(notes: &[Notification], handle: &str) -> bool {
    notes
        .iter()
        .any(|n| n.gate == handle && n.channel.starts_with(PLACE_PREFIX) && n.ts.is_some())
}

/// The gates of `session` this room asks for and has not asked yet.
fn unposted(session: &Session, notes: &[Notification]) -> Vec<String> {
    if conversation_of(session).is_none() || session.status != Status::Paused {
        return Vec::new();
    }
    session
        .open_gates()
        .map(|g| g.handle())
        .filter(|h| !posted(notes, h))
        .collect()
}

impl TeamsRoom {
    async fn ask_all(&self, session: &Session) {
        let notes = match self.hub.store.notifications(&session.id).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(session = %session.id, "cannot read the approval cards: {e}");
                return;
            }
        };
        for handle in unposted(session, &notes) {
            if let Some(gate) = session.open_gate(&handle) {
                if let Err(e) = self.post(session, gate).await {
                    tracing::error!(session = %session.id, gate = %handle, "approval card not posted: {e}");
                }
            }
        }
    }

    /// A gate was answered (here, in the browser, the CLI, a `cancel`, a
    /// timeout): every card that asked for it shows the decision, without
    /// buttons.
    async fn show_answer(&self, session: &Session, gate_id: &str, answer: &Answer) {
        let Some(handle) = session.history.iter().rev().find_map(|e| match &e.what {
            GateEventKind::Answered { .. } if e.gate == gate_id => {
                Some(format!("{}#{}", e.gate, e.instance))
            }
            _ => None,
        }) else {
            return;
        };
        let cards: Vec<(String, String)> = self
            .hub
            .store
            .notifications(&session.id)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.gate == handle)
            .filter_map(|n| {
                let conversation = n.channel.strip_prefix(PLACE_PREFIX)?.to_string();
                Some((conversation, n.ts?))
            })
            .collect();
        if cards.is_empty() {
            return;
        }
        let known = self
            .hub
            .store
            .teams_conversations()
            .await
            .unwrap_or_default();
        let decided = card::activity(card::decided(
            session,
            gate_id,
            answer,
            &self.hub.public_url,
        ));
        for (conversation, id) in cards {
            let Some(c) = known.iter().find(|c| c.id == conversation) else {
                continue;
            };
            if let Err(e) = self
                .connector
                .update(&c.service_url, &c.id, &id, &decided)
                .await
            {
                tracing::warn!(session = %session.id, "could not update a Teams approval card: {e}");
            }
        }
    }

    /// Posts the card for `gate` and records it (or why it failed).
    async fn post(&self, session: &Session, gate: &OpenGate) -> Result<()> {
        let Some(conversation) = conversation_of(session) else {
            return Ok(());
        };
        let place = format!("{PLACE_PREFIX}{conversation}");
        let reference = self
            .hub
            .store
            .teams_conversations()
            .await?
            .into_iter()
            .find(|c| c.id == conversation);
        let sent = match reference {
            None => Err(format!(
                "the Teams conversation {conversation} is not known"
            )),
            Some(c) => {
                let activity = card::activity(card::for_gate(&self.hub, session, gate));
                self.connector
                    .send(&c.service_url, &c.id, &activity)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let (ts, error) = match sent {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e)),
        };
        let n = Notification {
            gate: gate.handle(),
            channel: place,
            ts,
            thread_ts: None,
            at: Utc::now(),
            error: error.clone(),
            copies: Vec::new(),
        };
        self.hub.store.record_notification(&session.id, &n).await?;
        match error {
            None => {
                self.hub.metrics.gate_opened();
                Ok(())
            }
            Some(e) => Err(crate::error::Error::Runtime(format!(
                "the approval card was not posted: {e}"
            ))),
        }
    }
}

impl Room for TeamsRoom {
    fn name(&self) -> &'static str {
        "teams"
    }

    fn ask<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, ()> {
        Box::pin(self.ask_all(session))
    }

    fn progress<'a>(&'a self, session: &'a Session, event: &'a Progress) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Progress::GateAnswered { gate, answer } = event {
                self.show_answer(session, gate, answer).await;
            }
        })
    }

    fn unasked<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let notes = self
                .hub
                .store
                .notifications(&session.id)
                .await
                .unwrap_or_default();
            !unposted(session, &notes).is_empty()
        })
    }

    fn messages<'a>(
        &'a self,
        session: &'a Session,
        handle: &'a str,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(async move {
            self.hub
                .store
                .notifications(&session.id)
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|n| n.gate == handle && n.channel.starts_with(PLACE_PREFIX))
                .filter_map(|n| Some((n.channel, n.ts?)))
                .collect()
        })
    }

    fn remind<'a>(&'a self, _: &'a Session, _: &'a OpenGate, _: u32, _: u32) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn escalate<'a>(
        &'a self,
        _: &'a Session,
        _: &'a OpenGate,
        _: &'a [EscalationTarget],
        _: &'a EscalationWhy,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(async { Vec::new() })
    }

    fn timed_out<'a>(&'a self, _: &'a Session, _: &'a Fired) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn can_escalate(&self) -> bool {
        false
    }
}
