//! Human gates: what a human can answer, and what each answer means.
//!
//! Every channel (terminal, CLI flags, Slack, HTTP) produces the same
//! [`Answer`] carrying a [`Decision`]; [`interpret`] turns it into the one
//! thing the engine needs to know — continue with a response, re-run the
//! previous step with feedback, end the run rejected, or stay paused. Timeouts
//! become answers too ([`timeout_answer`]), recorded as given by `timeout`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::spec::{Fallback, GateKind, GateSpec};

/// What a human decided. One type for every channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Decision {
    /// Continue. On a `hitl` gate the response is `approved`.
    Approve,
    /// End the run with status `rejected`.
    Reject { reason: Option<String> },
    /// Re-run the previous agent step with `human_feedback`, then ask again.
    Modify { feedback: String },
    /// Leave the gate open; the session stays paused.
    Defer,
    /// Free text, for `hitl` gates (`approved` counts as approval).
    Respond { text: String },
}

impl Decision {
    pub fn verb(&self) -> &'static str {
        match self {
            Decision::Approve => "approved",
            Decision::Reject { .. } => "rejected",
            Decision::Modify { .. } => "modified",
            Decision::Defer => "deferred",
            Decision::Respond { .. } => "responded",
        }
    }
}

/// A decision with who gave it, when, through which channel, and any
/// variable overrides that come with it (`--var` on resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub decision: Decision,
    pub by: String,
    pub at: DateTime<Utc>,
    /// `cli`, `terminal`, `auto-approve`, `timeout`, `slack`, ...
    pub via: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub vars: Map<String, Value>,
}

/// Where a step or gate stands in its pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// `steps[i]` of a chain.
    Step(usize),
    /// `tasks.<id>` of a workflow.
    Task(String),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Step(i) => write!(f, "steps[{i}]"),
            Position::Task(id) => write!(f, "tasks.{id}"),
        }
    }
}

/// A gate that is waiting for a human, as stored in the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenGate {
    /// The gate's id in the spec (`review_research`, a task id, `step2`).
    pub id: String,
    /// Session-wide ordinal of this asking; a re-ask after modify gets a new
    /// one, so an answer meant for an earlier asking is detected as stale.
    pub instance: u64,
    pub kind: GateKind,
    /// Where it stands in the pattern.
    pub position: Position,
    pub prompt: String,
    /// The full rendered context under review (previews are cut from it).
    pub context: String,
    pub show_preview: bool,
    pub preview_length: usize,
    pub default: Option<String>,
    pub fallback: Fallback,
    pub opened_at: DateTime<Utc>,
    pub timeout_at: Option<DateTime<Utc>>,
    /// A rejection must carry a reason.
    #[serde(default)]
    pub require_reason: bool,
    /// The chat channel the spec names for this gate.
    #[serde(default)]
    pub channel: Option<String>,
}

impl OpenGate {
    /// `id#instance`, the handle channels put on buttons and resume commands.
    pub fn handle(&self) -> String {
        format!("{}#{}", self.id, self.instance)
    }

    /// Whether the timeout has passed at `now`.
    pub fn timed_out(&self, now: DateTime<Utc>) -> bool {
        self.timeout_at.is_some_and(|t| now >= t)
    }

    /// The preview cut to `preview_length` characters, and how many were cut.
    pub fn preview(&self) -> (String, usize) {
        cut(&self.context, self.preview_length)
    }
}

/// Cuts `text` to at most `max` characters on a char boundary.
pub fn cut(text: &str, max: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max {
        return (text.to_string(), 0);
    }
    (text.chars().take(max).collect(), total - max)
}

/// What the engine does after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The gate passes; `response` is what templates read as the gate's response.
    Continue { response: String },
    /// Re-run the previous agent step with this feedback, then ask again.
    Rerun { feedback: String },
    /// End the run rejected.
    Cancel { reason: Option<String> },
    /// Keep waiting.
    StayPaused,
}

