//! One message from the requests' queue: who sent it, what it asks, and
//! what becomes of it.
//!
//! The rule: the message's `type` property says what the body is —
//! `approval` (the body of `POST /api/v1/approvals`) or `answer` (the body
//! of `POST /api/v1/sessions/{id}/answers` with `"session"` added). The
//! sender is the message's `user_id` property, which RabbitMQ checks is
//! the user of the connection that published it; the people directory's
//! `amqp` identity names the person. An approval is created as that
//! person ([`Hub::request_approval`]), an answer goes through the one way
//! in ([`Hub::take`], [`Door::Amqp`]), so who may answer is decided where
//! it is for every other door.
//!
//! A message is acknowledged only after what it asked is in the store.
//! One that cannot be taken (malformed, nobody's identity, refused by the
//! intake) is published to the dead-letter exchange with the reason in
//! the `x-strands-reason` header, then acknowledged: nothing changed. A
//! store that does not answer sends it back to the queue, to be tried
//! again: a copy goes to the back of the queue (under the publisher's
//! confirm, before the original is acknowledged) counting its failed
//! attempts in `x-strands-attempts` — the queue is a classic one, which
//! counts nothing — and the sender in `x-strands-user-id`, the copy's
//! `user_id` being strands' own. The attempt that makes
//! `STRANDS_AMQP_MAX_DELIVERIES` is dead-lettered instead, with the last
//! error, so a message that can never be written does not come back for
//! ever. Redeliveries decide nothing twice: a request's `key` (else its
//! `message_id`) names it, and an answer is recorded once by the intake.

use std::time::Duration;

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicNackOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::BasicProperties;
use serde_json::{json, Map, Value};

use super::link::Link;
use super::short;
use crate::audit::{AuditEvent, AuditKind};
use crate::error::Error;
use crate::hub::answers::{refusal_text, AnswerRequest};
use crate::hub::approvals::{ApprovalRequest, ApprovalView, Created};
use crate::hub::door::{Accepted, Door, DoorAnswer};
use crate::hub::Hub;
use crate::model::person::AMQP_PREFIX;

/// The header a dead-lettered message carries its reason in.
pub const REASON_HEADER: &str = "x-strands-reason";
/// The header a message tried again counts its failed attempts in.
pub const ATTEMPTS_HEADER: &str = "x-strands-attempts";
/// The header a dead-lettered message, or a copy tried again, names its
/// sender in.
pub const SENDER_HEADER: &str = "x-strands-user-id";
/// The label an approval request made from a message keeps its `reply_to` in.
pub const REPLY_TO_LABEL: &str = "amqp.reply_to";
/// The label it keeps the message's `correlation_id` in.
pub const CORRELATION_LABEL: &str = "amqp.correlation_id";

/// What became of a message.
enum Outcome {
    /// Taken: acknowledged; the reply, if one was asked for.
    Done(Value),
    /// Not taken, nothing changed: dead-lettered with the reason.
    Refused(String),
    /// The store did not answer: back to the queue.
    Retry(String),
}

