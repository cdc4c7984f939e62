//! Backtesting approval rules (`strands policy backtest`): the requests the
//! audit recorded, judged again by candidate rules and compared with what
//! was recorded — which rule each would take, who would be asked instead,
//! and whether it would need more or fewer approvals than it did.
//!
//! This module only compares. The command reads the audit and the store
//! and hands over, for each recorded request, the context its rules saw
//! and what was recorded ([`Recorded`]); the candidate rules are judged by
//! [`policy::choose`], the one rule engine, with the same fail-closed
//! behaviour. Nothing here reads a store or a clock, and nothing changes:
//! the result is a report ([`Backtest`]).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::gate::policy::{self, ApprovalRule, Choice};
use crate::model::Approver;
use crate::template::Templates;

/// What a rule asked of one request: which rule, whom, how many approvals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asked {
    /// The rule's 1-based number in its list.
    pub rule: usize,
    /// What channels show: "needs 2 of cfo because amount > 5000".
    pub summary: String,
    pub approvers: Vec<Approver>,
    pub approvals_needed: u32,
    /// Set when a condition failed and the strictest rule was taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Asked {
    /// What `choice` asks.
    pub fn of(choice: &Choice<'_>) -> Asked {
        Asked {
            rule: choice.index + 1,
            summary: choice.summary(),
            approvers: choice.rule.approvers.clone(),
            approvals_needed: choice.needs(),
            failed: choice.failed.as_ref().map(policy::Failed::detail),
        }
    }
}

/// What [`Choice::summary`] wrote, read back: the approvals needed and
/// whom it asked ("needs 2 of cfo, group:finance because …"); `None` for
/// text it did not write.
pub fn read_summary(summary: &str) -> Option<(u32, Vec<Approver>)> {
    let rest = summary.strip_prefix("needs ")?;
    let (n, rest) = rest.split_once(" of ")?;
    let needs = n.parse().ok()?;
    let end = [" because ", " (default rule)", " (strictest rule applied"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()?;
    let approvers = match &rest[..end] {
        "anyone" => Vec::new(),
        who => who.split(", ").map(Approver::parse).collect(),
    };
    Some((needs, approvers))
}

/// How a recorded request was decided (its gate's answers and timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Approved,
    Rejected,
    /// Decided by its timeout, whatever the fallback did.
    TimedOut,
    /// Not decided (yet) in the period.
    Open,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Approved => "approved",
            Outcome::Rejected => "rejected",
            Outcome::TimedOut => "timed out",
            Outcome::Open => "not decided",
        }
    }
}

/// One recorded request, ready to be judged again.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub session: String,
    /// The gate handle (`approval#1`).
    pub gate: String,
    pub at: Option<DateTime<Utc>>,
    /// The named policy of the service file whose rules decided it.
    pub policy: String,
    /// What the rules' conditions saw (`details`, `tool`, …).
    pub context: minijinja::Value,
    /// Approvals the gate needs when a rule names no quorum.
    pub base: u32,
    /// What was recorded.
    pub asked: Asked,
    pub outcome: Outcome,
    /// Approvals it was given.
    pub approvals: u32,
}

/// Whether the candidate rule needs more approvals than were needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    More,
    Fewer,
    Same,
}

/// One request judged again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replayed {
    pub session: String,
    pub gate: String,
    pub at: Option<DateTime<Utc>>,
    pub policy: String,
    pub recorded: Asked,
    pub candidate: Asked,
    pub outcome: Outcome,
    pub approvals: u32,
    pub change: Change,
    /// Approvers the candidate rule names that the recorded one did not.
    pub asked_instead: Vec<Approver>,
    /// Approvers the recorded rule named that the candidate one does not.
    pub no_longer_asked: Vec<Approver>,
}

impl Replayed {
    /// "approved by 1, the new rule needs 2".
    pub fn story(&self) -> String {
        let was = match self.outcome {
            Outcome::Approved => format!("approved by {}", self.approvals),
            other => format!(
                "{} (needed {})",
                other.word(),
                self.recorded.approvals_needed
            ),
        };
        format!(
            "{was}, the new rule needs {}",
            self.candidate.approvals_needed
        )
    }
}

