//! What happened to a run, as the outside world hears it: a step done, a
//! gate opened or answered, a timeout, the end of the run. Events are
//! written by the store in the same transaction as the change they report
//! (the session's outbox, like its audit events), numbered in one sequence
//! per store, so a reader that remembers the last number it saw misses
//! nothing: server-sent events resume from `Last-Event-ID`, webhooks are
//! delivered from them.
//!
//! Previews in events are redacted (they are cut from what the gate shows,
//! which is redacted when the gate opens); outputs are never copied in.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::gate::{Answer, Decision, GateKind, OpenGate};

/// Characters of a gate's context carried as its preview.
pub const PREVIEW_CHARS: usize = 500;

/// One event as stored and sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Its place in the store's sequence (1, 2, …).
    pub seq: u64,
    pub at: DateTime<Utc>,
    pub session: String,
    pub workflow: String,
    /// The run's OpenTelemetry trace, when it is traced (absent from older
    /// events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(flatten)]
    pub what: EventKind,
}

/// What happened. The `type` names are the webhook event types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// An agent step finished.
    #[serde(rename = "step.done")]
    StepDone {
        position: String,
        agent: String,
        /// Tokens the step used.
        #[serde(default)]
        tokens: u64,
        /// How long it took.
        #[serde(default)]
        millis: u64,
    },
    /// A gate waits for a human.
    #[serde(rename = "gate.opened")]
    GateOpened {
        /// The handle (`id#instance`) answers name.
        gate: String,
        id: String,
        kind: GateKind,
        position: String,
        prompt: String,
        /// The first [`PREVIEW_CHARS`] characters of what the gate shows.
        preview: String,
        timeout_at: Option<DateTime<Utc>>,
        approvers: Vec<super::Approver>,
        approvals_required: u32,
        /// The values approving fills in (`form:`), as JSON Schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        form: Option<super::form::Form>,
        /// Whether `trust` answers it (`allow_trust:`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        allow_trust: bool,
    },
    /// A human answered (or one vote of a quorum, or one tool call).
    #[serde(rename = "gate.answered")]
    GateAnswered {
        gate: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<String>,
        /// `approved`, `rejected`, `modified`, `responded`, …
        decision: String,
        by: String,
        via: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A form's values, as recorded (typed, defaults filled in).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// A gate's timeout passed and its fallback answered.
    #[serde(rename = "gate.timed_out")]
    GateTimedOut {
        gate: String,
        decision: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A form approved by the timeout: its defaults.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        values: Option<serde_json::Map<String, serde_json::Value>>,
    },
    #[serde(rename = "run.completed")]
    RunCompleted {
        /// The output's size; the output itself is read from the session.
        output_chars: usize,
    },
    #[serde(rename = "run.failed")]
    RunFailed { message: String },
    #[serde(rename = "run.rejected")]
    RunRejected { reason: Option<String> },
    /// An operator cancelled the running run; it stopped at a checkpoint.
    #[serde(rename = "run.cancelled")]
    RunCancelled { by: String, reason: Option<String> },
}

impl EventKind {
    /// The `type` string.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::StepDone { .. } => "step.done",
            EventKind::GateOpened { .. } => "gate.opened",
            EventKind::GateAnswered { .. } => "gate.answered",
            EventKind::GateTimedOut { .. } => "gate.timed_out",
            EventKind::RunCompleted { .. } => "run.completed",
            EventKind::RunFailed { .. } => "run.failed",
            EventKind::RunRejected { .. } => "run.rejected",
            EventKind::RunCancelled { .. } => "run.cancelled",
        }
    }

    /// Whether the run stopped for good with this event.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            EventKind::RunCompleted { .. }
                | EventKind::RunFailed { .. }
                | EventKind::RunRejected { .. }
                | EventKind::RunCancelled { .. }
        )
    }

    /// Whether webhooks carry it (every kind but `step.done`).
    pub fn is_webhook(&self) -> bool {
        !matches!(self, EventKind::StepDone { .. })
    }

    pub fn opened(gate: &OpenGate) -> EventKind {
        EventKind::GateOpened {
            gate: gate.handle(),
            id: gate.id.clone(),
            kind: gate.kind,
            position: gate.position.to_string(),
            prompt: gate.prompt.clone(),
            preview: super::gate::cut(&gate.context, PREVIEW_CHARS).0,
            timeout_at: gate.timeout_at,
            approvers: gate.approvers.clone(),
            approvals_required: gate.approvals_required,
            form: gate.form.clone(),
            allow_trust: gate.allow_trust,
        }
    }

    /// The event of an answer recorded for gate `handle`.
    pub fn answered(handle: &str, answer: &Answer) -> EventKind {
        let reason = match &answer.decision {
            Decision::Reject { reason } | Decision::Abort { reason } => reason.clone(),
            _ => None,
        };
        let values = match &answer.decision {
            Decision::Fill { values } => Some(values.clone()),
            _ => None,
        };
        if answer.via == "timeout" {
            return EventKind::GateTimedOut {
                gate: handle.to_string(),
                decision: answer.decision.verb().to_string(),
                reason,
                values,
            };
        }
        EventKind::GateAnswered {
            gate: handle.to_string(),
            call: answer.call.clone(),
            decision: answer.decision.verb().to_string(),
            by: answer.by.clone(),
            via: answer.via.clone(),
            reason,
            values,
        }
    }
}