/// Takes `d` and settles it with the broker.
pub(super) async fn handle(hub: &Hub, link: &Link, d: Delivery) {
    let from = sender(link, &d);
    let outcome = judge(hub, &d, from.as_deref()).await;
    let reply_to = d
        .properties
        .reply_to()
        .as_ref()
        .map(|s| s.as_str().to_string());
    let correlation = d.properties.correlation_id().clone();
    match outcome {
        Outcome::Done(body) => {
            hub.metrics.amqp_message("taken");
            if let Some(to) = &reply_to {
                reply(link, to, correlation, &body).await;
            }
            if let Err(e) = d.acker.ack(BasicAckOptions::default()).await {
                tracing::warn!(
                    "amqp: could not acknowledge a message (it comes back, and is taken once): {e}"
                );
            }
        }
        Outcome::Refused(reason) => {
            hub.metrics.amqp_message("refused");
            let user = from.as_deref().unwrap_or("-");
            tracing::info!(user, "amqp: refused a message: {reason}");
            let mut ev = AuditEvent::new(AuditKind::Refusal, "", "", hub.clock.now());
            ev.via = Some("amqp".into());
            ev.detail = Some(format!("refused a queue message: {reason}"));
            hub.audit_refusal(ev).await;
            give_up(
                link,
                &d,
                from.as_deref(),
                reply_to.as_deref(),
                correlation,
                &reason,
            )
            .await;
        }
        Outcome::Retry(error) => {
            let n = attempts(&d).saturating_add(1);
            let max = link.config.max_deliveries;
            let user = from.as_deref().unwrap_or("-");
            if n >= max {
                // A poison message: it would come back for ever.
                hub.metrics.amqp_message("gave_up");
                let reason = format!(
                    "failed {n} times (STRANDS_AMQP_MAX_DELIVERIES is {max}); the last error: {error}"
                );
                tracing::warn!(user, "amqp: dead-lettered a message: {reason}");
                give_up(
                    link,
                    &d,
                    from.as_deref(),
                    reply_to.as_deref(),
                    correlation,
                    &reason,
                )
                .await;
                return;
            }
            hub.metrics.amqp_message("retried");
            tracing::warn!(
                user,
                "amqp: a message goes back to the queue (attempt {n} of at most {max}): {error}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
            let again = match &from {
                Some(from) => try_again(link, &d, from, n).await,
                None => Err("no sender".into()),
            };
            let settled = match again {
                Ok(()) => d.acker.ack(BasicAckOptions::default()).await,
                Err(e) => {
                    // Back as it is: it is tried again, uncounted.
                    tracing::warn!("amqp: could not queue the message again: {e}");
                    d.acker
                        .nack(BasicNackOptions {
                            requeue: true,
                            multiple: false,
                        })
                        .await
                }
            };
            if let Err(e) = settled {
                tracing::warn!("amqp: could not settle a message tried again (it comes back): {e}");
            }
        }
    }
}

/// Who sent `d`: its `user_id` (which the broker checked), or, on a copy
/// strands queued again (its `user_id` strands' own user), the sender it
/// names in `x-strands-user-id`.
fn sender(link: &Link, d: &Delivery) -> Option<String> {
    let user = d.properties.user_id().as_ref()?.as_str();
    if user == link.config.user() {
        if let Some(AMQPValue::LongString(s)) = header(d, SENDER_HEADER) {
            return Some(s.to_string());
        }
    }
    Some(user.to_string())
}

fn header<'a>(d: &'a Delivery, name: &str) -> Option<&'a AMQPValue> {
    d.properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(name))
}

