//! The `graph` pattern's progress, as stored in the session. The logic
//! that moves it forward is `crate::engine::pattern::graph`.

use serde::{Deserialize, Serialize};

use crate::model::StepRecord;

/// Progress of a `graph` run, stored in the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Every finished visit, in the order they finished.
    pub visits: Vec<Visit>,
    /// The node to visit next; `None` once the run has reached its end (or
    /// while a `choose` waits).
    pub at: Option<String>,
    /// The node whose `choose` edge waits for the engine to evaluate its
    /// conditions (`engine::pattern::graph::pending_choice` and `choose`).
    #[serde(default)]
    pub choosing: Option<String>,
    /// After a `modify` re-run of an agent node: the gate node that asked,
    /// which goes next instead of the node's own edge.
    #[serde(default)]
    pub back_to: Option<String>,
    /// Why the run ended before a terminal node (no `when` held), for display.
    #[serde(default)]
    pub ended: Option<String>,
}

/// One finished visit of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Visit {
    pub node: String,
    /// The node's 0-based visit number.
    pub visit: u32,
    pub record: StepRecord,
}
