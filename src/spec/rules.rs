//! Approval rules ([`ApprovalRule`]), and reading them from
//! their YAML form, one map per rule.
//!
//! Two places write rules: a spec (`approvers:` of a gate, or
//! `security.approvers`), where the validator adds the file:line, and the
//! service file's named `policies:`, where start-up names the policy.
//! Both go through [`rule`] and [`check_list`], so a rule means the same
//! wherever it is written. This module holds the rule's type and reads
//! values; choosing a rule at run time is `gate::policy`'s.

use serde_json::{Map, Value};

use super::timeout::Timeout;
use super::EscalationTarget;
use crate::template::Templates;

/// One rule of an `approvers:` list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovalRule {
    /// The condition (a template or bare expression); `None`: the default rule.
    pub when: Option<String>,
    /// What channels show instead of the condition's text.
    pub label: Option<String>,
    /// Who may answer while this rule applies.
    pub approvers: Vec<crate::model::Approver>,
    /// Approvals needed (`quorum` or `approvals_required`); `None`: the gate's.
    pub quorum: Option<u32>,
    /// Whether a rejection must say why; `None`: the gate's.
    pub require_reason: Option<bool>,
    /// How long the gate waits; `None`: the gate's.
    pub timeout: Option<Timeout>,
    /// Minutes without an answer before escalating; `None`: the gate's.
    pub escalation_timeout: Option<std::time::Duration>,
    /// Who gets the escalated request; `None`: the gate's.
    pub escalation_target: Option<Vec<EscalationTarget>>,
    /// `step_up: passkey`: approving while this rule applies takes a
    /// passkey assertion (`crate::model::step_up`).
    pub step_up: Option<crate::model::step_up::StepUp>,
    /// `trust: never`: a tool call this rule decides is never answered
    /// with trust (nor trust within limits), and no grant lets it run.
    pub trust_never: bool,
}

impl ApprovalRule {
    /// Approvals this rule needs, `base` when it names no quorum.
    pub fn needs(&self, base: u32) -> u32 {
        self.quorum.unwrap_or(base).max(1)
    }
}

/// The keys a rule takes.
pub const KEYS: &[&str] = &[
    "when",
    "label",
    "approvers",
    "quorum",
    "approvals_required",
    "require_reason",
    "timeout",
    "escalation_timeout",
    "escalation_target",
    "step_up",
    "trust",
];

/// What is wrong with a rule: the key to point at (if any) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub key: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl RuleError {
    fn at(key: &str, message: impl Into<String>, hint: Option<&str>) -> Self {
        RuleError {
            key: Some(key.to_string()),
            message: message.into(),
            hint: hint.map(str::to_string),
        }
    }
}

