//! Validation of the `orchestrator_workers` pattern:
//! `orchestrator {agent, input?, vars?, limits {max_workers, max_rounds}}`,
//! `worker_template {agent, tools?, input?, vars?}`, the optional gates
//! `decomposition_review` and `reduce_review` (`type: hitl` or `type:
//! manual_gate`), and the optional agent steps `reduce` and `writeup`.
//!
//! `limits.max_workers` unset means no cap on the subtasks taken from a plan
//! (concurrency is still `runtime.max_parallel`); `limits.max_rounds` unset
//! means [`DEFAULT_MAX_ROUNDS`] plans (the first and re-plans after review
//! feedback). `worker_template.tools` replaces the worker agent's tools for
//! the workers, as in strands-cli.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::raw::{Step, S};
use super::{at, Body, Validator};
use crate::spec::{AgentSpec, AgentStep, GateSpec, OrchestratorSpec, PatternSpec};

/// Plans allowed when `limits.max_rounds` is not given: the first plan and
/// two re-plans after review feedback.
pub const DEFAULT_MAX_ROUNDS: u32 = 3;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    pub orchestrator: S<OrchestratorConfig>,
    pub worker_template: S<WorkerConfig>,
    pub decomposition_review: Option<S<Step>>,
    pub reduce_review: Option<S<Step>>,
    pub reduce: Option<S<Step>>,
    pub writeup: Option<S<Step>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OrchestratorConfig {
    pub agent: S<String>,
    /// Ours: the orchestrator's input (default: its own prompt).
    pub input: Option<S<String>>,
    pub vars: Option<Map<String, Value>>,
    pub limits: Option<S<Limits>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Limits {
    pub max_workers: Option<S<u64>>,
    pub max_rounds: Option<S<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WorkerConfig {
    pub agent: S<String>,
    /// strands-cli's tool override: accepted only when it names exactly the
    /// agent's own tools.
    pub tools: Option<S<Vec<String>>>,
    /// Ours: the worker's input (default: the subtask, `{{ task }}`).
    pub input: Option<S<String>>,
    pub vars: Option<Map<String, Value>>,
}

impl Validator {
    pub(super) fn orchestrator(
        &mut self,
        cfg: &Config,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        let o = &cfg.orchestrator.value;
        let orchestrator = self.orch_agent_ref(
            &o.agent,
            o.input.as_ref(),
            o.vars.as_ref(),
            "orchestrator",
            agents,
        );
        let limits = o.limits.as_ref().map(|l| &l.value);
        let max_workers = match limits.and_then(|l| l.max_workers.as_ref()) {
            Some(m) if m.value == 0 => {
                self.error(
                    at(m),
                    "limits.max_workers must be at least 1",
                    Some(
                        "max_workers is how many subtasks of a plan run; leave it out for no cap"
                            .into(),
                    ),
                );
                usize::MAX
            }
            Some(m) => usize::try_from(m.value).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let max_rounds = match limits.and_then(|l| l.max_rounds.as_ref()) {
            Some(m) if m.value == 0 => {
                self.error(
                    at(m),
                    "limits.max_rounds must be at least 1",
                    Some(format!(
                        "max_rounds is how many plans the orchestrator may make, re-plans after review feedback included (default {DEFAULT_MAX_ROUNDS})"
                    )),
                );
                DEFAULT_MAX_ROUNDS
            }
            Some(m) => m.value,
            None => DEFAULT_MAX_ROUNDS,
        };

        let w = &cfg.worker_template.value;
        let worker = self.orch_agent_ref(
            &w.agent,
            w.input.as_ref(),
            w.vars.as_ref(),
            "worker_template",
            agents,
        );
        if let Some(input) = &w.input {
            if !input.value.contains("task") {
                self.warnings.push(format!(
                    "{}:{}: worker_template.input never mentions `task`, so workers do not see their subtask",
                    self.file,
                    at(input).0
                ));
            }
        }
        // strands-cli's `worker_template.tools`: the workers' tools instead
        // of the worker agent's own (resolved like any tool list).
        let mut worker = worker;
        if let Some(tools) = &w.tools {
            let entries: Vec<S<Value>> = tools
                .value
                .iter()
                .map(|t| S::new(Value::String(t.clone()), tools.referenced, tools.defined))
                .collect();
            worker.tools = self.step_tools("worker_template", Some(&entries));
        }

        let decomposition_review = cfg
            .decomposition_review
            .as_ref()
            .and_then(|st| self.orch_review_gate(st, "decomposition_review", agents));
        let reduce_review = cfg
            .reduce_review
            .as_ref()
            .and_then(|st| self.orch_review_gate(st, "reduce_review", agents));
        if let (Some(a), Some(b)) = (&decomposition_review, &reduce_review) {
            if a.id == b.id {
                if let Some(st) = &cfg.reduce_review {
                    self.error(
                        at(st),
                        format!("gate id `{}` is used twice", b.id),
                        Some("give the two reviews different ids (or leave `id` out)".into()),
                    );
                }
            }
        }
        let reduce = cfg
            .reduce
            .as_ref()
            .and_then(|st| self.orch_agent_only(st, "reduce", agents));
        let writeup = cfg
            .writeup
            .as_ref()
            .and_then(|st| self.orch_agent_only(st, "writeup", agents));

        PatternSpec::OrchestratorWorkers(OrchestratorSpec {
            orchestrator,
            max_workers,
            max_rounds,
            worker,
            decomposition_review,
            reduce_review,
            reduce,
            writeup,
        })
    }

    /// An `{agent, input?, vars?}` reference: the agent must exist and the
    /// input must be a valid template.
    fn orch_agent_ref(
        &mut self,
        agent: &S<String>,
        input: Option<&S<String>>,
        vars: Option<&Map<String, Value>>,
        label: &str,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> AgentStep {
        let name = agent.value.trim().to_string();
        if !agents.contains_key(&name) {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            self.error(
                at(agent),
                format!("{label} uses undefined agent `{name}`"),
                Some(format!("defined agents: {}", known.join(", "))),
            );
        }
        if let Some(i) = input {
            self.template(i, &format!("the input of {label}"));
        }
        AgentStep {
            agent: name,
            input: input.map(|i| i.value.clone()),
            vars: vars.cloned().unwrap_or_default(),
            tools: None,
        }
    }

    /// `decomposition_review` / `reduce_review`: a gate, never an agent step.
    fn orch_review_gate(
        &mut self,
        st: &S<Step>,
        label: &str,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> Option<GateSpec> {
        match self.step(st, label, false, agents, label)? {
            Body::Gate(g) => Some(g),
            Body::Agent(_) => {
                self.error(
                    at(st),
                    format!("{label} is a human review: it needs `type: hitl` (or `type: manual_gate`) and a `prompt`"),
                    Some("add `type: hitl` and a `prompt` (or use `type: manual_gate`); name the agent steps in `orchestrator`, `reduce` and `writeup`".into()),
                );
                None
            }
        }
    }

    /// `reduce` / `writeup`: an agent step, never a gate.
    fn orch_agent_only(
        &mut self,
        st: &S<Step>,
        label: &str,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> Option<AgentStep> {
        match self.step(st, label, false, agents, label)? {
            Body::Agent(a) => Some(a),
            Body::Gate(_) => {
                self.error(
                    at(st),
                    format!("{label} is an agent step, not a gate"),
                    Some("put a human review before the reduce in `reduce_review`".into()),
                );
                None
            }
        }
    }
}
