//! The `routing` pattern's progress, as stored in the session. The logic
//! that moves it forward is `crate::engine::pattern::routing`.

use serde::{Deserialize, Serialize};

use crate::model::StepRecord;

/// Progress of a `routing` run, stored in the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Every router reply since the router last started over (a modify at
    /// the review starts it over), in order: their number is the retry count.
    #[serde(default)]
    pub attempts: Vec<StepRecord>,
    /// The router's valid pick, before any override.
    #[serde(default)]
    pub picked: Option<String>,
    /// The route that runs: the pick, or the reviewer's `route:<name>`.
    #[serde(default)]
    pub chosen: Option<String>,
    /// The router's `reasoning`, when it gave one.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The review's answer (or its skip, when its condition was false).
    #[serde(default)]
    pub review: Option<StepRecord>,
    /// One slot per step of the chosen route.
    #[serde(default)]
    pub steps: Vec<Option<StepRecord>>,
    /// The router is running again after a reviewer's feedback: its input
    /// carries `human_feedback`.
    #[serde(default)]
    pub feedback: bool,
}
