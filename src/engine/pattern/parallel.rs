//! The `parallel` pattern: every branch is a little chain; branches move
//! independently. Agent steps of all branches that can move run together
//! (the engine caps them at `runtime.max_parallel`); a branch standing at a
//! gate waits without holding the others, and the run pauses only when
//! every branch that is not finished waits on a human — with all those
//! gates open at once. `reduce` runs (or asks) when every branch is done.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::{latest, mismatch, rec, slots, GateWork, Next, Work};
use crate::error::Result;
use crate::model::Position;
use crate::model::{PatternState, StepRecord};
use crate::spec::{ChainStep, ParallelSpec};

pub fn initial(spec: &ParallelSpec) -> PatternState {
    PatternState::Parallel {
        branches: spec
            .branches
            .iter()
            .map(|b| (b.id.clone(), vec![None; b.steps.len()]))
            .collect(),
        reduce: None,
    }
}

/// Each branch's step slots, by branch id.
type Slots = BTreeMap<String, Vec<Option<StepRecord>>>;

fn parts(st: &PatternState) -> Result<(&Slots, &Option<StepRecord>)> {
    match st {
        PatternState::Parallel { branches, reduce } => Ok((branches, reduce)),
        _ => Err(mismatch()),
    }
}

/// The first step of a branch that has not finished.
fn cursor(done: Option<&Vec<Option<StepRecord>>>) -> usize {
    done.map(|slots| {
        slots
            .iter()
            .position(Option::is_none)
            .unwrap_or(slots.len())
    })
    .unwrap_or(0)
}

pub fn next<'s>(spec: &'s ParallelSpec, st: &PatternState) -> Result<Next<'s>> {
    let (branches, reduce) = parts(st)?;
    let mut work = Vec::new();
    let mut gates = Vec::new();
    for b in &spec.branches {
        let i = cursor(branches.get(&b.id));
        let position = Position::Branch {
            branch: b.id.clone(),
            step: i,
        };
        match b.steps.get(i) {
            None => {}
            Some(ChainStep::Agent(step)) => work.push(Work::borrowed(position, step)),
            Some(ChainStep::Gate(gate)) => gates.push(GateWork { position, gate }),
        }
    }
    if !work.is_empty() {
        return Ok(Next::Run(work));
    }
    if !gates.is_empty() {
        return Ok(Next::Gates(gates));
    }
    match (&spec.reduce, reduce) {
        (Some(ChainStep::Agent(step)), None) => {
            Ok(Next::Run(vec![Work::borrowed(Position::Reduce, step)]))
        }
        (Some(ChainStep::Gate(gate)), None) => Ok(Next::gate(Position::Reduce, gate)),
        (_, Some(r)) if r.kind.has_output() => Ok(Next::Done {
            output: r.response.clone(),
        }),
        _ => Ok(Next::Done {
            output: combined(spec, branches),
        }),
    }
}

