//! Teams as a room off the service's hall ([`crate::channel::hall::Room`]):
//! the hall's side of [`TeamsRoom`], which asks, shows answers, and hands
//! reminders, escalations and timeouts to [`super::timers`]. The top of the
//! room: it uses the parts ([`super::dms`], [`super::timers`]), and they use
//! only the room's state ([`super::room`]).
//!
//! - **Where a run is asked** ([`TeamsRoom::conversation_of`]). A run
//!   started from a Teams conversation
//!   (its origin's approval place is `teams:<conversation id>`) is asked
//!   there; any other run (the CLI, the API, Slack, the browser) in
//!   `TEAMS_APPROVALS_CONVERSATION` when it is set, else not in Teams.
//!   With Slack on too, Slack keeps asking where it did: the card is asked
//!   beside its message, and each room keeps its own record of the gate
//!   ([`crate::model::Notification::record_key`]).
//! - **Asking.** One approval card ([`super::card`]) per open gate, when
//!   the run pauses, in a conversation the bot has seen (a stored
//!   reference). Each card is recorded with the run (`record_notification`,
//!   place `teams:<conversation id>`, the card's activity id), so asking
//!   again — start-up asks rooms for `unasked` runs ([`crate::hub::repost`])
//!   — never posts twice; a failed post is recorded with its error (and
//!   logged once) and asked again at the next start-up.
//! - **`notify: dm`.** Each approver named `teams:<Entra object ID>` also
//!   gets the card in a 1:1 chat ([`super::dms`]); the copies are recorded
//!   with the card and updated with it.
//! - **Timers** ([`super::timers`]): reminders in the card's thread,
//!   escalated copies to `teams:` targets, a timeout shown on every card.
//! - **Answers.** When a gate is answered — on a card, in the browser, by
//!   the CLI, a `cancel` — its cards (the card, its 1:1 copies, escalated
//!   copies) show the decision, without buttons.
//!
//! What this room does not do yet: progress lines in a card's thread.

use super::card;
use super::commands::place;
use super::room::{card_note, TeamsRoom};
use crate::channel::hall::{BoxFuture, MessageRef, Room};
use crate::channel::Progress;
use crate::error::Result;
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::{Answer, GateEventKind, Notification, OpenGate, Session, Status};
use crate::spec::EscalationTarget;

/// Whether a card for gate `handle` was posted.
fn posted(notes: &[Notification], handle: &str) -> bool {
    card_note(notes, handle).is_some_and(|n| n.ts.is_some())
}

impl TeamsRoom {
    /// The gates of `session` this room asks for and has not asked yet.
    fn unposted(&self, session: &Session, notes: &[Notification]) -> Vec<String> {
        if self.conversation_of(session).is_none() || session.status != Status::Paused {
            return Vec::new();
        }
        session
            .open_gates()
            .map(|g| g.handle())
            .filter(|h| !posted(notes, h))
            .collect()
    }

    async fn ask_all(&self, session: &Session) {
        let notes = match self.hub.store.notifications(&session.id).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(session = %session.id, "cannot read the approval cards: {e}");
                return;
            }
        };
        for handle in self.unposted(session, &notes) {
            if let Some(gate) = session.open_gate(&handle) {
                // Logged once here; the record says why, for `sessions show`.
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
        let cards = self.cards(&session.id, &handle).await;
        if cards.is_empty() {
            return;
        }
        let decided = card::activity(card::decided(
            session,
            gate_id,
            answer,
            &self.hub.public_url,
        ));
        self.update_all(&session.id, &cards, &decided).await;
    }

    /// Posts the card for `gate` (and its 1:1 copies, `notify: dm`) and
    /// records it, or why it failed.
    async fn post(&self, session: &Session, gate: &OpenGate) -> Result<()> {
        let Some(conversation) = self.conversation_of(session) else {
            return Ok(());
        };
        let place = place(&conversation);
        let reference = self.reference(&conversation).await;
        let sent = match &reference {
            None => Err(format!(
                "the Teams conversation {conversation} is not known: the bot has not been added to it, or has had no activity from it"
            )),
            Some(c) => {
                let activity = card::activity(card::for_gate(&self.hub, session, gate));
                self.connector
                    .send(&c.service_url, &c.id, &activity)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let (ts, mut error) = match sent {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e)),
        };
        let mut copies = Vec::new();
        // The 1:1 copies go with a posted card (a card that failed is asked
        // again, copies and all).
        if gate.notify_dm && ts.is_some() {
            let (sent, failed) = super::dms::post(self, session, gate, reference.as_ref()).await;
            copies = sent;
            if !failed.is_empty() {
                // The card asks; the record says which copies did not go.
                error = Some(failed.join("; "));
            }
        }
        let n = Notification {
            gate: gate.handle(),
            channel: place,
            ts: ts.clone(),
            thread_ts: None,
            at: self.hub.clock.now(),
            error: error.clone(),
            copies,
        };
        self.hub.store.record_notification(&session.id, &n).await?;
        match (ts, error) {
            (Some(_), _) => {
                self.hub.metrics.gate_opened();
                Ok(())
            }
            (None, e) => Err(crate::error::Error::Runtime(format!(
                "the approval card was not posted: {}",
                e.unwrap_or_default()
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
            !self.unposted(session, &notes).is_empty()
        })
    }

    fn messages<'a>(
        &'a self,
        session: &'a Session,
        handle: &'a str,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(async move {
            // The card and its 1:1 copies (escalated copies are the engine's
            // to add).
            self.note(&session.id, handle)
                .await
                .map(|n| n.ts.map(|ts| (n.channel, ts)).into_iter().chain(n.copies))
                .into_iter()
                .flatten()
                .collect()
        })
    }

    fn remind<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        n: u32,
        of: u32,
    ) -> BoxFuture<'a, ()> {
        Box::pin(super::timers::remind(self, session, gate, n, of))
    }

    fn escalate<'a>(
        &'a self,
        session: &'a Session,
        gate: &'a OpenGate,
        targets: &'a [EscalationTarget],
        why: &'a EscalationWhy,
    ) -> BoxFuture<'a, Vec<MessageRef>> {
        Box::pin(super::timers::escalate(self, session, gate, targets, why))
    }

    fn timed_out<'a>(&'a self, session: &'a Session, fired: &'a Fired) -> BoxFuture<'a, ()> {
        Box::pin(super::timers::timed_out(self, session, fired))
    }

    fn can_escalate(&self) -> bool {
        // A card can go to any conversation the bot knows, or 1:1 to a
        // person of a tenant it knows.
        true
    }
}