/// The failed attempts `d` has behind it (`x-strands-attempts`, 0 on a
/// message as its sender published it).
fn attempts(d: &Delivery) -> u32 {
    let n = match header(d, ATTEMPTS_HEADER) {
        Some(AMQPValue::ShortShortInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortShortUInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortUInt(n)) => i64::from(*n),
        Some(AMQPValue::LongInt(n)) => i64::from(*n),
        Some(AMQPValue::LongUInt(n)) => i64::from(*n),
        Some(AMQPValue::LongLongInt(n)) => *n,
        _ => 0,
    };
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

/// `d` again, to the back of the requests' queue, with `failed` attempts
/// counted and its sender `from` named; `Ok` once the broker confirmed it.
async fn try_again(link: &Link, d: &Delivery, from: &str, failed: u32) -> Result<(), String> {
    let mut headers = d.properties.headers().clone().unwrap_or_default();
    headers.insert(short(ATTEMPTS_HEADER)?, AMQPValue::LongUInt(failed));
    headers.insert(
        short(SENDER_HEADER)?,
        AMQPValue::LongString(from.to_string().into()),
    );
    let props = carried(&d.properties, headers).with_user_id(short(&link.config.user())?);
    link.publish("", &link.config.queue, &d.data, props).await
}

/// What a copy of a message keeps of `p`, with `headers`: persistent.
fn carried(p: &BasicProperties, headers: FieldTable) -> BasicProperties {
    let mut props = BasicProperties::default()
        .with_headers(headers)
        .with_delivery_mode(2);
    if let Some(v) = p.content_type() {
        props = props.with_content_type(v.clone());
    }
    if let Some(v) = p.message_id() {
        props = props.with_message_id(v.clone());
    }
    if let Some(v) = p.correlation_id() {
        props = props.with_correlation_id(v.clone());
    }
    if let Some(v) = p.reply_to() {
        props = props.with_reply_to(v.clone());
    }
    if let Some(v) = p.kind() {
        props = props.with_type(v.clone());
    }
    props
}

/// Settles `d` as not taken: `reason` to its `reply_to`, the message to
/// the dead-letter exchange with `reason`, then acknowledged (nothing
/// changed). When the dead-letter exchange cannot be reached, the
/// queue's own dead-lettering takes it, without the reason.
async fn give_up(
    link: &Link,
    d: &Delivery,
    from: Option<&str>,
    reply_to: Option<&str>,
    correlation: Option<ShortString>,
    reason: &str,
) {
    if let Some(to) = reply_to {
        reply(
            link,
            to,
            correlation,
            &json!({"ok": false, "error": reason}),
        )
        .await;
    }
    let settled = match dead_letter(link, d, from, reason).await {
        Ok(()) => d.acker.ack(BasicAckOptions::default()).await,
        Err(e) => {
            tracing::warn!("amqp: could not publish to the dead-letter exchange: {e}");
            d.acker.reject(BasicRejectOptions { requeue: false }).await
        }
    };
    if let Err(e) = settled {
        tracing::warn!("amqp: could not settle a refused message: {e}");
    }
}

async fn judge(hub: &Hub, d: &Delivery, user: Option<&str>) -> Outcome {
    let Some(user) = user else {
        return Outcome::Refused(
            "no `user_id` property: the sender's RabbitMQ user names who asks".into(),
        );
    };
    let directory = match hub.fresh_people().await {
        Ok(d) => d,
        Err(e) => return Outcome::Retry(e.to_string()),
    };
    let Some(person) = directory.person_of(&format!("{AMQP_PREFIX}{user}")) else {
        return Outcome::Refused(format!(
            "RabbitMQ user `{user}` is nobody's `amqp` identity in the people directory (`strands people edit NAME --amqp {user}`)"
        ));
    };
    let name = person.name.clone();
    match d.properties.kind().as_ref().map(|k| k.as_str()) {
        Some("approval") => approval(hub, d, &name, &directory).await,
        Some("answer") => answer(hub, d, &name).await,
        Some(other) => Outcome::Refused(format!(
            "the `type` property is `{other}`: it must be `approval` or `answer`"
        )),
        None => Outcome::Refused("no `type` property: it must be `approval` or `answer`".into()),
    }
}

async fn approval(
    hub: &Hub,
    d: &Delivery,
    requester: &str,
    directory: &crate::model::person::Directory,
) -> Outcome {
    let mut req: ApprovalRequest = match serde_json::from_slice(&d.data) {
        Ok(r) => r,
        Err(e) => return Outcome::Refused(format!("not an approval request: {e}")),
    };
    if req.key.is_none() {
        match d.properties.message_id() {
            Some(id) => req.key = Some(format!("amqp:{id}")),
            None => {
                return Outcome::Refused(
                    "an approval request needs a `key` or a `message_id` property (a redelivery must not ask twice)".into(),
                )
            }
        }
    }
    if let (Some(to), Some(corr)) = (d.properties.reply_to(), d.properties.correlation_id()) {
        req.labels
            .insert(REPLY_TO_LABEL.into(), to.as_str().to_string());
        req.labels
            .insert(CORRELATION_LABEL.into(), corr.as_str().to_string());
    }
    match hub
        .request_approval_in(&req, requester, Some(directory))
        .await
    {
        Ok(Ok(created)) => {
            let (s, new) = match created {
                Created::New(s) => (s, true),
                Created::Existing(s) => (s, false),
            };
            let mut view = ApprovalView::of(&s);
            view.created = new;
            Outcome::Done(json!({"ok": true, "type": "approval", "approval": view}))
        }
        Ok(Err(invalid)) => Outcome::Refused(format!("invalid request: {invalid}")),
        Err(e) => Outcome::Retry(e.to_string()),
    }
}

async fn answer(hub: &Hub, d: &Delivery, who: &str) -> Outcome {
    let mut body: Map<String, Value> = match serde_json::from_slice(&d.data) {
        Ok(b) => b,
        Err(e) => return Outcome::Refused(format!("not an answer: {e}")),
    };
    let Some(Value::String(session)) = body.remove("session") else {
        return Outcome::Refused("an answer needs `session`, the session's id".into());
    };
    let req: AnswerRequest = match serde_json::from_value(Value::Object(body)) {
        Ok(r) => r,
        Err(e) => return Outcome::Refused(format!("not an answer: {e}")),
    };
    let decision = match req.decision() {
        Ok(d) => d,
        Err(p) => return Outcome::Refused(p.message),
    };
    let a = DoorAnswer::new(&session, who, Door::Amqp, decision)
        .at(req.gate.as_deref())
        .call(req.call.as_deref())
        .vars(req.vars);
    match hub.take(a).await {
        Ok(Ok(accepted)) => {
            let status = match &accepted {
                Accepted::Recorded(_) => "recorded",
                Accepted::Counted(_) => "counted",
                Accepted::Queued(_) => "queued",
                Accepted::Repeated(_) => "repeated",
            };
            Outcome::Done(json!({
                "ok": true,
                "type": "answer",
                "session": accepted.session().id,
                "status": status,
            }))
        }
        Ok(Err(refusal)) => Outcome::Refused(refusal_text(&refusal)),
        Err(e @ (Error::Session(_) | Error::Usage(_) | Error::Finished { .. })) => {
            Outcome::Refused(e.to_string())
        }
        Err(e) => Outcome::Retry(e.to_string()),
    }
}

/// Publishes `body` to `to` through the default exchange, with the
/// request's correlation id. A reply that cannot be sent is logged: the
/// outcome stands (the request's events are on the exchange too).
async fn reply(link: &Link, to: &str, correlation: Option<ShortString>, body: &Value) {
    let mut props = BasicProperties::default()
        .with_content_type("application/json".into())
        .with_delivery_mode(2);
    if let Some(c) = correlation {
        props = props.with_correlation_id(c);
    }
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    if let Err(e) = link.publish("", to, &bytes, props).await {
        tracing::warn!(reply_to = %to, "amqp: could not reply: {e}");
    }
}

/// `d` again, to the dead-letter exchange, with `reason` in its headers
/// (and the sender `from` in `x-strands-user-id`: the original `user_id`
/// would not be this connection's, which the broker refuses).
async fn dead_letter(
    link: &Link,
    d: &Delivery,
    from: Option<&str>,
    reason: &str,
) -> Result<(), String> {
    let mut headers = d.properties.headers().clone().unwrap_or_default();
    headers.insert(
        short(REASON_HEADER)?,
        AMQPValue::LongString(reason.to_string().into()),
    );
    if let Some(u) = from {
        headers.insert(
            short(SENDER_HEADER)?,
            AMQPValue::LongString(u.to_string().into()),
        );
    }
    let props = carried(&d.properties, headers);
    let routing_key = if d.routing_key.as_str().is_empty() {
        link.config.queue.clone()
    } else {
        d.routing_key.as_str().to_string()
    };
    link.publish(&link.config.dead_letter, &routing_key, &d.data, props)
        .await
}
