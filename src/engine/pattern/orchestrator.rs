//! The `orchestrator` pattern (stub: filled in by its owner).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Next;
use crate::error::{Error, Result};
use crate::gate::Position;
use crate::session::StepRecord;
use crate::spec::OrchestratorSpec;

/// Progress of a `orchestrator` run, stored in the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {}

pub fn initial(_spec: &OrchestratorSpec) -> State {
    State::default()
}

pub fn next<'s>(_spec: &'s OrchestratorSpec, _st: &State) -> Result<Next<'s>> {
    Err(Error::Unsupported(
        "pattern `orchestrator` is not built yet".into(),
    ))
}

pub fn record(
    _spec: &OrchestratorSpec,
    _st: &mut State,
    _position: &Position,
    _rec: StepRecord,
) -> Result<()> {
    Err(super::mismatch())
}

pub fn check_response(
    _spec: &OrchestratorSpec,
    _st: &State,
    _position: &Position,
    _response: &str,
) -> Result<()> {
    Ok(())
}

pub fn rejects(_spec: &OrchestratorSpec, _position: &Position, _response: &str) -> Option<String> {
    None
}

pub fn rerun_targets(_spec: &OrchestratorSpec, _st: &State, _gate: &Position) -> Vec<Position> {
    Vec::new()
}

pub fn rewind(_spec: &OrchestratorSpec, _st: &mut State, _gate: &Position) -> Result<()> {
    Err(super::mismatch())
}

pub fn forget(_st: &mut State, _position: &Position) -> Result<()> {
    Err(super::mismatch())
}

pub fn last_response(_st: &State) -> Option<String> {
    None
}

pub fn agent_records(_st: &State) -> Vec<(Position, &StepRecord)> {
    Vec::new()
}

pub fn template_vars(
    _spec: &OrchestratorSpec,
    _st: &State,
    _root: &mut Map<String, Value>,
    _at: Option<&Position>,
) {
}

pub fn finished(_st: &State) -> usize {
    0
}
