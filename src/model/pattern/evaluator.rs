//! The `evaluator` pattern's progress, as stored in the session. The logic
//! that moves it forward is `crate::engine::pattern::evaluator`.

use serde::{Deserialize, Serialize};

use crate::model::StepRecord;

/// Progress of an `evaluator_optimizer` run, stored in the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// One entry per iteration that has a draft.
    #[serde(default)]
    pub iterations: Vec<Iteration>,
}

/// One draft, its evaluation, and what the humans said about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    pub draft: StepRecord,
    /// The evaluator's reply that had a score.
    #[serde(default)]
    pub evaluation: Option<StepRecord>,
    #[serde(default)]
    pub score: Option<Evaluation>,
    /// Replies without a score (each one was re-asked).
    #[serde(default)]
    pub bad_evaluations: Vec<StepRecord>,
    /// `accept.manual_review`'s answer.
    #[serde(default)]
    pub manual: Option<Verdict>,
    /// `review_gate`'s answer.
    #[serde(default)]
    pub review: Option<Verdict>,
}

/// A parsed evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub score: f64,
    #[serde(default)]
    pub issues: Vec<String>,
    #[serde(default)]
    pub fixes: Vec<String>,
}

/// What a human decided after an iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// Run the next revision.
    Continue,
    /// End with this draft (review gate `stop`).
    Stop,
    /// End with this draft (manual review `approve-current`).
    Approve,
    /// Run the next revision with feedback: review-gate text (`text`), or
    /// a modify (`None`: the feedback is the session's `human_feedback`).
    Feedback { text: Option<String> },
    /// The gate's condition was false (or its timeout skipped it).
    Skipped,
}
