//! Gates the run itself triggers (`hitl.gates`): budgets, low confidence,
//! custom conditions, the final answer.
use super::{context, pattern, Engine};
use crate::error::Result;
use crate::gate;
use crate::model::{Position, Session, Status};
use crate::spec::Spec;

impl Engine<'_> {
    /// Opens the first `hitl.gates` trigger that fires: a budget passed, a
    /// step reporting low confidence, a custom condition. Each step is
    /// checked once per trigger; an error while checking asks a human
    /// (fail closed).
    pub(super) async fn open_triggered_gate(
        &mut self,
        spec: &Spec,
        session: &mut Session,
    ) -> Result<bool> {
        use crate::spec::Trigger;
        for t in &spec.hitl.triggers {
            match &t.trigger {
                Trigger::Budget { tokens } => {
                    let used = session.total_usage().total();
                    if used >= *tokens && !session.triggers_fired.contains(&t.id) {
                        session.triggers_fired.insert(t.id.clone());
                        let Some((position, _)) = pattern::agent_records(&session.state)
                            .last()
                            .map(|(p, r)| (p.clone(), r.response.clone()))
                        else {
                            continue;
                        };
                        let context = format!(
                            "{used} tokens used; the budget gate `{}` asks at {tokens}.",
                            t.id
                        );
                        self.open_triggered(spec, session, t, position, context)
                            .await?;
                        return Ok(true);
                    }
                }
                Trigger::Confidence { .. } | Trigger::Custom { .. } => {
                    let steps: Vec<(Position, Option<String>, String)> =
                        pattern::agent_records(&session.state)
                            .into_iter()
                            .map(|(p, r)| (p, r.agent.clone(), r.response.clone()))
                            .collect();
                    for (position, agent, response) in steps {
                        let key = format!("{}@{}", t.id, position);
                        if !session.triggers_fired.insert(key) {
                            continue;
                        }
                        if let (Some(only), Some(a)) = (&t.agents, &agent) {
                            if !only.contains(a) {
                                continue;
                            }
                        }
                        let (fires, context) =
                            self.trigger_fires(spec, session, &t.trigger, &response);
                        if fires {
                            self.open_triggered(spec, session, t, position, context)
                                .await?;
                            return Ok(true);
                        }
                    }
                }
                Trigger::FinalResponse | Trigger::PlanApproval => {}
            }
        }
        Ok(false)
    }

    /// Whether a per-step trigger fires on `response`, and what to show.
    pub(super) fn trigger_fires(
        &self,
        spec: &Spec,
        session: &Session,
        trigger: &crate::spec::Trigger,
        response: &str,
    ) -> (bool, String) {
        use crate::spec::Trigger;
        match trigger {
            Trigger::Confidence { threshold, field } => match confidence_of(response, field) {
                Some(c) if c < *threshold => (
                    true,
                    format!("confidence {c} is below {threshold}\n\n{response}"),
                ),
                Some(_) => (false, String::new()),
                None => (
                    true,
                    format!("no numeric `{field}` in the output; a human decides\n\n{response}"),
                ),
            },
            Trigger::Custom { condition } => {
                let mut vars = serde_json::Map::new();
                vars.insert(
                    "response".into(),
                    serde_json::Value::String(response.to_string()),
                );
                let ctx = context::build(spec, session, Some(&vars), None);
                match self
                    .templates
                    .truthy("a hitl gate condition", condition, &ctx)
                {
                    Ok(fires) => (fires, response.to_string()),
                    Err(e) => (
                        true,
                        format!("the condition failed ({e}); a human decides\n\n{response}"),
                    ),
                }
            }
            _ => (false, String::new()),
        }
    }

    /// Opens a gate the run triggered, reviewing the step at `position`.
    pub(super) async fn open_triggered(
        &mut self,
        spec: &Spec,
        session: &mut Session,
        t: &crate::spec::TriggerSpec,
        position: Position,
        context: String,
    ) -> Result<()> {
        let ctx = context::build(spec, session, None, None);
        let prompt = self
            .templates
            .render(
                &format!("the prompt of hitl gate `{}`", t.id),
                &t.prompt,
                &ctx,
            )
            .unwrap_or_else(|_| t.prompt.clone());
        let spec_gate = crate::spec::GateSpec {
            id: t.id.clone(),
            kind: crate::spec::GateKind::ManualGate,
            prompt: prompt.clone(),
            context_display: None,
            default: None,
            timeout_secs: None,
            fallback: crate::spec::Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 2000,
            require_reason: false,
            channel: None,
            approvers: None,
            rules: Vec::new(),
            approvals_required: None,
            rejections_required: None,
            allow_self_approval: None,
            notify_dm: false,
            notify_email: false,
            timers: Default::default(),
            hours: None,
            form: None,
            allow_trust: false,
            allow_edit: false,
            step_up: None,
        };
        let mut opened = gate::open(
            &spec_gate,
            position,
            session.next_instance(&spec_gate.id),
            spec.redactor.redact(&prompt),
            spec.redactor.redact(&context),
            self.clock.now(),
        );
        opened.approvers = spec.approval.approvers.clone();
        opened.approvals_required = spec.approval.approvals_required.unwrap_or(1).max(1);
        opened.allow_self_approval = spec.approval.allow_self_approval;
        opened.trigger = Some(t.id.clone());
        // `security.approvers` as rules decide who reviews here too: an
        // empty list would let anyone answer.
        let ctx = context::for_rules(spec, session, Some(&opened.position), None);
        let base = opened.approvals_required;
        if let Some(choice) = gate::policy::choose(&spec.approval.rules, self.templates, &ctx, base)
        {
            gate::policy::apply(&mut opened, &choice);
        }
        self.add_gate(session, opened, None);
        session.status = Status::Paused;
        self.save(session).await
    }
}

/// A numeric field of a step's JSON output (the whole output, or the first
/// `{...}` in it).
fn confidence_of(response: &str, field: &str) -> Option<f64> {
    let parsed: Option<serde_json::Value> =
        serde_json::from_str(response.trim()).ok().or_else(|| {
            let start = response.find('{')?;
            let end = response.rfind('}')?;
            serde_json::from_str(response.get(start..=end)?).ok()
        });
    let v = parsed?;
    let n = v.get(field)?;
    n.as_f64()
        .or_else(|| n.as_str().and_then(|s| s.trim().parse().ok()))
}
