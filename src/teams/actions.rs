//! A card's action as an answer: an `invoke` named `adaptiveCard/action`
//! (`Action.Execute`: `value.action.verb`, `value.action.data`), or an
//! `Action.Submit` (a `message` whose `value` carries `verb` and the data,
//! `replyToId` naming the card). The data says only where to answer
//! (`session`, `gate`) and what was typed (`reason`, `feedback`,
//! `response`, a form's `value.NAME` inputs, [`card::form`]); the answerer is `teams:<from.aadObjectId>` of the verified
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
//!
//! Tool-call cards ([`card::tools`]): the data also names the `call`, and
//! the verbs are `approve`, `reject` (the reason in the input the data's
//! `input` names), `edit` (the arguments as JSON in that input) and
//! `trust`, each one call's decision through the same intake (which checks
//! an edit keeps the tool and fits its schema, and trust only where the
//! spec allows it). The answer is the card re-drawn: each decided call says
//! how and by whom, without buttons; other copies of it are updated by PUT.
//! An edit that is not JSON, or that the intake refuses, is answered with
//! the card and the reason on it; nothing changed.
//!
//! The inbox card's `bulk_approve` and `bulk_reject` go to
//! [`super::inbox::bulk`] (the hub's batch); the answer is that card again.

use serde_json::{json, Map, Value};

use super::card;
use super::commands::{person, place};
use super::room::TeamsRoom;
use crate::audit::{AuditEvent, AuditKind};
use crate::hub::answers::{refusal_text, AnswerRequest};
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::hub::Hub;
use crate::model::{Answer, Refusal, Session};
use crate::spec::GateKind;

/// The invoke response's type for a card.
const CARD_RESPONSE: &str = "application/vnd.microsoft.card.adaptive";
/// The invoke response's type for a message.
const MESSAGE_RESPONSE: &str = "application/vnd.microsoft.activity.message";

