//! Insights: how long decisions take and where they wait, for one person
//! or for everyone — what the web's `/insights` page, `GET
//! /api/v1/insights` and `strands report` show, computed here once.
//!
//! Two sources, no third: decisions come from the audit
//! ([`crate::audit::report`]), the gates still waiting from the store's
//! paused runs ([`crate::gate::ages`]). An approver sees their own: the
//! gates they may answer now ([`super::inbox::waiting_for`], the engine's
//! own approver rules) and the decisions they made. Operators and admins
//! see everything.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Hub;
use crate::audit::decided::Decided;
use crate::audit::report::{By, Row, Tally};
use crate::error::Result;
use crate::gate::ages::{self, Ages, Waited};
use crate::model::token::Role;
use crate::model::Status;
use crate::store::Store;

/// `/metrics` counts the open gates at scrape time only while at most
/// this many runs are paused: past it, a scrape would read every paused
/// run. `strands report` and the Insights page count them at any size.
pub const METRICS_SCAN: u64 = 10_000;

/// Whose figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    Everyone,
    /// One approver: the gates they may answer, the decisions they made.
    Person(String),
}

/// What every place shows: the report's rows and total (as `strands
/// report --json` prints them) and the open gates by age.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Insights {
    /// The period's start, RFC 3339 (seconds).
    pub since: String,
    pub by: By,
    pub rows: Vec<Row>,
    pub total: Row,
    pub open: Ages,
    /// `everyone`, or `person` with `person` set.
    pub scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
}

impl Insights {
    /// Whose figures these are, for a heading: "" or " (alice's own)".
    pub fn whose(&self) -> String {
        self.person
            .as_ref()
            .map(|p| format!(" ({p}'s own)"))
            .unwrap_or_default()
    }
}

