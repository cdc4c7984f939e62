//! A step's record: what one chain step or workflow task produced, and
//! what produced it. A leaf of its own: the run's state
//! ([`super::session`]) and each pattern's progress ([`super::pattern`])
//! keep records, and the run's state holds the patterns' progress, so the
//! record sits below both.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The result of one chain step or workflow task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The agent that produced it; `None` for gates.
    pub agent: Option<String>,
    /// What templates read as `.response`: agent text, or the gate's answer.
    pub response: String,
    pub kind: RecordKind,
    pub finished_at: DateTime<Utc>,
}

/// What produced a step record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// An agent's reply.
    Agent,
    /// A `hitl` gate's free-text answer: it is the step's output (strands-cli).
    Answer,
    /// A manual gate that was approved: it passes the reviewed text through
    /// and has no output of its own.
    Approval,
    /// A gate whose condition was false.
    Skipped,
}

impl RecordKind {
    /// Whether `last_response` and a run's output may come from it.
    pub fn has_output(self) -> bool {
        matches!(self, RecordKind::Agent | RecordKind::Answer)
    }
}
