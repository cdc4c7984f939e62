//! What the Teams room does about gate timers ([`crate::engine::timers`]
//! decides when they fire; [`super::room::TeamsRoom`] is called), as the
//! Slack room does in Slack:
//!
//! - **Reminders** go into the card's thread: in a channel a reply to the
//!   card's activity; in a chat (group or 1:1) a message in the
//!   conversation. They name who must answer and when the gate times out.
//! - **Escalations** post the card again, under an "Escalated" line, to
//!   the Teams targets: `teams:<Entra object ID>` in a 1:1 chat,
//!   `teams:<conversation id>` in that conversation. The copies posted are
//!   returned, so the engine records them and every one shows the decision.
//!   Slack targets are the Slack room's.
//! - **Timeouts** replace every card that asked (the card, its 1:1 copies,
//!   the escalated copies) with the outcome, "⏱ Timed out → rejected by
//!   fallback", without buttons.
//!
//! As in Slack, a crash between posting an escalation and recording it
//! re-posts it once (at least once, never lost).

use chrono::SecondsFormat;
use serde_json::json;

use super::card;
use super::commands::place;
use super::dms::{send_to, teams_people, with_head};
use super::room::{in_teams, TeamsRoom};
use crate::channel::hall::MessageRef;
use crate::hub::durations;
use crate::model::teams::ConversationKind;
use crate::model::timer::{EscalationWhy, Fired};
use crate::model::Place;
use crate::model::{OpenGate, Session};
use crate::spec::EscalationTarget;

/// Reminder `n` of `of` for `gate`, in its card's thread.
pub async fn remind(room: &TeamsRoom, session: &Session, gate: &OpenGate, n: u32, of: u32) {
    let Some((conversation, card_id)) = room
        .note(&session.id, &gate.handle())
        .await
        .and_then(|n| Some((Place::parse(&n.channel).teams()?.to_string(), n.ts?)))
    else {
        return;
    };
    let Some(c) = room.reference(&conversation).await else {
        tracing::warn!(session = %session.id, conversation, "reminder not posted: the Teams conversation is not known");
        return;
    };
    let who = if gate.approvers.is_empty() {
        super::names::shown(&session.started_by)
    } else {
        gate.approvers
            .iter()
            .map(|a| super::names::shown(&a.text()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let business = durations::business_deadline_posted(gate.hours.as_ref(), gate.timeout_at);
    let deadline = gate
        .timeout_at
        .map(|at| {
            format!(
                " It times out {}; then: {}.",
                business.clone().unwrap_or_else(|| format!(
                    "at {}",
                    at.to_rfc3339_opts(SecondsFormat::Secs, true)
                )),
                gate.fallback.name()
            )
        })
        .unwrap_or_default();
    let text = format!(
        "⏰ {}: {who}, gate {} of {} (run {}) is waiting for your answer.{deadline}",
        crate::hub::durations::reminder(n, of),
        gate.id,
        session.workflow,
        session.id
    );
    let activity = json!({"type": "message", "text": text});
    let sent = if c.kind == ConversationKind::Channel {
        room.connector
            .reply(&c.service_url, &c.id, &card_id, &activity)
            .await
    } else {
        room.connector.send(&c.service_url, &c.id, &activity).await
    };
    if let Err(e) = sent {
        // A lost reminder is not worth a retry storm; the next one comes.
        tracing::warn!(session = %session.id, "reminder not posted in Teams: {e}");
    }
}

/// Posts the card again to the Teams targets among `targets`; the copies
/// posted.
pub async fn escalate(
    room: &TeamsRoom,
    session: &Session,
    gate: &OpenGate,
    targets: &[EscalationTarget],
    why: &EscalationWhy,
) -> Vec<MessageRef> {
    let conversations: Vec<&str> = targets
        .iter()
        .filter_map(|t| match t {
            EscalationTarget::Channel(crate::model::Place::Teams(c)) => Some(c.as_str()),
            _ => None,
        })
        .collect();
    let people: Vec<crate::model::Approver> = targets
        .iter()
        .filter_map(|t| match t {
            EscalationTarget::User(u) => Some(u.clone()),
            _ => None,
        })
        .collect();
    let people = teams_people(&people);
    if conversations.is_empty() && people.is_empty() {
        return Vec::new();
    }
    let why = match why {
        EscalationWhy::TimedOut { until } => format!(
            "no answer before the timeout; it waits until {}, then it is rejected",
            until
                .map(|at| at.to_rfc3339_opts(SecondsFormat::Secs, true))
                .unwrap_or_else(|| "later".into()),
        ),
        EscalationWhy::Waited(d) => format!(
            "no answer for {}",
            durations::duration(d.num_seconds().max(0))
        ),
        EscalationWhy::OutsideHours { calendar } => {
            format!("asked outside the business hours of calendar `{calendar}`")
        }
    };
    let head = format!(
        "🔺 Escalated: gate {} of {} got {why}.",
        gate.id, session.workflow
    );
    let activity = card::activity(with_head(
        card::approval(session, gate, &room.hub.public_url, room.hub.clock.now()),
        &head,
    ));
    let mut posted = Vec::new();
    for conversation in conversations {
        let Some(c) = room.reference(conversation).await else {
            tracing::warn!(session = %session.id, conversation, "escalated card not posted: the Teams conversation is not known");
            continue;
        };
        match room.connector.send(&c.service_url, &c.id, &activity).await {
            Ok(id) => posted.push((place(&c.id), id)),
            Err(e) => {
                tracing::warn!(session = %session.id, conversation, "escalated card not posted: {e}")
            }
        }
    }
    if !people.is_empty() {
        // The 1:1s take their tenant and service from the conversation the
        // run is asked in.
        let base = match room.conversation_of(session) {
            Some(c) => room.reference(&c).await,
            None => None,
        };
        for aad in people {
            match send_to(room, base.as_ref(), aad, &activity).await {
                Ok(copy) => posted.push(copy),
                Err(e) => tracing::warn!(session = %session.id, "escalated card not sent: {e}"),
            }
        }
    }
    if !posted.is_empty() {
        tracing::info!(session = %session.id, gate = %gate.handle(), copies = posted.len(), "escalated in Teams");
    }
    posted
}

/// A timeout's answer on every Teams card that asked.
pub async fn timed_out(room: &TeamsRoom, session: &Session, fired: &Fired) {
    let cards: Vec<MessageRef> = fired
        .messages
        .iter()
        .filter(|(place, _)| in_teams(place))
        .cloned()
        .collect();
    if cards.is_empty() {
        return;
    }
    let shown = card::activity(card::decided(
        session,
        &fired.gate.id,
        &fired.answer,
        &room.hub.public_url,
    ));
    room.update_all(&session.id, &cards, &shown).await;
}
