//! What a pattern wants next, and how results land in its state.
//!
//! Pure functions over the spec and the session state: no I/O, no clocks.
//! The engine asks [`next`], does the work (model calls, opening gates),
//! and records the results back with [`record`]. Resume "exactly where it
//! stopped" follows: finished steps are in the state, so `next` never
//! returns them again.
//!
//! chain and workflow live here; every other pattern has its own module
//! with the same functions over its own spec and state types:
//! `initial`, `next`, `record`, `check_response`, `rejects`,
//! `rerun_targets`, `rewind`, `forget`, `last_response`, `agent_records`,
//! `template_vars`, `finished`. This file only dispatches.

pub mod evaluator;
pub mod graph;
pub mod orchestrator;
pub mod parallel;
pub mod routing;

use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::model::Position;
use crate::model::{PatternState, StepRecord};
use crate::spec::{AgentStep, ChainStep, GateSpec, PatternSpec, Spec, TaskBody};

/// One agent step that is ready to run. Patterns that make steps up as they
/// go (orchestrator workers, evaluator revisions) hand over owned ones; put
/// run-time text in `step.vars` and refer to it from `step.input`
/// (`{{ task }}`), never into the template itself.
pub struct Work<'s> {
    pub position: Position,
    pub step: Cow<'s, AgentStep>,
}

impl<'s> Work<'s> {
    pub fn borrowed(position: Position, step: &'s AgentStep) -> Self {
        Work {
            position,
            step: Cow::Borrowed(step),
        }
    }
}

/// A gate that is ready to be opened (its condition is checked first).
pub struct GateWork<'s> {
    pub position: Position,
    pub gate: &'s GateSpec,
}

pub enum Next<'s> {
    /// Agent steps that may run now (concurrently, up to `max_parallel`).
    Run(Vec<Work<'s>>),
    /// Gates that wait for a human: usually one; several when parallel
    /// branches all wait. Gates already open are listed again and are not
    /// opened twice.
    Gates(Vec<GateWork<'s>>),
    /// Nothing left: the run's output.
    Done { output: String },
}

impl<'s> Next<'s> {
    pub fn gate(position: Position, gate: &'s GateSpec) -> Self {
        Next::Gates(vec![GateWork { position, gate }])
    }
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
        PatternSpec::Parallel(p) => parallel::initial(p),
        PatternSpec::Routing(p) => PatternState::Routing(routing::initial(p)),
        PatternSpec::EvaluatorOptimizer(p) => {
            PatternState::EvaluatorOptimizer(evaluator::initial(p))
        }
        PatternSpec::OrchestratorWorkers(p) => {
            PatternState::OrchestratorWorkers(orchestrator::initial(p))
        }
        PatternSpec::Graph(p) => PatternState::Graph(graph::initial(p)),
    }
}

pub(crate) fn mismatch() -> Error {
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
                Some(ChainStep::Agent(step)) => {
                    Ok(Next::Run(vec![Work::borrowed(Position::Step(i), step)]))
                }
                Some(ChainStep::Gate(gate)) => {
                    debug_assert!(done.get(i).is_some_and(Option::is_none));
                    Ok(Next::gate(Position::Step(i), gate))
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
                        TaskBody::Agent(step) => {
                            Some(Work::borrowed(Position::Task(t.id.clone()), step))
                        }
                        TaskBody::Gate(_) => None,
                    })
                    .collect();
                if !agents.is_empty() {
                    return Ok(Next::Run(agents));
                }
                for &i in layer {
                    let t = &tasks[i];
                    if let (false, TaskBody::Gate(gate)) = (done.contains_key(&t.id), &t.body) {
                        return Ok(Next::gate(Position::Task(t.id.clone()), gate));
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
        (PatternSpec::Parallel(p), st) => parallel::next(p, st),
        (PatternSpec::Routing(p), PatternState::Routing(st)) => routing::next(p, st),
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st)) => {
            evaluator::next(p, st)
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st)) => {
            orchestrator::next(p, st)
        }
        (PatternSpec::Graph(p), PatternState::Graph(st)) => graph::next(p, st),
        _ => Err(mismatch()),
    }
}