/// Reads one rule. `max_secs` bounds its timeout and escalation timeout
/// (the validator's `Limits::max_timeout_secs`). Every problem is
/// returned, not just the first.
pub fn rule(
    map: &Map<String, Value>,
    templates: &Templates,
    max_secs: u64,
) -> Result<ApprovalRule, Vec<RuleError>> {
    let mut errs = Vec::new();
    let mut r = ApprovalRule::default();
    for key in map.keys() {
        if !KEYS.contains(&key.as_str()) {
            errs.push(RuleError::at(
                key,
                format!("a rule does not take `{key}`"),
                Some("a rule takes when, label, approvers, quorum, require_reason, timeout, escalation_timeout, escalation_target, step_up, trust"),
            ));
        }
    }
    let text = |key: &str, errs: &mut Vec<RuleError>| match map.get(key) {
        None => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(other) => {
            errs.push(RuleError::at(
                key,
                format!("`{key}` is text, not {other}"),
                None,
            ));
            None
        }
    };
    r.when = text("when", &mut errs);
    if let Some(w) = &r.when {
        if let Err(e) = templates.check_condition(w) {
            errs.push(RuleError::at(
                "when",
                format!("the rule's `when` does not parse: {}", e.message),
                Some("a condition is an expression like `{{ details.amount > 10000 }}`"),
            ));
        }
    }
    r.label = text("label", &mut errs);
    match map.get("approvers") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for v in list {
                match v.as_str().map(str::trim).filter(|s| !s.is_empty()) {
                    Some(s) => r.approvers.push(crate::model::Approver::parse(s)),
                    None => errs.push(RuleError::at(
                        "approvers",
                        format!("a rule's approvers are names, not {v}"),
                        None,
                    )),
                }
            }
        }
        Some(Value::String(one)) if !one.trim().is_empty() => {
            r.approvers.push(crate::model::Approver::parse(one))
        }
        _ => errs.push(RuleError::at(
            "approvers",
            "a rule needs `approvers` (who may answer while it applies)",
            Some("approvers: [cfo, group:finance]"),
        )),
    }
    let quorum_key = match (map.get("quorum"), map.get("approvals_required")) {
        (Some(_), Some(_)) => {
            errs.push(RuleError::at(
                "approvals_required",
                "a rule takes `quorum` or `approvals_required`, not both",
                None,
            ));
            None
        }
        (Some(q), None) => Some(("quorum", q)),
        (None, Some(q)) => Some(("approvals_required", q)),
        (None, None) => None,
    };
    if let Some((key, q)) = quorum_key {
        match q.as_u64().filter(|n| (1..=u32::MAX as u64).contains(n)) {
            Some(n) => r.quorum = Some(n as u32),
            None => errs.push(RuleError::at(
                key,
                format!("`{key}` is a number of approvals, 1 or more, not {q}"),
                None,
            )),
        }
    }
    if let (Some(n), true) = (r.quorum, !r.approvers.is_empty()) {
        // `group:NAME` or a Slack user group (`S…`) may hold more people.
        let groups = r.approvers.iter().any(crate::model::Approver::is_many);
        if !groups && n as usize > r.approvers.len() {
            errs.push(RuleError::at(
                quorum_key.map_or("quorum", |(k, _)| k),
                format!(
                    "the rule needs {n} approvals but names {} approver{}",
                    r.approvers.len(),
                    if r.approvers.len() == 1 { "" } else { "s" }
                ),
                Some("name more approvers, a group (group:finance), or lower the quorum"),
            ));
        }
    }
    match map.get("step_up") {
        None => {}
        Some(Value::String(t)) if crate::model::step_up::StepUp::parse(t).is_some() => {
            r.step_up = crate::model::step_up::StepUp::parse(t)
        }
        Some(other) => errs.push(RuleError::at(
            "step_up",
            format!("`step_up` is `passkey`, not {other}"),
            Some("step_up: passkey (approving takes a passkey on the gate's page)"),
        )),
    }
    match map.get("trust") {
        None => {}
        Some(Value::String(t)) if t == "never" => r.trust_never = true,
        Some(Value::String(t)) if t == "allowed" => {}
        Some(other) => errs.push(RuleError::at(
            "trust",
            format!("`trust` is `never` (or `allowed`, the default), not {other}"),
            Some("trust: never (no trust answer, no grant, for what this rule decides)"),
        )),
    }
    match map.get("require_reason") {
        None => {}
        Some(Value::Bool(b)) => r.require_reason = Some(*b),
        Some(other) => errs.push(RuleError::at(
            "require_reason",
            format!("`require_reason` is true or false, not {other}"),
            None,
        )),
    }
    if let Some(t) = map.get("timeout") {
        match t.as_str().map(Timeout::parse) {
            Some(Ok(t)) if t.secs <= max_secs => r.timeout = Some(t),
            Some(Ok(t)) => errs.push(RuleError::at(
                "timeout",
                format!(
                    "the rule's timeout ({t}) is longer than the limit of {} days",
                    max_secs / 86_400
                ),
                Some("gates wait at most 7 days; set STRANDS_MAX_TIMEOUT_DAYS to allow longer"),
            )),
            Some(Err(e)) => errs.push(RuleError::at("timeout", e, Some("timeout: 8h business"))),
            None => errs.push(RuleError::at(
                "timeout",
                format!("`timeout` is a duration like `30m` or `8h business`, not {t}"),
                Some("timeout: 8h business"),
            )),
        }
    }
    if let Some(e) = map.get("escalation_timeout") {
        let secs = match e {
            Value::Number(n) => n
                .as_f64()
                .filter(|m| m.is_finite() && *m > 0.0)
                .map(|m| m * 60.0),
            Value::String(s) => Timeout::parse(s).ok().map(|t| t.secs as f64),
            _ => None,
        };
        match secs {
            Some(s) if s <= max_secs as f64 => {
                r.escalation_timeout = Some(std::time::Duration::from_secs_f64(s.max(1.0)))
            }
            _ => errs.push(RuleError::at(
                "escalation_timeout",
                format!(
                    "`escalation_timeout` is minutes (or a duration like `30m`), more than 0 and at most {} days, not {e}",
                    max_secs / 86_400
                ),
                None,
            )),
        }
    }
    if let Some(t) = map.get("escalation_target") {
        let entries: Vec<Option<&str>> = match t {
            Value::String(one) => vec![Some(one.as_str())],
            Value::Array(list) if !list.is_empty() => list.iter().map(Value::as_str).collect(),
            _ => vec![None],
        };
        let mut targets = Vec::new();
        for e in entries {
            match e.map(EscalationTarget::parse) {
                Some(Ok(target)) => targets.push(target),
                Some(Err(why)) => errs.push(RuleError::at(
                    "escalation_target",
                    format!("escalation_target: {why}"),
                    None,
                )),
                None => errs.push(RuleError::at(
                    "escalation_target",
                    "escalation_target is a Slack id or channel, or a list of them",
                    Some("escalation_target: [U0123ABCD, \"#ops-oncall\"]"),
                )),
            }
        }
        r.escalation_target = Some(targets);
    }
    if r.escalation_timeout.is_some() && r.escalation_target.is_none() {
        errs.push(RuleError::at(
            "escalation_timeout",
            "a rule's escalation_timeout needs an escalation_target in the same rule",
            Some("escalation_target: [U0123ABCD]"),
        ));
    }
    if errs.is_empty() {
        Ok(r)
    } else {
        Err(errs)
    }
}