/// The HTTP response to a verified `adaptiveCard/action` invoke. Other
/// copies of a tool-call card are updated in the background.
pub async fn invoke(room: &TeamsRoom, activity: &Value) -> Value {
    let hub = &room.hub;
    let action = activity.pointer("/value/action");
    let verb = action
        .and_then(|a| a.get("verb"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let data = action
        .and_then(|a| a.get("data"))
        .cloned()
        .unwrap_or(Value::Null);
    if super::inbox::is_bulk(verb) {
        return match bulk(hub, activity, verb, &data).await {
            Ok(card) => json!({ "statusCode": 200, "type": CARD_RESPONSE, "value": card }),
            Err(why) => json!({ "statusCode": 200, "type": MESSAGE_RESPONSE, "value": why }),
        };
    }
    match decide(hub, activity, verb, &data).await {
        Ok(shown) => {
            if let Some((session, handle)) = &shown.changed {
                let except = str_at(activity, "/replyToId").map(|id| {
                    let conversation = str_at(activity, "/conversation/id").unwrap_or_default();
                    (conversation.to_string(), id.to_string())
                });
                update_copies(room, session, handle, &shown.card, except);
            }
            json!({ "statusCode": 200, "type": CARD_RESPONSE, "value": shown.card })
        }
        Err(why) => json!({ "statusCode": 200, "type": MESSAGE_RESPONSE, "value": why }),
    }
}

/// Says `text` in the conversation (a refusal a card update would show
/// to everyone).
async fn say(
    connector: &super::connector::Connector,
    service_url: &str,
    conversation: &str,
    text: &str,
) -> std::result::Result<(), super::connector::ConnectorError> {
    connector
        .send(
            service_url,
            conversation,
            &json!({ "type": "message", "text": text }),
        )
        .await
        .map(|_| ())
}

/// A verified `Action.Submit`: answered in the background; the card is
/// updated in place, or a refusal is said in the conversation.
pub fn submit(room: TeamsRoom, activity: Value) {
    let tasks = room.hub.tasks().clone();
    tasks.spawn(async move {
        let (hub, connector) = (&room.hub, &room.connector);
        let data = activity.get("value").cloned().unwrap_or(Value::Null);
        let verb = data
            .get("verb")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (Some(service_url), Some(conversation)) = (
            str_at(&activity, "/serviceUrl"),
            str_at(&activity, "/conversation/id"),
        ) else {
            return;
        };
        if super::inbox::is_bulk(&verb) {
            let shown = bulk(hub, &activity, &verb, &data).await;
            let sent = match (shown, str_at(&activity, "/replyToId")) {
                (Ok(c), Some(card_id)) => {
                    connector
                        .update(service_url, conversation, card_id, &card::activity(c))
                        .await
                }
                (Ok(c), None) => connector
                    .send(service_url, conversation, &card::activity(c))
                    .await
                    .map(|_| ()),
                (Err(why), _) => say(connector, service_url, conversation, &why).await,
            };
            if let Err(e) = sent {
                tracing::warn!(conversation, "could not update a Teams inbox card: {e}");
            }
            return;
        }
        let outcome = decide(hub, &activity, &verb, &data).await;
        // A refusal shown on the card is said in the conversation instead:
        // a PUT would show it to everyone.
        let outcome = match outcome {
            Ok(Shown {
                notice: Some(why), ..
            }) => Err(why),
            other => other,
        };
        let sent = match (outcome, str_at(&activity, "/replyToId")) {
            (Ok(shown), Some(card_id)) => {
                if let Some((session, handle)) = &shown.changed {
                    let except = Some((conversation.to_string(), card_id.to_string()));
                    update_copies(&room, session, handle, &shown.card, except);
                }
                connector
                    .update(
                        service_url,
                        conversation,
                        card_id,
                        &card::activity(shown.card),
                    )
                    .await
            }
            (Ok(_), None) => Ok(()),
            (Err(why), _) => say(connector, service_url, conversation, &why).await,
        };
        if let Err(e) = sent {
            tracing::warn!(conversation, "could not update a Teams approval card: {e}");
        }
    });
}

/// A bulk button of the inbox card ([`super::inbox`]): the card to show,
/// or why not — audited here when refused before the intake.
async fn bulk(
    hub: &Hub,
    activity: &Value,
    verb: &str,
    data: &Value,
) -> std::result::Result<Value, String> {
    let shown = super::inbox::bulk(hub, activity, verb, data).await;
    if let Err(why) = &shown {
        let conversation = str_at(activity, "/conversation/id").unwrap_or_default();
        let who = str_at(activity, "/from/aadObjectId").map(person);
        audit_refused(hub, conversation, "", "", who.as_deref(), why).await;
    }
    shown
}

/// Updates, in the background, every card asking for gate `handle` of
/// `session_id` — the card, its 1:1 and escalated copies
/// ([`TeamsRoom::cards`]) — but `except` (the one the action came from: its
/// own answer updates it) to show `shown`.
fn update_copies(
    room: &TeamsRoom,
    session_id: &str,
    handle: &str,
    shown: &Value,
    except: Option<(String, String)>,
) {
    let room = room.clone();
    let (session_id, handle, activity) = (
        session_id.to_string(),
        handle.to_string(),
        card::activity(shown.clone()),
    );
    let except = except.map(|(conversation, id)| (place(&conversation), id));
    let tasks = room.hub.tasks().clone();
    tasks.spawn(async move {
        let mut copies = room.cards(&session_id, &handle).await;
        copies.retain(|c| except.as_ref() != Some(c));
        room.update_all(&session_id, &copies, &activity).await;
    });
}

/// What an accepted action shows: the card; for a tool-call decision or a
/// quorum's progress, the gate whose other cards show it too; a refusal
/// shown on the card.
struct Shown {
    card: Value,
    changed: Option<(String, String)>,
    notice: Option<String>,
}

impl Shown {
    fn card(card: Value) -> Shown {
        Shown {
            card,
            changed: None,
            notice: None,
        }
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn text_of(data: &Value, key: &str) -> Option<String> {
    data.get(key).and_then(Value::as_str).map(str::to_string)
}

/// What was typed for a tool call's form: the input the data names
/// (`input`: `reason.N`, `args.N`), else `key` itself.
fn typed(data: &Value, key: &str) -> Option<Value> {
    let named = data
        .get("input")
        .and_then(Value::as_str)
        .filter(|i| i.starts_with(key))
        .and_then(|i| data.get(i));
    named.or_else(|| data.get(key)).cloned()
}

/// The edited arguments of an `edit`: a JSON object, typed as text (or
/// given as an object); why not.
fn edited_args(data: &Value) -> std::result::Result<Value, String> {
    match typed(data, "args") {
        Some(Value::String(t)) => serde_json::from_str::<Value>(t.trim()).map_err(|e| {
            format!("the arguments are not valid JSON ({e}); edit them and send again")
        }),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) | None => Err("the edit carries no arguments".into()),
    }
}

/// Takes the answer an action carries: the card to show, or why not.
async fn decide(
    hub: &Hub,
    activity: &Value,
    verb: &str,
    data: &Value,
) -> std::result::Result<Shown, String> {
    let conversation = str_at(activity, "/conversation/id").unwrap_or_default();
    let who = str_at(activity, "/from/aadObjectId").map(person);
    let session_id = text_of(data, "session").unwrap_or_default();
    let handle = text_of(data, "gate").unwrap_or_default();
    let call = text_of(data, "call").filter(|c| !c.is_empty());
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
    let offered = match call {
        None => matches!(
            verb,
            "approve" | "reject" | "modify" | "respond" | "trust" | "approve_all"
        ),
        Some(_) => matches!(verb, "approve" | "reject" | "edit" | "trust"),
    };
    if !offered {
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
    let session = match hub.store.load(&session_id).await {
        Ok(Some(s)) => s,
        Ok(None) => return refuse("that run no longer exists".into()).await,
        Err(e) => return Err(format!("could not read the run: {e}")),
    };
    let tool_gate = call.is_some()
        || session
            .open_gate(&handle)
            .is_some_and(|g| g.kind == GateKind::ToolCall);
    // What is refused on a tool-call card is said on it; nothing changed.
    let on_card = |session: &Session, why: String| Shown {
        card: tool_card(hub, session, &handle, call.as_deref(), None, Some(&why)),
        changed: None,
        notice: Some(why),
    };
    if verb == "approve_all" {
        if !tool_gate {
            return refuse("`approve_all` answers the tool calls of one turn".into()).await;
        }
        return Ok(approve_all(hub, &session, &handle, &who).await);
    }
    let args = if verb == "edit" {
        match edited_args(data) {
            Ok(a) => Some(a),
            Err(why) => {
                audit_refused(hub, conversation, &session_id, &handle, Some(&who), &why).await;
                return Ok(on_card(&session, why));
            }
        }
    } else {
        None
    };
    let typed_text = |key: &str| match typed(data, key) {
        Some(Value::String(t)) => Some(t),
        _ => None,
    };
    // Approving a gate with a form sends its inputs, as typed.
    let values = match session.open_gate(&handle).and_then(|g| g.form.as_ref()) {
        Some(f) if verb == "approve" && call.is_none() => Some(card::form::values(f, data)),
        _ => None,
    };
    let request = AnswerRequest {
        decision: verb.to_string(),
        gate: Some(handle.clone()),
        call: call.clone(),
        reason: if tool_gate {
            typed_text("reason")
        } else {
            text_of(data, "reason")
        },
        feedback: text_of(data, "feedback"),
        response: text_of(data, "response"),
        args,
        vars: Map::new(),
        values,
        // "Trust for 1 h": the card's data says for how long.
        span: str_at(data, "/for")
            .filter(|_| verb == "trust")
            .map(str::to_string),
        ..AnswerRequest::default()
    };
    let decision = match request.decision() {
        Ok(d) => d,
        Err(p) => return refuse(p.message).await,
    };
    let gate_id = handle.split('#').next().unwrap_or(&handle).to_string();
    let answer = Answer {
        decision,
        by: who.clone(),
        at: hub.clock.now(),
        via: "teams".into(),
        vars: Default::default(),
        call: call.clone(),
        person: None,
        on_behalf_of: None,
        step_up: None,
        idp_group: None,
    };
    // Teams has no user groups of its own: membership is never claimed.
    let door = DoorAnswer::new(&session.id, &who, Door::Teams, answer.decision.clone())
        .at(Some(&handle))
        .call(call.as_deref());
    let url = &hub.public_url;
    let outcome = hub.take(door).await;
    if tool_gate {
        return match outcome {
            Ok(Ok(accepted)) => {
                let s = accepted.session();
                Ok(Shown {
                    card: tool_card(hub, s, &handle, call.as_deref(), Some(&answer), None),
                    changed: Some((s.id.clone(), handle.clone())),
                    notice: None,
                })
            }
            // A retry of a decision already taken: the card as it stands.
            Ok(Err(Refusal::AlreadyAnswered(first)))
                if first.by == who
                    && std::mem::discriminant(&first.decision)
                        == std::mem::discriminant(&answer.decision) =>
            {
                Ok(Shown::card(tool_card(
                    hub,
                    &session,
                    &handle,
                    call.as_deref(),
                    Some(&first),
                    None,
                )))
            }
            // The intake audited it; an answer that does not fit (a bad
            // edit, trust where it is not allowed) is said on the card.
            Ok(Err(Refusal::BadAnswer(why))) => Ok(on_card(&session, why)),
            Ok(Err(refusal)) => Err(refusal_text(&refusal)),
            Err(e) => Err(format!("could not take the answer: {e}")),
        };
    }
    match outcome {
        // A quorum still gathering: this card and its other copies (1:1,
        // escalated) show the progress, buttons kept.
        Ok(Ok(Accepted::Counted(s))) => Ok(Shown {
            changed: Some((s.id.clone(), handle.clone())),
            notice: None,
            card: match s.open_gate(&handle) {
                Some(g) => card::approval(&s, g, url, hub.clock.now()),
                None => card::decided(&s, &gate_id, &answer, url),
            },
        }),
        Ok(Ok(accepted)) => Ok(Shown::card(card::decided(
            accepted.session(),
            &gate_id,
            as_recorded(accepted.session(), &gate_id, &answer),
            url,
        ))),
        // A retry of an answer already taken: the same decided card.
        Ok(Err(Refusal::AlreadyAnswered(first)))
            if first.by == who
                && std::mem::discriminant(&first.decision)
                    == std::mem::discriminant(&answer.decision) =>
        {
            Ok(Shown::card(card::decided(&session, &gate_id, &first, url)))
        }
        // The intake audited it.
        Ok(Err(refusal)) => Err(refusal_text(&refusal)),
        Err(e) => Err(format!("could not take the answer: {e}")),
    }
}

/// `answer` as the intake recorded it on `session` (with the person the
/// directory resolved its sender to, the time the hub took it): the
/// latest answer of its sender at the gate, or `answer` itself.
fn as_recorded<'a>(session: &'a Session, gate_id: &str, answer: &'a Answer) -> &'a Answer {
    let mine = |a: &&Answer| a.by == answer.by;
    session
        .pending
        .as_ref()
        .map(|p| &p.answer)
        .filter(mine)
        .or_else(|| {
            session.history.iter().rev().find_map(|e| match &e.what {
                crate::model::GateEventKind::Answered { answer: a, .. } if e.gate == gate_id => {
                    Some(a).filter(mine)
                }
                _ => None,
            })
        })
        .unwrap_or(answer)
}

/// The tool-call card of gate `handle` as `session` stands. When the run
/// has moved on to other calls (a late retry), the decided card of
/// `answer` instead.
/// "Approve all" on a tool-call card: one approve per waiting call, each
/// through the intake and audited on its own; a gate needing a passkey is
/// left out (`hub::batch`), and what was refused is said on the card.
async fn approve_all(hub: &Hub, session: &Session, handle: &str, who: &str) -> Shown {
    if let Some(why) = session
        .open_gate(handle)
        .and_then(|g| crate::hub::batch::left_out(session, g, &crate::model::Decision::Approve))
    {
        let why = format!("not approved all at once: this gate {why}");
        return Shown {
            card: tool_card(hub, session, handle, None, None, Some(&why)),
            changed: None,
            notice: Some(why),
        };
    }
    let calls: Vec<String> = session
        .agent_turn
        .iter()
        .flat_map(|t| t.waiting())
        .map(|c| c.call.id.clone())
        .collect();
    let mut latest = None;
    let mut refused = Vec::new();
    for call in &calls {
        let door = DoorAnswer::new(
            &session.id,
            who,
            Door::Teams,
            crate::model::Decision::Approve,
        )
        .at(Some(handle))
        .call(Some(call));
        match hub.take(door).await {
            Ok(Ok(accepted)) => latest = Some(accepted.session().clone()),
            Ok(Err(r)) => refused.push(format!("{call}: {}", refusal_text(&r))),
            Err(e) => refused.push(format!("{call}: {e}")),
        }
    }
    let shown = latest.as_ref().unwrap_or(session);
    let notice = (!refused.is_empty()).then(|| {
        format!(
            "{} of {} calls approved; not approved: {}",
            calls.len() - refused.len(),
            calls.len(),
            refused.join("; ")
        )
    });
    Shown {
        card: tool_card(hub, shown, handle, None, None, notice.as_deref()),
        changed: latest.map(|s| (s.id, handle.to_string())),
        notice,
    }
}

fn tool_card(
    hub: &Hub,
    session: &Session,
    handle: &str,
    call: Option<&str>,
    answer: Option<&Answer>,
    notice: Option<&str>,
) -> Value {
    let ours = session
        .agent_turn
        .as_ref()
        .is_some_and(|t| call.is_none_or(|id| t.calls.iter().any(|c| c.call.id == id)));
    match (ours, answer) {
        (false, Some(a)) => {
            let gate_id = handle.split('#').next().unwrap_or(handle);
            card::decided(session, gate_id, a, &hub.public_url)
        }
        _ => card::tools::card_for(
            session,
            handle,
            &card::redactor(hub, session),
            &hub.public_url,
            notice,
        ),
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
    let mut ev = AuditEvent::new(AuditKind::Refusal, known, &workflow, hub.clock.now());
    ev.gate = (!handle.is_empty()).then(|| handle.chars().take(64).collect());
    ev.who = who.map(str::to_string);
    ev.via = Some(format!("teams {}", place(conversation)));
    ev.detail = Some(why.chars().take(300).collect());
    hub.audit_refusal(ev).await;
}
