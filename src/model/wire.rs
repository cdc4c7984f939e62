//! Reading sessions written by earlier formats.
//!
//! Stores outlive binaries: a session paused by last month's release must
//! resume with this one. Every stored session goes through [`decode`]:
//! the current format is read directly; an older one is first rewritten as
//! JSON into the current shape (and is written back in it at its next
//! checkpoint). `tests/fixtures/sessions/` holds sessions exactly as earlier
//! releases wrote them; a test decodes every one.
//!
//! Format 1 (no `format` field): the gate an answer without `--gate` was
//! for in `gate`, the other open gates in `parked`, a recorded answer in
//! `pending_answer` (for `gate`), and the Slack bot's messages in
//! `notification` / `messages` — those now live beside the session
//! ([`legacy_notifications`] lets the store move them).

use serde_json::{Map, Value};

use super::session::{Notification, Session, SESSION_FORMAT};

/// Decodes a stored session of any known format.
pub fn decode(bytes: &[u8]) -> Result<Session, String> {
    match serde_json::from_slice::<Session>(bytes) {
        Ok(s) if s.format == SESSION_FORMAT => Ok(s),
        Ok(s) => Err(format!(
            "session {} has format {}, newer than this build knows ({SESSION_FORMAT}); upgrade strands",
            s.id, s.format
        )),
        Err(current) => {
            let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
            match v.get("format").and_then(Value::as_u64) {
                None => decode_value(v),
                Some(_) => Err(current.to_string()),
            }
        }
    }
}

/// [`decode`] for a session already read as JSON (the store put texts
/// kept apart back into it: `store::outputs`).
pub fn decode_value(mut v: Value) -> Result<Session, String> {
    match v.get("format").and_then(Value::as_u64) {
        None => {
            upgrade_v1(&mut v);
            serde_json::from_value(v).map_err(|e| e.to_string())
        }
        Some(f) if f == u64::from(SESSION_FORMAT) => {
            serde_json::from_value(v).map_err(|e| e.to_string())
        }
        Some(f) => Err(format!(
            "session {} has format {f}, newer than this build knows ({SESSION_FORMAT}); upgrade strands",
            v.get("id").and_then(Value::as_str).unwrap_or("?")
        )),
    }
}

/// The Slack messages a format-1 session carried (`notification`,
/// `messages`), oldest first; empty for the current format.
pub fn legacy_notifications(bytes: &[u8]) -> Vec<Notification> {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return Vec::new();
    };
    if v.get("format").is_some() {
        return Vec::new();
    }
    let mut out: Vec<Notification> = Vec::new();
    if let Some(m) = v.get("messages").and_then(Value::as_object) {
        out.extend(
            m.values()
                .filter_map(|n| serde_json::from_value::<Notification>(n.clone()).ok()),
        );
    }
    if let Some(n) = v
        .get("notification")
        .and_then(|n| serde_json::from_value::<Notification>(n.clone()).ok())
    {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out.sort_by_key(|n| n.at);
    out
}

fn handle(gate: &Value) -> Option<String> {
    Some(format!(
        "{}#{}",
        gate.get("id")?.as_str()?,
        gate.get("instance")?.as_u64()?
    ))
}

/// Format 1 → the current shape, as JSON.
fn upgrade_v1(v: &mut Value) {
    let Some(o) = v.as_object_mut() else {
        return;
    };
    let mut gates = Map::new();
    let focused = o.remove("gate").filter(|g| !g.is_null());
    let focused_handle = focused.as_ref().and_then(handle);
    for g in focused.into_iter().chain(
        o.remove("parked")
            .and_then(|p| p.as_array().cloned())
            .unwrap_or_default(),
    ) {
        if let Some(h) = handle(&g) {
            gates.insert(h, g);
        }
    }
    if let Some(answer) = o.remove("pending_answer").filter(|a| !a.is_null()) {
        if let Some(h) = focused_handle {
            o.insert(
                "pending".into(),
                serde_json::json!({ "gate": h, "answer": answer }),
            );
        }
    }
    o.insert("gates".into(), Value::Object(gates));
    o.remove("notification");
    o.remove("messages");
    o.insert("format".into(), Value::from(SESSION_FORMAT));
}
