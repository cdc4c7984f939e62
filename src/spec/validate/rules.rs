//! Validation of `approvers:` wherever a spec writes it (a gate, a review,
//! `security.approvers`): a list of names as before, or a list of
//! approval rules (`crate::spec::rules` reads each one; this module puts
//! every problem at the file:line of the key it is about).
//!
//! `security` is free-form in strands-cli, so its `approvers` are read
//! here by a second, lenient pass over the document that keeps their
//! locations; the rest of `security` stays a plain value.

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::raw::{self, ApproverEntry};
use super::{at, Validator};
use crate::spec::rules::ApprovalRule;

/// Just `security.approvers`, with locations; every other key is ignored.
#[derive(Deserialize)]
struct SecurityDoc {
    security: Option<SecurityApprovers>,
}

#[derive(Deserialize)]
struct SecurityApprovers {
    approvers: Option<raw::Approvers>,
}

impl Validator {
    /// `approvers:` as names (`Some(names)`, no rules) or as rules (`None`
    /// and the rules). `what` names the place for messages ("step 2").
    pub(super) fn approvers(
        &mut self,
        list: Option<&raw::Approvers>,
        what: &str,
    ) -> (Option<Vec<crate::model::Approver>>, Vec<ApprovalRule>) {
        let Some(list) = list else {
            return (None, Vec::new());
        };
        let rules_given = list
            .value
            .iter()
            .any(|e| !matches!(e.value, ApproverEntry::Name(_)));
        if !rules_given {
            let names = list
                .value
                .iter()
                .filter_map(|e| match &e.value {
                    ApproverEntry::Name(n) => Some(crate::model::Approver::parse(n)),
                    _ => None,
                })
                .collect();
            return (Some(names), Vec::new());
        }
        let mut rules = Vec::new();
        let mut ok = true;
        for (i, entry) in list.value.iter().enumerate() {
            match &entry.value {
                ApproverEntry::Rule(map) => {
                    match crate::spec::rules::rule(
                        map,
                        self.templates,
                        self.limits.max_timeout_secs,
                    ) {
                        Ok(r) => rules.push(r),
                        Err(errs) => {
                            ok = false;
                            for e in errs {
                                let loc = self.key_at(entry, e.key.as_deref());
                                self.error(
                                    loc,
                                    format!("{what}: approval rule {}: {}", i + 1, e.message),
                                    e.hint,
                                );
                            }
                        }
                    }
                }
                ApproverEntry::Name(n) => {
                    ok = false;
                    self.error(
                        at(entry),
                        format!("{what}: `approvers` mixes names (`{n}`) and rules; write either a list of names or a list of rules"),
                        Some(format!("- approvers: [{n}]   # a rule of its own")),
                    );
                }
                ApproverEntry::Other(v) => {
                    ok = false;
                    self.error(
                        at(entry),
                        format!("{what}: an approver is a name or a rule, not {v}"),
                        None,
                    );
                }
            }
        }
        if ok {
            if let Err((i, e)) = crate::spec::rules::check_list(&rules) {
                let loc = list
                    .value
                    .get(i)
                    .map(|entry| self.key_at(entry, e.key.as_deref()))
                    .unwrap_or_else(|| at(list));
                self.error(loc, format!("{what}: {}", e.message), e.hint);
            }
        }
        (None, rules)
    }

    /// `security.approvers` as rules (empty for a list of names or none).
    pub(super) fn security_rules(&mut self) -> Vec<ApprovalRule> {
        let text = self.text.clone();
        let Ok(doc) = serde_saphyr::from_str::<SecurityDoc>(&text) else {
            // Not a list of names or rules: `approval_defaults` reads what
            // it can, as before.
            return Vec::new();
        };
        let list = doc.security.and_then(|s| s.approvers);
        let (_, rules) = self.approvers(list.as_ref(), "security.approvers");
        if rules.iter().any(|r| {
            r.quorum.is_some_and(|q| q > 1) || r.timeout.is_some() || r.require_reason == Some(true)
        }) {
            self.warnings.push(format!(
                "{}: security.approvers: a rule's quorum, timeout and require_reason apply to gates; on a tool call the rule decides only who approves (one approver per call, no timeout, no reason asked)",
                self.file
            ));
        }
        rules
    }

