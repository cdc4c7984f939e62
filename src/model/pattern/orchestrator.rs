//! The `orchestrator` pattern's progress, as stored in the session. The logic
//! that moves it forward is `crate::engine::pattern::orchestrator`.

use serde::{Deserialize, Serialize};

use crate::model::StepRecord;

/// Progress of an `orchestrator_workers` run, stored in the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// One per plan the orchestrator made; the last is the current one.
    pub rounds: Vec<Round>,
    /// A review sent the plan back: the next plan is round `rounds.len()`.
    #[serde(default)]
    pub replan: bool,
    pub reduce_review: Option<StepRecord>,
    pub reduce: Option<StepRecord>,
    pub writeup: Option<StepRecord>,
}

/// One plan and what came of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// The orchestrator's reply.
    pub plan: StepRecord,
    /// The subtasks that run (the human's edited plan when `edited`).
    pub tasks: Vec<String>,
    /// Subtasks dropped because of `limits.max_workers`.
    #[serde(default)]
    pub dropped: usize,
    /// A human replaced the plan with their own task list.
    #[serde(default)]
    pub edited: bool,
    /// The `decomposition_review` answer.
    pub review: Option<StepRecord>,
    /// One slot per subtask.
    pub workers: Vec<Option<StepRecord>>,
}
