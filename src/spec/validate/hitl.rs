//! Validation of the `hitl` section (seed 001): a preset (`minimal`,
//! `standard`, `strict`, `paranoid`), which decides which tool calls ask,
//! and the gates the run itself triggers (`final_response`,
//! `budget_based`, `threshold_based`, `custom`, `plan_approval`).
//!
//! Gates written as steps (`type: hitl` / `type: manual_gate`) are checked
//! in `gates.rs`; this module only builds the one such gate a trigger
//! stands for, an orchestrator's plan approval.

use super::raw;
use super::{at, Validator};
use crate::spec::{
    Fallback, GateKind, GateSpec, GateTimers, HitlSpec, PatternSpec, Trigger, TriggerSpec,
    DEFAULT_PREVIEW_LENGTH,
};

impl Validator {
    /// `hitl:`: a preset (seed 001 §3.3) and run-triggered gates (§2.1.1).
    pub(super) fn hitl(&mut self, h: Option<&raw::Hitl>) -> HitlSpec {
        let mut out = HitlSpec::default();
        let Some(h) = h else { return out };
        if let Some(p) = &h.preset {
            let name = p.value.trim().to_string();
            match name.as_str() {
                "minimal" => {}
                "standard" => {
                    out.ask_tools = [
                        "web_search",
                        "send_email",
                        "api_call",
                        "http_request",
                        "web_fetch",
                        "duckduckgo_search",
                        "tavily_search",
                    ]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                }
                "strict" | "paranoid" => {
                    out.ask_all_tools = true;
                    out.triggers.push(TriggerSpec {
                        id: "final_response".into(),
                        trigger: Trigger::FinalResponse,
                        prompt: "Approve the final answer?".into(),
                        agents: None,
                    });
                    if name == "paranoid" {
                        out.triggers.push(TriggerSpec {
                            id: "plan_approval".into(),
                            trigger: Trigger::PlanApproval,
                            prompt: "Approve the plan?".into(),
                            agents: None,
                        });
                    }
                }
                other => {
                    self.error(
                        at(p),
                        format!("unknown hitl preset `{other}`"),
                        Some("presets: minimal, standard, strict, paranoid".into()),
                    );
                }
            }
            out.preset = Some(name);
        }
        for g in h.gates.iter().flatten() {
            let v = &g.value;
            let kind = v.kind.value.trim();
            let id = v.id.clone().unwrap_or_else(|| kind.to_string());
            let prompt_default = match kind {
                "final_response" => "Approve the final answer?",
                "budget_based" => "The run passed its token budget. Continue?",
                "threshold_based" => "The agent is not confident. Continue?",
                "plan_approval" => "Approve the plan?",
                _ => "Continue?",
            };
            let prompt = match &v.prompt {
                Some(p) => {
                    self.template(p, &format!("the prompt of hitl gate `{id}`"));
                    p.value.clone()
                }
                None => prompt_default.to_string(),
            };
            let trigger = match kind {
                "final_response" => Trigger::FinalResponse,
                "plan_approval" => Trigger::PlanApproval,
                "budget_based" => match v.cost_threshold {
                    Some(t) if t > 0.0 => Trigger::Budget { tokens: t as u64 },
                    _ => {
                        self.error(at(g), format!("hitl gate `{id}`: budget_based needs a positive `cost_threshold` (tokens)"), None);
                        continue;
                    }
                },
                "threshold_based" => {
                    match v.confidence_threshold {
                        Some(t) => Trigger::Confidence {
                            threshold: t,
                            field: v.field.clone().unwrap_or_else(|| "confidence".into()),
                        },
                        None => {
                            self.error(at(g), format!("hitl gate `{id}`: threshold_based needs `confidence_threshold`"), None);
                            continue;
                        }
                    }
                }
                "custom" => match &v.condition {
                    Some(c) => {
                        if let Err(e) = self.templates.check_condition(&c.value) {
                            self.error(
                                at(c),
                                format!("condition of hitl gate `{id}`: {}", e.message),
                                None,
                            );
                        }
                        Trigger::Custom {
                            condition: c.value.clone(),
                        }
                    }
                    None => {
                        self.error(
                            at(g),
                            format!("hitl gate `{id}`: custom needs a `condition`"),
                            None,
                        );
                        continue;
                    }
                },
                other => {
                    self.error(
                        at(&v.kind),
                        format!("unknown hitl gate type `{other}`"),
                        Some("types: final_response, budget_based, threshold_based, custom, plan_approval (tool gates: see tools policy)".into()),
                    );
                    continue;
                }
            };
            out.triggers.retain(|t| t.id != id);
            out.triggers.push(TriggerSpec {
                id,
                trigger,
                prompt,
                agents: v.agents.clone(),
            });
        }
        out
    }
}

/// seed 001's `plan_approval` trigger (or the `paranoid` preset) asks a
/// human to approve an orchestrator's plan: it becomes the
/// `decomposition_review` when the spec has none of its own.
pub(super) fn plan_approval(pattern: &mut PatternSpec, hitl: &HitlSpec) {
    let PatternSpec::OrchestratorWorkers(o) = pattern else {
        return;
    };
    let Some(t) = hitl
        .triggers
        .iter()
        .find(|t| t.trigger == Trigger::PlanApproval)
    else {
        return;
    };
    if o.decomposition_review.is_some() {
        return;
    }
    o.decomposition_review = Some(GateSpec {
        id: t.id.clone(),
        kind: GateKind::ManualGate,
        prompt: t.prompt.clone(),
        context_display: None,
        default: None,
        timeout_secs: None,
        fallback: Fallback::Cancel,
        condition: None,
        show_preview: true,
        preview_length: DEFAULT_PREVIEW_LENGTH,
        require_reason: false,
        channel: None,
        approvers: None,
        rules: Vec::new(),
        approvals_required: None,
        rejections_required: None,
        allow_self_approval: None,
        notify_dm: false,
        notify_email: false,
        timers: GateTimers::default(),
        hours: None,
        form: None,
        allow_trust: false,
        allow_edit: false,
        step_up: None,
    });
}
