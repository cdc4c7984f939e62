//! Approval rules: who must answer a gate depends on what is at stake.
//!
//! A gate's `approvers:` (or `security.approvers`, or a named policy of
//! the service file) may be a list of rules instead of a list of names:
//!
//! ```yaml
//! approvers:
//!   - when: "{{ details.amount > 10000 }}"
//!     approvers: [cfo, group:finance]
//!     quorum: 2
//!   - approvers: [group:support]      # the default rule: no `when`
//! ```
//!
//! This module only decides: given the rules and a template context,
//! which rule applies ([`choose`]), what every channel says about it
//! ([`Choice::note`]), what it changes on the opened gate ([`apply`],
//! [`timers`]) and when its deadline falls (through
//! [`crate::gate::calendar::deadline`], the one deadline rule). It reads no
//! store and no clock; the engine builds the context (`details`, `tool`)
//! and the validator checks the rules where they are written.
//!
//! First match wins. A condition that fails to evaluate (an undefined
//! name, a type error) does not fall through to a laxer rule: the
//! strictest rule applies — the one needing the most approvals, the first
//! listed on a tie — and the note says which condition failed and why.

use crate::model::{OpenGate, RuleNote};
use crate::spec::GateTimers;
use crate::template::Templates;

/// The rule type lives with the spec (it is read there, below this layer).
pub use crate::spec::rules::ApprovalRule;

/// The rule that applies to one gate instance, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice<'a> {
    /// 0-based position in the list.
    pub index: usize,
    pub rule: &'a ApprovalRule,
    /// Set when a condition failed and the strictest rule was taken
    /// instead: which rule's condition, and the evaluation error.
    pub failed: Option<Failed>,
    /// Approvals the gate needs when the rule names no quorum.
    pub base: u32,
}

/// Why the strictest rule was taken (fail closed).
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The 1-based rule whose condition failed; `None` when no condition
    /// held and the list has no default rule.
    pub rule: Option<usize>,
    /// That rule's condition, as written.
    pub condition: String,
    /// The evaluation error ("undefined value").
    pub why: String,
}

impl Failed {
    /// What the note and the audit keep: "the condition of rule 1
    /// (`{{ details.amount > 10 }}`) failed: undefined value".
    pub fn detail(&self) -> String {
        match self.rule {
            Some(n) => format!(
                "the condition of rule {n} (`{}`) failed: {}",
                self.condition.trim(),
                self.why
            ),
            None => self.why.clone(),
        }
    }

    /// What channels show after the approvers: short.
    fn short(&self) -> String {
        match self.rule {
            Some(n) => format!("the condition of rule {n} failed: {}", self.why),
            None => self.why.clone(),
        }
    }
}

/// The first rule whose `when` holds (a rule without one always holds).
/// A condition that errors picks the strictest rule ([`strictest`]).
/// `None` only for an empty list. `base` is the gate's own quorum, for
/// rules that name none.
pub fn choose<'a>(
    rules: &'a [ApprovalRule],
    templates: &Templates,
    ctx: &minijinja::Value,
    base: u32,
) -> Option<Choice<'a>> {
    for (index, rule) in rules.iter().enumerate() {
        let Some(cond) = &rule.when else {
            return Some(Choice {
                index,
                rule,
                failed: None,
                base,
            });
        };
        let what = format!("approval rule {}", index + 1);
        match templates.truthy(&what, cond, ctx) {
            Ok(true) => {
                return Some(Choice {
                    index,
                    rule,
                    failed: None,
                    base,
                })
            }
            Ok(false) => continue,
            Err(e) => {
                // The template error names the rule already; keep what follows.
                let full = e.to_string();
                let why = match full.find(&format!("{what}: ")) {
                    Some(i) => full[i + what.len() + 2..].to_string(),
                    None => full
                        .strip_suffix(&format!(" in {what}"))
                        .unwrap_or(&full)
                        .to_string(),
                };
                let strict = strictest(rules, base)?;
                tracing::warn!(
                    "the condition of approval rule {} failed ({why}); the strictest rule (rule {}) applies",
                    index + 1,
                    strict + 1
                );
                return Some(Choice {
                    index: strict,
                    rule: &rules[strict],
                    failed: Some(Failed {
                        rule: Some(index + 1),
                        condition: cond.clone(),
                        why,
                    }),
                    base,
                });
            }
        }
    }
    // The validator makes the last rule a default; a list without one
    // (built in code) falls back to the strictest rather than to nobody.
    let strict = strictest(rules, base)?;
    Some(Choice {
        index: strict,
        rule: &rules[strict],
        failed: Some(Failed {
            rule: None,
            condition: String::new(),
            why: "no rule's condition held and there is no default rule".into(),
        }),
        base,
    })
}

