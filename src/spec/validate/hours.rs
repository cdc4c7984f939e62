//! A gate's business hours: `timeout: 8h business`, `calendar`,
//! `when_closed`, `auto_approve: {outside_hours: false}` and
//! `timers_outside_hours`. Its own module because it is the one gate check
//! that depends on the installation: the calendar a gate keeps must be one
//! the service defines (`Limits::calendars`). Where the service's
//! calendars are not known (`strands validate` with no service file), a
//! gate that needs one is a warning, and `strands run` / `serve` refuse it.

use super::raw;
use super::{at, Validator};
use crate::model::calendar;
use crate::model::WhenClosed;
use crate::spec::timeout::Timeout;
use crate::spec::{Fallback, HoursSpec};

impl Validator {
    /// The gate's `timeout:` (refused beside `timeout_seconds` /
    /// `timeout_minutes`, whose value `secs` is) and its business hours.
    /// An approval rule's `timeout: … business` on a gate that names no
    /// calendar counts on the service's default one: it must exist (an
    /// error at the rule list's line), or, where the service's calendars
    /// are not known, a warning as for a gate's own keys.
    pub(super) fn rules_hours(
        &mut self,
        label: &str,
        loc: (u32, u32),
        rules: &[crate::spec::rules::ApprovalRule],
    ) {
        if !rules.iter().any(|r| r.timeout.is_some_and(|t| t.business)) {
            return;
        }
        match &self.limits.calendars {
            Some(names) => {
                if let Err(why) = calendar::pick(names, None) {
                    self.error(
                        loc,
                        format!("{label}: an approval rule's timeout counts business time, but {why}"),
                        Some("calendars are defined once for the service: `calendars:` in STRANDS_SERVICE_FILE, or STRANDS_CALENDARS".into()),
                    );
                }
            }
            None => self.warnings.push(format!(
                "{label}: an approval rule's timeout counts business time (calendar `default`); the calendars are not known here, so `strands run` and `strands serve` check it against the service's (STRANDS_SERVICE_FILE, STRANDS_CALENDARS)"
            )),
        }
    }

