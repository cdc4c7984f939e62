//! Validation of the `evaluator_optimizer` pattern: `producer` (an agent id,
//! or the seed's `{agent, input}`), `evaluator {agent, input?}`, `accept
//! {min_score 0–100, max_iters ≥ 1, manual_review?}`, `revise_prompt?` and
//! `review_gate?`.
//!
//! `accept.manual_review` (seeds/000's quality gate) is not a step in the
//! file, so its gate is built here: its keys are a manual gate's (checked by
//! the same code as every other gate), and it is asked as a gate that takes
//! text, because its answers (`approve-current`, `continue`, `reject`) are
//! more than approve or reject.

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

use super::raw::{self, Step, S};
use super::{at, Body, Validator};
use crate::spec::{
    AgentSpec, AgentStep, EvaluatorSpec, GateKind, GateSpec, ManualReview, PatternSpec,
};

/// Iterations when `accept.max_iters` is not given (strands-cli's default).
const DEFAULT_MAX_ITERS: u32 = 3;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Config {
    pub producer: S<Producer>,
    pub evaluator: S<EvaluatorConfig>,
    pub accept: S<AcceptConfig>,
    pub revise_prompt: Option<S<String>>,
    pub review_gate: Option<S<Step>>,
}

/// `producer: writer` (strands-cli) or `producer: {agent, input?, vars?}` (seeds/000).
#[derive(Debug)]
pub(super) enum Producer {
    Name(String),
    Step {
        agent: S<String>,
        input: Option<S<String>>,
        vars: Option<Map<String, Value>>,
    },
}

impl<'de> Deserialize<'de> for Producer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ProducerVisitor;
        const FIELDS: &[&str] = &["agent", "input", "vars"];
        impl<'de> Visitor<'de> for ProducerVisitor {
            type Value = Producer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an agent id, or `{agent, input}`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Producer, E> {
                Ok(Producer::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Producer, A::Error> {
                let (mut agent, mut input, mut vars) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "agent" => agent = Some(map.next_value::<S<String>>()?),
                        "input" => input = Some(map.next_value::<S<String>>()?),
                        "vars" => vars = Some(map.next_value::<Map<String, Value>>()?),
                        other => return Err(A::Error::unknown_field(other, FIELDS)),
                    }
                }
                let agent = agent.ok_or_else(|| A::Error::missing_field("agent"))?;
                Ok(Producer::Step { agent, input, vars })
            }
        }
        d.deserialize_any(ProducerVisitor)
    }
}

// `output_schema` is accepted for the seed's examples and not enforced.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EvaluatorConfig {
    pub agent: S<String>,
    pub input: Option<S<String>>,
    pub vars: Option<Map<String, Value>>,
    pub output_schema: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AcceptConfig {
    pub min_score: S<f64>,
    /// Signed so that 0 or a negative number is reported here.
    pub max_iters: Option<S<i64>>,
    pub manual_review: Option<S<ManualReviewConfig>>,
}

/// `accept.manual_review`: when to ask, and the keys of a manual gate.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ManualReviewConfig {
    pub after_iterations: S<i64>,
    pub prompt: Option<S<String>>,
    pub condition: Option<S<String>>,
    /// seeds/000 lists the choices for display (`approve: "Accept current
    /// version"`, ...); the answers are fixed, so this is not used.
    #[allow(dead_code)]
    pub options: Option<Value>,
    pub id: Option<S<String>>,
    pub context_display: Option<S<String>>,
    pub default: Option<S<String>>,
    pub timeout_minutes: Option<S<u64>>,
    pub fallback_action: Option<S<String>>,
    pub show_preview: Option<bool>,
    pub preview_length: Option<usize>,
    pub require_reason: Option<bool>,
    pub channel: Option<S<String>>,
    pub approvers: Option<raw::Approvers>,
    pub approvals_required: Option<u32>,
    pub rejections_required: Option<u32>,
    pub allow_self_approval: Option<bool>,
    pub notify: Option<S<String>>,
    pub reminder_interval: Option<S<f64>>,
    pub max_reminders: Option<S<u32>>,
    #[serde(default)]
    pub remind_before: Option<S<f64>>,
    pub escalation_timeout: Option<S<f64>>,
    pub escalation_target: Option<S<Value>>,
    /// Business hours, as on any gate (`timeout: 8h business`, ...).
    pub timeout: Option<S<String>>,
    pub calendar: Option<S<String>>,
    pub when_closed: Option<S<String>>,
    pub auto_approve: Option<S<super::raw::AutoApprove>>,
    pub timers_outside_hours: Option<S<bool>>,
}

