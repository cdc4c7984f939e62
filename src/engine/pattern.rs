//! What a pattern wants next, and how results land in its state.
//!
//! Pure functions over the spec and the session state: no I/O, no clocks.
//! The engine asks [`next`], does the work (model calls, opening a gate),
//! and records the results back with [`record`]. Resume "exactly where it
//! stopped" follows: finished steps are in the state, so `next` never
//! returns them again.

use crate::error::{Error, Result};
use crate::gate::Position;
use crate::session::{PatternState, StepRecord};
use crate::spec::{AgentStep, ChainStep, GateSpec, PatternSpec, Spec, TaskBody};

/// One agent step that is ready to run.
pub struct Work<'s> {
    pub position: Position,
    pub step: &'s AgentStep,
}

pub enum Next<'s> {
    /// Agent steps that may run now (concurrently, up to `max_parallel`).
    Run(Vec<Work<'s>>),
    /// A gate to evaluate (condition) and open.
    Gate {
        position: Position,
        gate: &'s GateSpec,
    },
    /// Nothing left: the run's output.
    Done { output: String },
}

/// The empty state a new run starts from.
pub fn initial(spec: &Spec) -> PatternState {
    match &spec.pattern {
        PatternSpec::Chain { steps } => PatternState::Chain {
            next: 0,
            steps: vec![None; steps.len()],
        },
        PatternSpec::Workflow { .. } => PatternState::Workflow {
            tasks: Default::default(),
        },
    }
}

fn mismatch() -> Error {
    Error::Internal("session state does not match the spec's pattern".into())
}

pub fn next<'s>(spec: &'s Spec, state: &PatternState) -> Result<Next<'s>> {
    match (&spec.pattern, state) {
        (PatternSpec::Chain { steps }, PatternState::Chain { next, steps: done }) => {
            let i = *next;
            match steps.get(i) {
                None => Ok(Next::Done {
                    output: last_response(state).unwrap_or_default(),
                }),
                Some(ChainStep::Agent(step)) => Ok(Next::Run(vec![Work {
                    position: Position::Step(i),
                    step,
                }])),
                Some(ChainStep::Gate(gate)) => {
                    debug_assert!(done.get(i).is_some_and(Option::is_none));
                    Ok(Next::Gate {
                        position: Position::Step(i),
                        gate,
                    })
                }
            }
        }
        (PatternSpec::Workflow { tasks, layers }, PatternState::Workflow { tasks: done }) => {
            for layer in layers {
                let agents: Vec<Work> = layer
                    .iter()
                    .map(|&i| &tasks[i])
                    .filter(|t| !done.contains_key(&t.id))
                    .filter_map(|t| match &t.body {
                        TaskBody::Agent(step) => Some(Work {
                            position: Position::Task(t.id.clone()),
                            step,
                        }),
                        TaskBody::Gate(_) => None,
                    })
                    .collect();
                if !agents.is_empty() {
                    return Ok(Next::Run(agents));
                }
                for &i in layer {
                    let t = &tasks[i];
                    if let (false, TaskBody::Gate(gate)) = (done.contains_key(&t.id), &t.body) {
                        return Ok(Next::Gate {
                            position: Position::Task(t.id.clone()),
                            gate,
                        });
                    }
                }
            }
            // The output is the last output-bearing task in layer order.
            let output = layers
                .iter()
                .flatten()
                .rev()
                .filter_map(|&i| done.get(&tasks[i].id))
                .find(|r| r.kind.has_output())
                .map(|r| r.response.clone())
                .unwrap_or_default();
            Ok(Next::Done { output })
        }
        _ => Err(mismatch()),
    }
}