/// Requests per recorded rule that a candidate rule would take.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FromRule {
    pub rule: usize,
    pub summary: String,
    pub requests: usize,
}

/// Counts, or session ids, by [`Change`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ByChange<T> {
    pub more: T,
    pub fewer: T,
    pub same: T,
}

/// What one candidate rule would have done.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleRow {
    pub policy: String,
    /// 1-based.
    pub rule: usize,
    pub summary: String,
    /// Requests it would have taken.
    pub requests: usize,
    /// The recorded rules they came from, in rule order.
    pub from: Vec<FromRule>,
    pub asked_instead: Vec<Approver>,
    pub no_longer_asked: Vec<Approver>,
    pub approvals: ByChange<usize>,
    pub sessions: ByChange<Vec<String>>,
}

/// Requests that could not be judged again, by reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotReplayed {
    pub reason: String,
    pub requests: usize,
    pub sessions: Vec<String>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Backtest {
    /// Requests recorded in the period.
    pub requests: usize,
    pub replayed: usize,
    /// Every rule of every candidate policy, in file order.
    pub rules: Vec<RuleRow>,
    /// Every request judged again, in the audit's order.
    pub replays: Vec<Replayed>,
    pub not_replayed: Vec<NotReplayed>,
}

impl Backtest {
    /// The replays whose new rule needs more (or fewer) approvals.
    pub fn changed(&self, change: Change) -> impl Iterator<Item = &Replayed> {
        self.replays.iter().filter(move |r| r.change == change)
    }
}

/// Judges every `recorded` request by the rules of the candidate policy of
/// the same name and compares. `skipped` are requests the command could
/// not rebuild, with why; a request whose policy the candidates lack is
/// added to them.
pub fn backtest(
    candidates: &BTreeMap<String, Vec<ApprovalRule>>,
    recorded: &[Recorded],
    skipped: Vec<(String, String)>,
    templates: &Templates,
) -> Backtest {
    let mut not: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (session, why) in skipped {
        not.entry(why).or_default().push(session);
    }
    let mut replays = Vec::new();
    for r in recorded {
        let Some(rules) = candidates.get(&r.policy) else {
            not.entry(format!("the candidate file has no policy `{}`", r.policy))
                .or_default()
                .push(r.session.clone());
            continue;
        };
        let Some(choice) = policy::choose(rules, templates, &r.context, r.base) else {
            not.entry(format!("policy `{}` has no rules", r.policy))
                .or_default()
                .push(r.session.clone());
            continue;
        };
        let candidate = Asked::of(&choice);
        let (was, now) = (r.asked.approvals_needed, candidate.approvals_needed);
        let change = match now.cmp(&was) {
            std::cmp::Ordering::Greater => Change::More,
            std::cmp::Ordering::Less => Change::Fewer,
            std::cmp::Ordering::Equal => Change::Same,
        };
        let old: BTreeSet<&Approver> = r.asked.approvers.iter().collect();
        let new: BTreeSet<&Approver> = candidate.approvers.iter().collect();
        replays.push(Replayed {
            session: r.session.clone(),
            gate: r.gate.clone(),
            at: r.at,
            policy: r.policy.clone(),
            asked_instead: new.difference(&old).map(|a| (*a).clone()).collect(),
            no_longer_asked: old.difference(&new).map(|a| (*a).clone()).collect(),
            recorded: r.asked.clone(),
            candidate,
            outcome: r.outcome,
            approvals: r.approvals,
            change,
        });
    }
    let mut rules = Vec::new();
    for (name, list) in candidates {
        for (index, rule) in list.iter().enumerate() {
            rules.push(row(name, index, rule, &replays));
        }
    }
    let skipped: usize = not.values().map(Vec::len).sum();
    Backtest {
        requests: replays.len() + skipped,
        replayed: replays.len(),
        rules,
        replays,
        not_replayed: not
            .into_iter()
            .map(|(reason, sessions)| NotReplayed {
                reason,
                requests: sessions.len(),
                sessions,
            })
            .collect(),
    }
}

