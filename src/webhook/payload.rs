//! What a webhook says: one event as a Standard Webhooks payload,
//! `{"type", "timestamp", "data"}`, with links back to the session.
//!
//! `data` holds the event's own fields (see `crate::model::event`: the
//! gate, its prompt and redacted preview, a decision and who made it…,
//! and `trace_id`, the run's OpenTelemetry trace when it is traced) and
//! nothing else — never an output, never a secret.

use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::model::Event;

/// The web inbox page of session `id` (sign-in required), under
/// `public_url`: the one link every message and payload carries.
pub fn page_link(public_url: &str, id: &str) -> String {
    format!("{}/sessions/{id}", public_url.trim_end_matches('/'))
}

/// The payload of `event`; links start with `public_url` (no trailing
/// slash).
pub fn payload(event: &Event, public_url: &str) -> Value {
    let mut data = match serde_json::to_value(event) {
        Ok(Value::Object(map)) => map,
        // An event always serializes to an object; keep the basics if not.
        _ => serde_json::Map::new(),
    };
    // Both are at the top level already.
    data.remove("type");
    data.remove("at");
    let session = format!("{public_url}/api/v1/sessions/{}", event.session);
    data.insert(
        "links".into(),
        json!({
            "answers": format!("{session}/answers"),
            "events": format!("{session}/events"),
            "session": session,
            // The run's page in the web inbox (sign-in required).
            "page": page_link(public_url, &event.session),
        }),
    );
    json!({
        "type": event.what.name(),
        "timestamp": event.at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": data,
    })
}
