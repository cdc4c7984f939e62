//! Decision analytics from the audit trail (`strands report`): how long
//! people take to decide and what they decide, per workflow, gate,
//! approver, rule or door. The audit is the one source: every answer's
//! entry carries who, through which door, under which rule, the decision
//! and `response_ms` (from the request to the answer); a gate's timeout is
//! its own entry, read as [`Decided`] records. Nothing here reads the
//! store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::decided::Decided;
use super::AuditEntry;

/// What the rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    Workflow,
    /// `workflow/gate id` (every asking of a gate together).
    Gate,
    /// The directory's person, else the channel identity.
    Approver,
    /// The approval rule that chose the approvers.
    Rule,
    /// The channel the answer came through.
    Door,
}

impl By {
    pub const NAMES: [&'static str; 5] = ["workflow", "gate", "approver", "rule", "door"];

    pub fn parse(s: &str) -> Option<By> {
        Some(match s {
            "workflow" => By::Workflow,
            "gate" => By::Gate,
            "approver" => By::Approver,
            "rule" => By::Rule,
            "door" => By::Door,
            _ => return None,
        })
    }
}

/// One group's figures. Times are of people's answers (a timeout is no
/// one's decision time), nearest-rank quantiles in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub key: String,
    /// Answers and timeouts.
    pub decisions: u64,
    pub approved: u64,
    pub rejected: u64,
    /// Other answers: modify, respond, edit, trust, abort.
    pub other: u64,
    /// Gates decided by their timeout (whatever the fallback did).
    pub timeouts: u64,
    pub p50_ms: Option<u64>,
    pub p90_ms: Option<u64>,
    pub p99_ms: Option<u64>,
    #[serde(skip)]
    times: Vec<u64>,
}

/// Every group, by key, and all of them together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub by: By,
    pub rows: Vec<Row>,
    pub total: Row,
}

/// The nearest-rank `q` quantile of sorted `v`.
fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

impl Row {
    fn add(&mut self, d: &Decided) {
        self.decisions += 1;
        if d.timeout {
            self.timeouts += 1;
            return;
        }
        match d.action.as_deref() {
            Some("approve") => self.approved += 1,
            Some("reject") => self.rejected += 1,
            _ => self.other += 1,
        }
        if let Some(ms) = d.ms {
            self.times.push(ms);
        }
    }

    fn finish(mut self) -> Row {
        self.times.sort_unstable();
        self.p50_ms = quantile(&self.times, 0.50);
        self.p90_ms = quantile(&self.times, 0.90);
        self.p99_ms = quantile(&self.times, 0.99);
        self
    }
}

/// The group of a decision (borrowed where it is one of its fields: a
/// report over a million decisions makes no string per decision).
fn key(d: &Decided, by: By) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow::{Borrowed, Owned};
    match by {
        By::Workflow => Borrowed(&d.workflow),
        By::Gate => {
            let gate = d.gate.as_deref().unwrap_or("?");
            let id = gate.split_once('#').map_or(gate, |(id, _)| id);
            Owned(format!("{}/{id}", d.workflow))
        }
        By::Approver if d.timeout => Borrowed("(timeout)"),
        By::Approver => Borrowed(d.person.as_deref().or(d.who.as_deref()).unwrap_or("?")),
        By::Rule => Borrowed(d.rule.as_deref().unwrap_or("(no rule)")),
        By::Door => Borrowed(d.via.as_deref().unwrap_or("?")),
    }
}

/// A report being counted, one decision at a time (a store's decisions
/// are read page by page, never all held at once).
pub struct Tally {
    by: By,
    rows: BTreeMap<String, Row>,
    total: Row,
}

impl Tally {
    pub fn new(by: By) -> Tally {
        Tally {
            by,
            rows: BTreeMap::new(),
            total: Row {
                key: "total".into(),
                ..Row::default()
            },
        }
    }

    pub fn add(&mut self, d: &Decided) {
        let k = key(d, self.by);
        match self.rows.get_mut(k.as_ref()) {
            Some(row) => row.add(d),
            None => {
                let k = k.into_owned();
                let mut row = Row {
                    key: k.clone(),
                    ..Row::default()
                };
                row.add(d);
                self.rows.insert(k, row);
            }
        }
        self.total.add(d);
    }

    /// Rows in key order, and the total.
    pub fn finish(self) -> Report {
        Report {
            by: self.by,
            rows: self.rows.into_values().map(Row::finish).collect(),
            total: self.total.finish(),
        }
    }
}

/// The report of `entries` (answers and timeouts count; everything else
/// is skipped), grouped `by`, rows in key order.
pub fn report<'a>(entries: impl IntoIterator<Item = &'a AuditEntry>, by: By) -> Report {
    let mut tally = Tally::new(by);
    for (_, d) in entries.into_iter().filter_map(Decided::of) {
        tally.add(&d);
    }
    tally.finish()
}

fn ms(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The report as CSV: a header, one line per row, the total last.
pub fn csv(report: &Report) -> String {
    let mut out =
        String::from("key,decisions,approved,rejected,other,timeouts,p50_ms,p90_ms,p99_ms\n");
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        let key = if r.key.contains([',', '"', '\n']) {
            format!("\"{}\"", r.key.replace('"', "\"\""))
        } else {
            r.key.clone()
        };
        out.push_str(&format!(
            "{key},{},{},{},{},{},{},{},{}\n",
            r.decisions,
            r.approved,
            r.rejected,
            r.other,
            r.timeouts,
            ms(r.p50_ms),
            ms(r.p90_ms),
            ms(r.p99_ms)
        ));
    }
    out
}