impl Validator {
    pub(super) fn evaluator(
        &mut self,
        cfg: &Config,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> PatternSpec {
        let producer = match &cfg.producer.value {
            Producer::Name(name) => {
                self.agent_ref(name, at(&cfg.producer), "producer", agents);
                AgentStep {
                    agent: name.trim().to_string(),
                    input: None,
                    vars: Map::new(),
                    tools: None,
                }
            }
            Producer::Step { agent, input, vars } => {
                self.agent_ref(&agent.value, at(agent), "producer", agents);
                if let Some(i) = input {
                    self.template(i, "the input of the producer");
                }
                AgentStep {
                    agent: agent.value.trim().to_string(),
                    input: input.as_ref().map(|i| i.value.clone()),
                    vars: vars.clone().unwrap_or_default(),
                    tools: None,
                }
            }
        };

        let e = &cfg.evaluator.value;
        self.agent_ref(&e.agent.value, at(&e.agent), "evaluator", agents);
        if let Some(i) = &e.input {
            self.template(i, "the input of the evaluator");
        }
        if e.output_schema.is_some() {
            self.warnings.push(format!(
                "{}: evaluator.output_schema is not enforced; the evaluator's reply is read as JSON {{score, issues, fixes}}",
                self.file
            ));
        }
        let evaluator = AgentStep {
            agent: e.agent.value.trim().to_string(),
            input: e.input.as_ref().map(|i| i.value.clone()),
            vars: e.vars.clone().unwrap_or_default(),
            tools: None,
        };

        let a = &cfg.accept.value;
        let min_score = a.min_score.value;
        if !(min_score.is_finite() && (0.0..=100.0).contains(&min_score)) {
            self.error(
                at(&a.min_score),
                format!("accept.min_score is {min_score}; it is a score from 0 to 100"),
                Some("min_score: 85".into()),
            );
        }
        let max_iters = match &a.max_iters {
            None => DEFAULT_MAX_ITERS,
            Some(m) => match u32::try_from(m.value) {
                Ok(n) if n >= 1 => n,
                _ => {
                    self.error(
                        at(m),
                        format!(
                            "accept.max_iters is {}; at least 1 iteration is needed",
                            m.value
                        ),
                        Some(format!("max_iters: {DEFAULT_MAX_ITERS}")),
                    );
                    DEFAULT_MAX_ITERS
                }
            },
        };

        if let Some(p) = &cfg.revise_prompt {
            self.template(p, "revise_prompt");
        }

        let review_gate = cfg.review_gate.as_ref().and_then(|st| {
            match self.step(st, "review_gate", false, agents, "review_gate")? {
                Body::Gate(g) => Some(g),
                Body::Agent(_) => {
                    self.error(
                        at(st),
                        "review_gate is a human gate, not an agent step",
                        Some("review_gate: {type: hitl, prompt: \"continue or stop?\"}".into()),
                    );
                    None
                }
            }
        });

        if review_gate
            .as_ref()
            .is_some_and(|g| g.kind == GateKind::ManualGate)
        {
            self.warnings.push(format!(
                "{}: review_gate is a manual_gate: approve continues and reject ends the run; `stop` and feedback text need `type: hitl`",
                self.file
            ));
        }
        let manual_review = a
            .manual_review
            .as_ref()
            .and_then(|m| self.manual_review(m, max_iters, agents));
        if let (Some(r), Some(m)) = (&review_gate, &manual_review) {
            if r.id == m.gate.id {
                let loc = a.manual_review.as_ref().map(at).unwrap_or((1, 1));
                self.error(
                    loc,
                    format!("gate id `{}` is used twice", r.id),
                    Some("give accept.manual_review another `id`".into()),
                );
            }
        }

        PatternSpec::EvaluatorOptimizer(EvaluatorSpec {
            producer,
            evaluator,
            min_score,
            max_iters,
            revise_prompt: cfg.revise_prompt.as_ref().map(|p| p.value.clone()),
            review_gate,
            manual_review,
        })
    }

    /// An agent named by `producer` or `evaluator.agent` must be defined.
    fn agent_ref(
        &mut self,
        name: &str,
        loc: (u32, u32),
        what: &str,
        agents: &BTreeMap<String, AgentSpec>,
    ) {
        let name = name.trim();
        if !agents.contains_key(name) {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            self.error(
                loc,
                format!("{what} uses undefined agent `{name}`"),
                Some(format!("defined agents: {}", known.join(", "))),
            );
        }
    }

    /// `accept.manual_review`: checked as a `manual_gate` step (so every
    /// gate key means what it means elsewhere), then asked as a gate that
    /// takes text answers.
    fn manual_review(
        &mut self,
        m: &S<ManualReviewConfig>,
        max_iters: u32,
        agents: &BTreeMap<String, AgentSpec>,
    ) -> Option<ManualReview> {
        let c = &m.value;
        let after = match u32::try_from(c.after_iterations.value) {
            Ok(n) if n >= 1 && n <= max_iters => Some(n),
            Ok(n) if n > max_iters => {
                self.error(
                    at(&c.after_iterations),
                    format!("accept.manual_review.after_iterations is {n}, more than max_iters ({max_iters}): the review would never be asked"),
                    Some(format!("after_iterations: 1 to {max_iters}")),
                );
                None
            }
            _ => {
                self.error(
                    at(&c.after_iterations),
                    format!(
                        "accept.manual_review.after_iterations is {}; it counts iterations, 1 or more",
                        c.after_iterations.value
                    ),
                    Some("after_iterations: 2".into()),
                );
                None
            }
        };
        let kind = S::new("manual_gate".to_string(), m.referenced, m.defined);
        let step = S::new(
            Step {
                kind: Some(kind),
                id: c.id.clone(),
                agent: None,
                input: None,
                vars: None,
                tool_overrides: None,
                deps: None,
                description: None,
                prompt: c.prompt.clone(),
                context_display: c.context_display.clone(),
                default: c.default.clone(),
                timeout_seconds: None,
                condition: c.condition.clone(),
                timeout_minutes: c.timeout_minutes.clone(),
                fallback_action: c.fallback_action.clone(),
                show_preview: c.show_preview,
                preview_length: c.preview_length,
                require_reason: c.require_reason,
                channel: c.channel.clone(),
                approvers: c.approvers.clone(),
                approvals_required: c.approvals_required,
                rejections_required: c.rejections_required,
                allow_self_approval: c.allow_self_approval,
                notify: c.notify.clone(),
                reminder_interval: c.reminder_interval.clone(),
                max_reminders: c.max_reminders.clone(),
                remind_before: c.remind_before.clone(),
                escalation_timeout: c.escalation_timeout.clone(),
                escalation_target: c.escalation_target.clone(),
                timeout: c.timeout.clone(),
                calendar: c.calendar.clone(),
                when_closed: c.when_closed.clone(),
                auto_approve: c.auto_approve.clone(),
                timers_outside_hours: c.timers_outside_hours.clone(),
                form: None,
                allow_trust: None,
                allow_edit: None,
                step_up: None,
            },
            m.referenced,
            m.defined,
        );
        let gate = match self.step(
            &step,
            "accept.manual_review",
            false,
            agents,
            "manual_review",
        )? {
            Body::Gate(g) => g,
            Body::Agent(_) => return None,
        };
        Some(ManualReview {
            after_iterations: after?,
            gate: GateSpec {
                // Answers are words (approve-current, continue, reject), so
                // the gate takes text; approve, reject and modify still work.
                kind: GateKind::Hitl,
                ..gate
            },
        })
    }
}