/// Without a reduce (or when it has no text of its own): every branch's
/// result under its id, in spec order.
fn combined(spec: &ParallelSpec, branches: &Slots) -> String {
    spec.branches
        .iter()
        .map(|b| {
            let text = branches
                .get(&b.id)
                .and_then(|s| branch_response(s))
                .unwrap_or_default();
            format!("## {}\n\n{}", b.id, text)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A branch's latest output, for `last_response` inside it.
pub fn branch_last(st: &PatternState, branch: &str) -> Option<String> {
    let (branches, _) = parts(st).ok()?;
    branch_response(branches.get(branch)?)
}

/// A branch's response: its last output-bearing step.
fn branch_response(slots: &[Option<StepRecord>]) -> Option<String> {
    slots
        .iter()
        .rev()
        .flatten()
        .find(|r| r.kind.has_output())
        .map(|r| r.response.clone())
}

pub fn record(
    _spec: &ParallelSpec,
    st: &mut PatternState,
    position: &Position,
    r: StepRecord,
) -> Result<()> {
    let PatternState::Parallel { branches, reduce } = st else {
        return Err(mismatch());
    };
    match position {
        Position::Branch { branch, step } => {
            let slot = branches
                .get_mut(branch)
                .and_then(|s| s.get_mut(*step))
                .ok_or_else(mismatch)?;
            *slot = Some(r);
        }
        Position::Reduce => *reduce = Some(r),
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// A branch gate's `modify` re-runs the branch's previous agent step.
pub fn rerun_targets(spec: &ParallelSpec, gate: &Position) -> Vec<Position> {
    let Position::Branch { branch, step } = gate else {
        return Vec::new();
    };
    spec.branches
        .iter()
        .find(|b| &b.id == branch)
        .and_then(|b| {
            b.steps[..(*step).min(b.steps.len())]
                .iter()
                .rposition(|s| matches!(s, ChainStep::Agent(_)))
        })
        .map(|p| {
            vec![Position::Branch {
                branch: branch.clone(),
                step: p,
            }]
        })
        .unwrap_or_default()
}

pub fn rewind(
    _spec: &ParallelSpec,
    st: &mut PatternState,
    gate: &Position,
    targets: &[Position],
) -> Result<()> {
    let (
        Some(Position::Branch { step: first, .. }),
        Position::Branch {
            branch,
            step: until,
        },
    ) = (targets.first(), gate)
    else {
        return Err(mismatch());
    };
    let PatternState::Parallel { branches, .. } = st else {
        return Err(mismatch());
    };
    let slots = branches.get_mut(branch).ok_or_else(mismatch)?;
    for slot in slots.iter_mut().take(until + 1).skip(*first) {
        *slot = None;
    }
    Ok(())
}

pub fn forget(st: &mut PatternState, position: &Position) -> Result<()> {
    let PatternState::Parallel { branches, reduce } = st else {
        return Err(mismatch());
    };
    match position {
        Position::Branch { branch, step } => {
            let slots = branches.get_mut(branch).ok_or_else(mismatch)?;
            for slot in slots.iter_mut().skip(*step) {
                *slot = None;
            }
            Ok(())
        }
        Position::Reduce => {
            *reduce = None;
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

pub fn last_response(st: &PatternState) -> Option<String> {
    let (branches, reduce) = parts(st).ok()?;
    latest(branches.values().flatten().flatten().chain(reduce.iter()))
}

pub fn agent_records(st: &PatternState) -> Vec<(Position, &StepRecord)> {
    let Ok((branches, reduce)) = parts(st) else {
        return Vec::new();
    };
    let mut out: Vec<(Position, &StepRecord)> = branches
        .iter()
        .flat_map(|(id, slots)| {
            slots.iter().enumerate().filter_map(move |(i, r)| {
                r.as_ref().map(|r| {
                    (
                        Position::Branch {
                            branch: id.clone(),
                            step: i,
                        },
                        r,
                    )
                })
            })
        })
        .collect();
    if let Some(r) = reduce {
        out.push((Position::Reduce, r));
    }
    out
}

/// `branches.<id>.response` (the branch's last output) and
/// `branches.<id>.steps`; inside a branch, `steps` is that branch's steps.
pub fn template_vars(
    _spec: &ParallelSpec,
    st: &PatternState,
    root: &mut Map<String, Value>,
    at: Option<&Position>,
) {
    let Ok((branches, reduce)) = parts(st) else {
        return;
    };
    let map: Map<String, Value> = branches
        .iter()
        .map(|(id, s)| {
            let response = branch_response(s).map(Value::String).unwrap_or(Value::Null);
            (
                id.clone(),
                serde_json::json!({ "response": response, "steps": slots(s) }),
            )
        })
        .collect();
    root.insert("branches".into(), Value::Object(map));
    if let Some(r) = reduce {
        root.insert("reduce".into(), rec(r));
    }
    if let Some(Position::Branch { branch, .. }) = at {
        if let Some(s) = branches.get(branch) {
            root.insert("steps".into(), slots(s));
        }
    }
}

pub fn finished(st: &PatternState) -> usize {
    parts(st)
        .map(|(b, r)| b.values().flatten().flatten().count() + usize::from(r.is_some()))
        .unwrap_or(0)
}
