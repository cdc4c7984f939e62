//! The `graph` pattern: nodes (agents or gates) joined by edges, run one
//! node at a time from the entry (the first node in the file).
//!
//! After a node finishes, its edge picks the next node:
//! - no edge: the run ends; its output is that node's response (or, when
//!   the node has none of its own — an approved manual gate, a skipped gate
//!   — the latest output before it);
//! - `to: [ids]`: the first target (strands-cli runs only the first);
//! - `choose`: the first entry whose `when` holds, `else` always holding.
//!   Conditions need the full template context (inputs, `nodes`,
//!   `hitl_response`, ...), which only the engine has, so the transition
//!   waits in the state ([`pending_choice`]) until the engine evaluates the
//!   conditions and calls [`choose`]. When nothing holds (and there is no
//!   `else`), the run ends at that node, as in strands-cli.
//!
//! Every visit is a new position (`nodes.<id>#<visit>`): a loop's second
//! visit of a node runs again, while a resumed run never repeats a visit
//! already recorded. `max_iterations` caps the visits of each node; the
//! visit beyond it fails the run naming the node and the loop it is on.
//!
//! Gate nodes: the answer is the node's response (`nodes.<id>.response`), so
//! `when:` can branch on it; an approved manual gate reads `approved`. A
//! `modify` at a gate node re-runs the agent node visited last before it
//! (a new visit, seeing `human_feedback`), then the same gate asks again.

use serde_json::{Map, Value};

use super::{mismatch, Next, Work};
use crate::error::{Error, Result};
pub use crate::model::pattern::graph::{State, Visit};
use crate::model::Position;
use crate::model::StepRecord;
use crate::spec::graph::condition_expr;
use crate::spec::{Edge, GraphNode, GraphSpec, TaskBody, When};

pub fn initial(spec: &GraphSpec) -> State {
    State {
        at: spec.nodes.first().map(|n| n.id.clone()),
        ..State::default()
    }
}

fn node<'s>(spec: &'s GraphSpec, id: &str) -> Result<&'s GraphNode> {
    spec.nodes.iter().find(|n| n.id == id).ok_or_else(mismatch)
}

/// How many times node `id` has been visited.
fn visits_of(st: &State, id: &str) -> u32 {
    st.visits.iter().filter(|v| v.node == id).count() as u32
}

pub fn next<'s>(spec: &'s GraphSpec, st: &State) -> Result<Next<'s>> {
    if let Some(from) = &st.choosing {
        return Err(Error::Internal(format!(
            "graph: the `choose` edge of node `{from}` waits for its conditions; \
             the engine must evaluate them (pattern::choose) before asking what is next"
        )));
    }
    let Some(id) = &st.at else {
        return Ok(Next::Done { output: output(st) });
    };
    let n = node(spec, id)?;
    let visit = visits_of(st, id);
    if visit >= spec.max_iterations {
        return Err(Error::Runtime(format!(
            "graph node `{id}` would run a {} time, but max_iterations is {}; it is on the loop {}",
            ordinal(visit + 1),
            spec.max_iterations,
            cycle(st, id)
        )));
    }
    let position = Position::Node {
        id: id.clone(),
        visit,
    };
    Ok(match &n.body {
        TaskBody::Agent(step) => Next::Run(vec![Work::borrowed(position, step)]),
        TaskBody::Gate(gate) => Next::gate(position, gate),
    })
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The nodes visited since `id`'s last visit, back to `id`: `a → b → a`.
fn cycle(st: &State, id: &str) -> String {
    let Some(last) = st.visits.iter().rposition(|v| v.node == id) else {
        return format!("`{id}`");
    };
    let mut path: Vec<&str> = st.visits[last..].iter().map(|v| v.node.as_str()).collect();
    path.push(id);
    path.join(" → ")
}

/// The run's output: the last node's response, or the latest output before
/// it when it has none of its own.
fn output(st: &State) -> String {
    last_response(st).unwrap_or_default()
}

pub fn record(
    spec: &GraphSpec,
    st: &mut State,
    position: &Position,
    rec: StepRecord,
) -> Result<()> {
    let Position::Node { id, visit } = position else {
        return Err(mismatch());
    };
    if st.at.as_deref() != Some(id.as_str()) || *visit != visits_of(st, id) {
        return Err(Error::Internal(format!(
            "graph: a result for {position} arrived, but the run stands at {}",
            st.at
                .as_ref()
                .map(|a| format!("nodes.{a}#{}", visits_of(st, a)))
                .unwrap_or_else(|| "its end".into())
        )));
    }
    node(spec, id)?;
    st.visits.push(Visit {
        node: id.clone(),
        visit: *visit,
        record: rec,
    });
    st.at = None;
    if let Some(gate) = st.back_to.take() {
        st.at = Some(gate);
        return Ok(());
    }
    match spec.edges.get(id) {
        None => {}
        Some(Edge::To(targets)) => st.at = targets.first().cloned(),
        Some(Edge::Choose(choices)) => match choices.first() {
            // A leading `else` needs no evaluation.
            Some(c) if matches!(c.when, When::Else) => st.at = Some(c.to.clone()),
            Some(_) => st.choosing = Some(id.clone()),
            None => {}
        },
    }
    Ok(())
}

