//! Gate timers as data: a timeout, a reminder or an escalation of one gate
//! asking, due at a time. The engine plans them when a gate opens and the
//! store keeps them until they have done their work (`engine::timers`).

use chrono::{DateTime, Utc};

use super::gate::{Answer, OpenGate};

/// What a timer does when it comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// Apply the gate's `fallback_action`.
    Timeout,
    /// Remind the approvers in the approval thread.
    Reminder,
    /// Re-post the request to the `escalation_target`.
    Escalation,
}

/// A timer of one gate asking, kept in the `timers` tree until it has done
/// its work. A timer whose gate is no longer the open one is stale: firing
/// it only deletes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timer {
    pub session: String,
    /// The gate handle (`id#instance`) it belongs to.
    pub gate: String,
    pub kind: TimerKind,
    pub due: DateTime<Utc>,
    /// Reminders: which one (1-based); 0 otherwise.
    #[serde(default)]
    pub n: u32,
    /// A timeout whose answer is recorded (in the same transaction that
    /// recorded it): what is left is showing it; the answer is never
    /// recorded twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired: Option<Fired>,
}

/// What a fired timeout recorded, and the messages that must show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fired {
    pub answer: Answer,
    /// The gate as it was asked (the messages are re-rendered from it).
    pub gate: OpenGate,
    /// `(channel, ts)` of every message asking for this gate.
    pub messages: Vec<(String, String)>,
}

/// Why an escalation was sent, as the notifier words it.
#[derive(Debug, Clone, PartialEq)]
pub enum EscalationWhy {
    /// Nobody answered for this long (`escalation_timeout`).
    Waited(chrono::TimeDelta),
    /// The timeout passed (`fallback_action: escalate`); the targets have
    /// until this deadline, then it is rejected.
    TimedOut { until: Option<DateTime<Utc>> },
    /// The gate opened while its calendar was closed (`when_closed:
    /// escalate`): the on-call answers.
    OutsideHours { calendar: String },
}