/// Records a finished step or answered gate.
pub fn record(
    spec: &Spec,
    state: &mut PatternState,
    position: &Position,
    rec: StepRecord,
) -> Result<()> {
    match (&spec.pattern, state, position) {
        (_, PatternState::Chain { next, steps }, Position::Step(i)) => {
            let slot = steps.get_mut(*i).ok_or_else(mismatch)?;
            *slot = Some(rec);
            *next = i + 1;
            Ok(())
        }
        (_, PatternState::Workflow { tasks }, Position::Task(id)) => {
            tasks.insert(id.clone(), rec);
            Ok(())
        }
        (PatternSpec::Parallel(p), st, pos) => parallel::record(p, st, pos, rec),
        (PatternSpec::Routing(p), PatternState::Routing(st), pos) => {
            routing::record(p, st, pos, rec)
        }
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st), pos) => {
            evaluator::record(p, st, pos, rec)
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st), pos) => {
            orchestrator::record(p, st, pos, rec)
        }
        (PatternSpec::Graph(p), PatternState::Graph(st), pos) => graph::record(p, st, pos, rec),
        _ => Err(mismatch()),
    }
}

/// Whether `response` is an answer the gate at `position` can take (routing's
/// `approved` / `route:<name>`, evaluator's `continue` / `stop`, ...). A
/// usage error lists the valid answers; nothing is recorded.
pub fn check_response(
    spec: &Spec,
    state: &PatternState,
    position: &Position,
    response: &str,
) -> Result<()> {
    match (&spec.pattern, state) {
        (PatternSpec::Routing(p), PatternState::Routing(st)) => {
            routing::check_response(p, st, position, response)
        }
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st)) => {
            evaluator::check_response(p, st, position, response)
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st)) => {
            orchestrator::check_response(p, st, position, response)
        }
        (PatternSpec::Graph(p), PatternState::Graph(st)) => {
            graph::check_response(p, st, position, response)
        }
        _ => Ok(()),
    }
}

/// A gate answer that ends the run rejected (`reject` at an orchestrator's
/// `reduce_review`, at a manual review): the reason to record.
pub fn rejects(spec: &Spec, position: &Position, response: &str) -> Option<String> {
    match &spec.pattern {
        PatternSpec::Routing(p) => routing::rejects(p, position, response),
        PatternSpec::EvaluatorOptimizer(p) => evaluator::rejects(p, position, response),
        PatternSpec::OrchestratorWorkers(p) => orchestrator::rejects(p, position, response),
        PatternSpec::Graph(p) => graph::rejects(p, position, response),
        _ => None,
    }
}

/// The agent steps a `modify` at `gate` re-runs: the chain's previous agent
/// step, or the workflow gate's agent dependencies. Empty when there is none.
pub fn rerun_targets(spec: &Spec, state: &PatternState, gate: &Position) -> Vec<Position> {
    match (&spec.pattern, state, gate) {
        (PatternSpec::Chain { steps }, _, Position::Step(i)) => steps[..(*i).min(steps.len())]
            .iter()
            .rposition(|s| matches!(s, ChainStep::Agent(_)))
            .map(|p| vec![Position::Step(p)])
            .unwrap_or_default(),
        (PatternSpec::Workflow { tasks, .. }, _, Position::Task(id)) => tasks
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
        (PatternSpec::Parallel(p), _, pos) => parallel::rerun_targets(p, pos),
        (PatternSpec::Routing(p), PatternState::Routing(st), pos) => {
            routing::rerun_targets(p, st, pos)
        }
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st), pos) => {
            evaluator::rerun_targets(p, st, pos)
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st), pos) => {
            orchestrator::rerun_targets(p, st, pos)
        }
        (PatternSpec::Graph(p), PatternState::Graph(st), pos) => graph::rerun_targets(p, st, pos),
        _ => Vec::new(),
    }
}

