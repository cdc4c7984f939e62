//! Validation of gate steps, in either syntax: strands-cli's `type: hitl`
//! (`prompt`, `context_display`, `default`, `timeout_seconds`) and the
//! seed's `type: manual_gate` (`timeout_minutes`, `fallback_action`,
//! previews), plus what both may carry: a `condition`, approvers and
//! quorums, a chat `channel`, reminders and escalation.
//!
//! Every pattern's gates come through here, so a gate means the same in a
//! chain, a graph node or an evaluator's review. Timeouts, reminder
//! intervals and escalation timeouts are at most the validator's
//! `Limits::max_timeout_secs`.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::raw;
use super::{at, Body, Validator};
use crate::spec::{
    EscalationTarget, Fallback, GateKind, GateSpec, GateTimers, DEFAULT_MAX_REMINDERS,
    DEFAULT_PREVIEW_LENGTH,
};

/// What a gate's `notify` asks for beside its approval message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Notify {
    Channel,
    Dm,
    Email,
}

impl Validator {
    /// A `hitl` or `manual_gate` step (`k` is which): keys of the other
    /// syntax or of agent steps are refused, a `prompt` is required, and
    /// templates and the condition must parse.
    pub(super) fn gate(
        &mut self,
        s: &raw::Step,
        k: &str,
        label: &str,
        loc: (u32, u32),
        default_id: &str,
    ) -> Option<Body> {
        let hitl = k == "hitl";
        let mut wrong = Vec::new();
        if s.agent.is_some() {
            wrong.push("agent");
        }
        if s.input.is_some() {
            wrong.push("input");
        }
        if s.vars.is_some() {
            wrong.push("vars");
        }
        if hitl {
            if s.timeout_minutes.is_some() {
                wrong.push("timeout_minutes (hitl uses timeout_seconds)");
            }
            if s.form.is_some() {
                wrong.push("form (a manual_gate's)");
            }
            if s.allow_trust.is_some() {
                wrong.push("allow_trust (a manual_gate's)");
            }
            if s.allow_edit.is_some() {
                wrong.push("allow_edit (a manual_gate's)");
            }
        } else {
            if s.timeout_seconds.is_some() {
                wrong.push("timeout_seconds (manual_gate uses timeout_minutes)");
            }
            let default_fallback = s
                .fallback_action
                .as_ref()
                .is_some_and(|f| f.value.trim() == "default");
            if s.default.is_some() && !default_fallback {
                wrong.push("default (manual_gate uses fallback_action; `default` only with fallback_action: default)");
            }
        }
        if !wrong.is_empty() {
            self.error(
                loc,
                format!("{label}: a `{k}` gate does not take {}", wrong.join(", ")),
                None,
            );
        }
        let Some(prompt) = &s.prompt else {
            self.error(
                loc,
                format!("{label}: a `{k}` gate needs a `prompt`"),
                Some("prompt: \"What should the human decide?\"".into()),
            );
            return None;
        };
        self.template(prompt, &format!("the prompt of {label}"));
        if let Some(c) = &s.context_display {
            self.template(c, &format!("the context_display of {label}"));
        }
        if let Some(c) = &s.condition {
            if let Err(e) = self.templates.check_condition(&c.value) {
                self.error(
                    at(c),
                    format!("condition of {label}: {}", e.message),
                    Some(
                        "a condition is an expression like `{{ steps[0].response|length < 1000 }}`"
                            .into(),
                    ),
                );
            }
        }
        let (fallback, timeout_secs, timers) = self.gate_timing(s, label, loc, hitl);
        let (approvers, rules) = self.approvers(s.approvers.as_ref(), label);
        if rules.iter().any(|r| r.trust_never) {
            self.warnings.push(format!(
                "{}: {label}: a rule's `trust: never` applies to tool calls (security.approvers); on a gate's own approvers it changes nothing",
                self.file
            ));
        }
        let named = approvers
            .clone()
            .or_else(|| (!rules.is_empty()).then(|| super::every_approver(&rules)));
        let (timeout_secs, hours) = self.gate_hours(s, label, loc, timeout_secs, fallback);
        if hours.is_none() {
            let rloc = s.approvers.as_ref().map(at).unwrap_or(loc);
            self.rules_hours(label, rloc, &rules);
        }
        let notify = self.notify(s, label, named.as_ref());
        let (notify_dm, notify_email) = (notify == Notify::Dm, notify == Notify::Email);
        let (form, allow_trust) = if hitl {
            (None, false)
        } else {
            self.gate_form(s, label, loc, fallback)
        };
        let step_up = s.step_up.as_ref().and_then(|t| {
            let parsed = crate::model::step_up::StepUp::parse(&t.value);
            if parsed.is_none() {
                self.error(
                    at(t),
                    format!("step_up of {label} is `passkey`, not `{}`", t.value),
                    Some("step_up: passkey (approving takes a passkey on the gate's page)".into()),
                );
            }
            parsed
        });
        Some(Body::Gate(GateSpec {
            id: s
                .id
                .as_ref()
                .map(|i| i.value.trim().to_string())
                .unwrap_or_else(|| default_id.to_string()),
            kind: if hitl {
                GateKind::Hitl
            } else {
                GateKind::ManualGate
            },
            prompt: prompt.value.clone(),
            context_display: s.context_display.as_ref().map(|c| c.value.clone()),
            default: s.default.as_ref().map(|d| d.value.clone()),
            timeout_secs,
            fallback,
            condition: s.condition.as_ref().map(|c| c.value.clone()),
            show_preview: s.show_preview.unwrap_or(true),
            preview_length: s.preview_length.unwrap_or(DEFAULT_PREVIEW_LENGTH).max(1),
            require_reason: s.require_reason.unwrap_or(false),
            channel: s
                .channel
                .as_ref()
                .map(|c| c.value.trim().trim_start_matches('#').to_string()),
            approvers,
            rules,
            approvals_required: s.approvals_required.filter(|n| *n >= 1),
            rejections_required: s.rejections_required.filter(|n| *n >= 1),
            allow_self_approval: s.allow_self_approval,
            notify_dm,
            notify_email,
            timers,
            hours,
            form,
            allow_trust,
            allow_edit: !hitl && s.allow_edit.as_ref().is_some_and(|e| e.value),
            step_up,
        }))
    }

