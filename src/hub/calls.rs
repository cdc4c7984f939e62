//! The tool calls a tool-call gate asks about, as a room shows them: which
//! calls (waiting ones first), each call's arguments as people may see them
//! (through the spec's redactor: `security.redact` and the built-in secret
//! patterns), and how each was decided — read from the calls' states and
//! the gate's history, so the same reading serves the first card and every
//! update. Rooms render it their own way; what may be answered (approve,
//! reject, edit, trust where the request says `trustable`) is the intake's
//! rule ([`crate::engine::intake`]), not this module's.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::audit::redact::Redactor;
use crate::model::{Answer, CallState, Decision, GateEventKind, PendingCall, Session};

/// How a call was decided, or why it needed no decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Approved by a human.
    Approved {
        by: String,
        at: Option<DateTime<Utc>>,
    },
    /// Approved with arguments a human edited.
    Edited {
        by: String,
        at: DateTime<Utc>,
    },
    /// A human trusted the tool on this call: for the rest of the run, or
    /// within the limits `rule` words (`model::grant::Limit::rule`).
    Trusted {
        by: String,
        at: DateTime<Utc>,
        rule: Option<String>,
    },
    /// Approved by the trust a human gave on another call.
    ByTrust {
        by: String,
    },
    /// Rejected by a human (or a timeout), maybe with a reason.
    Rejected {
        by: String,
        at: Option<DateTime<Utc>>,
        reason: Option<String>,
    },
    /// The policy let it run without asking.
    Policy,
    Running,
    Done,
    /// Refused without asking; why.
    NotRun(String),
}

/// The answer a human gave to call `call` of gate `handle`, if any.
pub fn answer_to<'a>(session: &'a Session, handle: &str, call: &str) -> Option<&'a Answer> {
    session.history.iter().rev().find_map(|e| match &e.what {
        GateEventKind::Answered { answer, .. }
            if answer.call.as_deref() == Some(call)
                && format!("{}#{}", e.gate, e.instance) == handle =>
        {
            Some(answer)
        }
        _ => None,
    })
}

/// How call `pc` of gate `handle` was decided; `None` while it waits.
pub fn outcome(session: &Session, handle: &str, pc: &PendingCall) -> Option<Outcome> {
    if pc.state == CallState::Waiting {
        return None;
    }
    if let Some(a) = answer_to(session, handle, &pc.call.id) {
        let by = a.by.clone();
        return Some(match &a.decision {
            Decision::Edit { .. } => Outcome::Edited { by, at: a.at },
            Decision::Trust { limit } => Outcome::Trusted {
                by,
                at: a.at,
                rule: limit.as_ref().map(|l| l.rule(&pc.call.name)),
            },
            Decision::Reject { reason } => Outcome::Rejected {
                by,
                at: Some(a.at),
                reason: reason.clone(),
            },
            _ => Outcome::Approved { by, at: Some(a.at) },
        });
    }
    Some(match &pc.state {
        CallState::Waiting => return None,
        CallState::Approved { by, .. } if by == "policy" => Outcome::Policy,
        CallState::Approved { by, .. } => match by.strip_prefix("trust by ") {
            Some(who) => Outcome::ByTrust {
                by: who.to_string(),
            },
            None => Outcome::Approved {
                by: by.clone(),
                at: None,
            },
        },
        CallState::Rejected { by, reason } => Outcome::Rejected {
            by: by.clone(),
            at: None,
            reason: reason.clone(),
        },
        CallState::Running | CallState::Asking { .. } => Outcome::Running,
        CallState::Done { result } if result.is_error => Outcome::NotRun(result.content.clone()),
        CallState::Done { .. } => Outcome::Done,
    })
}

/// The indexes of the calls of the session's latest turn a room shows, at
/// most `max`: waiting calls first (they need buttons), then decided
/// ones, in request order; and how many are left out.
pub fn shown(session: &Session, max: usize) -> (Vec<usize>, usize) {
    let Some(turn) = session.agent_turn.as_ref() else {
        return (Vec::new(), 0);
    };
    let total = turn.calls.len();
    let waiting = |i: &usize| turn.calls[*i].state == CallState::Waiting;
    let mut out: Vec<usize> = (0..total).filter(waiting).take(max).collect();
    let room = max - out.len();
    out.extend((0..total).filter(|i| !waiting(i)).take(room));
    out.sort_unstable();
    let left = total - out.len();
    (out, left)
}

/// A call's arguments as people may see them: pretty JSON through
/// `redactor` — each string value, each `key: value` pair (so a
/// `"password"` field is hidden like `password=…` in text), then the whole
/// text — and whether redaction hid anything (then the arguments must not
/// be offered for editing as they are: the hidden values would be shown or
/// lost).
pub fn shown_arguments(redactor: &Redactor, arguments: &Value) -> (String, bool) {
    let masked = mask(redactor, arguments);
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    let text = redactor.redact(&pretty(&masked));
    let hid = text != pretty(arguments);
    (text, hid)
}

/// `value` with every string that the redactor would hide, alone or after
/// its key, replaced by the mask.
fn mask(redactor: &Redactor, value: &Value) -> Value {
    const MASK: &str = "[REDACTED]";
    let hides = |text: &str| redactor.redact(text) != text;
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let hidden = match v {
                        Value::String(s) => hides(s) || hides(&format!("{k}={s}")),
                        Value::Number(_) | Value::Bool(_) => hides(&format!("{k}={v}")),
                        _ => false,
                    };
                    let v = if hidden {
                        Value::String(MASK.into())
                    } else {
                        mask(redactor, v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| mask(redactor, v)).collect()),
        Value::String(s) if hides(s) => Value::String(MASK.into()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_in_arguments_are_hidden_and_said_to_be() {
        let r = Redactor::new(&["ACCT-[0-9]{6}".to_string()]).expect("a pattern");
        let (text, hid) = shown_arguments(&r, &json!({"to": "ACCT-123456", "amount": 5}));
        assert!(hid && !text.contains("ACCT-123456") && text.contains("[REDACTED]"));
        let (text, hid) = shown_arguments(&r, &json!({"password": "hunter2"}));
        assert!(hid && !text.contains("hunter2"), "{text}");
        let (text, hid) = shown_arguments(&r, &json!({"path": "/rollout/web"}));
        assert!(!hid && text.contains("/rollout/web"));
    }
}