/// The row of rule `index` of policy `name`.
fn row(name: &str, index: usize, rule: &ApprovalRule, replays: &[Replayed]) -> RuleRow {
    let taken: Vec<&Replayed> = replays
        .iter()
        .filter(|r| r.policy == name && r.candidate.rule == index + 1)
        .collect();
    let base = taken.first().map_or(1, |r| {
        // The request's own quorum, when the rule names none.
        if rule.quorum.is_none() {
            r.candidate.approvals_needed
        } else {
            1
        }
    });
    let summary = Choice {
        index,
        rule,
        failed: None,
        base,
    }
    .summary();
    let mut from: BTreeMap<usize, FromRule> = BTreeMap::new();
    let mut added = BTreeSet::new();
    let mut dropped = BTreeSet::new();
    let mut approvals = ByChange::<usize>::default();
    let mut sessions = ByChange::<Vec<String>>::default();
    for r in &taken {
        from.entry(r.recorded.rule)
            .or_insert_with(|| FromRule {
                rule: r.recorded.rule,
                summary: r.recorded.summary.clone(),
                requests: 0,
            })
            .requests += 1;
        added.extend(r.asked_instead.iter().cloned());
        dropped.extend(r.no_longer_asked.iter().cloned());
        let (n, list) = match r.change {
            Change::More => (&mut approvals.more, &mut sessions.more),
            Change::Fewer => (&mut approvals.fewer, &mut sessions.fewer),
            Change::Same => (&mut approvals.same, &mut sessions.same),
        };
        *n += 1;
        list.push(r.session.clone());
    }
    RuleRow {
        policy: name.to_string(),
        rule: index + 1,
        summary,
        requests: taken.len(),
        from: from.into_values().collect(),
        asked_instead: added.into_iter().collect(),
        no_longer_asked: dropped.into_iter().collect(),
        approvals,
        sessions,
    }
}

/// At most `n` of `ids`, then how many more.
fn examples(ids: &[String], n: usize) -> String {
    let mut out = ids.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > n {
        out.push_str(&format!(" and {} more", ids.len() - n));
    }
    out
}

