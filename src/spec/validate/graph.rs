//! Validation of the `graph` pattern: `nodes.<id>` (agent nodes
//! `{agent, input?, vars?}` and gate nodes `type: hitl` / `type:
//! manual_gate`, in file order; the first is the entry), `edges[] {from,
//! to?: [ids], choose?: [{when, to}]}` and `max_iterations` (visits allowed
//! per node, default [`DEFAULT_MAX_ITERATIONS`]).
//!
//! Errors: unknown agents, edges naming unknown nodes, a node with two
//! outgoing edge entries, an edge with both or neither of `to` / `choose`,
//! bad `when` syntax. Warnings: `to` with more than one target (only the
//! first runs, as in strands-cli), choices after `else` (never taken),
//! nodes the entry cannot reach, and graphs where every path loops.

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::raw::{Step, S};
use super::{at, Body, Validator};
use crate::spec::graph::condition_expr;
use crate::spec::{AgentSpec, Choice, Edge, GraphNode, GraphSpec, PatternSpec, TaskBody, When};

/// Visits allowed per node when `max_iterations` is not given (strands-cli's default).
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    pub nodes: S<Nodes>,
    #[serde(default)]
    pub edges: Option<S<Vec<S<EdgeConfig>>>>,
    pub max_iterations: Option<S<u32>>,
}

/// `nodes:` as written: a mapping, kept in file order (the first node is
/// the entry), each key with its location.
#[derive(Debug)]
pub(super) struct Nodes(pub Vec<(S<String>, S<Step>)>);

