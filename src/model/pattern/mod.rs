//! Per-pattern progress, as stored in the session. chain, workflow and
//! parallel keep theirs inline in [`crate::model::PatternState`]; the
//! patterns with more to remember have a module each.

pub mod evaluator;
pub mod graph;
pub mod orchestrator;
pub mod routing;
