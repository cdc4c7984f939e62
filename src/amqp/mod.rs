//! The queue room: RabbitMQ (AMQP 0-9-1) as a door for code that speaks
//! messages rather than HTTP.
//!
//! Out: every event webhooks carry is published to a durable topic
//! exchange (`STRANDS_AMQP_EXCHANGE`), routing key = the event's type
//! (`gate.opened`), persistent, body = the webhook's payload,
//! `message_id` = the webhook's id. It goes through the store's outbox
//! like a webhook: the exchange is one more endpoint of
//! [`crate::webhook::Deliverer`] (`amqp:<exchange>`), with its cursor over
//! the event sequence, its lease (one replica sends each), its backoff
//! while the broker is away and its given-up list (`strands webhooks
//! failed`); a delivery is settled only after the broker's confirm
//! ([`publish`]).
//!
//! In: a durable queue (`STRANDS_AMQP_QUEUE`) takes approval requests and
//! answers, each from a person of the directory (its `amqp` identity is the
//! message's broker-checked `user_id`), through the same intake as every
//! other door ([`listen`]). Refused messages go to the dead-letter
//! exchange with their reason.
//!
//! The connection is kept up by [`Link`] (backoff, `/healthz`, the
//! `strands_amqp_connected` gauge). What this module does not do: write
//! AMQP frames (lapin does), decide who may answer (the intake does), or
//! choose which events exist (the engine writes them).

mod config;
mod link;
mod listen;
mod publish;

use std::sync::Arc;

pub use config::{Config, DEFAULT_DEAD_LETTER, DEFAULT_EXCHANGE, DEFAULT_PREFETCH, DEFAULT_QUEUE};
pub use link::{Link, State};
pub use listen::{CORRELATION_LABEL, REASON_HEADER, REPLY_TO_LABEL};

pub use crate::webhook::EXCHANGE_PREFIX as ENDPOINT_PREFIX;
pub use publish::Publisher;

/// `s` as an AMQP short string (at most 255 bytes).
fn short(s: &str) -> Result<lapin::types::ShortString, String> {
    lapin::types::ShortString::try_new(s).map_err(|e| e.to_string())
}

/// Opens the room: the link, connecting and consuming in the background
/// (on `hub`'s tasks) until `stop`. Publishing is the deliverer's, given
/// the link.
pub fn open(
    hub: &crate::hub::Hub,
    config: Config,
    stop: tokio_util::sync::CancellationToken,
) -> Arc<Link> {
    let link = Arc::new(Link::new(
        config,
        Arc::clone(&hub.metrics),
        Arc::clone(&hub.clock),
    ));
    // A message waits on its acknowledgement as a click waits on its
    // answer: its store calls go in the acknowledgement lane, ahead of
    // the resumes and deliveries it starts.
    let handler: link::Handler = Arc::new(|hub, link, delivery| {
        Box::pin(crate::hub::acknowledging(async move {
            listen::handle(&hub, &link, delivery).await
        }))
    });
    let (run, hub2) = (Arc::clone(&link), hub.clone());
    hub.tasks().spawn(async move {
        run.run(hub2, handler, stop).await;
    });
    link
}