    /// `notify`: `channel` (the default), `dm` — a direct message to each
    /// approver named by Slack user id, so `dm` needs at least one among
    /// the gate's approvers (or `security.approvers` when it names none) —
    /// or `email`: a mail to each approver, so the gate must name some.
    fn notify(
        &mut self,
        s: &raw::Step,
        label: &str,
        named: Option<&Vec<crate::model::Approver>>,
    ) -> Notify {
        let Some(n) = &s.notify else {
            return Notify::Channel;
        };
        match n.value.trim() {
            "channel" => Notify::Channel,
            "email" => {
                let approvers = named.unwrap_or(&self.default_approvers).clone();
                // Something meant as an address that is not one is refused
                // here, not bounced by the mail server later.
                let bad: Vec<String> = approvers
                    .iter()
                    .filter_map(|a| match a {
                        crate::model::Approver::Email(e)
                            if crate::model::mail::address(e).is_none() =>
                        {
                            Some(e.clone())
                        }
                        _ => None,
                    })
                    .collect();
                let none = approvers.is_empty();
                if !bad.is_empty() {
                    let verb = if bad.len() == 1 { "is" } else { "are" };
                    self.error(
                        at(n),
                        format!(
                            "{label}: notify: email, but {} {verb} not an e-mail address",
                            bad.join(", ")
                        ),
                        Some("an address is local@domain.tld, e.g. carol@corp.example".into()),
                    );
                }
                if none {
                    self.error(
                        at(n),
                        format!("{label}: notify: email mails each approver, but the gate names no approvers (nor does security.approvers)"),
                        Some("approvers: [carol@corp.example]   # an address, or a person with one".into()),
                    );
                }
                Notify::Email
            }
            "dm" => {
                let approvers = named.unwrap_or(&self.default_approvers).clone();
                let direct = |a: &crate::model::Approver| match a {
                    crate::model::Approver::SlackUser(_) => true,
                    crate::model::Approver::TeamsUser(id) => !id.is_empty(),
                    _ => false,
                };
                if !approvers.iter().any(direct) {
                    self.error(
                        at(n),
                        format!(
                            "{label}: notify: dm sends each approver named by Slack user id (or teams:<Entra object ID>) a direct message, but {} no such person",
                            if named.is_some() {
                                "its approvers name"
                            } else {
                                "it names no approvers and security.approvers names"
                            }
                        ),
                        Some("approvers: [U0123ABCD, U0456EFGH]   # Slack user ids (U…)".into()),
                    );
                }
                Notify::Dm
            }
            other => {
                self.error(
                    at(n),
                    format!("{label}: unknown notify `{other}`"),
                    Some("notify is `dm` (each approver also gets a direct message), `email` (each approver also gets a mail) or `channel` (the default)".into()),
                );
                Notify::Channel
            }
        }
    }