/// The index of the rule needing the most approvals; the first listed on
/// a tie. `None` for an empty list.
pub fn strictest(rules: &[ApprovalRule], base: u32) -> Option<usize> {
    let mut best: Option<(usize, u32)> = None;
    for (i, r) in rules.iter().enumerate() {
        let n = r.needs(base);
        if best.is_none_or(|(_, b)| n > b) {
            best = Some((i, n));
        }
    }
    best.map(|(i, _)| i)
}

/// Of several choices (one per waiting tool call), the one needing the
/// most approvals; the earliest listed rule on a tie.
pub fn strictest_of<'a>(choices: Vec<Choice<'a>>) -> Option<Choice<'a>> {
    choices.into_iter().reduce(|best, c| {
        let (nb, nc) = (best.rule.needs(best.base), c.rule.needs(c.base));
        if nc > nb || (nc == nb && c.index < best.index) {
            c
        } else {
            best
        }
    })
}

impl Choice<'_> {
    /// Approvals the gate needs under this rule.
    pub fn needs(&self) -> u32 {
        self.rule.needs(self.base)
    }

    /// Why this rule: its label, the condition's text, or "default rule".
    pub fn reason(&self) -> String {
        match (&self.rule.label, &self.rule.when) {
            (Some(l), _) => format!("because {}", l.trim()),
            (None, Some(c)) => format!("because {}", condition_text(c)),
            (None, None) => "(default rule)".into(),
        }
    }

    /// What every channel shows: "needs 2 of cfo, group:finance because
    /// amount > 10000"; after a failed condition, "needs 2 of … (strictest
    /// rule applied: the condition of rule 1 … failed: …)".
    pub fn summary(&self) -> String {
        let who = if self.rule.approvers.is_empty() {
            "anyone".to_string()
        } else {
            crate::model::identity::listed(&self.rule.approvers)
        };
        let head = format!("needs {} of {who}", self.needs());
        match &self.failed {
            Some(f) => format!("{head} (strictest rule applied: {})", f.short()),
            None => format!("{head} {}", self.reason()),
        }
    }

    /// The note kept on the opened gate and in the audit trail.
    pub fn note(&self) -> RuleNote {
        RuleNote {
            index: self.index + 1,
            summary: self.summary(),
            failed: self.failed.as_ref().map(Failed::detail),
        }
    }
}

/// A condition as people read it: without `{{ }}` and without the
/// `details.` / `tool.` prefixes (`amount > 10000`).
pub fn condition_text(cond: &str) -> String {
    let t = cond.trim();
    let t = t
        .strip_prefix("{{")
        .and_then(|s| s.strip_suffix("}}"))
        .unwrap_or(t)
        .trim();
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while !rest.is_empty() {
        let at_word = out
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '.'));
        let prefix = ["details.", "tool."]
            .into_iter()
            .find(|p| at_word && rest.starts_with(p));
        match prefix {
            Some(p) => rest = &rest[p.len()..],
            None => {
                let c = rest.chars().next().unwrap_or(' ');
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// Makes the chosen rule decide the opened gate: approvers, quorum,
/// `require_reason` and timeout, and the note every channel shows. What
/// the rule leaves out stays the gate's.
pub fn apply(gate: &mut OpenGate, choice: &Choice<'_>) {
    let rule = choice.rule;
    gate.approvers = rule.approvers.clone();
    if rule.quorum.is_some() {
        gate.approvals_required = choice.needs();
    }
    if let Some(r) = rule.require_reason {
        gate.require_reason = r;
    }
    gate.step_up = gate.step_up.or(rule.step_up);
    if let Some(t) = &rule.timeout {
        let at = crate::gate::calendar::deadline(
            gate.opened_at,
            t,
            gate.hours.as_ref().map(|h| &h.rules),
        );
        gate.timeout_at = Some(at);
    }
    gate.rule = Some(choice.note());
}

/// The gate's reminders and escalation with the rule's escalation settings.
pub fn timers(base: &GateTimers, rule: &ApprovalRule) -> GateTimers {
    let mut t = base.clone();
    if let Some(e) = rule.escalation_timeout {
        t.escalation_timeout = Some(e);
    }
    if let Some(to) = &rule.escalation_target {
        t.escalation_target = to.clone();
    }
    t
}

/// The rules that decide `gate`: its own, else — when it names no
/// approvers — `security.approvers`' (empty: a fixed list).
pub fn rules_of<'a>(
    spec: &'a crate::spec::Spec,
    gate: &'a crate::spec::GateSpec,
) -> &'a [ApprovalRule] {
    if !gate.rules.is_empty() {
        &gate.rules
    } else if gate.approvers.is_none() {
        &spec.approval.rules
    } else {
        &[]
    }
}