    /// Where `key` of a rule is written (the rule's own line without a
    /// key, or when it cannot be found). A key belongs to the entry when
    /// it is on the entry's first line or on a following line indented at
    /// least as far as the entry's keys.
    fn key_at<T>(&self, entry: &Spanned<T>, key: Option<&str>) -> (u32, u32) {
        let start = at(entry);
        let Some(key) = key else {
            return start;
        };
        let Some(off) = entry.referenced.span().byte_offset() else {
            return start;
        };
        let Some(rest) = self.text.get(off as usize..) else {
            return start;
        };
        let indent = start.1.saturating_sub(1) as usize;
        for (n, line) in rest.split('\n').enumerate() {
            let lead = line.len() - line.trim_start().len();
            if n > 0 && !line.trim().is_empty() && lead < indent {
                break;
            }
            let mut from = 0;
            while let Some(i) = line[from..].find(key) {
                let pos = from + i;
                let before = line[..pos].chars().last();
                let after = line[pos + key.len()..].trim_start();
                let word_start = before.is_none_or(|c| " \t{,-\"'".contains(c));
                if word_start && after.starts_with(':') {
                    let column = line[..pos].chars().count() as u32;
                    return if n == 0 {
                        (start.0, start.1 + column)
                    } else {
                        (start.0 + n as u32, column + 1)
                    };
                }
                from = pos + key.len();
            }
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::testkit::{errors, gate_of, spec};
    use crate::spec::Limits;
    use std::path::Path;

    const RULES: &str = concat!(
        "      - type: manual_gate\n",
        "        prompt: pay?\n",
        "        approvers:\n",
        "          - when: \"{{ details.amount > 10000 }}\"\n",
        "            approvers: [cfo, group:finance]\n",
        "            quorum: 2\n",
        "            timeout: 8h business\n",
        "          - approvers: [group:support]\n",
    );

    #[test]
    fn a_gate_takes_rules_and_names_still_work() {
        let g = gate_of(&spec(RULES));
        assert_eq!(g.approvers, None);
        assert_eq!(g.rules.len(), 2);
        assert_eq!(g.rules[0].quorum, Some(2));
        assert_eq!(g.rules[0].approvers, vec!["cfo", "group:finance"]);
        let t = g.rules[0].timeout.unwrap();
        assert_eq!((t.secs, t.business), (28_800, true));
        assert_eq!(g.rules[1].when, None);
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [alice, bob]\n",
        ));
        assert_eq!(g.approvers, Some(vec!["alice".into(), "bob".into()]));
        assert!(g.rules.is_empty());
    }