/// Forgets the results of the re-run targets (and, in a chain, everything
/// from the first target up to the gate) so `next` runs them again.
pub fn rewind(spec: &Spec, state: &mut PatternState, gate: &Position) -> Result<()> {
    let targets = rerun_targets(spec, state, gate);
    if targets.is_empty() {
        return Err(Error::Usage(no_rerun(spec, state, gate)));
    }
    match (&spec.pattern, state) {
        (_, PatternState::Chain { next, steps }) => {
            let (Some(Position::Step(first)), Position::Step(g)) = (targets.first(), gate) else {
                return Err(mismatch());
            };
            for slot in steps.iter_mut().take(*g + 1).skip(*first) {
                *slot = None;
            }
            *next = *first;
        }
        (_, PatternState::Workflow { tasks }) => {
            for t in targets.iter().chain(std::iter::once(gate)) {
                if let Position::Task(id) = t {
                    tasks.remove(id);
                }
            }
        }
        (PatternSpec::Parallel(p), st) => parallel::rewind(p, st, gate, &targets)?,
        (PatternSpec::Routing(p), PatternState::Routing(st)) => routing::rewind(p, st, gate)?,
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st)) => {
            evaluator::rewind(p, st, gate)?
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st)) => {
            orchestrator::rewind(p, st, gate)?
        }
        (PatternSpec::Graph(p), PatternState::Graph(st)) => graph::rewind(p, st, gate)?,
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Why a `modify` at `gate` has nothing to re-run, in the pattern's words.
pub fn no_rerun(spec: &Spec, state: &PatternState, gate: &Position) -> String {
    match (&spec.pattern, state, gate) {
        (
            PatternSpec::OrchestratorWorkers(p),
            PatternState::OrchestratorWorkers(_),
            Position::DecompositionReview(_),
        ) => orchestrator::no_rounds_left(p),
        _ => format!(
            "gate at {gate} has no agent step before it to re-run; answer approve or reject"
        ),
    }
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
        PatternState::Workflow { tasks } => latest(tasks.values()),
        PatternState::Parallel { .. } => parallel::last_response(state),
        PatternState::Routing(st) => routing::last_response(st),
        PatternState::EvaluatorOptimizer(st) => evaluator::last_response(st),
        PatternState::OrchestratorWorkers(st) => orchestrator::last_response(st),
        PatternState::Graph(st) => graph::last_response(st),
    }
}

/// `last_response` as seen from `at`: inside a parallel branch, that
/// branch's latest output (branches do not see each other); elsewhere the
/// run's.
pub fn last_response_at(state: &PatternState, at: Option<&Position>) -> Option<String> {
    match (state, at) {
        (PatternState::Parallel { .. }, Some(Position::Branch { branch, .. })) => {
            parallel::branch_last(state, branch)
        }
        _ => last_response(state),
    }
}

/// The output-bearing record that finished last.
pub fn latest<'a>(records: impl Iterator<Item = &'a StepRecord>) -> Option<String> {
    records
        .filter(|r| r.kind.has_output())
        .max_by_key(|r| r.finished_at)
        .map(|r| r.response.clone())
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
        (st @ PatternState::Parallel { .. }, pos) => parallel::forget(st, pos),
        (PatternState::Routing(st), pos) => routing::forget(st, pos),
        (PatternState::EvaluatorOptimizer(st), pos) => evaluator::forget(st, pos),
        (PatternState::OrchestratorWorkers(st), pos) => orchestrator::forget(st, pos),
        (PatternState::Graph(st), pos) => graph::forget(st, pos),
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
        PatternState::Parallel { .. } => parallel::agent_records(state),
        PatternState::Routing(st) => routing::agent_records(st),
        PatternState::EvaluatorOptimizer(st) => evaluator::agent_records(st),
        PatternState::OrchestratorWorkers(st) => orchestrator::agent_records(st),
        PatternState::Graph(st) => graph::agent_records(st),
    };
    out.retain(|(_, r)| r.kind == crate::model::RecordKind::Agent);
    out.sort_by_key(|(_, r)| r.finished_at);
    out
}