/// A `choose` edge waiting for its conditions: the position of the visit
/// whose edge it is (render the conditions there, with the full context).
pub fn pending_choice(_spec: &GraphSpec, st: &State) -> Option<Position> {
    let from = st.choosing.as_ref()?;
    let visit = visits_of(st, from).checked_sub(1)?;
    Some(Position::Node {
        id: from.clone(),
        visit,
    })
}

/// Follows the pending `choose` edge. `holds(what, condition)` says whether
/// a condition is true (the engine evaluates it with
/// `Templates::truthy(what, condition, &ctx)`; `condition` has had an outer
/// `{{ }}` removed). The first entry that holds wins, `else` always holds;
/// when none does, the run ends at this node. An error from `holds` leaves
/// the state unchanged.
pub fn choose(
    spec: &GraphSpec,
    st: &mut State,
    mut holds: impl FnMut(&str, &str) -> Result<bool>,
) -> Result<()> {
    let Some(from) = st.choosing.clone() else {
        return Ok(());
    };
    let Some(Edge::Choose(choices)) = spec.edges.get(&from) else {
        return Err(mismatch());
    };
    let mut pick = None;
    for c in choices {
        let taken = match &c.when {
            When::Else => true,
            When::Condition(cond) => holds(
                &format!("the `when` of the edge {from} → {}", c.to),
                condition_expr(cond),
            )?,
        };
        if taken {
            pick = Some(c.to.clone());
            break;
        }
    }
    st.choosing = None;
    if pick.is_none() {
        st.ended = Some(format!(
            "no `when` of the edge from `{from}` held; the run ended there"
        ));
    }
    st.at = pick;
    Ok(())
}

pub fn check_response(
    _spec: &GraphSpec,
    _st: &State,
    _position: &Position,
    _response: &str,
) -> Result<()> {
    Ok(())
}

/// A gate node's answer is data for `when:` (`reject` may lead to a
/// `rejected` node), never a rejection of the run by itself.
pub fn rejects(_spec: &GraphSpec, _position: &Position, _response: &str) -> Option<String> {
    None
}

/// A gate node's `modify` re-runs the agent node visited last before it: a
/// new visit of that node.
pub fn rerun_targets(spec: &GraphSpec, st: &State, gate: &Position) -> Vec<Position> {
    let Position::Node { id, .. } = gate else {
        return Vec::new();
    };
    if !matches!(node(spec, id).map(|n| &n.body), Ok(TaskBody::Gate(_))) {
        return Vec::new();
    }
    st.visits
        .iter()
        .rev()
        .find(|v| matches!(node(spec, &v.node).map(|n| &n.body), Ok(TaskBody::Agent(_))))
        .map(|v| {
            vec![Position::Node {
                id: v.node.clone(),
                visit: visits_of(st, &v.node),
            }]
        })
        .unwrap_or_default()
}

pub fn rewind(spec: &GraphSpec, st: &mut State, gate: &Position) -> Result<()> {
    let Position::Node { id: gate_id, .. } = gate else {
        return Err(mismatch());
    };
    let Some(Position::Node { id, .. }) = rerun_targets(spec, st, gate).into_iter().next() else {
        return Err(Error::Usage(format!(
            "gate node `{gate_id}` has no agent node before it to re-run; answer approve or reject"
        )));
    };
    st.at = Some(id);
    st.back_to = Some(gate_id.clone());
    st.choosing = None;
    st.ended = None;
    Ok(())
}

/// Forgets a visit (and every later one) so the node runs again: a
/// triggered gate's `modify` after that visit.
pub fn forget(st: &mut State, position: &Position) -> Result<()> {
    let Position::Node { id, visit } = position else {
        return Err(mismatch());
    };
    let Some(i) = st
        .visits
        .iter()
        .position(|v| &v.node == id && v.visit == *visit)
    else {
        return Err(mismatch());
    };
    st.visits.truncate(i);
    st.at = Some(id.clone());
    st.choosing = None;
    st.back_to = None;
    st.ended = None;
    Ok(())
}