/// A list of rules must end with the default rule (no `when`) and have
/// no other: a rule after the default could never apply. `Err` carries
/// the 0-based index of the rule to point at.
pub fn check_list(rules: &[ApprovalRule]) -> Result<(), (usize, RuleError)> {
    let Some(last) = rules.len().checked_sub(1) else {
        return Err((
            0,
            RuleError {
                key: None,
                message: "the list of approval rules is empty".into(),
                hint: Some("- approvers: [group:support]   # the default rule".into()),
            },
        ));
    };
    if let Some(i) = rules[..last].iter().position(|r| r.when.is_none()) {
        return Err((
            i,
            RuleError {
                key: None,
                message: format!(
                    "approval rule {} has no `when`, so the rules after it never apply",
                    i + 1
                ),
                hint: Some("only the last rule (the default) goes without `when`".into()),
            },
        ));
    }
    if rules[last].when.is_some() {
        return Err((
            last,
            RuleError {
                key: Some("when".into()),
                message: format!(
                    "the last approval rule (rule {}) has a `when`: the last rule is the default and applies when no other does",
                    last + 1
                ),
                hint: Some(
                    "add a default rule without `when` at the end, e.g. `- approvers: [group:support]`"
                        .into(),
                ),
            },
        ));
    }
    Ok(())
}

/// Reads a list of rules as the service file writes them (a named
/// policy). The error is one line per problem, naming the rule.
pub fn list(
    values: &[Value],
    templates: &Templates,
    max_secs: u64,
) -> Result<Vec<ApprovalRule>, String> {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let Some(map) = v.as_object() else {
            problems.push(format!(
                "rule {}: a rule is a map with `approvers` (and `when`), not {v}",
                i + 1
            ));
            continue;
        };
        match rule(map, templates, max_secs) {
            Ok(r) => rules.push(r),
            Err(errs) => problems.extend(
                errs.into_iter()
                    .map(|e| format!("rule {}: {}", i + 1, e.message)),
            ),
        }
    }
    if problems.is_empty() {
        if let Err((i, e)) = check_list(&rules) {
            problems.push(format!("rule {}: {}", i + 1, e.message));
        }
    }
    if problems.is_empty() {
        Ok(rules)
    } else {
        Err(problems.join("; "))
    }
}