/// The pattern's template variables (SPEC.md): `steps`, `tasks`,
/// `branches`, `router`, `draft` / `evaluation`, `workers`, `nodes`, ...
/// `at` is where the template is rendered: a parallel branch's steps see
/// their own branch as `steps`.
pub fn template_vars(
    spec: &Spec,
    state: &PatternState,
    root: &mut Map<String, Value>,
    at: Option<&Position>,
) {
    match (&spec.pattern, state) {
        (_, PatternState::Chain { steps, .. }) => {
            root.insert("steps".into(), slots(steps));
        }
        (_, PatternState::Workflow { tasks }) => {
            let map: Map<String, Value> = tasks.iter().map(|(k, r)| (k.clone(), rec(r))).collect();
            root.insert("tasks".into(), Value::Object(map));
        }
        (PatternSpec::Parallel(p), st) => parallel::template_vars(p, st, root, at),
        (PatternSpec::Routing(p), PatternState::Routing(st)) => {
            routing::template_vars(p, st, root, at)
        }
        (PatternSpec::EvaluatorOptimizer(p), PatternState::EvaluatorOptimizer(st)) => {
            evaluator::template_vars(p, st, root, at)
        }
        (PatternSpec::OrchestratorWorkers(p), PatternState::OrchestratorWorkers(st)) => {
            orchestrator::template_vars(p, st, root, at)
        }
        (PatternSpec::Graph(p), PatternState::Graph(st)) => graph::template_vars(p, st, root, at),
        _ => {}
    }
}

/// A record as templates see it: `{response, agent, skipped}`.
pub fn rec(r: &StepRecord) -> Value {
    serde_json::json!({
        "response": r.response,
        "agent": r.agent,
        "skipped": r.kind == crate::model::RecordKind::Skipped,
        // strands-cli's `tasks.<id>.status`.
        "status": if r.kind == crate::model::RecordKind::Skipped { "skipped" } else { "success" },
    })
}

/// A list of step slots as templates see it (`steps[i].response`).
pub fn slots(steps: &[Option<StepRecord>]) -> Value {
    Value::Array(
        steps
            .iter()
            .map(|s| s.as_ref().map(rec).unwrap_or(Value::Null))
            .collect(),
    )
}

/// A branch that waits for conditions only the engine can render (a graph
/// `choose` edge): where to render them.
pub fn pending_choice(spec: &Spec, state: &PatternState) -> Option<Position> {
    match (&spec.pattern, state) {
        (PatternSpec::Graph(p), PatternState::Graph(st)) => graph::pending_choice(p, st),
        _ => None,
    }
}

/// Decides the pending branch: `holds(what, condition)` renders one
/// condition with the full context.
pub fn choose(
    spec: &Spec,
    state: &mut PatternState,
    holds: impl FnMut(&str, &str) -> Result<bool>,
) -> Result<()> {
    match (&spec.pattern, state) {
        (PatternSpec::Graph(p), PatternState::Graph(st)) => graph::choose(p, st, holds),
        _ => Ok(()),
    }
}

/// How many steps have finished, for display.
pub fn finished(state: &PatternState) -> usize {
    match state {
        PatternState::Chain { steps, .. } => steps.iter().flatten().count(),
        PatternState::Workflow { tasks } => tasks.len(),
        PatternState::Parallel { .. } => parallel::finished(state),
        PatternState::Routing(st) => routing::finished(st),
        PatternState::EvaluatorOptimizer(st) => evaluator::finished(st),
        PatternState::OrchestratorWorkers(st) => orchestrator::finished(st),
        PatternState::Graph(st) => graph::finished(st),
    }
}