/// `gate`'s reminders and escalation for an instance that `note`'s rule
/// decided (the gate's own without one): what the timers arm and fire.
pub fn gate_timers(
    spec: &crate::spec::Spec,
    gate: &crate::spec::GateSpec,
    note: Option<&RuleNote>,
) -> GateTimers {
    let rule = note
        .and_then(|n| n.index.checked_sub(1))
        .and_then(|i| rules_of(spec, gate).get(i));
    match rule {
        Some(r) => timers(&gate.timers, r),
        None => gate.timers.clone(),
    }
}

/// Adds what only rules see to a template context: `details` (see
/// [`details`]) and `tool` — `{name, args}` of the call being judged, or
/// `{name: none, args: {}}` at a gate that is not a tool call, so one rule
/// list serves both (`tool.name == 'delete_rows'` is simply false at a
/// gate, where an undefined `tool` would fail closed).
pub fn add_rule_vars(
    root: &mut serde_json::Map<String, serde_json::Value>,
    vars: &serde_json::Map<String, serde_json::Value>,
    tool: Option<(&str, &serde_json::Value)>,
) {
    root.insert("details".into(), details(vars));
    let tool = match tool {
        Some((name, args)) => serde_json::json!({"name": name, "args": args}),
        None => serde_json::json!({"name": null, "args": {}}),
    };
    root.insert("tool".into(), tool);
}

/// Run variables or request details as conditions read them: strings
/// that look like numbers (`--var amount=20000`) become numbers, so
/// `details.amount > 10000` compares numbers.
pub fn details(vars: &serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
    let numbered = vars
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => number(s).unwrap_or_else(|| v.clone()),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    serde_json::Value::Object(numbered)
}

