//! The one path for "a command / a click / an event arrived", whichever way
//! it came: posted to a request URL ([`super::server`], after the signature
//! check) or delivered over Socket Mode ([`super::socket`], where the
//! connection is the authentication). Each transport only unwraps its
//! format — a form body or an envelope — calls one function here, and turns
//! the [`Reply`] into its own answer: an HTTP response, or an envelope's
//! acknowledgement.
//!
//! What this module does not do: verify signatures, acknowledge envelopes,
//! or know about deadlines (both transports acknowledge within Slack's 3 s
//! in their own way).

use serde_json::{json, Value};
use slack_morphism::prelude::SlackCommandEvent;

use super::app::App;
use super::reply::Reply;
use super::{commands, home, interactions};

/// A `/strands` slash command, carried out once per `trigger_id` across
/// replicas and restarts (the store remembers the ids it has seen, as for
/// events): an HTTP retry or a Socket Mode redelivery carries the same
/// payload, hence the same `trigger_id`, whatever its envelope. A second
/// sighting is acknowledged with nothing to show.
pub async fn command(app: &App, cmd: SlackCommandEvent) -> Reply {
    if !cmd.trigger_id.0.is_empty() {
        match app
            .hub
            .store
            .first_sighting(&command_key(&cmd.trigger_id.0))
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!("a slash command delivered again is acknowledged, not carried out");
                return Reply::Duplicate;
            }
            Err(e) => {
                tracing::error!("command dedup failed: {e}");
                return Reply::Failed;
            }
        }
    }
    Reply::Body(commands::handle(app, cmd).await)
}

/// The store's sighting key of a slash command (apart from event ids).
pub fn command_key(trigger_id: &str) -> String {
    format!("slack-cmd:{trigger_id}")
}

/// A button click or a modal submission: `payload` is the interaction's JSON.
pub async fn interaction(app: &App, payload: &str) -> Reply {
    interactions::handle(app, payload).await
}

/// An Events API callback. `retried` says Slack marked it as a retry
/// (`X-Slack-Retry-Num`, an envelope's `retry_attempt`). An event is
/// carried out once per `event_id`, across restarts (the store remembers
/// the ids it has seen), whichever connection or request brings it.
pub async fn event(app: &App, event: Value, retried: bool) -> Reply {
    if event.get("type").and_then(Value::as_str) == Some("url_verification") {
        let challenge = event.get("challenge").cloned().unwrap_or_default();
        return Reply::Body(json!({ "challenge": challenge }));
    }
    if let Some(id) = event.get("event_id").and_then(Value::as_str) {
        match app.hub.store.first_sighting(id).await {
            Ok(true) => {}
            Ok(false) => return Reply::Duplicate,
            Err(e) => {
                tracing::error!("event dedup failed: {e}");
                return Reply::Failed;
            }
        }
    }
    if retried {
        tracing::info!("accepted a retried event the first time it was seen");
    }
    let kind = event
        .pointer("/event/type")
        .or_else(|| event.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    app.metrics.slack_event(kind);
    if kind == "app_home_opened" {
        home::opened(app, &event);
    }
    Reply::Ack
}