    pub(super) fn gate_hours(
        &mut self,
        s: &raw::Step,
        label: &str,
        loc: (u32, u32),
        secs: Option<u64>,
        fallback: Fallback,
    ) -> (Option<u64>, Option<HoursSpec>) {
        let mut timeout_secs = secs;
        let mut business = false;
        if let Some(t) = &s.timeout {
            let other = match (&s.timeout_seconds, &s.timeout_minutes) {
                (Some(_), _) => Some("timeout_seconds"),
                (_, Some(_)) => Some("timeout_minutes"),
                _ => None,
            };
            if let Some(other) = other {
                self.error(
                    at(t),
                    format!("{label}: give either `timeout` or `{other}`, not both"),
                    Some("timeout: 8h business   # or 30m, 1h30m, 2d".into()),
                );
            }
            match Timeout::parse(&t.value) {
                Ok(parsed) => {
                    let max = self.limits.max_timeout_secs;
                    if parsed.secs > max {
                        self.error(
                            at(t),
                            format!(
                                "{label}: timeout is {} days, longer than the limit of {} days",
                                super::gates::fmt_days(parsed.secs),
                                super::gates::fmt_days(max)
                            ),
                            Some("gates wait at most 7 days; set STRANDS_MAX_TIMEOUT_DAYS to allow longer".into()),
                        );
                    }
                    timeout_secs = Some(parsed.secs);
                    business = parsed.business;
                }
                Err(why) => self.error(at(t), format!("{label}: timeout: {why}"), None),
            }
        }
        let when_closed = match s.when_closed.as_ref().map(|w| (w.value.trim(), at(w))) {
            None | Some(("wait", _)) => WhenClosed::Wait,
            Some(("escalate", _)) => WhenClosed::Escalate,
            Some(("reject", _)) => WhenClosed::Reject,
            Some((other, wloc)) => {
                self.error(
                    wloc,
                    format!("{label}: unknown when_closed `{other}`"),
                    Some("when_closed is `wait` (the default), `escalate` or `reject`".into()),
                );
                WhenClosed::Wait
            }
        };
        let auto_approve_outside_hours = s
            .auto_approve
            .as_ref()
            .is_none_or(|a| a.value.outside_hours);
        if let (Some(a), false) = (&s.auto_approve, auto_approve_outside_hours) {
            if fallback != Fallback::Continue && fallback != Fallback::Default {
                self.warnings.push(format!(
                    "{label}: auto_approve: {{outside_hours: false}} (line {}) changes nothing: the gate's fallback ({}) never approves",
                    at(a).0,
                    fallback.name()
                ));
            }
        }
        let timers_outside_hours = s.timers_outside_hours.as_ref().is_some_and(|t| t.value);
        let uses = business
            || s.calendar.is_some()
            || s.when_closed.is_some()
            || s.auto_approve.is_some()
            || s.timers_outside_hours.is_some();
        if !uses {
            return (timeout_secs, None);
        }
        let named = s.calendar.as_ref().map(|c| c.value.trim().to_string());
        // Where the error points: the key that asks for a calendar.
        let wloc = s
            .calendar
            .as_ref()
            .map(at)
            .or(s.timeout.as_ref().filter(|_| business).map(at))
            .or(s.when_closed.as_ref().map(at))
            .or(s.auto_approve.as_ref().map(at))
            .or(s.timers_outside_hours.as_ref().map(at))
            .unwrap_or(loc);
        match &self.limits.calendars {
            Some(names) => {
                if let Err(why) = calendar::pick(names, named.as_deref()) {
                    self.error(
                        wloc,
                        format!("{label}: keeps business hours, but {why}"),
                        Some("calendars are defined once for the service: `calendars:` in STRANDS_SERVICE_FILE, or STRANDS_CALENDARS".into()),
                    );
                }
            }
            None => self.warnings.push(format!(
                "{label}: keeps business hours (calendar {}); the calendars are not known here, so `strands run` and `strands serve` check it against the service's (STRANDS_SERVICE_FILE, STRANDS_CALENDARS)",
                named.as_deref().map(|n| format!("`{n}`")).unwrap_or_else(|| "`default`".into())
            )),
        }
        (
            timeout_secs,
            Some(HoursSpec {
                calendar: named,
                business_timeout: business,
                when_closed,
                auto_approve_outside_hours,
                timers_outside_hours,
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{errors_with as errors, gate_with as gate_of, spec};
    use crate::model::WhenClosed;
    use crate::spec::{parse, Limits};
    use std::path::Path;

    fn limits(names: &[&str]) -> Limits {
        Limits {
            calendars: Some(names.iter().map(|n| n.to_string()).collect()),
            ..Limits::default()
        }
    }

    #[test]
    fn a_business_timeout_keeps_the_default_calendar() {
        let (g, _) = gate_of(
            &spec("      - type: manual_gate\n        prompt: ok?\n        timeout: 8h business\n        fallback_action: approve\n        auto_approve: {outside_hours: false}\n"),
            &limits(&["default", "us"]),
        );
        assert_eq!(g.timeout_secs, Some(8 * 3600));
        let h = g.hours.expect("hours");
        assert!(h.business_timeout && !h.auto_approve_outside_hours && !h.timers_outside_hours);
        assert_eq!((h.calendar, h.when_closed), (None, WhenClosed::Wait));
        // A plain `timeout:` keeps no calendar.
        let (g, _) = gate_of(
            &spec("      - type: hitl\n        prompt: ok?\n        timeout: 1h30m\n"),
            &limits(&[]),
        );
        assert_eq!((g.timeout_secs, g.hours), (Some(5400), None));
    }

    #[test]
    fn an_unknown_calendar_is_an_error_where_it_is_named() {
        let d = errors(
            &spec("      - type: manual_gate\n        prompt: ok?\n        timeout: 8h business\n        calendar: eu-ofice\n"),
            &limits(&["eu-office", "us-office"]),
        );
        assert_eq!((d[0].line, d[0].column), (16, 19), "{d:#?}");
        assert!(
            d[0].message.contains("no calendar `eu-ofice`")
                && d[0].message.contains("`eu-office`, `us-office`"),
            "{d:#?}"
        );
        // Business time with no calendar to pick: at the timeout.
        let d = errors(
            &spec("      - type: manual_gate\n        prompt: ok?\n        timeout: 8h business\n"),
            &limits(&[]),
        );
        assert_eq!((d[0].line, d[0].column), (15, 18), "{d:#?}");
        assert!(d[0].message.contains("defines no calendars"), "{d:#?}");
        // Not known here (`strands validate` without the service): a warning.
        let (g, w) = gate_of(
            &spec("      - type: manual_gate\n        prompt: ok?\n        calendar: eu-office\n        when_closed: reject\n"),
            &Limits::default(),
        );
        assert_eq!(g.hours.expect("hours").when_closed, WhenClosed::Reject);
        assert!(
            w.iter()
                .any(|w| w.contains("`eu-office`") && w.contains("not known here")),
            "{w:?}"
        );
    }

    #[test]
    fn an_evaluators_manual_review_keeps_hours_too() {
        let text = "version: 0\nname: t\nruntime:\n  provider: echo\nagents:\n  w:\n    prompt: hi\n  e:\n    prompt: judge\npattern:\n  type: evaluator_optimizer\n  config:\n    producer:\n      agent: w\n    evaluator:\n      agent: e\n    accept:\n      min_score: 8\n      max_iters: 3\n      manual_review:\n        after_iterations: 2\n        prompt: ok?\n        timeout: 4h business\n        calendar: eu-office\n";
        let s = parse(text, Path::new("f.yaml"), &limits(&["eu-office"])).expect("valid");
        let g = s.gates().into_iter().next().cloned().expect("the review");
        assert_eq!(g.timeout_secs, Some(4 * 3600));
        assert!(g.hours.expect("hours").business_timeout);
        let d = errors(text, &limits(&["us-office"]));
        assert_eq!((d[0].line, d[0].column), (24, 19), "{d:#?}");
    }

    #[test]
    fn timeouts_and_hours_keys_are_checked_where_written() {
        let l = limits(&["default"]);
        let d = errors(
            &spec("      - type: hitl\n        prompt: ok?\n        timeout: 8h\n        timeout_seconds: 60\n"),
            &l,
        );
        assert_eq!((d[0].line, d[0].column), (15, 18), "{d:#?}");
        assert!(
            d[0].message
                .contains("either `timeout` or `timeout_seconds`"),
            "{d:#?}"
        );
        let d = errors(
            &spec("      - type: hitl\n        prompt: ok?\n        timeout: soon\n"),
            &l,
        );
        assert!(d[0].message.contains("`soon` is not a duration"), "{d:#?}");
        let d = errors(
            &spec("      - type: hitl\n        prompt: ok?\n        timeout: 8d business\n"),
            &l,
        );
        assert!(
            d[0].message.contains("longer than the limit of 7 days"),
            "{d:#?}"
        );
        let d = errors(
            &spec("      - type: hitl\n        prompt: ok?\n        when_closed: later\n"),
            &l,
        );
        assert_eq!((d[0].line, d[0].column), (15, 22), "{d:#?}");
        assert!(
            d[0].message.contains("unknown when_closed `later`"),
            "{d:#?}"
        );
        // The on-call is needed to escalate to.
        let d = errors(
            &spec("      - type: hitl\n        prompt: ok?\n        when_closed: escalate\n"),
            &l,
        );
        assert!(
            d[0].message
                .contains("when_closed `escalate` needs an escalation_target"),
            "{d:#?}"
        );
        let (g, _) = gate_of(
            &spec("      - type: hitl\n        prompt: ok?\n        when_closed: escalate\n        escalation_target: U0ONCALL\n        timers_outside_hours: true\n"),
            &l,
        );
        let h = g.hours.expect("hours");
        assert!(h.when_closed == WhenClosed::Escalate && h.timers_outside_hours);
        // Not on an agent step.
        let d = errors(&spec("      - agent: a\n        timeout: 8h\n"), &l);
        assert!(d[0].message.contains("timeout"), "{d:#?}");
    }
}
