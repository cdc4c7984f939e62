//! Validation of the `parallel` pattern: `branches[] {id, steps[]}` (each a
//! little chain: agent steps and gates) and an optional `reduce` (an agent
//! step or a gate).

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

use super::raw::{Step, S};
use super::{at, Body, Validator};
use crate::spec::{AgentSpec, Branch, ChainStep, ParallelSpec, PatternSpec};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    pub branches: S<Vec<S<BranchConfig>>>,
    pub reduce: Option<S<Step>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BranchConfig {
    pub id: S<String>,
    pub steps: S<Vec<S<Step>>>,
}

impl Validator {
    pub(super) fn parallel(
        &mut self,
        cfg: &Config,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        if cfg.branches.value.len() < 2 {
            self.error(
                at(&cfg.branches),
                format!(
                    "parallel needs at least 2 branches, found {}",
                    cfg.branches.value.len()
                ),
                Some("with one branch, use `pattern.type: chain`".into()),
            );
        }
        let mut ids = BTreeSet::new();
        let mut gate_ids = BTreeSet::new();
        let mut branches = Vec::new();
        for b in &cfg.branches.value {
            let id = b.value.id.value.trim().to_string();
            if id.is_empty() || !ids.insert(id.clone()) {
                self.error(
                    at(&b.value.id),
                    if id.is_empty() {
                        "a branch has an empty `id`".to_string()
                    } else {
                        format!("branch id `{id}` is used twice")
                    },
                    Some("every branch needs a unique `id`".into()),
                );
                continue;
            }
            if b.value.steps.value.is_empty() {
                self.error(
                    at(&b.value.steps),
                    format!("branch `{id}` has no steps"),
                    Some("add at least one step".into()),
                );
            }
            let mut steps = Vec::new();
            for (i, st) in b.value.steps.value.iter().enumerate() {
                let label = format!("branches.{id}.steps[{i}]");
                match self.step(st, &label, false, agents, &format!("{id}.step{i}")) {
                    Some(Body::Agent(a)) => steps.push(ChainStep::Agent(a)),
                    Some(Body::Gate(g)) => {
                        if !gate_ids.insert(g.id.clone()) {
                            self.error(
                                at(st),
                                format!("gate id `{}` is used twice", g.id),
                                Some("gate ids must be unique across branches".into()),
                            );
                        }
                        steps.push(ChainStep::Gate(g));
                    }
                    None => {}
                }
            }
            branches.push(Branch { id, steps });
        }
        let reduce = cfg.reduce.as_ref().and_then(|st| {
            match self.step(st, "reduce", false, agents, "reduce")? {
                Body::Agent(a) => Some(ChainStep::Agent(a)),
                Body::Gate(g) => {
                    if !gate_ids.insert(g.id.clone()) {
                        self.error(
                            at(st),
                            format!("gate id `{}` is used twice", g.id),
                            Some("gate ids must be unique".into()),
                        );
                    }
                    Some(ChainStep::Gate(g))
                }
            }
        });
        PatternSpec::Parallel(ParallelSpec { branches, reduce })
    }
}
