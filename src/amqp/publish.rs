//! Events to the exchange: the [`Exchange`] the outbox's deliverer
//! ([`crate::webhook::Deliverer`]) hands a delivery whose endpoint is the
//! exchange (`amqp:<exchange>`). The body is the webhook's payload; the
//! routing key, the event's type; `message_id`, the webhook's id (the
//! same on every attempt: consumers drop duplicates by it). The deliverer
//! settles the delivery only once the broker confirmed it.
//!
//! When the event ends an approval request that came from the queue with a
//! `reply_to`, the decision goes there too, with the request's
//! `correlation_id`, in the same attempt (a retry may send it again, with
//! the same `message_id`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use lapin::types::{AMQPValue, FieldTable};
use lapin::BasicProperties;
use serde_json::json;

use super::link::Link;
use super::listen::{CORRELATION_LABEL, REPLY_TO_LABEL};
use super::short;
use crate::hub::approvals::{is_approval, ApprovalView};
use crate::model::webhook::Delivery;
use crate::model::Session;

/// The longest wait between two attempts at an event while the broker is
/// away: what waited goes out within seconds of its return.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The exchange, as the deliverer sees it.
pub struct Publisher {
    pub link: Arc<Link>,
}

impl crate::webhook::Exchange for Publisher {
    fn endpoint(&self) -> String {
        self.link.config.endpoint()
    }

    fn give_up(&self) -> Duration {
        self.link.config.give_up
    }

    fn max_backoff(&self) -> Duration {
        MAX_BACKOFF
    }

    fn publish<'a>(
        &'a self,
        d: &'a Delivery,
        body: Vec<u8>,
        ended: Option<Session>,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let reply = ended.as_ref().and_then(reply_for);
            event(&self.link, d, &body, reply.as_ref()).await
        })
    }
}

/// A decision owed to a requester's `reply_to`.
#[derive(Debug, Clone)]
struct Reply {
    to: String,
    correlation_id: String,
    body: Vec<u8>,
}

/// The reply the end of `s` owes, if it is an approval request that
/// asked for one.
fn reply_for(s: &Session) -> Option<Reply> {
    if !is_approval(s) {
        return None;
    }
    let view = ApprovalView::of(s);
    let to = view.labels.get(REPLY_TO_LABEL)?.clone();
    let correlation_id = view.labels.get(CORRELATION_LABEL)?.clone();
    let body = serde_json::to_vec(&json!({
        "ok": true,
        "type": "decision",
        "decision": view.decision,
        "status": view.status,
        "approval": view,
    }))
    .ok()?;
    Some(Reply {
        to,
        correlation_id,
        body,
    })
}

/// Publishes `d` (its payload `body`) to the exchange, and its `reply`;
/// `Ok` once the broker confirmed both.
async fn event(
    link: &Link,
    d: &Delivery,
    body: &[u8],
    reply: Option<&Reply>,
) -> Result<(), String> {
    let kind = d.event.what.name();
    let mut headers = FieldTable::default();
    headers.insert(
        short("session")?,
        AMQPValue::LongString(d.event.session.clone().into()),
    );
    let props = BasicProperties::default()
        .with_message_id(short(&d.msg_id)?)
        .with_content_type("application/json".into())
        .with_delivery_mode(2)
        .with_type(short(kind)?)
        .with_app_id("strands".into())
        .with_timestamp(u64::try_from(d.event.at.timestamp()).unwrap_or(0))
        .with_headers(headers);
    if let Some(r) = reply {
        let reply_props = BasicProperties::default()
            .with_message_id(short(&format!("{}.reply", d.msg_id))?)
            .with_correlation_id(short(&r.correlation_id)?)
            .with_content_type("application/json".into())
            .with_delivery_mode(2)
            .with_type("decision".into());
        link.publish("", &r.to, &r.body, reply_props).await?;
    }
    link.publish(&link.config.exchange, kind, body, props).await
}