pub fn last_response(st: &State) -> Option<String> {
    st.visits
        .iter()
        .rev()
        .find(|v| v.record.kind.has_output())
        .map(|v| v.record.response.clone())
}

pub fn agent_records(st: &State) -> Vec<(Position, &StepRecord)> {
    st.visits
        .iter()
        .map(|v| {
            (
                Position::Node {
                    id: v.node.clone(),
                    visit: v.visit,
                },
                &v.record,
            )
        })
        .collect()
}

/// `nodes.<id>` for every node visited so far (its latest visit):
/// `response`, `agent`, `status` (`success` / `skipped`), `skipped`, and
/// `iteration` / `visits` (times visited). Also `execution_path` (node ids
/// in visit order), `total_steps` (visits so far), `terminal_node` (the
/// last node, once the run has ended) and, where a node is rendered,
/// `iteration`: the 1-based number of this visit of it.
pub fn template_vars(
    _spec: &GraphSpec,
    st: &State,
    root: &mut Map<String, Value>,
    at: Option<&Position>,
) {
    let mut nodes = Map::new();
    for v in &st.visits {
        let skipped = v.record.kind == crate::model::RecordKind::Skipped;
        let count = visits_of(st, &v.node);
        nodes.insert(
            v.node.clone(),
            serde_json::json!({
                "response": v.record.response,
                "agent": v.record.agent,
                "status": if skipped { "skipped" } else { "success" },
                "skipped": skipped,
                "iteration": count,
                "visits": count,
            }),
        );
    }
    root.insert("nodes".into(), Value::Object(nodes));
    root.insert(
        "execution_path".into(),
        Value::Array(
            st.visits
                .iter()
                .map(|v| Value::String(v.node.clone()))
                .collect(),
        ),
    );
    root.insert("total_steps".into(), Value::from(st.visits.len()));
    let ended = st.at.is_none() && st.choosing.is_none();
    root.insert(
        "terminal_node".into(),
        st.visits
            .last()
            .filter(|_| ended)
            .map(|v| Value::String(v.node.clone()))
            .unwrap_or(Value::Null),
    );
    if let Some(Position::Node { visit, .. }) = at {
        root.insert("iteration".into(), Value::from(visit + 1));
    }
}

pub fn finished(st: &State) -> usize {
    st.visits.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RecordKind;
    use crate::spec::{AgentStep, Choice};

    fn agent(id: &str) -> GraphNode {
        GraphNode {
            id: id.into(),
            body: TaskBody::Agent(AgentStep {
                agent: "a".into(),
                input: None,
                vars: Map::new(),
                tools: None,
            }),
        }
    }

    fn done(text: &str) -> StepRecord {
        StepRecord {
            agent: Some("a".into()),
            response: text.into(),
            kind: RecordKind::Agent,
            finished_at: crate::clock::test_epoch(),
        }
    }

    fn at(id: &str, visit: u32) -> Position {
        Position::Node {
            id: id.into(),
            visit,
        }
    }

    #[test]
    fn a_loop_counts_visits_and_stops_at_max_iterations() {
        let spec = GraphSpec {
            nodes: vec![agent("write"), agent("check")],
            edges: [
                ("write".to_string(), Edge::To(vec!["check".into()])),
                (
                    "check".to_string(),
                    Edge::Choose(vec![
                        Choice {
                            when: When::Condition("{{ done }}".into()),
                            to: "write".into(),
                        },
                        Choice {
                            when: When::Else,
                            to: "write".into(),
                        },
                    ]),
                ),
            ]
            .into_iter()
            .collect(),
            max_iterations: 2,
        };
        let mut st = initial(&spec);
        for visit in 0..2 {
            record(&spec, &mut st, &at("write", visit), done("w")).expect("write");
            record(&spec, &mut st, &at("check", visit), done("c")).expect("check");
            assert_eq!(pending_choice(&spec, &st), Some(at("check", visit)));
            assert!(matches!(next(&spec, &st), Err(Error::Internal(_))));
            let mut asked = Vec::new();
            choose(&spec, &mut st, |_, cond| {
                asked.push(cond.to_string());
                Ok(false)
            })
            .expect("choose");
            assert_eq!(asked, ["done"], "the outer braces are gone");
            assert_eq!(st.at.as_deref(), Some("write"), "else was taken");
        }
        match next(&spec, &st) {
            Err(Error::Runtime(m)) => {
                assert!(m.contains("`write` would run a 3rd time"), "{m}");
                assert!(m.contains("write → check → write"), "{m}");
            }
            _ => panic!("the third visit must fail"),
        }
        // A result for a position the run does not stand at is refused.
        assert!(record(&spec, &mut st, &at("check", 5), done("x")).is_err());
    }
}