/// Records a finished step or answered gate.
pub fn record(state: &mut PatternState, position: &Position, rec: StepRecord) -> Result<()> {
    match (state, position) {
        (PatternState::Chain { next, steps }, Position::Step(i)) => {
            let slot = steps.get_mut(*i).ok_or_else(mismatch)?;
            *slot = Some(rec);
            *next = i + 1;
            Ok(())
        }
        (PatternState::Workflow { tasks }, Position::Task(id)) => {
            tasks.insert(id.clone(), rec);
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

/// The agent steps a `modify` at `gate` re-runs: the chain's previous agent
/// step, or the workflow gate's agent dependencies. Empty when there is none.
pub fn rerun_targets(spec: &Spec, gate: &Position) -> Vec<Position> {
    match (&spec.pattern, gate) {
        (PatternSpec::Chain { steps }, Position::Step(i)) => steps[..(*i).min(steps.len())]
            .iter()
            .rposition(|s| matches!(s, ChainStep::Agent(_)))
            .map(|p| vec![Position::Step(p)])
            .unwrap_or_default(),
        (PatternSpec::Workflow { tasks, .. }, Position::Task(id)) => tasks
            .iter()
            .find(|t| &t.id == id)
            .map(|g| {
                g.deps
                    .iter()
                    .filter(|d| {
                        tasks
                            .iter()
                            .any(|t| &t.id == *d && matches!(t.body, TaskBody::Agent(_)))
                    })
                    .map(|d| Position::Task(d.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Forgets the results of the re-run targets (and, in a chain, everything
/// from the first target up to the gate) so `next` runs them again.
pub fn rewind(spec: &Spec, state: &mut PatternState, gate: &Position) -> Result<()> {
    let targets = rerun_targets(spec, gate);
    if targets.is_empty() {
        return Err(Error::Usage(format!(
            "gate at {gate} has no agent step before it to re-run; answer approve or reject"
        )));
    }
    match state {
        PatternState::Chain { next, steps } => {
            let (Some(Position::Step(first)), Position::Step(g)) = (targets.first(), gate) else {
                return Err(mismatch());
            };
            for slot in steps.iter_mut().take(*g + 1).skip(*first) {
                *slot = None;
            }
            *next = *first;
        }
        PatternState::Workflow { tasks } => {
            for t in targets.iter().chain(std::iter::once(gate)) {
                if let Position::Task(id) = t {
                    tasks.remove(id);
                }
            }
        }
    }
    Ok(())
}

/// The most recent output (an agent reply or a `hitl` answer; not a skipped
/// gate or a manual approval): `last_response`.
pub fn last_response(state: &PatternState) -> Option<String> {
    match state {
        PatternState::Chain { steps, .. } => steps
            .iter()
            .rev()
            .flatten()
            .find(|r| r.kind.has_output())
            .map(|r| r.response.clone()),
        PatternState::Workflow { tasks } => tasks
            .values()
            .filter(|r| r.kind.has_output())
            .max_by_key(|r| r.finished_at)
            .map(|r| r.response.clone()),
    }
}

/// Forgets a step's result (and, in a chain, every later one) so `next`
/// runs it again: a triggered gate's `modify`.
pub fn forget(state: &mut PatternState, position: &Position) -> Result<()> {
    match (state, position) {
        (PatternState::Chain { next, steps }, Position::Step(i)) => {
            for slot in steps.iter_mut().skip(*i) {
                *slot = None;
            }
            *next = *i;
            Ok(())
        }
        (PatternState::Workflow { tasks }, Position::Task(id)) => {
            tasks.remove(id);
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

/// Finished agent steps in the order they finished: where triggers look.
pub fn agent_records(state: &PatternState) -> Vec<(Position, &StepRecord)> {
    let mut out: Vec<(Position, &StepRecord)> = match state {
        PatternState::Chain { steps, .. } => steps
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.as_ref().map(|r| (Position::Step(i), r)))
            .collect(),
        PatternState::Workflow { tasks } => tasks
            .iter()
            .map(|(id, r)| (Position::Task(id.clone()), r))
            .collect(),
    };
    out.retain(|(_, r)| r.kind == crate::session::RecordKind::Agent);
    out.sort_by_key(|(_, r)| r.finished_at);
    out
}
