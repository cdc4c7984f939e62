//! The Teams room's state and where its cards are: [`TeamsRoom`] — the
//! hub, the connector, the conversation runs started elsewhere are asked in
//! (`TEAMS_APPROVALS_CONVERSATION`), the bot's app ID — with what every part
//! of the room reads from it: the conversation a run is asked in, a
//! conversation's stored reference, the cards that asked for a gate, and
//! replacing those cards.
//!
//! The parts take it: [`super::hall`] (the room off the service's hall:
//! asking, answers shown), [`super::dms`] (1:1 cards), [`super::timers`]
//! (reminders, escalations, timeouts), [`super::actions`] (a card's
//! action). It uses none of them, so the room's imports point one way.

use std::sync::Arc;

use serde_json::Value;

use super::connector::Connector;
use crate::channel::hall::MessageRef;
use crate::hub::Hub;
use crate::model::teams::TeamsConversation;
use crate::model::{Notification, Place, Session};

#[derive(Clone)]
pub struct TeamsRoom {
    pub hub: Hub,
    pub connector: Arc<Connector>,
    /// `TEAMS_APPROVALS_CONVERSATION`: where runs started elsewhere are asked.
    pub approvals: Option<String>,
    /// The bot's app ID, for the 1:1 conversations it opens.
    pub app_id: String,
}

/// Whether `place` is a Teams conversation's.
pub(super) fn in_teams(place: &str) -> bool {
    Place::parse(place).teams().is_some()
}

/// The Teams card that asked for gate `handle` (not Slack's message).
pub(super) fn card_note<'a>(notes: &'a [Notification], handle: &str) -> Option<&'a Notification> {
    notes
        .iter()
        .rev()
        .find(|n| n.gate == handle && in_teams(&n.channel))
}

impl TeamsRoom {
    pub fn new(
        hub: Hub,
        connector: Arc<Connector>,
        approvals: Option<String>,
        app_id: String,
    ) -> TeamsRoom {
        TeamsRoom {
            hub,
            connector,
            approvals,
            app_id,
        }
    }

    /// The Teams conversation `session` is asked in: its origin's, if it
    /// was started from Teams, else the approvals conversation.
    pub(super) fn conversation_of(&self, session: &Session) -> Option<String> {
        let origin = session
            .origin
            .as_ref()
            .map(|o| Place::parse(&o.approval_channel));
        match origin {
            Some(Place::Teams(conversation)) => Some(conversation),
            _ => self.approvals.clone(),
        }
    }

    /// The stored reference of conversation `id`, if the bot knows it.
    pub(super) async fn reference(&self, id: &str) -> Option<TeamsConversation> {
        match self.hub.store.teams_conversations().await {
            Ok(all) => all.into_iter().find(|c| c.id == id),
            Err(e) => {
                tracing::error!("cannot read the Teams conversations: {e}");
                None
            }
        }
    }

    /// The card that asked for gate `handle` of `session`, if one did.
    pub(super) async fn note(&self, session: &str, handle: &str) -> Option<Notification> {
        let notes = self.hub.store.notifications(session).await.ok()?;
        card_note(&notes, handle).cloned()
    }

    /// Every Teams card asking for gate `handle`: the card, its 1:1 copies
    /// (`notify: dm`) and its escalated copies, each once.
    pub(super) async fn cards(&self, session: &str, handle: &str) -> Vec<MessageRef> {
        let mut all: Vec<MessageRef> = Vec::new();
        if let Some(n) = self.note(session, handle).await {
            all.extend(n.ts.clone().map(|ts| (n.channel.clone(), ts)));
            all.extend(n.copies);
        }
        if let Ok(Some(esc)) = self.hub.store.escalation(session, handle).await {
            all.extend(esc.messages);
        }
        let mut seen = std::collections::HashSet::new();
        all.retain(|m| in_teams(&m.0) && seen.insert(m.clone()));
        all
    }

    /// Replaces each of `cards` (Teams places only) with `activity`.
    pub(super) async fn update_all(&self, session: &str, cards: &[MessageRef], activity: &Value) {
        for (place, id) in cards {
            let Place::Teams(conversation) = Place::parse(place) else {
                continue;
            };
            let conversation = conversation.as_str();
            let Some(c) = self.reference(conversation).await else {
                tracing::warn!(
                    session,
                    conversation,
                    "cannot update a card in a Teams conversation the bot does not know"
                );
                continue;
            };
            if let Err(e) = self
                .connector
                .update(&c.service_url, &c.id, id, activity)
                .await
            {
                tracing::warn!(session, "could not update a Teams approval card: {e}");
            }
        }
    }
}