    /// A gate's timeout, `fallback_action`, reminders and escalation:
    /// timeouts at most `Limits::max_timeout_secs`, a `default` where the fallback
    /// needs one, an `escalation_target` where escalation needs one.
    fn gate_timing(
        &mut self,
        s: &raw::Step,
        label: &str,
        loc: (u32, u32),
        hitl: bool,
    ) -> (Fallback, Option<u64>, GateTimers) {
        let fallback_loc = s.fallback_action.as_ref().map(at).unwrap_or(loc);
        let fallback = match s.fallback_action.as_ref().map(|f| f.value.trim()) {
            // strands-cli: a hitl gate answers its `default` (or rejects without one).
            None if hitl => Fallback::Default,
            None | Some("cancel" | "reject") => Fallback::Cancel,
            Some("continue" | "approve") => Fallback::Continue,
            Some("skip") => Fallback::Skip,
            Some("abort") => Fallback::Abort,
            Some("default") => Fallback::Default,
            Some("escalate") => Fallback::Escalate,
            Some(other) => {
                self.error(
                    fallback_loc,
                    format!("{label}: unknown fallback_action `{other}`"),
                    Some("fallback_action is `approve`, `reject`, `skip`, `abort`, `default` or `escalate` (`continue` or `cancel` also work)".into()),
                );
                Fallback::Cancel
            }
        };
        if s.fallback_action.is_some() && fallback == Fallback::Default {
            match &s.default {
                None => self.error(
                    fallback_loc,
                    format!("{label}: fallback_action `default` needs a `default` answer"),
                    Some(if hitl {
                        "default: \"approved\"".into()
                    } else {
                        "default: approve (or reject)".into()
                    }),
                ),
                Some(d) if !hitl => {
                    let word = d.value.trim().to_ascii_lowercase();
                    if !matches!(
                        word.as_str(),
                        "approve" | "approved" | "reject" | "rejected"
                    ) {
                        self.error(
                            at(d),
                            format!("{label}: a manual_gate's `default` is `approve` or `reject`, not `{}`", d.value.trim()),
                            None,
                        );
                    }
                }
                Some(_) => {}
            }
        }
        let (raw, unit, per) = if hitl {
            (s.timeout_seconds.as_ref(), "timeout_seconds", 1)
        } else {
            (s.timeout_minutes.as_ref(), "timeout_minutes", 60)
        };
        let timeout_secs = raw
            .map(|t| (t.value.saturating_mul(per), at(t)))
            .filter(|(t, _)| *t > 0);
        let max = self.limits.max_timeout_secs;
        if let Some((t, tloc)) = timeout_secs {
            if t > max {
                self.error(
                    tloc,
                    format!(
                        "{label}: {unit} is {} days, longer than the limit of {} days",
                        fmt_days(t),
                        fmt_days(max)
                    ),
                    Some(
                        "gates wait at most 7 days; set STRANDS_MAX_TIMEOUT_DAYS to allow longer"
                            .into(),
                    ),
                );
            }
        }
        let timeout_secs = timeout_secs.map(|(t, _)| t);
        let minutes = |me: &mut Validator, v: &Option<Spanned<f64>>, key: &str| {
            let v = v.as_ref()?;
            let ok = v.value.is_finite() && v.value > 0.0 && v.value * 60.0 <= max as f64;
            if !ok {
                me.error(
                    at(v),
                    format!(
                        "{label}: {key} is minutes, more than 0 and at most {} days",
                        fmt_days(max)
                    ),
                    None,
                );
                return None;
            }
            let d = std::time::Duration::from_secs_f64(v.value * 60.0);
            Some(d.max(std::time::Duration::from_secs(1)))
        };
        let reminder_interval = minutes(self, &s.reminder_interval, "reminder_interval");
        let remind_before = minutes(self, &s.remind_before, "remind_before");
        let escalation_timeout = minutes(self, &s.escalation_timeout, "escalation_timeout");
        if let (Some(m), None) = (&s.max_reminders, &s.reminder_interval) {
            self.error(
                at(m),
                format!("{label}: max_reminders needs a reminder_interval"),
                Some("reminder_interval: 60   # minutes".into()),
            );
        }
        let max_reminders = s
            .max_reminders
            .as_ref()
            .map(|m| m.value)
            .unwrap_or(DEFAULT_MAX_REMINDERS);
        let mut escalation_target = Vec::new();
        if let Some(t) = &s.escalation_target {
            let entries: Vec<Option<&str>> = match &t.value {
                Value::String(one) => vec![Some(one.as_str())],
                Value::Array(list) => list.iter().map(Value::as_str).collect(),
                _ => vec![None],
            };
            for e in entries {
                match e.map(EscalationTarget::parse) {
                    Some(Ok(target)) => escalation_target.push(target),
                    Some(Err(why)) => self.error(at(t), format!("{label}: escalation_target: {why}"), None),
                    None => self.error(
                        at(t),
                        format!("{label}: escalation_target is a Slack id or channel, or a list of them"),
                        Some("escalation_target: [U0123ABCD, \"#ops-oncall\"]".into()),
                    ),
                }
            }
            if escalation_target.is_empty() && matches!(&t.value, Value::Array(l) if l.is_empty()) {
                self.error(at(t), format!("{label}: escalation_target is empty"), None);
            }
            let channels = escalation_target
                .iter()
                .filter(|t| matches!(t, EscalationTarget::Channel(c) if c.slack().is_some()))
                .count();
            if channels > 1 {
                self.error(
                    at(t),
                    format!("{label}: escalation_target names {channels} channels; name one"),
                    None,
                );
            }
        }
        let closed_escalates = s
            .when_closed
            .as_ref()
            .filter(|w| w.value.trim() == "escalate");
        let wants_target = escalation_timeout.is_some()
            || fallback == Fallback::Escalate
            || closed_escalates.is_some();
        match (&s.escalation_target, wants_target) {
            (None, true) => {
                let (what, wloc) = match (&s.escalation_timeout, closed_escalates) {
                    (Some(e), _) => ("escalation_timeout", at(e)),
                    (None, Some(w)) if fallback != Fallback::Escalate => {
                        ("when_closed `escalate`", at(w))
                    }
                    _ => ("fallback_action `escalate`", fallback_loc),
                };
                self.error(
                    wloc,
                    format!("{label}: {what} needs an escalation_target"),
                    Some("escalation_target: [U0123ABCD]   # users (U…), groups (S…), a channel (C… / #name), teams:<Entra object ID or conversation id>".into()),
                );
            }
            (Some(t), false) => self.error(
                at(t),
                format!("{label}: escalation_target needs an escalation_timeout, fallback_action: escalate or when_closed: escalate"),
                Some("escalation_timeout: 30   # minutes".into()),
            ),
            _ => {}
        }
        if let (Some(e), Some(t)) = (escalation_timeout, timeout_secs) {
            if e.as_secs_f64() >= t as f64 && fallback != Fallback::Escalate {
                self.warnings.push(format!(
                    "{label}: escalation_timeout is not shorter than the gate's timeout, so the fallback applies first and the request is never escalated"
                ));
            }
        }
        (
            fallback,
            timeout_secs,
            GateTimers {
                reminder_interval,
                max_reminders: if reminder_interval.is_some() {
                    max_reminders
                } else {
                    0
                },
                remind_before,
                escalation_timeout,
                escalation_target,
            },
        )
    }
}

