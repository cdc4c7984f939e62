//! Validation of the `workflow` pattern: `tasks[]` (each an agent task or
//! a gate, with a unique `id` and `deps` naming other tasks), and the
//! layers the engine runs them in (a task only depends on earlier layers).
//!
//! A dependency cycle is an error naming the tasks on the cycle, not the
//! ones that merely depend on it.

use std::collections::{BTreeMap, BTreeSet};

use super::raw;
use super::{at, Body, Validator};
use crate::spec::{AgentSpec, PatternSpec, Task, TaskBody};

impl Validator {
    pub(super) fn workflow(
        &mut self,
        cfg: &raw::WorkflowConfig,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        if cfg.tasks.value.is_empty() {
            self.error(
                at(&cfg.tasks),
                "workflow has no tasks",
                Some("add at least one task".into()),
            );
        }
        let mut tasks = Vec::new();
        let mut locs = Vec::new();
        let mut ids = BTreeSet::new();
        for (i, st) in cfg.tasks.value.iter().enumerate() {
            let label = format!("tasks[{i}]");
            let Some(id) = st.value.id.as_ref().map(|s| s.value.trim().to_string()) else {
                self.error(
                    at(st),
                    format!("{label} has no `id`"),
                    Some("every workflow task needs a unique `id`".into()),
                );
                continue;
            };
            if !ids.insert(id.clone()) {
                self.error(
                    at(st),
                    format!("task id `{id}` is used twice"),
                    Some("task ids must be unique".into()),
                );
                continue;
            }
            let Some(body) = self.step(st, &format!("task `{id}`"), true, agents, &id) else {
                continue;
            };
            let deps: Vec<String> = st
                .value
                .deps
                .iter()
                .flatten()
                .map(|d| d.value.trim().to_string())
                .collect();
            tasks.push(Task {
                id,
                deps,
                body: match body {
                    Body::Agent(a) => TaskBody::Agent(a),
                    Body::Gate(g) => TaskBody::Gate(g),
                },
            });
            locs.push(st);
        }
        // deps must name tasks
        for (t, st) in tasks.iter().zip(&locs) {
            for d in st.value.deps.iter().flatten() {
                let name = d.value.trim();
                if name == t.id {
                    self.error(at(d), format!("task `{}` depends on itself", t.id), None);
                } else if !ids.contains(name) {
                    let known: Vec<&str> = ids.iter().map(String::as_str).collect();
                    self.error(
                        at(d),
                        format!("task `{}` depends on unknown task `{name}`", t.id),
                        Some(format!("tasks: {}", known.join(", "))),
                    );
                }
            }
        }
        let layers = match layers(&tasks) {
            Ok(l) => l,
            Err(cycle) => {
                let first = cycle.first().copied().unwrap_or(0);
                let names: Vec<&str> = cycle.iter().map(|&i| tasks[i].id.as_str()).collect();
                if let Some(st) = locs.get(first) {
                    self.error(
                        at(st),
                        format!("tasks {} form a dependency cycle", names.join(", ")),
                        Some(
                            "a workflow is a DAG: remove one of the `deps` that closes the loop"
                                .into(),
                        ),
                    );
                }
                Vec::new()
            }
        };
        if !layers.is_empty() {
            for (t, st) in tasks.iter().zip(&locs) {
                if let Some(input) = &st.value.input {
                    let before = ancestors(&tasks, &t.id);
                    self.task_reads(&t.id, input, &before, &ids);
                }
            }
        }
        PatternSpec::Workflow { tasks, layers }
    }
}

/// Kahn's algorithm in levels: each layer's tasks only depend on earlier
/// layers. Returns the indexes left over (a cycle) on failure.
fn layers(tasks: &[Task]) -> std::result::Result<Vec<Vec<usize>>, Vec<usize>> {
    let index: BTreeMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut indegree: Vec<usize> = tasks
        .iter()
        .map(|t| {
            t.deps
                .iter()
                .filter(|d| index.contains_key(d.as_str()) && *d != &t.id)
                .count()
        })
        .collect();
    let mut done = vec![false; tasks.len()];
    let mut out = Vec::new();
    loop {
        let layer: Vec<usize> = (0..tasks.len())
            .filter(|&i| !done[i] && indegree[i] == 0)
            .collect();
        if layer.is_empty() {
            break;
        }
        for &i in &layer {
            done[i] = true;
        }
        for (j, t) in tasks.iter().enumerate() {
            if done[j] {
                continue;
            }
            for d in &t.deps {
                if let Some(&i) = index.get(d.as_str()) {
                    if layer.contains(&i) {
                        indegree[j] -= 1;
                    }
                }
            }
        }
        out.push(layer);
    }
    let mut left: Vec<usize> = (0..tasks.len()).filter(|&i| !done[i]).collect();
    if left.is_empty() {
        return Ok(out);
    }
    // Unscheduled tasks are on a cycle or downstream of one; peel off those
    // that nothing left depends on until only the cycle remains.
    loop {
        let needed = |i: usize| {
            left.iter().any(|&j| {
                tasks[j]
                    .deps
                    .iter()
                    .any(|d| index.get(d.as_str()) == Some(&i))
            })
        };
        let keep: Vec<usize> = left.iter().copied().filter(|&i| needed(i)).collect();
        if keep.len() == left.len() || keep.is_empty() {
            return Err(left);
        }
        left = keep;
    }
}

/// Every task `id` depends on, directly or not.
fn ancestors(tasks: &[Task], id: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![id.to_string()];
    while let Some(t) = todo.pop() {
        for d in tasks.iter().filter(|x| x.id == t).flat_map(|x| &x.deps) {
            if out.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    out
}
