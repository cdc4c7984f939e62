//! A card's action as an answer: an `invoke` named `adaptiveCard/action`
//! (`Action.Execute`: `value.action.verb`, `value.action.data`), or an
//! `Action.Submit` (a `message` whose `value` carries `verb` and the data,
//! `replyToId` naming the card). The data says only where to answer
//! (`session`, `gate`) and what was typed (`reason`, `feedback`,
//! `response`); the answerer is `teams:<from.aadObjectId>` of the verified
//! activity. The answer goes to the hub ([`Hub::answer`], `via: teams`),
//! whose intake decides who may give it, counts quorums and audits its
//! refusals; refusals made here first (no such card, run or verb) are
//! audited here, as the Slack door audits a refused click.
//!
//! An invoke is answered at once with the updated card — decided: who,
//! when, the reason; a quorum still gathering: its progress — or with a
//! message saying why not. A retried invoke (Teams retries) finds the gate
//! already answered by the same person the same way and gets the same
//! decided card. A submit updates the card in place (PUT).

use std::sync::Arc;

use chrono::Utc;
use serde_json::{json, Map, Value};

use super::card;
use super::commands::{person, place};
use super::connector::Connector;
use crate::audit::{AuditEvent, AuditKind};
use crate::engine::Accepted;
use crate::hub::answers::{refusal_text, AnswerRequest};
use crate::hub::Hub;
use crate::model::{Answer, Refusal};

/// The invoke response's type for a card.
const CARD_RESPONSE: &str = "application/vnd.microsoft.card.adaptive";
/// The invoke response's type for a message.
const MESSAGE_RESPONSE: &str = "application/vnd.microsoft.activity.message";