pub(super) fn gate_keys(s: &raw::Step) -> Vec<&'static str> {
    let mut v = Vec::new();
    if s.prompt.is_some() {
        v.push("prompt");
    }
    if s.context_display.is_some() {
        v.push("context_display");
    }
    if s.default.is_some() {
        v.push("default");
    }
    if s.timeout_seconds.is_some() {
        v.push("timeout_seconds");
    }
    if s.condition.is_some() {
        v.push("condition");
    }
    if s.timeout_minutes.is_some() {
        v.push("timeout_minutes");
    }
    if s.fallback_action.is_some() {
        v.push("fallback_action");
    }
    if s.show_preview.is_some() {
        v.push("show_preview");
    }
    if s.preview_length.is_some() {
        v.push("preview_length");
    }
    if s.require_reason.is_some() {
        v.push("require_reason");
    }
    if s.channel.is_some() {
        v.push("channel");
    }
    if s.approvers.is_some() {
        v.push("approvers");
    }
    if s.approvals_required.is_some() {
        v.push("approvals_required");
    }
    if s.rejections_required.is_some() {
        v.push("rejections_required");
    }
    if s.allow_self_approval.is_some() {
        v.push("allow_self_approval");
    }
    if s.notify.is_some() {
        v.push("notify");
    }
    if s.reminder_interval.is_some() {
        v.push("reminder_interval");
    }
    if s.max_reminders.is_some() {
        v.push("max_reminders");
    }
    if s.remind_before.is_some() {
        v.push("remind_before");
    }
    if s.escalation_timeout.is_some() {
        v.push("escalation_timeout");
    }
    if s.escalation_target.is_some() {
        v.push("escalation_target");
    }
    if s.timeout.is_some() {
        v.push("timeout");
    }
    if s.calendar.is_some() {
        v.push("calendar");
    }
    if s.when_closed.is_some() {
        v.push("when_closed");
    }
    if s.auto_approve.is_some() {
        v.push("auto_approve");
    }
    if s.timers_outside_hours.is_some() {
        v.push("timers_outside_hours");
    }
    if s.form.is_some() {
        v.push("form");
    }
    if s.allow_trust.is_some() {
        v.push("allow_trust");
    }
    if s.allow_edit.is_some() {
        v.push("allow_edit");
    }
    if s.step_up.is_some() {
        v.push("step_up");
    }
    v
}