/// The comparison as people read it in a terminal.
pub fn table(b: &Backtest) -> String {
    let mut out = format!(
        "{} request{} recorded; {} replayed",
        b.requests,
        if b.requests == 1 { "" } else { "s" },
        b.replayed
    );
    let skipped: usize = b.not_replayed.iter().map(|n| n.requests).sum();
    if skipped > 0 {
        out.push_str(&format!(", {skipped} not:"));
        for n in &b.not_replayed {
            out.push_str(&format!(
                "\n  {} — {} ({})",
                n.requests,
                n.reason,
                examples(&n.sessions, 3)
            ));
        }
    }
    out.push('\n');
    let head = [
        "policy",
        "rule",
        "requests",
        "from",
        "more",
        "fewer",
        "same",
        "asked instead",
        "no longer asked",
    ];
    let mut lines = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    let listed = |v: &[Approver]| {
        if v.is_empty() {
            "–".to_string()
        } else {
            crate::model::identity::listed(v)
        }
    };
    for r in &b.rules {
        let from = r
            .from
            .iter()
            .map(|f| format!("rule {}: {}", f.rule, f.requests))
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(vec![
            r.policy.clone(),
            r.rule.to_string(),
            r.requests.to_string(),
            if from.is_empty() { "–".into() } else { from },
            r.approvals.more.to_string(),
            r.approvals.fewer.to_string(),
            r.approvals.same.to_string(),
            listed(&r.asked_instead),
            listed(&r.no_longer_asked),
        ]);
    }
    let widths = (0..head.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect::<Vec<_>>();
    for l in &lines {
        let cells = l
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect::<Vec<_>>();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for r in &b.rules {
        out.push_str(&format!("\n{} rule {}: {}", r.policy, r.rule, r.summary));
    }
    out.push('\n');
    for (change, title) in [
        (Change::More, "would now need more approvals"),
        (Change::Fewer, "would now need fewer approvals"),
    ] {
        let list: Vec<&Replayed> = b.changed(change).collect();
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title} ({}):\n", list.len()));
        for r in list {
            out.push_str(&format!(
                "  {} ({} rule {} → rule {}): {}\n",
                r.session,
                r.policy,
                r.recorded.rule,
                r.candidate.rule,
                r.story()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(when: Option<&str>, approvers: &[&str], quorum: Option<u32>) -> ApprovalRule {
        ApprovalRule {
            when: when.map(str::to_string),
            approvers: approvers.iter().map(|a| Approver::parse(a)).collect(),
            quorum,
            ..Default::default()
        }
    }

    /// Rule 1: `amount > limit` → cfo, quorum `q`; else clerk.
    fn payments(limit: u32, approvers: &[&str], q: u32) -> Vec<ApprovalRule> {
        vec![
            rule(
                Some(&format!("{{{{ details.amount > {limit} }}}}")),
                approvers,
                Some(q),
            ),
            rule(None, &["clerk"], None),
        ]
    }

    /// A request of `amount` as the recorded rules chose for it.
    fn asked(n: usize, amount: Option<u32>, outcome: Outcome, approvals: u32) -> Recorded {
        let t = Templates::new();
        let old = payments(10000, &["cfo"], 1);
        let details = match amount {
            Some(a) => json!({ "amount": a }),
            None => json!({}),
        };
        let context = minijinja::Value::from_serialize(json!({
            "details": details,
            "tool": {"name": null, "args": {}},
        }));
        let choice = policy::choose(&old, &t, &context, 1).expect("a rule");
        Recorded {
            session: format!("s{n}"),
            gate: "approval#1".into(),
            at: None,
            policy: "payments".into(),
            context: context.clone(),
            base: 1,
            asked: Asked::of(&choice),
            outcome,
            approvals,
        }
    }

    #[test]
    fn a_lower_threshold_and_a_quorum_of_two_move_and_count_exactly() {
        let recorded = vec![
            asked(1, Some(20000), Outcome::Approved, 1), // rule 1 → rule 1, 1 → 2
            asked(2, Some(7000), Outcome::Approved, 1),  // rule 2 → rule 1, 1 → 2
            asked(3, Some(6000), Outcome::Rejected, 0),  // rule 2 → rule 1
            asked(4, Some(100), Outcome::Approved, 1),   // rule 2 → rule 2, same
            asked(5, Some(50), Outcome::TimedOut, 0),    // rule 2 → rule 2, same
        ];
        let mut candidates = BTreeMap::new();
        candidates.insert("payments".to_string(), payments(5000, &["cfo", "ceo"], 2));
        let skipped = vec![("s9".to_string(), "its session was deleted".to_string())];
        let b = backtest(&candidates, &recorded, skipped, &Templates::new());
        assert_eq!((b.requests, b.replayed), (6, 5));
        assert_eq!(b.rules.len(), 2);
        let r1 = &b.rules[0];
        assert_eq!(
            (r1.policy.as_str(), r1.rule, r1.requests),
            ("payments", 1, 3)
        );
        assert_eq!(r1.summary, "needs 2 of cfo, ceo because amount > 5000");
        assert_eq!(
            r1.from,
            vec![
                FromRule {
                    rule: 1,
                    summary: "needs 1 of cfo because amount > 10000".into(),
                    requests: 1
                },
                FromRule {
                    rule: 2,
                    summary: "needs 1 of clerk (default rule)".into(),
                    requests: 2
                },
            ]
        );
        assert_eq!(
            r1.approvals,
            ByChange {
                more: 3,
                fewer: 0,
                same: 0
            }
        );
        assert_eq!(r1.sessions.more, ["s1", "s2", "s3"]);
        assert_eq!(
            r1.asked_instead,
            vec![Approver::parse("ceo"), Approver::parse("cfo")]
        );
        assert_eq!(r1.no_longer_asked, vec![Approver::parse("clerk")]);
        let r2 = &b.rules[1];
        assert_eq!((r2.requests, r2.approvals.same), (2, 2));
        assert_eq!(r2.sessions.same, ["s4", "s5"]);
        assert!(r2.asked_instead.is_empty() && r2.no_longer_asked.is_empty());
        assert_eq!(r2.summary, "needs 1 of clerk (default rule)");

        let more: Vec<String> = b.changed(Change::More).map(Replayed::story).collect();
        assert_eq!(
            more,
            [
                "approved by 1, the new rule needs 2",
                "approved by 1, the new rule needs 2",
                "rejected (needed 1), the new rule needs 2"
            ]
        );
        assert_eq!(
            b.not_replayed,
            vec![NotReplayed {
                reason: "its session was deleted".into(),
                requests: 1,
                sessions: vec!["s9".into()],
            }]
        );
        let text = table(&b);
        assert!(
            text.contains("6 requests recorded; 5 replayed, 1 not:"),
            "{text}"
        );
        assert!(
            text.contains("would now need more approvals (3):"),
            "{text}"
        );
        assert!(
            text.contains("s2 (payments rule 2 → rule 1): approved by 1, the new rule needs 2"),
            "{text}"
        );
    }

    #[test]
    fn a_summary_reads_back_as_it_was_written() {
        let t = Templates::new();
        let mut rules = payments(10000, &["cfo", "group:finance"], 2);
        rules[0].label = Some("a large payment (or more)".into());
        for details in [json!({"amount": 20000}), json!({"amount": 1}), json!({})] {
            let ctx = minijinja::Value::from_serialize(json!({ "details": details }));
            let c = policy::choose(&rules, &t, &ctx, 1).expect("a rule");
            assert_eq!(
                read_summary(&c.summary()),
                Some((c.needs(), c.rule.approvers.clone())),
                "{}",
                c.summary()
            );
        }
        assert_eq!(
            read_summary("needs 1 of anyone (default rule)"),
            Some((1, Vec::new()))
        );
        assert_eq!(read_summary("rule 1: needs 1 of x"), None);
    }

    #[test]
    fn fewer_approvals_a_missing_policy_and_a_failing_condition() {
        // Recorded under quorum 1; the candidate's default rule needs none
        // more, its rule 1 fails closed on a request without an amount.
        let recorded = vec![
            asked(1, None, Outcome::Open, 0),
            Recorded {
                policy: "refunds".into(),
                ..asked(2, Some(1), Outcome::Approved, 1)
            },
        ];
        let mut candidates = BTreeMap::new();
        candidates.insert("payments".to_string(), payments(5000, &["cfo"], 3));
        let b = backtest(&candidates, &recorded, Vec::new(), &Templates::new());
        assert_eq!((b.requests, b.replayed), (2, 1));
        let r = &b.replays[0];
        assert_eq!((r.candidate.rule, r.candidate.approvals_needed), (1, 3));
        assert!(
            r.candidate
                .failed
                .as_deref()
                .unwrap_or("")
                .contains("rule 1"),
            "{r:?}"
        );
        assert_eq!(r.change, Change::More);
        assert_eq!(
            b.not_replayed[0].reason,
            "the candidate file has no policy `refunds`"
        );

        // A quorum of 3 recorded, 1 now: fewer.
        let mut big = asked(3, Some(20000), Outcome::Approved, 3);
        big.asked.approvals_needed = 3;
        let mut candidates = BTreeMap::new();
        candidates.insert("payments".to_string(), payments(10000, &["cfo"], 1));
        let b = backtest(&candidates, &[big], Vec::new(), &Templates::new());
        assert_eq!(b.rules[0].approvals.fewer, 1);
        assert_eq!(b.rules[0].sessions.fewer, ["s3"]);
        assert_eq!(b.replays[0].story(), "approved by 3, the new rule needs 1");
    }
}
