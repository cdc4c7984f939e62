//! Validation of the `chain` pattern (`steps[]`, gate ids unique) and of
//! the step every pattern is built of: an agent step `{agent, input?,
//! vars?}` or a gate (`type: hitl` / `type: manual_gate`).
//!
//! A gate's own keys, timeout, fallback and timers are checked in
//! `gates.rs`; this module decides what a step is and checks agent steps.

use serde_saphyr::Spanned;
use std::collections::{BTreeMap, BTreeSet};

use super::gates::gate_keys;
use super::raw;
use super::{at, Body, Validator};
use crate::spec::{AgentSpec, AgentStep, ChainStep, KNOWN_PATTERNS};

impl Validator {
    pub(super) fn chain(
        &mut self,
        cfg: &raw::ChainConfig,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> Vec<ChainStep> {
        if cfg.steps.value.is_empty() {
            self.error(
                at(&cfg.steps),
                "chain has no steps",
                Some("add at least one step".into()),
            );
        }
        let mut seen_ids = BTreeSet::new();
        let mut out = Vec::new();
        for (i, st) in cfg.steps.value.iter().enumerate() {
            let label = format!("steps[{i}]");
            if let (Some(input), None) = (&st.value.input, &st.value.kind) {
                self.chain_reads(i, input);
            }
            match self.step(st, &label, false, agents, &format!("step{i}")) {
                Some(Body::Agent(a)) => out.push(ChainStep::Agent(a)),
                Some(Body::Gate(g)) => {
                    if !seen_ids.insert(g.id.clone()) {
                        self.error(
                            at(st),
                            format!("gate id `{}` is used twice", g.id),
                            Some("gate ids must be unique".into()),
                        );
                    }
                    out.push(ChainStep::Gate(g))
                }
                None => {}
            }
        }
        out
    }

    /// Classifies and checks one chain step or workflow task.
    pub(super) fn step(
        &mut self,
        st: &Spanned<raw::Step>,
        label: &str,
        in_workflow: bool,
        agents: &BTreeMap<String, AgentSpec>,
        default_id: &str,
    ) -> Option<Body> {
        let s = &st.value;
        let loc = at(st);
        if !in_workflow && (s.deps.is_some() || s.description.is_some()) {
            self.error(
                loc,
                format!(
                    "{label}: `deps` and `description` belong to workflow tasks, not chain steps"
                ),
                None,
            );
        }
        let kind = s.kind.as_ref().map(|k| k.value.trim().to_string());
        match kind.as_deref() {
            None => {
                let present = gate_keys(s);
                if !present.is_empty() {
                    self.error(
                        loc,
                        format!("{label}: {} only make sense on a gate", present.join(", ")),
                        Some(
                            "add `type: hitl` or `type: manual_gate`, or remove those keys".into(),
                        ),
                    );
                }
                let Some(agent) = &s.agent else {
                    self.error(loc, format!("{label} has neither `agent` nor `type`"), Some("name an agent, or make it a gate with `type: hitl` / `type: manual_gate`".into()));
                    return None;
                };
                let name = agent.value.trim().to_string();
                if !agents.contains_key(&name) {
                    let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                    self.error(
                        at(agent),
                        format!("{label} uses undefined agent `{name}`"),
                        Some(format!("defined agents: {}", known.join(", "))),
                    );
                }
                if let Some(input) = &s.input {
                    self.template(input, &format!("the input of {label}"));
                }
                let tools = self.step_tools(label, s.tool_overrides.as_ref());
                Some(Body::Agent(AgentStep {
                    agent: name,
                    input: s.input.as_ref().map(|i| i.value.clone()),
                    vars: s.vars.clone().unwrap_or_default(),
                    tools,
                }))
            }
            Some(k @ ("hitl" | "manual_gate")) => self.gate(s, k, label, loc, default_id),
            Some(other) => {
                let kloc = s.kind.as_ref().map(at).unwrap_or(loc);
                let hint = if KNOWN_PATTERNS.contains(&other) {
                    "`type` on a step names a gate; patterns go in `pattern.type`".to_string()
                } else {
                    "step types: `hitl` (strands-cli) or `manual_gate`; agent steps have no `type`"
                        .to_string()
                };
                self.error(
                    kloc,
                    format!("{label}: unknown step type `{other}`"),
                    Some(hint),
                );
                None
            }
        }
    }
}