fn stamp(since: DateTime<Utc>) -> String {
    since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A report being counted from decisions: all of them, or a person's own
/// (those they made, under any channel identity).
struct Counter {
    tally: Tally,
    person: Option<String>,
}

impl Counter {
    fn new(by: By, scope: &Scope) -> Counter {
        Counter {
            tally: Tally::new(by),
            person: match scope {
                Scope::Everyone => None,
                Scope::Person(p) => Some(p.clone()),
            },
        }
    }

    fn add(&mut self, d: &Decided) {
        if self.person.as_deref().is_none_or(|p| d.made_by(p)) {
            self.tally.add(d);
        }
    }
}

/// The figures of the decisions made since `since` (read from the store's
/// decisions, a page at a time) and of `open`.
pub async fn assemble(
    store: &Store,
    since: DateTime<Utc>,
    by: By,
    open: Ages,
    scope: Scope,
) -> Result<Insights> {
    let mut counter = Counter::new(by, &scope);
    store.decisions(since, |d| counter.add(&d)).await?;
    Ok(figures(counter, since, open))
}

fn figures(counter: Counter, since: DateTime<Utc>, open: Ages) -> Insights {
    let r = counter.tally.finish();
    let person = counter.person;
    Insights {
        since: stamp(since),
        by: r.by,
        rows: r.rows,
        total: r.total,
        open,
        scope: if person.is_some() {
            "person"
        } else {
            "everyone"
        }
        .into(),
        person,
    }
}

/// `w` with whether it was escalated, looked up only when that could
/// change it (not yet overdue otherwise): one read fewer per late gate.
async fn escalated(
    store: &Store,
    session: &str,
    handle: &str,
    mut w: Waited,
    now: DateTime<Utc>,
) -> Result<Waited> {
    if !w.overdue(now) {
        w.escalated = store.escalation(session, handle).await?.is_some();
    }
    Ok(w)
}

/// Every paused run's open gates by age, read a page of the store's index
/// at a time (each run loaded once, its escalations looked up).
pub async fn everyone_open(store: &Store, now: DateTime<Utc>) -> Result<Ages> {
    const PAGE: usize = 512;
    let mut gates = Vec::new();
    let mut after = None;
    loop {
        let page = store.page(Some(Status::Paused), None, after, PAGE).await?;
        after = page.last().map(|s| (s.created_at, s.id.clone()));
        let full = page.len() == PAGE;
        for summary in page {
            let Some(s) = store.load(&summary.id).await? else {
                continue;
            };
            if s.status != Status::Paused {
                continue;
            }
            for g in s.open_gates() {
                let w = Waited {
                    opened_at: g.opened_at,
                    timeout_at: g.timeout_at,
                    reminded: g.reminded_at.is_some(),
                    escalated: false,
                };
                gates.push(escalated(store, &s.id, &g.handle(), w, now).await?);
            }
        }
        if !full {
            break;
        }
    }
    Ok(ages::ages(gates, now))
}

/// The insights `caller` may see: everything for operators and admins,
/// their own for approvers.
pub async fn for_caller(
    hub: &Hub,
    caller: &super::caller::Caller,
    since: DateTime<Utc>,
    by: By,
) -> Result<Insights> {
    let now = hub.clock.now();
    if caller.role >= Role::Operator {
        let open = everyone_open(&hub.store, now).await?;
        return assemble(&hub.store, since, by, open, Scope::Everyone).await;
    }
    let waiting = super::inbox::waiting_for(hub, &caller.name, &caller.idp_groups, None).await?;
    let mut gates = Vec::with_capacity(waiting.len());
    for w in &waiting {
        let g = Waited {
            opened_at: w.gate.opened_at,
            timeout_at: w.gate.timeout_at,
            reminded: w.gate.reminded_at.is_some(),
            escalated: false,
        };
        gates.push(escalated(&hub.store, &w.session, &w.gate.handle, g, now).await?);
    }
    let person = hub
        .people()
        .person_of(&caller.name)
        .map_or_else(|| caller.name.clone(), |p| p.name.clone());
    assemble(
        &hub.store,
        since,
        by,
        ages::ages(gates, now),
        Scope::Person(person),
    )
    .await
}

/// The open gates for `/metrics`, when few enough runs are paused to read
/// at scrape time (see [`METRICS_SCAN`]).
pub async fn for_metrics(hub: &Hub, paused: u64) -> Result<Option<Ages>> {
    if paused > METRICS_SCAN {
        return Ok(None);
    }
    everyone_open(&hub.store, hub.clock.now()).await.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditEntry, AuditEvent, AuditKind};

    fn answer(who: &str, person: Option<&str>, ms: u64) -> AuditEntry {
        let mut e = AuditEvent::new(
            AuditKind::Answer,
            "s1",
            "payout",
            crate::clock::test_epoch(),
        );
        e.gate = Some("approve#1".into());
        e.who = Some(who.into());
        e.person = person.map(String::from);
        e.decision = Some(serde_json::json!({"action": "approve"}));
        e.response_ms = Some(ms);
        AuditEntry {
            seq: 1,
            prev: String::new(),
            hash: String::new(),
            event: e,
        }
    }

    #[test]
    fn a_person_sees_the_decisions_they_made_under_any_identity() {
        let entries = [
            answer("U123", Some("alice"), 1_000),
            answer("alice", None, 3_000),
            answer("bob", Some("bob"), 9_000),
        ];
        let since = crate::clock::test_epoch();
        let count = |scope: Scope| {
            let mut c = Counter::new(By::Gate, &scope);
            for (_, d) in entries.iter().filter_map(Decided::of) {
                c.add(&d);
            }
            figures(c, since, Ages::default())
        };
        let mine = count(Scope::Person("alice".into()));
        assert_eq!(mine.total.decisions, 2);
        assert_eq!(mine.total.p90_ms, Some(3_000));
        let all = count(Scope::Everyone);
        assert_eq!(all.total.decisions, 3);
        let json = serde_json::to_value(&mine).unwrap_or_default();
        assert_eq!(json["scope"], "person");
        assert_eq!(json["person"], "alice");
        assert_eq!(json["rows"][0]["key"], "payout/approve");
    }
}