    #[test]
    fn step_up_is_read_on_a_gate_and_a_rule_and_a_wrong_one_is_named_at_its_line() {
        let text = spec(RULES).replace(
            "            quorum: 2\n",
            "            quorum: 2\n            step_up: passkey\n",
        );
        let g = gate_of(&text);
        assert_eq!(
            g.rules[0].step_up,
            Some(crate::model::step_up::StepUp::Passkey)
        );
        assert_eq!(g.rules[1].step_up, None);
        assert_eq!(g.step_up, None);
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        step_up: passkey\n",
        ));
        assert_eq!(g.step_up, Some(crate::model::step_up::StepUp::Passkey));
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        step_up: totp\n",
        ));
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!((d[0].line, d[0].column), (15, 18), "{d:#?}");
        assert!(d[0].message.contains("step_up"), "{d:#?}");
        let d = errors(&text.replace("step_up: passkey", "step_up: sms"));
        assert!(d.iter().any(|d| d.message.contains("step_up")), "{d:#?}");
    }

    #[test]
    fn trust_never_is_read_on_a_rule_and_another_value_is_named_at_its_line() {
        let text = spec(RULES).replace(
            "            quorum: 2\n",
            "            quorum: 2\n            trust: never\n",
        );
        let (g, warnings) = super::super::testkit::gate_with(&text, &Limits::default());
        assert!(g.rules[0].trust_never);
        assert!(!g.rules[1].trust_never);
        assert!(
            warnings.iter().any(|w| w.contains("applies to tool calls")),
            "on a gate it changes nothing: {warnings:?}"
        );
        let g = gate_of(&text.replace("trust: never", "trust: allowed"));
        assert!(!g.rules[0].trust_never);
        let d = errors(&text.replace("trust: never", "trust: sometimes"));
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].line, 19, "{d:#?}");
        assert!(d[0].message.contains("`trust` is `never`"), "{d:#?}");
    }

    #[test]
    fn rules_without_a_default_are_refused_at_the_last_rule() {
        let text = spec(RULES).replace(
            "          - approvers: [group:support]\n",
            "          - when: \"{{ details.amount > 10 }}\"\n            approvers: [group:support]\n",
        );
        let d = errors(&text);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!((d[0].line, d[0].column), (20, 13), "{d:#?}");
        assert!(
            d[0].message.contains("the last rule is the default"),
            "{d:#?}"
        );
        assert!(d[0].hint.as_deref().unwrap_or("").contains("default rule"));
    }

    #[test]
    fn a_bad_condition_or_timeout_is_refused_at_its_line() {
        let text = spec(RULES).replace("details.amount > 10000", "details.amount >");
        let d = errors(&text);
        assert_eq!((d[0].line, d[0].column), (16, 13), "{d:#?}");
        assert!(d[0].message.contains("approval rule 1"), "{d:#?}");
        assert!(d[0].message.contains("`when` does not parse"), "{d:#?}");
        let text = spec(RULES).replace("8h business", "8 fortnights");
        let d = errors(&text);
        assert_eq!((d[0].line, d[0].column), (19, 13), "{d:#?}");
        assert!(d[0].message.contains("is not a duration"), "{d:#?}");
        let text = spec(RULES).replace("quorum: 2", "quorum: 2\n            colour: red");
        let d = errors(&text);
        assert_eq!((d[0].line, d[0].column), (19, 13), "{d:#?}");
        assert!(d[0].message.contains("does not take `colour`"), "{d:#?}");
    }

    #[test]
    fn names_and_rules_do_not_mix_and_a_default_comes_last() {
        let text = spec(RULES).replace(
            "          - approvers: [group:support]\n",
            "          - bob\n",
        );
        let d = errors(&text);
        assert_eq!(d[0].line, 20, "{d:#?}");
        assert!(d[0].message.contains("mixes names"), "{d:#?}");
        let text = spec(RULES).replace(
            "          - when: \"{{ details.amount > 10000 }}\"\n",
            "          - label: big\n",
        );
        let d = errors(&text);
        assert_eq!(d[0].line, 16, "{d:#?}");
        assert!(
            d[0].message.contains("rules after it never apply"),
            "{d:#?}"
        );
    }

    #[test]
    fn security_approvers_take_rules_too() {
        let text = spec("      - type: manual_gate\n        prompt: ok?\n").replace(
            "agents:\n",
            "security:\n  approvers:\n    - when: \"{{ tool.name == 'delete_rows' }}\"\n      approvers: [group:dba]\n    - approvers: [group:support]\nagents:\n",
        );
        let s = match parse(&text, Path::new("f.yaml"), &Limits::default()) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(s.approval.rules.len(), 2);
        assert!(s.approval.approvers.is_empty());
        let bad = text.replace("      approvers: [group:dba]\n", "");
        let d = errors(&bad);
        assert_eq!(d[0].line, 7, "{d:#?}");
        assert!(
            d[0].message
                .contains("security.approvers: approval rule 1: a rule needs `approvers`"),
            "{d:#?}"
        );
    }
}
