//! The approval card: an Adaptive Card 1.5 asking for one open gate, and
//! the same card once it is decided (who, when, the reason; no buttons).
//!
//! The card shows the workflow, the gate, its prompt, the redacted preview
//! the gate keeps (the one Slack shows: [`OpenGate::preview`]), who started
//! the run, the timeout and what it does, and the quorum's progress. Its
//! actions are `Action.Execute` with verbs `approve`, `reject` (a `reason`
//! input, required when the gate requires one), `modify` (a `feedback`
//! input, manual gates) and `respond` (a `response` input, `hitl` gates),
//! each carrying `{session, gate}` as data; "Open in browser" opens the
//! run's page. The data is only where to answer: who answers is always the
//! verified activity's sender.
//!
//! Posted as an activity with the attachment alone (no `text` beside it:
//! Teams would show both).

use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::hub::{durations, pages};
use crate::model::{Answer, Decision, OpenGate, Session};
use crate::spec::GateKind;

/// The attachment's content type.
pub const CONTENT_TYPE: &str = "application/vnd.microsoft.card.adaptive";

/// Teams refuses activities over about 28 KB; the preview is cut to keep
/// the card well under it.
pub const MAX_PREVIEW_CHARS: usize = 12_000;

/// The message activity carrying `card` and nothing else.
pub fn activity(card: Value) -> Value {
    json!({
        "type": "message",
        "attachments": [{ "contentType": CONTENT_TYPE, "content": card }],
    })
}

fn card(body: Vec<Value>, actions: Vec<Value>) -> Value {
    let mut c = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": body,
    });
    if !actions.is_empty() {
        c["actions"] = Value::Array(actions);
    }
    c
}

fn text(t: impl Into<String>) -> Value {
    json!({ "type": "TextBlock", "text": t.into(), "wrap": true })
}

/// The facts both cards start with.
fn facts(session: &Session, gate: &str) -> Vec<Value> {
    vec![
        json!({
            "type": "TextBlock",
            "text": format!("Approval needed: {}", session.workflow),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": true,
        }),
        json!({
            "type": "FactSet",
            "facts": [
                {"title": "Workflow", "value": session.workflow},
                {"title": "Gate", "value": gate},
                {"title": "Started by", "value": session.started_by},
                {"title": "Run", "value": session.id},
            ],
        }),
    ]
}

fn open_in_browser(public_url: &str, session_id: &str) -> Value {
    json!({
        "type": "Action.OpenUrl",
        "title": "Open in browser",
        "url": pages::session(public_url, session_id),
    })
}

fn execute(title: &str, verb: &str, data: &Value) -> Value {
    json!({ "type": "Action.Execute", "title": title, "verb": verb, "data": data })
}

/// An action that shows a small form: one text input and its button.
fn form(title: &str, verb: &str, input: &str, label: &str, required: bool, data: &Value) -> Value {
    let mut field = json!({
        "type": "Input.Text",
        "id": input,
        "label": label,
        "isMultiline": true,
        "maxLength": 2000,
    });
    if required {
        field["isRequired"] = json!(true);
        field["errorMessage"] = json!(format!("{label} is required"));
    }
    json!({
        "type": "Action.ShowCard",
        "title": title,
        "card": {
            "type": "AdaptiveCard",
            "body": [field],
            "actions": [execute(title, verb, data)],
        },
    })
}

/// The card asking for `gate` of `session`, at `now`.
pub fn approval(
    session: &Session,
    gate: &OpenGate,
    public_url: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let mut body = facts(session, &format!("{} ({})", gate.id, gate.position));
    body.push(text(gate.prompt.clone()));
    if gate.show_preview && !gate.context.trim().is_empty() {
        let (preview, cut) = gate.preview();
        let shown: String = preview.chars().take(MAX_PREVIEW_CHARS).collect();
        let cut = cut + preview.chars().count() - shown.chars().count();
        body.push(json!({
            "type": "TextBlock",
            "text": shown,
            "wrap": true,
            "fontType": "Monospace",
            "separator": true,
        }));
        if cut > 0 {
            body.push(json!({
                "type": "TextBlock",
                "text": format!("… {cut} more characters: open the run in the browser"),
                "isSubtle": true,
                "wrap": true,
            }));
        }
    }
    if let Some(at) = gate.timeout_at {
        body.push(text(format!(
            "Times out in {} ({}); then: {}",
            durations::duration((at - now).num_seconds()),
            at.to_rfc3339_opts(SecondsFormat::Secs, true),
            gate.fallback.name()
        )));
    }
    if gate.approvals_required > 1 {
        let who: Vec<&str> = gate.approvals.iter().map(|a| a.by.as_str()).collect();
        body.push(text(format!(
            "Approvals: {} of {}{}",
            gate.approvals.len(),
            gate.approvals_required,
            if who.is_empty() {
                String::new()
            } else {
                format!(" ({})", who.join(", "))
            }
        )));
    }
    let data = json!({ "session": session.id, "gate": gate.handle() });
    let mut actions = Vec::new();
    if gate.kind == GateKind::Hitl {
        actions.push(form(
            "Answer",
            "respond",
            "response",
            "Your answer",
            true,
            &data,
        ));
    }
    actions.push(execute("Approve", "approve", &data));
    actions.push(form(
        "Reject",
        "reject",
        "reason",
        "Reason",
        gate.require_reason,
        &data,
    ));
    if gate.kind == GateKind::ManualGate {
        actions.push(form(
            "Modify", "modify", "feedback", "Feedback", true, &data,
        ));
    }
    actions.push(open_in_browser(public_url, &session.id));
    card(body, actions)
}

/// The card once gate `gate_id` of `session` was decided by `answer`:
/// who, when, the reason or feedback; no buttons but the browser's.
pub fn decided(session: &Session, gate_id: &str, answer: &Answer, public_url: &str) -> Value {
    let mut body = facts(session, gate_id);
    body[0]["text"] = json!(format!("Decided: {}", session.workflow));
    let verb = answer.decision.verb();
    let mut verb_cap = verb.to_string();
    if let Some(first) = verb_cap.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    body.push(json!({
        "type": "TextBlock",
        "text": format!(
            "{verb_cap} by {} at {}",
            answer.by,
            answer.at.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        "weight": "Bolder",
        "wrap": true,
        "color": if matches!(answer.decision, Decision::Approve) { "Good" } else { "Attention" },
    }));
    let detail = match &answer.decision {
        Decision::Reject { reason: Some(r) } => Some(format!("Reason: {r}")),
        Decision::Modify { feedback } => Some(format!("Feedback: {feedback}")),
        Decision::Respond { text } => Some(format!("Answer: {text}")),
        _ => None,
    };
    if let Some(d) = detail {
        body.push(text(d));
    }
    card(body, vec![open_in_browser(public_url, &session.id)])
}
