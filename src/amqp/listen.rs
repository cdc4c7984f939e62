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
//! again. Redeliveries decide nothing twice: a request's `key` (else its
//! `message_id`) names it, and an answer is recorded once by the intake.

use std::time::Duration;

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicNackOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, ShortString};
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
    let outcome = judge(hub, &d).await;
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
            tracing::info!(
                user = d
                    .properties
                    .user_id()
                    .as_ref()
                    .map(|u| u.as_str())
                    .unwrap_or("-"),
                "amqp: refused a message: {reason}"
            );
            let mut ev = AuditEvent::new(AuditKind::Refusal, "", "", hub.clock.now());
            ev.via = Some("amqp".into());
            ev.detail = Some(format!("refused a queue message: {reason}"));
            hub.audit_refusal(ev).await;
            if let Some(to) = &reply_to {
                reply(
                    link,
                    to,
                    correlation,
                    &json!({"ok": false, "error": reason}),
                )
                .await;
            }
            let settled = match dead_letter(link, &d, &reason).await {
                Ok(()) => d.acker.ack(BasicAckOptions::default()).await,
                Err(e) => {
                    // The queue's own dead-lettering, without the reason.
                    tracing::warn!("amqp: could not publish to the dead-letter exchange: {e}");
                    d.acker.reject(BasicRejectOptions { requeue: false }).await
                }
            };
            if let Err(e) = settled {
                tracing::warn!("amqp: could not settle a refused message: {e}");
            }
        }
        Outcome::Retry(error) => {
            hub.metrics.amqp_message("retried");
            tracing::warn!("amqp: a message goes back to the queue: {error}");
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = d
                .acker
                .nack(BasicNackOptions {
                    requeue: true,
                    multiple: false,
                })
                .await;
        }
    }
}

async fn judge(hub: &Hub, d: &Delivery) -> Outcome {
    let Some(user) = d.properties.user_id().as_ref().map(|u| u.as_str()) else {
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
        Some("approval") => approval(hub, d, &name).await,
        Some("answer") => answer(hub, d, &name).await,
        Some(other) => Outcome::Refused(format!(
            "the `type` property is `{other}`: it must be `approval` or `answer`"
        )),
        None => Outcome::Refused("no `type` property: it must be `approval` or `answer`".into()),
    }
}

async fn approval(hub: &Hub, d: &Delivery, requester: &str) -> Outcome {
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
    match hub.request_approval(&req, requester).await {
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
/// (and the sender's user in `x-strands-user-id`: the original `user_id`
/// would not be this connection's, which the broker refuses).
async fn dead_letter(link: &Link, d: &Delivery, reason: &str) -> Result<(), String> {
    let p = &d.properties;
    let mut headers = p.headers().clone().unwrap_or_default();
    headers.insert(
        short(REASON_HEADER)?,
        AMQPValue::LongString(reason.to_string().into()),
    );
    if let Some(u) = p.user_id() {
        headers.insert(
            short("x-strands-user-id")?,
            AMQPValue::LongString(u.as_str().to_string().into()),
        );
    }
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
    let routing_key = if d.routing_key.as_str().is_empty() {
        link.config.queue.clone()
    } else {
        d.routing_key.as_str().to_string()
    };
    link.publish(&link.config.dead_letter, &routing_key, &d.data, props)
        .await
}