/// Seconds as days, for messages (`0.5`, `7`).
pub(super) fn fmt_days(secs: u64) -> String {
    let days = secs as f64 / 86_400.0;
    if days.fract() == 0.0 {
        format!("{days:.0}")
    } else {
        format!("{days:.2}")
    }
}

/// Gate timeouts, fallbacks, reminders and escalation (`gate_timing`).
#[cfg(test)]
mod timing_tests {
    use super::super::parse;
    use super::super::testkit::{errors, gate_of, spec};
    use super::*;
    use crate::error::Error;
    use crate::spec::Limits;
    use std::path::Path;

    #[test]
    fn every_fallback_word_and_the_old_ones() {
        for (word, want) in [
            ("approve", Fallback::Continue),
            ("continue", Fallback::Continue),
            ("reject", Fallback::Cancel),
            ("cancel", Fallback::Cancel),
            ("skip", Fallback::Skip),
            ("abort", Fallback::Abort),
        ] {
            let g = gate_of(&spec(&format!(
                "      - type: hitl\n        prompt: ok?\n        fallback_action: {word}\n"
            )));
            assert_eq!(g.fallback, want, "{word}");
        }
        // strands-cli: a hitl gate without one answers its default.
        let g = gate_of(&spec("      - type: hitl\n        prompt: ok?\n"));
        assert_eq!(g.fallback, Fallback::Default);
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        fallback_action: default\n        default: approve\n",
        ));
        assert_eq!(g.fallback, Fallback::Default);
        assert_eq!(g.default.as_deref(), Some("approve"));
    }

    #[test]
    fn defaults_and_escalation_targets_are_checked_where_written() {
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        fallback_action: default\n        default: maybe\n",
        ));
        assert_eq!((d[0].line, d[0].column), (16, 18), "{d:#?}");
        assert!(d[0].message.contains("`approve` or `reject`"), "{d:#?}");
        let d = errors(&spec(
            "      - type: hitl\n        prompt: ok?\n        fallback_action: escalate\n",
        ));
        assert_eq!((d[0].line, d[0].column), (15, 26), "{d:#?}");
        assert!(
            d[0].message.contains("needs an escalation_target"),
            "{d:#?}"
        );
        let d = errors(&spec(
            "      - type: hitl\n        prompt: ok?\n        escalation_timeout: 5\n        escalation_target: [U0BOSS1, bob]\n",
        ));
        assert_eq!((d[0].line, d[0].column), (16, 28), "{d:#?}");
        assert!(d[0].message.contains("`bob`"), "{d:#?}");
    }

    #[test]
    fn notify_dm_needs_a_slack_user_among_the_approvers() {
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [U0ALICE1, S0LEADS1]\n        notify: dm\n",
        ));
        assert!(g.notify_dm);
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        notify: channel\n",
        ));
        assert!(!g.notify_dm);
        // `security.approvers` count when the gate names nobody.
        let text = spec("      - type: manual_gate\n        prompt: ok?\n        notify: dm\n")
            .replace("agents:\n", "security:\n  approvers: [U0ALICE1]\nagents:\n");
        assert!(gate_of(&text).notify_dm);
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [alice, S0LEADS1]\n        notify: dm\n",
        ));
        assert_eq!((d[0].line, d[0].column), (16, 17), "{d:#?}");
        assert!(d[0].message.contains("no such person"), "{d:#?}");
        // Teams people (`teams:<Entra object ID>`) get a 1:1 card.
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [\"teams:aad-1\"]\n        notify: dm\n",
        ));
        assert!(g.notify_dm);
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        notify: dm\n",
        ));
        assert_eq!(d[0].line, 15, "{d:#?}");
        assert!(d[0].message.contains("names no approvers"), "{d:#?}");
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [carol@corp, U0ALICE1]\n        notify: email\n",
        ));
        assert!(
            d[0].message.contains("carol@corp is not an e-mail address"),
            "{d:#?}"
        );
        let d = errors(&spec(
            "      - type: hitl\n        prompt: ok?\n        notify: pager\n",
        ));
        assert_eq!((d[0].line, d[0].column), (15, 17), "{d:#?}");
        assert!(d[0].message.contains("unknown notify `pager`"), "{d:#?}");
        assert!(d[0].hint.as_deref().unwrap_or_default().contains("`email`"));
        // `email` mails each approver: it needs some.
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        approvers: [carol@corp.example]\n        notify: email\n",
        ));
        assert!(g.notify_email && !g.notify_dm);
        let d = errors(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        notify: email\n",
        ));
        assert!(d[0].message.contains("names no approvers"), "{d:#?}");
        // Not on an agent step.
        let d = errors(&spec("      - agent: a\n        notify: dm\n"));
        assert!(d[0].message.contains("notify"), "{d:#?}");
    }

    #[test]
    fn reminders_and_escalation_become_durations() {
        let g = gate_of(&spec(concat!(
            "      - type: manual_gate\n",
            "        prompt: ok?\n",
            "        timeout_minutes: 60\n",
            "        reminder_interval: 0.5\n",
            "        max_reminders: 2\n",
            "        remind_before: 15\n",
            "        escalation_timeout: 30\n",
            "        escalation_target: [U0BOSS1, S0LEADS1, \"#ops\"]\n",
        )));
        assert_eq!(g.timeout_secs, Some(3600));
        let t = &g.timers;
        assert_eq!(
            t.reminder_interval,
            Some(std::time::Duration::from_secs(30))
        );
        assert_eq!(t.max_reminders, 2);
        assert_eq!(t.remind_before, Some(std::time::Duration::from_secs(900)));
        assert_eq!(
            t.escalation_timeout,
            Some(std::time::Duration::from_secs(1800))
        );
        assert_eq!(
            t.escalation_target,
            vec![
                EscalationTarget::User("U0BOSS1".into()),
                EscalationTarget::Group("S0LEADS1".into()),
                EscalationTarget::Channel("ops".into()),
            ]
        );
        let g = gate_of(&spec(
            "      - type: hitl\n        prompt: ok?\n        reminder_interval: 10\n",
        ));
        assert_eq!(g.timers.max_reminders, DEFAULT_MAX_REMINDERS);
    }

    #[test]
    fn timeouts_are_checked_against_the_limits_given() {
        // 10 days: over the default 7, within 30.
        let ten_days =
            spec("      - type: hitl\n        prompt: ok?\n        timeout_seconds: 864000\n");
        let d = errors(&ten_days);
        assert_eq!((d[0].line, d[0].column), (15, 26), "{d:#?}");
        assert!(
            d[0].message
                .contains("timeout_seconds is 10 days, longer than the limit of 7 days"),
            "{d:#?}"
        );
        let thirty = Limits {
            max_timeout_secs: 30 * 86_400,
            calendars: None,
        };
        match parse(&ten_days, Path::new("f.yaml"), &thirty) {
            Ok(_) => {}
            Err(e) => panic!("10 days is within 30: {e}"),
        }
        // Reminders and escalation share the limit: 3 days of minutes.
        let three_days =
            spec("      - type: hitl\n        prompt: ok?\n        reminder_interval: 4320\n");
        assert_eq!(
            gate_of(&three_days).timers.reminder_interval,
            Some(std::time::Duration::from_secs(3 * 86_400))
        );
        let two = Limits {
            max_timeout_secs: 2 * 86_400,
            calendars: None,
        };
        match parse(&three_days, Path::new("f.yaml"), &two) {
            Err(Error::Spec(d)) => {
                assert_eq!((d[0].line, d[0].column), (15, 28), "{d:#?}");
                assert!(
                    d[0].message
                        .contains("reminder_interval is minutes, more than 0 and at most 2 days"),
                    "{d:#?}"
                );
            }
            other => panic!("expected diagnostics, got {other:?}"),
        }
    }

    #[test]
    fn teams_escalation_targets_are_people_or_conversations() {
        let g = gate_of(&spec(
            "      - type: manual_gate\n        prompt: ok?\n        escalation_timeout: 5\n        escalation_target: [\"#ops\", \"teams:aad-1\", \"teams:19:x@thread.tacv2\"]\n",
        ));
        // A Slack channel and a Teams conversation are not two channels.
        assert_eq!(
            g.timers.escalation_target,
            vec![
                EscalationTarget::Channel("ops".into()),
                EscalationTarget::User("teams:aad-1".into()),
                EscalationTarget::Channel("teams:19:x@thread.tacv2".into()),
            ]
        );
        assert_eq!(
            EscalationTarget::User("teams:aad-1".into()).to_string(),
            "teams:aad-1"
        );
        assert!(EscalationTarget::parse("teams:").is_err());
    }
}