/// A duration in milliseconds as people read it.
fn human(v: Option<u64>) -> String {
    match v {
        None => "–".into(),
        Some(ms) if ms < 1_000 => format!("{ms} ms"),
        Some(ms) if ms < 60_000 => format!("{:.1} s", ms as f64 / 1e3),
        Some(ms) if ms < 3_600_000 => format!("{:.1} min", ms as f64 / 6e4),
        Some(ms) if ms < 86_400_000 => format!("{:.1} h", ms as f64 / 3.6e6),
        Some(ms) => format!("{:.1} d", ms as f64 / 8.64e7),
    }
}

/// The report as a table for a terminal.
pub fn table(report: &Report) -> String {
    let head = [
        "",
        "decisions",
        "approved",
        "rejected",
        "other",
        "timeouts",
        "p50",
        "p90",
        "p99",
    ];
    let mut lines = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        lines.push(vec![
            r.key.clone(),
            r.decisions.to_string(),
            r.approved.to_string(),
            r.rejected.to_string(),
            r.other.to_string(),
            r.timeouts.to_string(),
            human(r.p50_ms),
            human(r.p90_ms),
            human(r.p99_ms),
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
    let mut out = String::new();
    for l in &lines {
        let cells = l
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditEvent, AuditKind};

    fn answer(wf: &str, gate: &str, who: &str, via: &str, action: &str, ms: u64) -> AuditEntry {
        let mut e = AuditEvent::new(AuditKind::Answer, "s", wf, crate::clock::test_epoch());
        e.gate = Some(gate.into());
        e.who = Some(who.into());
        e.via = Some(via.into());
        e.decision = Some(serde_json::json!({ "action": action }));
        e.response_ms = Some(ms);
        AuditEntry {
            seq: 0,
            prev: String::new(),
            hash: String::new(),
            event: e,
        }
    }

    fn timeout(wf: &str, gate: &str) -> AuditEntry {
        let mut e = AuditEvent::new(AuditKind::Timeout, "s", wf, crate::clock::test_epoch());
        e.gate = Some(gate.into());
        e.via = Some("timeout".into());
        AuditEntry {
            seq: 0,
            prev: String::new(),
            hash: String::new(),
            event: e,
        }
    }

    #[test]
    fn early_entries_with_a_bare_decision_word_count_too() {
        let mut old = answer("wf", "g#1", "bob", "cli", "approve", 5);
        old.event.decision = Some(serde_json::json!("reject"));
        let r = report([&old], By::Workflow);
        assert_eq!((r.total.approved, r.total.rejected), (0, 1));
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v = (1..=100).collect::<Vec<u64>>();
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 0.9), Some(90));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&[7], 0.99), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1, 2, 3], 0.5), Some(2));
    }

    #[test]
    fn decisions_are_counted_and_timed_per_group() {
        let mut entries = Vec::new();
        // deploy/review: alice approves 10 (1..=10 s), bob rejects 2.
        for i in 1..=10 {
            entries.push(answer(
                "deploy",
                &format!("review#{i}"),
                "alice",
                "slack",
                "approve",
                i * 1000,
            ));
        }
        entries.push(answer(
            "deploy",
            "review#11",
            "bob",
            "web",
            "reject",
            60_000,
        ));
        entries.push(answer(
            "deploy",
            "review#12",
            "bob",
            "web",
            "reject",
            120_000,
        ));
        // payout/check: one edit by alice, one timeout.
        entries.push(answer("payout", "check#1", "alice", "api", "edit", 500));
        entries.push(timeout("payout", "check#2"));
        // Not decisions: skipped.
        let mut req = answer("deploy", "review#13", "alice", "slack", "approve", 1);
        req.event.kind = Some(AuditKind::Request);
        entries.push(req);

        let r = report(&entries, By::Gate);
        assert_eq!(r.rows.len(), 2);
        let deploy = &r.rows[0];
        assert_eq!(deploy.key, "deploy/review");
        assert_eq!(
            (deploy.decisions, deploy.approved, deploy.rejected),
            (12, 10, 2)
        );
        // 12 times: 1..10 s, 60 s, 120 s → p50 = 6th = 6 s; p90 = 11th = 60 s; p99 = 12th.
        assert_eq!(deploy.p50_ms, Some(6_000));
        assert_eq!(deploy.p90_ms, Some(60_000));
        assert_eq!(deploy.p99_ms, Some(120_000));
        let payout = &r.rows[1];
        assert_eq!(payout.key, "payout/check");
        assert_eq!((payout.decisions, payout.other, payout.timeouts), (2, 1, 1));
        assert_eq!(payout.p50_ms, Some(500));
        assert_eq!(r.total.decisions, 14);
        assert_eq!(r.total.timeouts, 1);

        let by_who = report(&entries, By::Approver);
        let keys = by_who
            .rows
            .iter()
            .map(|r| r.key.as_str())
            .collect::<Vec<_>>();
        assert_eq!(keys, ["(timeout)", "alice", "bob"]);
        assert_eq!(by_who.rows[1].decisions, 11);
        let by_door = report(&entries, By::Door);
        let doors = by_door
            .rows
            .iter()
            .map(|r| (r.key.as_str(), r.decisions))
            .collect::<Vec<_>>();
        assert_eq!(
            doors,
            [("api", 1), ("slack", 10), ("timeout", 1), ("web", 2)]
        );

        let text = csv(&r);
        assert!(text.starts_with("key,decisions,"), "{text}");
        assert!(
            text.contains("\ndeploy/review,12,10,2,0,0,6000,60000,120000\n"),
            "{text}"
        );
        assert!(
            text.ends_with("total,14,10,2,1,1,6000,60000,120000\n"),
            "{text}"
        );
        let t = table(&r);
        assert!(t.contains("deploy/review"), "{t}");
        assert!(t.contains("6.0 s"), "{t}");
    }
}
