//! 1:1 cards: a gate with `notify: dm` sends each approver named
//! `teams:<Entra object ID>` the approval card in a personal chat with the
//! bot, besides the card in the conversation; an escalation to a
//! `teams:<aad>` target does the same ([`super::timers`]).
//!
//! The Connector opens (or finds) the 1:1 conversation
//! ([`Connector::create_conversation`]), which needs the person's tenant
//! and a `serviceUrl`: both come from a stored conversation reference (the
//! one the run is asked in). The new conversation is stored as a reference
//! of its own, so its cards can be updated later. The copies are recorded
//! with the card ([`crate::model::Notification`]'s `copies`), so a click
//! on any finds the gate and every copy shows the decision.
//!
//! What this does not do: install the app for a person (Teams refuses a
//! 1:1 with someone who has not installed it; that failure is recorded),
//! or send copies to Slack people (the Slack room's).

use serde_json::{json, Value};

use super::card;
use super::commands::place;
use super::connector::OneOnOne;
use super::room::TeamsRoom;
use crate::channel::hall::MessageRef;
use crate::model::teams::{ConversationKind, TeamsConversation};
use crate::model::{OpenGate, Session};

/// `card` with `head` as its first line.
pub(super) fn with_head(mut card: Value, head: &str) -> Value {
    if let Some(body) = card.get_mut("body").and_then(Value::as_array_mut) {
        body.insert(
            0,
            json!({"type": "TextBlock", "text": head, "wrap": true, "weight": "Bolder"}),
        );
    }
    card
}

/// The Teams people among `who`, by Entra object ID, each once.
pub(super) fn teams_people<'a>(
    who: impl IntoIterator<Item = &'a crate::model::Approver>,
) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    who.into_iter()
        .filter_map(|a| match a {
            crate::model::Approver::TeamsUser(aad) => Some(aad.as_str()),
            _ => None,
        })
        .filter(|aad| !aad.is_empty() && !aad.contains(':') && seen.insert(*aad))
        .collect()
}

/// The 1:1 conversation with `aad`, opened through `base`'s service and
/// tenant, and stored as a reference.
pub(super) async fn one_on_one(
    room: &TeamsRoom,
    base: Option<&TeamsConversation>,
    aad: &str,
) -> Result<TeamsConversation, String> {
    let Some(base) = base else {
        return Err(format!(
            "no 1:1 chat with teams:{aad}: no Teams conversation is known to take the tenant and service URL from"
        ));
    };
    let Some(tenant) = base.tenant_id.as_deref() else {
        return Err(format!(
            "no 1:1 chat with teams:{aad}: the conversation {} has no tenant",
            base.id
        ));
    };
    let bot_id = if base.bot_id.is_empty() {
        room.app_id.as_str()
    } else {
        base.bot_id.as_str()
    };
    let who = OneOnOne {
        bot_id,
        user_id: aad,
        tenant_id: tenant,
    };
    let id = room
        .connector
        .create_conversation(&base.service_url, who)
        .await
        .map_err(|e| format!("no 1:1 chat with teams:{aad}: {e}"))?;
    let now = room.hub.clock.now();
    let reference = TeamsConversation {
        id,
        service_url: base.service_url.clone(),
        tenant_id: Some(tenant.to_string()),
        channel_id: base.channel_id.clone(),
        bot_id: base.bot_id.clone(),
        kind: ConversationKind::Personal,
        name: None,
        first_seen: now,
        last_seen: now,
    };
    // Keep the earliest sighting if the bot knew this chat already.
    let reference = match room.reference(&reference.id).await {
        Some(known) => TeamsConversation {
            first_seen: known.first_seen,
            ..reference
        },
        None => reference,
    };
    room.hub
        .store
        .put_teams_conversation(&reference)
        .await
        .map_err(|e| format!("the 1:1 chat with teams:{aad} could not be recorded: {e}"))?;
    Ok(reference)
}

/// Sends `activity` to `aad` in a 1:1 chat; the card's place and id.
pub(super) async fn send_to(
    room: &TeamsRoom,
    base: Option<&TeamsConversation>,
    aad: &str,
    activity: &Value,
) -> Result<MessageRef, String> {
    let chat = one_on_one(room, base, aad).await?;
    let id = room
        .connector
        .send(&chat.service_url, &chat.id, activity)
        .await
        .map_err(|e| format!("the card to teams:{aad} was not sent: {e}"))?;
    Ok((place(&chat.id), id))
}

/// Sends gate `gate`'s card to each of its approvers named `teams:<aad>`.
/// Returns the copies sent, and why each one that was not failed (each
/// logged once here).
pub(super) async fn post(
    room: &TeamsRoom,
    session: &Session,
    gate: &OpenGate,
    base: Option<&TeamsConversation>,
) -> (Vec<MessageRef>, Vec<String>) {
    // The hub's recipients: a person away is replaced by their delegate,
    // who is told whom they answer for.
    let to = crate::hub::recipients::dm_recipients(gate, &room.hub.people(), room.hub.clock.now());
    let people = teams_people(to.iter().map(|(id, _)| id));
    if people.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let card = card::approval(session, gate, &room.hub.public_url, room.hub.clock.now());
    let (mut sent, mut failed) = (Vec::new(), Vec::new());
    for aad in people {
        let whom = to
            .iter()
            .find(|(id, _)| matches!(id, crate::model::Approver::TeamsUser(a) if a == aad))
            .and_then(|(_, w)| w.as_deref());
        let who = match whom {
            Some(p) => format!("You answer for {p} (a delegation) at"),
            None => "You are an approver of".to_string(),
        };
        let head = format!(
            "📨 {who} gate {} of {}. Deciding here decides everywhere it is asked.",
            gate.id, session.workflow
        );
        let activity = card::activity(with_head(card.clone(), &head));
        match send_to(room, base, aad, &activity).await {
            Ok(copy) => sent.push(copy),
            Err(e) => {
                tracing::warn!(session = %session.id, gate = %gate.handle(), "{e}");
                failed.push(e);
            }
        }
    }
    (sent, failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teams_people_are_named_by_object_id_once() {
        let who: Vec<crate::model::Approver> = [
            "teams:a1",
            "U0ALICE",
            "teams:a1",
            "teams:19:x@thread",
            "teams:",
        ]
        .iter()
        .map(|s| crate::model::Approver::parse(s))
        .collect();
        assert_eq!(teams_people(&who), ["a1"]);
        let c = with_head(json!({"body": [{"type": "TextBlock", "text": "x"}]}), "hi");
        assert_eq!(c["body"][0]["text"], "hi");
        assert_eq!(c["body"][1]["text"], "x");
    }
}