fn number(s: &str) -> Option<serde_json::Value> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(i.into());
    }
    t.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && t.chars().all(|c| c.is_ascii_digit() || ".-+eE".contains(c)))
        .and_then(serde_json::Number::from_f64)
        .map(serde_json::Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::timeout::Timeout;
    use chrono::{DateTime, Utc};
    use serde_json::json;

    fn rule(when: Option<&str>, approvers: &[&str], quorum: Option<u32>) -> ApprovalRule {
        ApprovalRule {
            when: when.map(str::to_string),
            approvers: approvers.iter().map(|a| (*a).into()).collect(),
            quorum,
            ..Default::default()
        }
    }

    fn rules() -> Vec<ApprovalRule> {
        vec![
            rule(
                Some("{{ details.amount > 10000 }}"),
                &["cfo", "group:finance"],
                Some(2),
            ),
            rule(
                Some("{{ tool.name == 'delete_rows' }}"),
                &["group:dba"],
                None,
            ),
            rule(None, &["group:support"], None),
        ]
    }

    fn ctx(v: serde_json::Value) -> minijinja::Value {
        minijinja::Value::from_serialize(v)
    }

    #[test]
    fn the_first_rule_that_holds_decides() {
        let t = Templates::new();
        let rs = rules();
        let c = ctx(json!({"details": {"amount": 20000}, "tool": {"name": "delete_rows"}}));
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(got.index, 0);
        assert_eq!(got.needs(), 2);
        assert_eq!(
            got.summary(),
            "needs 2 of cfo, group:finance because amount > 10000"
        );
        let c = ctx(json!({"details": {"amount": 5}, "tool": {"name": "delete_rows"}}));
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(got.index, 1);
        assert_eq!(
            got.summary(),
            "needs 1 of group:dba because name == 'delete_rows'"
        );
    }

    #[test]
    fn nothing_holds_so_the_default_rule_applies() {
        let t = Templates::new();
        let rs = rules();
        let c = ctx(json!({"details": {"amount": 5}, "tool": {"name": "read"}}));
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(got.index, 2);
        assert!(got.failed.is_none());
        assert_eq!(got.summary(), "needs 1 of group:support (default rule)");
        assert_eq!(got.note().index, 3);
    }

    #[test]
    fn a_failing_condition_picks_the_strictest_rule() {
        let t = Templates::new();
        let mut rs = rules();
        // Rule 1 fails (no `details` at all); the strictest is rule 3 (3 approvals).
        rs[0].when = Some("{{ details.amount > 10 }}".into());
        rs[2].quorum = Some(3);
        let c = ctx(json!({"tool": {"name": "x"}}));
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(got.index, 2, "{got:?}");
        let note = got.note();
        let failed = note.failed.unwrap();
        assert!(failed.contains("rule 1"), "{failed}");
        assert!(failed.contains("undefined"), "{failed}");
        assert_eq!(
            note.summary,
            "needs 3 of group:support (strictest rule applied: the condition of rule 1 failed: 'details' is undefined)"
        );
        assert_eq!(
            failed,
            "the condition of rule 1 (`{{ details.amount > 10 }}`) failed: 'details' is undefined"
        );
        // Ties go to the first listed.
        rs[2].quorum = Some(2);
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(got.index, 0);
    }

    #[test]
    fn labels_replace_the_condition_text() {
        let t = Templates::new();
        let mut rs = rules();
        rs[0].label = Some("a large payment".into());
        let c = ctx(json!({"details": {"amount": 20000}}));
        let got = choose(&rs, &t, &c, 1).unwrap();
        assert_eq!(
            got.summary(),
            "needs 2 of cfo, group:finance because a large payment"
        );
    }

    #[test]
    fn condition_text_drops_braces_and_prefixes_only_at_word_starts() {
        assert_eq!(
            condition_text("{{ details.amount > 10 and tool.args.table == 'x' }}"),
            "amount > 10 and args.table == 'x'"
        );
        assert_eq!(condition_text("mydetails.x"), "mydetails.x");
    }

    #[test]
    fn the_strictest_of_several_calls_wins_and_ties_go_to_the_earliest_rule() {
        let rs = rules();
        let pick = |i: usize| Choice {
            index: i,
            rule: &rs[i],
            failed: None,
            base: 1,
        };
        assert_eq!(
            strictest_of(vec![pick(2), pick(0), pick(1)]).unwrap().index,
            0
        );
        assert_eq!(strictest_of(vec![pick(2), pick(1)]).unwrap().index, 1);
        assert!(strictest_of(Vec::new()).is_none());
    }

    #[test]
    fn a_rule_decides_the_opened_gate_and_its_deadline() {
        let now = DateTime::parse_from_rfc3339("2026-12-24T22:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut rs = rules();
        rs[0].timeout = Some(Timeout::parse("8h").unwrap());
        rs[0].require_reason = Some(true);
        let c = Choice {
            index: 0,
            rule: &rs[0],
            failed: None,
            base: 1,
        };
        let spec = crate::spec::GateSpec {
            id: "g".into(),
            kind: crate::model::GateKind::ManualGate,
            prompt: "p".into(),
            context_display: None,
            default: None,
            timeout_secs: Some(60),
            fallback: crate::model::Fallback::Cancel,
            condition: None,
            show_preview: true,
            preview_length: 10,
            require_reason: false,
            channel: None,
            approvers: None,
            rules: rs.clone(),
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
        let mut g = super::super::open(
            &spec,
            crate::model::Position::Step(1),
            1,
            "p".into(),
            "c".into(),
            now,
        );
        apply(&mut g, &c);
        assert_eq!(g.approvers, vec!["cfo", "group:finance"]);
        assert_eq!(g.approvals_required, 2);
        assert!(g.require_reason);
        assert_eq!(
            g.timeout_at.unwrap().to_rfc3339(),
            "2026-12-25T06:00:00+00:00"
        );
        assert_eq!(g.rule.as_ref().unwrap().index, 1);
    }

    #[test]
    fn number_looking_details_become_numbers() {
        let mut m = serde_json::Map::new();
        m.insert("amount".into(), json!("20000"));
        m.insert("rate".into(), json!("0.5"));
        m.insert("name".into(), json!("inf"));
        m.insert("id".into(), json!("12ab"));
        assert_eq!(
            details(&m),
            json!({"amount": 20000, "rate": 0.5, "name": "inf", "id": "12ab"})
        );
    }
}