/// Interprets an answer for a gate of this kind. Answers that do not fit the
/// gate (free text on a manual gate that is neither approve nor reject) are
/// usage errors listing the valid answers; nothing changes.
pub fn interpret(kind: GateKind, decision: &Decision) -> Result<Outcome> {
    Ok(match decision {
        Decision::Approve => Outcome::Continue {
            response: "approved".into(),
        },
        Decision::Reject { reason } => Outcome::Cancel {
            reason: reason.clone(),
        },
        Decision::Modify { feedback } => {
            if feedback.trim().is_empty() {
                return Err(Error::Usage("modify needs feedback (--feedback TEXT)".into()));
            }
            Outcome::Rerun {
                feedback: feedback.clone(),
            }
        }
        Decision::Defer => Outcome::StayPaused,
        Decision::Respond { text } => match kind {
            GateKind::Hitl => Outcome::Continue {
                response: text.clone(),
            },
            GateKind::ManualGate => match text.trim().to_ascii_lowercase().as_str() {
                "approved" | "approve" | "yes" | "y" => Outcome::Continue {
                    response: "approved".into(),
                },
                "rejected" | "reject" | "no" | "n" => Outcome::Cancel { reason: None },
                _ => {
                    return Err(Error::Usage(format!(
                        "a manual_gate takes approve or reject, not `{text}` (use --approve, --reject [--reason R], --modify --feedback F)"
                    )))
                }
            },
        },
    })
}

/// The answer a timed-out gate gets: a `hitl` gate's `default` (fail closed
/// with a rejection when it has none), a manual gate's `fallback_action`.
pub fn timeout_answer(gate: &OpenGate, now: DateTime<Utc>) -> Answer {
    let decision = match gate.kind {
        GateKind::Hitl => match &gate.default {
            Some(d) => Decision::Respond { text: d.clone() },
            None => Decision::Reject {
                reason: Some("timed out with no default answer".into()),
            },
        },
        GateKind::ManualGate => match gate.fallback {
            Fallback::Continue => Decision::Approve,
            Fallback::Cancel => Decision::Reject {
                reason: Some("timed out (fallback_action: cancel)".into()),
            },
        },
    };
    Answer {
        decision,
        by: "timeout".into(),
        at: now,
        via: "timeout".into(),
        vars: Map::new(),
    }
}

/// Opens a gate from its spec, with the rendered prompt and context.
pub fn open(
    spec: &GateSpec,
    position: Position,
    instance: u64,
    prompt: String,
    context: String,
    now: DateTime<Utc>,
) -> OpenGate {
    OpenGate {
        id: spec.id.clone(),
        instance,
        kind: spec.kind,
        position,
        prompt,
        context,
        show_preview: spec.show_preview,
        preview_length: spec.preview_length,
        default: spec.default.clone(),
        fallback: spec.fallback,
        require_reason: spec.require_reason,
        channel: spec.channel.clone(),
        opened_at: now,
        timeout_at: spec
            .timeout_secs
            .and_then(|s| chrono::Duration::try_seconds(s as i64))
            .map(|d| now + d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hitl_free_text_is_the_response_and_manual_gates_refuse_it() {
        let r = interpret(
            GateKind::Hitl,
            &Decision::Respond {
                text: "ship it".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "ship it".into()
            }
        );
        assert!(interpret(
            GateKind::ManualGate,
            &Decision::Respond {
                text: "ship it".into()
            }
        )
        .is_err());
        let r = interpret(
            GateKind::ManualGate,
            &Decision::Respond {
                text: "approved".into(),
            },
        )
        .unwrap();
        assert_eq!(
            r,
            Outcome::Continue {
                response: "approved".into()
            }
        );
    }

    #[test]
    fn modify_without_feedback_is_refused() {
        assert!(interpret(
            GateKind::ManualGate,
            &Decision::Modify {
                feedback: " ".into()
            }
        )
        .is_err());
    }

    #[test]
    fn preview_cuts_on_char_boundaries() {
        assert_eq!(cut("héllo wörld", 4), ("héll".to_string(), 7));
        assert_eq!(cut("abc", 10), ("abc".to_string(), 0));
    }

    #[test]
    fn timeouts_fail_closed_without_a_default() {
        let spec = GateSpec {
            id: "g".into(),
            kind: GateKind::Hitl,
            prompt: "p".into(),
            context_display: None,
            default: None,
            timeout_secs: Some(1),
            fallback: Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 10,
            require_reason: false,
            channel: None,
        };
        let now = Utc::now();
        let g = open(&spec, Position::Step(1), 1, "p".into(), "c".into(), now);
        assert!(!g.timed_out(now));
        assert!(g.timed_out(now + chrono::Duration::seconds(2)));
        assert!(matches!(
            timeout_answer(&g, now).decision,
            Decision::Reject { .. }
        ));
    }
}