/// The HTTP response to a verified `adaptiveCard/action` invoke.
pub async fn invoke(hub: &Hub, activity: &Value) -> Value {
    let action = activity.pointer("/value/action");
    let verb = action
        .and_then(|a| a.get("verb"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let data = action
        .and_then(|a| a.get("data"))
        .cloned()
        .unwrap_or(Value::Null);
    match decide(hub, activity, verb, &data).await {
        Ok(card) => json!({ "statusCode": 200, "type": CARD_RESPONSE, "value": card }),
        Err(why) => json!({ "statusCode": 200, "type": MESSAGE_RESPONSE, "value": why }),
    }
}

/// A verified `Action.Submit`: answered in the background; the card is
/// updated in place, or a refusal is said in the conversation.
pub fn submit(hub: &Hub, connector: &Arc<Connector>, activity: Value) {
    let (hub, connector) = (hub.clone(), Arc::clone(connector));
    let tasks = hub.tasks().clone();
    tasks.spawn(async move {
        let data = activity.get("value").cloned().unwrap_or(Value::Null);
        let verb = data
            .get("verb")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let outcome = decide(&hub, &activity, &verb, &data).await;
        let (Some(service_url), Some(conversation)) = (
            str_at(&activity, "/serviceUrl"),
            str_at(&activity, "/conversation/id"),
        ) else {
            return;
        };
        let sent = match (outcome, str_at(&activity, "/replyToId")) {
            (Ok(c), Some(card_id)) => {
                connector
                    .update(service_url, conversation, card_id, &card::activity(c))
                    .await
            }
            (Ok(_), None) => Ok(()),
            (Err(why), _) => connector
                .send(
                    service_url,
                    conversation,
                    &json!({ "type": "message", "text": why }),
                )
                .await
                .map(|_| ()),
        };
        if let Err(e) = sent {
            tracing::warn!(conversation, "could not update a Teams approval card: {e}");
        }
    });
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn text_of(data: &Value, key: &str) -> Option<String> {
    data.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Takes the answer an action carries: the card to show, or why not.
async fn decide(
    hub: &Hub,
    activity: &Value,
    verb: &str,
    data: &Value,
) -> std::result::Result<Value, String> {
    let conversation = str_at(activity, "/conversation/id").unwrap_or_default();
    let who = str_at(activity, "/from/aadObjectId").map(person);
    let session_id = text_of(data, "session").unwrap_or_default();
    let handle = text_of(data, "gate").unwrap_or_default();
    let refuse = |why: String| {
        let (who, session_id, handle) = (who.clone(), session_id.clone(), handle.clone());
        async move {
            audit_refused(
                hub,
                conversation,
                &session_id,
                &handle,
                who.as_deref(),
                &why,
            )
            .await;
            Err(why)
        }
    };
    let Some(who) = who.clone() else {
        return refuse("the action does not say who you are in Teams".into()).await;
    };
    if session_id.is_empty() || handle.is_empty() {
        return refuse("this card is not an approval request I know".into()).await;
    }
    if !matches!(verb, "approve" | "reject" | "modify" | "respond") {
        return refuse(format!("`{verb}` is not an answer this card offers")).await;
    }
    // The card the action came from must be the one posted for this gate.
    if let Some(card_id) = str_at(activity, "/replyToId") {
        if let Ok(Some(t)) = hub
            .store
            .message_target(&place(conversation), card_id)
            .await
        {
            if t.session != session_id || t.gate != handle {
                return refuse(format!(
                    "this card asks about {} of {}, not {handle} of {session_id}",
                    t.gate, t.session
                ))
                .await;
            }
        }
    }
    let request = AnswerRequest {
        decision: verb.to_string(),
        gate: Some(handle.clone()),
        call: None,
        reason: text_of(data, "reason"),
        feedback: text_of(data, "feedback"),
        response: text_of(data, "response"),
        args: None,
        vars: Map::new(),
    };
    let decision = match request.decision() {
        Ok(d) => d,
        Err(p) => return refuse(p.message).await,
    };
    let session = match hub.store.load(&session_id).await {
        Ok(Some(s)) => s,
        Ok(None) => return refuse("that run no longer exists".into()).await,
        Err(e) => return Err(format!("could not read the run: {e}")),
    };
    let gate_id = handle.split('#').next().unwrap_or(&handle).to_string();
    let answer = Answer {
        decision,
        by: who.clone(),
        at: Utc::now(),
        via: "teams".into(),
        vars: Default::default(),
        call: None,
    };
    // Teams has no user groups of its own: membership is never claimed.
    let member_of = |_: &str| false;
    let asker = hub.asker(&who, &member_of);
    let url = &hub.public_url;
    match hub
        .answer(&session.id, Some(&handle), answer.clone(), &asker)
        .await
    {
        Ok(Ok(Accepted::Counted(s))) => Ok(match s.open_gate(&handle) {
            Some(g) => card::approval(&s, g, url, Utc::now()),
            None => card::decided(&s, &gate_id, &answer, url),
        }),
        Ok(Ok(accepted)) => Ok(card::decided(accepted.session(), &gate_id, &answer, url)),
        // A retry of an answer already taken: the same decided card.
        Ok(Err(Refusal::AlreadyAnswered(first)))
            if first.by == who
                && std::mem::discriminant(&first.decision)
                    == std::mem::discriminant(&answer.decision) =>
        {
            Ok(card::decided(&session, &gate_id, &first, url))
        }
        // The intake audited it.
        Ok(Err(refusal)) => Err(refusal_text(&refusal)),
        Err(e) => Err(format!("could not take the answer: {e}")),
    }
}

/// Audits an action refused before it reached the intake.
async fn audit_refused(
    hub: &Hub,
    conversation: &str,
    session_id: &str,
    handle: &str,
    who: Option<&str>,
    why: &str,
) {
    let workflow = match hub.store.load(session_id).await {
        Ok(Some(s)) => s.workflow,
        _ => String::new(),
    };
    let known = if workflow.is_empty() { "" } else { session_id };
    let mut ev = AuditEvent::new(AuditKind::Refusal, known, &workflow);
    ev.gate = (!handle.is_empty()).then(|| handle.chars().take(64).collect());
    ev.who = who.map(str::to_string);
    ev.via = Some(format!("teams {}", place(conversation)));
    ev.detail = Some(why.chars().take(300).collect());
    if let Err(e) = hub.store.append_audit(&[ev]).await {
        tracing::error!("could not audit a refused card action: {e}");
    }
}