impl<'de> Deserialize<'de> for Nodes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Nodes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a mapping of node ids to nodes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Nodes, A::Error> {
                let mut out: Vec<(S<String>, S<Step>)> = Vec::new();
                while let Some(key) = map.next_key::<S<String>>()? {
                    if out.iter().any(|(k, _)| k.value == key.value) {
                        return Err(de::Error::custom(format!(
                            "node `{}` is defined twice",
                            key.value
                        )));
                    }
                    let value = map.next_value::<S<Step>>()?;
                    out.push((key, value));
                }
                Ok(Nodes(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EdgeConfig {
    pub from: S<String>,
    pub to: Option<S<Vec<S<String>>>>,
    pub choose: Option<S<Vec<S<ChoiceConfig>>>>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ChoiceConfig {
    pub when: S<String>,
    pub to: S<String>,
}

/// `when: else` (any case, as strands-cli reads it).
fn is_else(when: &str) -> bool {
    when.trim().eq_ignore_ascii_case("else")
}

impl Validator {
    pub(super) fn graph(
        &mut self,
        cfg: &Config,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        let max_iterations = match &cfg.max_iterations {
            Some(m) if m.value == 0 => {
                self.error(
                    at(m),
                    "max_iterations must be at least 1",
                    Some(format!(
                        "max_iterations caps the visits of each node (default {DEFAULT_MAX_ITERATIONS})"
                    )),
                );
                DEFAULT_MAX_ITERATIONS
            }
            Some(m) => m.value,
            None => DEFAULT_MAX_ITERATIONS,
        };

        // Nodes, in file order.
        if cfg.nodes.value.0.is_empty() {
            self.error(
                at(&cfg.nodes),
                "graph has no nodes",
                Some("add nodes: `nodes: {first: {agent: NAME, input: ...}}`; the first node is the entry".into()),
            );
        }
        let mut nodes = Vec::new();
        let mut ids: BTreeSet<String> = BTreeSet::new();
        for (key, st) in &cfg.nodes.value.0 {
            let id = key.value.trim().to_string();
            if id.is_empty() {
                self.error(
                    at(key),
                    "a node has an empty id",
                    Some("name every node".into()),
                );
                continue;
            }
            ids.insert(id.clone());
            if let Some(own) = &st.value.id {
                if own.value.trim() != id {
                    self.error(
                        at(own),
                        format!("node `{id}` says `id: {}`", own.value.trim()),
                        Some("a node's id is its key under `nodes`; remove `id`".into()),
                    );
                }
            }
            let label = format!("nodes.{id}");
            match self.step(st, &label, false, agents, &id) {
                Some(Body::Agent(a)) => nodes.push(GraphNode {
                    id,
                    body: TaskBody::Agent(a),
                }),
                Some(Body::Gate(g)) => nodes.push(GraphNode {
                    id,
                    body: TaskBody::Gate(g),
                }),
                None => {}
            }
        }
        let known = |ids: &BTreeSet<String>| ids.iter().cloned().collect::<Vec<_>>().join(", ");

        // Edges: one entry per source node.
        let mut edges: BTreeMap<String, Edge> = BTreeMap::new();
        let mut first_edge_line: BTreeMap<String, u32> = BTreeMap::new();
        for e in cfg.edges.iter().flat_map(|e| e.value.iter()) {
            let from = e.value.from.value.trim().to_string();
            let mut ok = true;
            if !ids.contains(&from) {
                self.error(
                    at(&e.value.from),
                    format!("edge from unknown node `{from}`"),
                    Some(format!("nodes: {}", known(&ids))),
                );
                ok = false;
            } else if let Some(line) = first_edge_line.get(&from) {
                self.error(
                    at(&e.value.from),
                    format!("node `{from}` has a second outgoing edge entry (the first is on line {line})"),
                    Some("give each node one edge entry: several targets go in one `choose` list".into()),
                );
                ok = false;
            } else {
                first_edge_line.insert(from.clone(), at(&e.value.from).0);
            }
            let edge = match (&e.value.to, &e.value.choose) {
                (Some(_), Some(c)) => {
                    self.error(
                        at(c),
                        format!("the edge from `{from}` has both `to` and `choose`"),
                        Some("use `to: [node]` for a fixed next node, or `choose` for conditional ones".into()),
                    );
                    None
                }
                (None, None) => {
                    self.error(
                        at(e),
                        format!("the edge from `{from}` has neither `to` nor `choose`"),
                        Some(
                            "add `to: [node]`, or remove the edge to make the node terminal".into(),
                        ),
                    );
                    None
                }
                (Some(to), None) => self.graph_edge_to(&from, to, &ids),
                (None, Some(choose)) => self.graph_edge_choose(&from, choose, &ids),
            };
            if let (true, Some(edge)) = (ok, edge) {
                edges.insert(from, edge);
            }
        }

        if let Some(entry) = nodes.first() {
            self.graph_reachability(&entry.id, &nodes, &edges);
        }
        PatternSpec::Graph(GraphSpec {
            nodes,
            edges,
            max_iterations,
        })
    }

    fn graph_edge_to(
        &mut self,
        from: &str,
        to: &S<Vec<S<String>>>,
        ids: &BTreeSet<String>,
    ) -> Option<Edge> {
        if to.value.is_empty() {
            self.error(
                at(to),
                format!("the edge from `{from}` has an empty `to`"),
                Some("name the next node: `to: [node]`, or remove the edge to make the node terminal".into()),
            );
            return None;
        }
        let mut ok = true;
        for t in &to.value {
            let name = t.value.trim();
            if !ids.contains(name) {
                self.error(
                    at(t),
                    format!("the edge from `{from}` goes to unknown node `{name}`"),
                    Some(format!(
                        "nodes: {}",
                        ids.iter().cloned().collect::<Vec<_>>().join(", ")
                    )),
                );
                ok = false;
            }
        }
        if to.value.len() > 1 {
            self.warnings.push(format!(
                "{}:{}: the edge from `{from}` lists {} targets; only the first (`{}`) runs, as in strands-cli",
                self.file,
                at(to).0,
                to.value.len(),
                to.value[0].value.trim()
            ));
        }
        ok.then(|| {
            Edge::To(
                to.value
                    .iter()
                    .map(|t| t.value.trim().to_string())
                    .collect(),
            )
        })
    }

    fn graph_edge_choose(
        &mut self,
        from: &str,
        choose: &S<Vec<S<ChoiceConfig>>>,
        ids: &BTreeSet<String>,
    ) -> Option<Edge> {
        if choose.value.is_empty() {
            self.error(
                at(choose),
                format!("the edge from `{from}` has an empty `choose`"),
                Some("add `- when: \"{{ condition }}\"\n    to: node` entries (and `- when: else` last)".into()),
            );
            return None;
        }
        let mut ok = true;
        let mut choices = Vec::new();
        let mut seen_else = false;
        for c in &choose.value {
            let to = c.value.to.value.trim().to_string();
            if !ids.contains(&to) {
                self.error(
                    at(&c.value.to),
                    format!("a `choose` of the edge from `{from}` goes to unknown node `{to}`"),
                    Some(format!(
                        "nodes: {}",
                        ids.iter().cloned().collect::<Vec<_>>().join(", ")
                    )),
                );
                ok = false;
            }
            if seen_else {
                self.warnings.push(format!(
                    "{}:{}: the choice `{}` of the edge from `{from}` comes after `else` and is never taken",
                    self.file,
                    at(c).0,
                    c.value.when.value.trim()
                ));
            }
            let when = &c.value.when;
            if is_else(&when.value) {
                seen_else = true;
                choices.push(Choice {
                    when: When::Else,
                    to,
                });
                continue;
            }
            let expr = condition_expr(&when.value);
            if expr.is_empty() {
                self.error(
                    at(when),
                    format!("an empty `when` in the edge from `{from}`"),
                    Some("write a condition, e.g. `when: \"{{ nodes.review.response == 'approve' }}\"`, or `when: else`".into()),
                );
                ok = false;
            } else if let Err(e) = self.templates.check_condition(expr) {
                self.error(
                    at(when),
                    format!("the `when` of the edge from `{from}` to `{to}`: {}", e.message),
                    Some("a condition is an expression, with or without {{ }}: `nodes.review.response == 'approve'`".into()),
                );
                ok = false;
            }
            choices.push(Choice {
                when: When::Condition(when.value.clone()),
                to,
            });
        }
        ok.then_some(Edge::Choose(choices))
    }

    /// Warns about nodes the entry cannot reach, and about graphs where no
    /// path can end (every reachable node has an edge that always leads on).
    fn graph_reachability(
        &mut self,
        entry: &str,
        nodes: &[GraphNode],
        edges: &BTreeMap<String, Edge>,
    ) {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut queue = VecDeque::from([entry]);
        while let Some(n) = queue.pop_front() {
            if !seen.insert(n) {
                continue;
            }
            match edges.get(n) {
                Some(Edge::To(t)) => queue.extend(t.first().map(String::as_str)),
                Some(Edge::Choose(cs)) => queue.extend(cs.iter().map(|c| c.to.as_str())),
                None => {}
            }
        }
        let unreachable: Vec<&str> = nodes
            .iter()
            .map(|n| n.id.as_str())
            .filter(|id| !seen.contains(id))
            .collect();
        if !unreachable.is_empty() {
            self.warnings.push(format!(
                "{}: graph nodes {} cannot be reached from the entry node `{entry}` and never run",
                self.file,
                unreachable
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let can_end = seen.iter().any(|n| match edges.get(*n) {
            None => true,
            Some(Edge::To(_)) => false,
            Some(Edge::Choose(cs)) => !cs.iter().any(|c| matches!(c.when, When::Else)),
        });
        if !can_end {
            self.warnings.push(format!(
                "{}: every path of the graph loops (no reachable node ends it), so a run can only end by exceeding max_iterations",
                self.file
            ));
        }
    }
}
