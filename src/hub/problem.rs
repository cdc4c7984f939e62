//! A refused request, as every door reports it: a status that fits, a
//! stable code for programs, a message for people — mapped here once from
//! the crate's errors, the intake's refusals and the hub's own, so no door
//! words an error or picks a status itself. The API writes it as
//! `{"error": {"code", "message"}}`; the web inbox
//! as an error page; both with the same status.

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::StartRefusal;
use crate::model::Refusal;

/// A refused request: nothing changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub status: StatusCode,
    /// Stable, for programs: `not_found`, `already_answered`, ...
    pub code: &'static str,
    /// For people: what is wrong and what would work.
    pub message: String,
    /// More, for programs (who answered first and when, ...).
    pub details: Option<Value>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
        Problem {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    pub fn not_found(message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::CONFLICT, code, message)
    }
    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Problem {
        Problem::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }
    /// The same problem, with more fields in its body (`field`, `by`, …).
    pub fn with(mut self, details: Value) -> Problem {
        self.details = Some(details);
        self
    }
}

impl From<crate::Error> for Problem {
    fn from(e: crate::Error) -> Problem {
        use crate::Error as E;
        match e {
            E::Usage(m) => Problem::bad_request(m),
            E::Session(m) => Problem::not_found(m),
            E::Forbidden(m) => Problem::forbidden(m),
            E::Finished { ref status, .. } => {
                let status = status.clone();
                Problem::conflict("not_open", e.to_string()).with(json!({ "status": status }))
            }
            E::Spec(_) => Problem::unprocessable("invalid_spec", e.to_string()),
            other => {
                // The detail goes to the log; the caller learns it failed.
                tracing::error!("API request failed: {other}");
                Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the server could not do that; its log says why",
                )
            }
        }
    }
}

impl From<Refusal> for Problem {
    fn from(r: Refusal) -> Problem {
        let message = r.to_string();
        match r {
            Refusal::NotFound => Problem::not_found(message),
            Refusal::NotOpen(status) => {
                Problem::conflict("not_open", message).with(json!({ "status": status }))
            }
            Refusal::Stale { open } => {
                Problem::conflict("stale", message).with(json!({ "open_gate": open }))
            }
            Refusal::NotAllowed(_) | Refusal::NotApprover(_) => Problem::forbidden(message),
            Refusal::AlreadyAnswered(a) => Problem::conflict("already_answered", message).with(
                json!({ "by": a.by, "at": a.at, "decision": a.decision.verb(), "via": a.via }),
            ),
            Refusal::BadAnswer(_) => Problem::unprocessable("bad_answer", message),
            // Each value at fault, by field; `field` is the first.
            Refusal::BadValues(errors) => {
                Problem::unprocessable("bad_answer", message).with(json!({
                    "field": errors.first().map(|e| e.field.clone()),
                    "fields": errors
                        .iter()
                        .map(|e| (e.field.clone(), Value::String(e.message.clone())))
                        .collect::<serde_json::Map<String, Value>>(),
                }))
            }
            Refusal::StepUp { link } => {
                Problem::new(StatusCode::FORBIDDEN, "step_up_required", message)
                    .with(json!({ "link": link, "step_up": "passkey" }))
            }
            Refusal::TimedOut { at, .. } => {
                Problem::conflict("timed_out", message).with(json!({ "timed_out_at": at }))
            }
        }
    }
}

impl From<StartRefusal> for Problem {
    fn from(r: StartRefusal) -> Problem {
        let message = r.to_string();
        match r {
            StartRefusal::NoWorkflows | StartRefusal::Unknown { .. } => {
                Problem::new(StatusCode::NOT_FOUND, "unknown_workflow", message)
            }
            StartRefusal::Invalid { .. } => Problem::unprocessable("invalid_spec", message),
            StartRefusal::CannotRun(_) => Problem::unprocessable("cannot_run", message),
            StartRefusal::BadInputs { .. } => Problem::unprocessable("bad_inputs", message),
        }
    }
}

impl From<super::tokens::TokenRefusal> for Problem {
    fn from(r: super::tokens::TokenRefusal) -> Problem {
        use super::tokens::TokenRefusal as T;
        match r {
            T::NameTaken(_) => Problem::conflict("name_taken", r.to_string()),
            T::BadName(_) | T::BadExpiry => Problem::unprocessable("bad_token", r.to_string()),
        }
    }
}
