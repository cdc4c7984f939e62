//! Delegation: while alice is away, bob answers (and is asked) for her.
//!
//! A [`Delegation`] is stored on the person who delegates (`alice`'s
//! `delegations`), so it lives in the people directory and changes with
//! it, in one store transaction with its audit entry. This module holds
//! the rules, all judged at an instant `now` the caller passes in:
//!
//! - **Window.** `--from DAY --until DAY` covers `DAY 00:00` up to the end
//!   of the `until` day, in UTC: `[starts, ends)`, `ends` being the next
//!   midnight ([`window`]).
//! - **One delegate at a time.** A second delegation of the same person
//!   whose window overlaps one stored is refused, unless it names the same
//!   delegate: then it replaces that one (extend, shorten, move).
//! - **Chains** are followed at most [`MAX_DEPTH`] deep: with alice → bob
//!   → carol → dave, dave acts for carol, bob and alice; with a fourth hop
//!   the first person is out of reach ([`Directory::acting_for`]).
//! - **Cycles** are refused when created: a delegation from alice to bob is
//!   refused when bob's delegations, during any part of the new window,
//!   lead back to alice ([`Directory::delegate`]).
//!
//! What this does not do: decide who may answer a gate (`gate::authorize`
//! asks [`Directory::acting_for`]), or who gets a message (the hub's
//! recipients ask [`Directory::stand_in`]).

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::{Directory, Person, PersonError};

/// How many hops of delegation are followed: alice → bob → carol → dave.
pub const MAX_DEPTH: usize = 3;
/// The longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// `to` stands in for the person who holds this, from `starts` until
/// (not including) `ends`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Delegation {
    /// The delegate: a person's name.
    pub to: String,
    /// The first instant the delegate acts (midnight UTC of `--from`).
    pub starts: DateTime<Utc>,
    /// The first instant they no longer do (midnight UTC after `--until`).
    pub ends: DateTime<Utc>,
    /// Who set it (the identity that asked), and when.
    pub set_by: String,
    pub set_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The window `from 00:00 UTC .. until 24:00 UTC` (the end excluded).
pub fn window(from: NaiveDate, until: NaiveDate) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    if until < from {
        return Err(format!("--until {until} is before --from {from}"));
    }
    let starts = from.and_time(chrono::NaiveTime::MIN).and_utc();
    let ends = until
        .succ_opt()
        .ok_or_else(|| format!("--until {until} is out of range"))?
        .and_time(chrono::NaiveTime::MIN)
        .and_utc();
    Ok((starts, ends))
}

/// A day as the commands take it: `2026-12-20`.
pub fn parse_day(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| format!("`{}` is not a day (YYYY-MM-DD)", text.trim()))
}

impl Delegation {
    /// Whether the delegate acts at `now`.
    pub fn active(&self, now: DateTime<Utc>) -> bool {
        self.starts <= now && now < self.ends
    }

    /// Whether this window and `[starts, ends)` share an instant.
    pub fn overlaps(&self, starts: DateTime<Utc>, ends: DateTime<Utc>) -> bool {
        self.starts < ends && starts < self.ends
    }

    /// The first day covered, as `--from` said it.
    pub fn from_day(&self) -> NaiveDate {
        self.starts.date_naive()
    }

    /// The last day covered, as `--until` said it.
    pub fn until_day(&self) -> NaiveDate {
        (self.ends - TimeDelta::nanoseconds(1)).date_naive()
    }
}

impl std::fmt::Display for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} from {} until {}",
            self.to,
            self.from_day(),
            self.until_day()
        )
    }
}

fn invalid(person: &str, why: String) -> PersonError {
    PersonError::Invalid {
        person: person.to_string(),
        why,
    }
}

impl Person {
    /// The delegation in force at `now`, if any.
    pub fn delegate_at(&self, now: DateTime<Utc>) -> Option<&Delegation> {
        self.delegations.iter().find(|d| d.active(now))
    }
}

impl Directory {
    /// Checks the delegations of a directory being built: each names
    /// another person of it. (Windows and cycles are checked when one is
    /// set, [`Directory::delegate`].)
    pub(super) fn check_delegations(people: &[Person]) -> Result<(), PersonError> {
        for p in people {
            for d in &p.delegations {
                if d.to == p.name {
                    return Err(invalid(&p.name, "cannot delegate to themselves".into()));
                }
                if !people.iter().any(|o| o.name == d.to) {
                    return Err(invalid(
                        &p.name,
                        format!("delegates to `{}`, who is not in the directory", d.to),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Who stands in for `person` at `now`, nearest first: their delegate,
    /// that delegate's delegate, … at most [`MAX_DEPTH`], stopping before
    /// anyone already on the way (a cycle).
    pub fn delegates_of(&self, person: &str, now: DateTime<Utc>) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut at = person;
        while out.len() < MAX_DEPTH {
            let Some(d) = self.get(at).and_then(|p| p.delegate_at(now)) else {
                break;
            };
            if d.to == person || out.contains(&d.to.as_str()) {
                break;
            }
            out.push(d.to.as_str());
            at = d.to.as_str();
        }
        out
    }

    /// Who is asked in `person`'s place at `now`: the last of their
    /// delegates (bob is away too: carol), or `person` themselves.
    pub fn stand_in<'a>(&'a self, person: &'a Person, now: DateTime<Utc>) -> &'a Person {
        self.delegates_of(&person.name, now)
            .last()
            .and_then(|n| self.get(n))
            .unwrap_or(person)
    }

    /// Whether person `who` may act for someone `listed` accepts, at `now`:
    /// the chain from that person to `who` (`[alice, bob]`, or `[alice,
    /// bob, carol]` through bob), at most [`MAX_DEPTH`] hops. The first
    /// such person by name, the shortest chain for them.
    pub fn acting_for(
        &self,
        who: &str,
        listed: impl Fn(&Person) -> bool,
        now: DateTime<Utc>,
    ) -> Option<Vec<String>> {
        self.people
            .iter()
            .filter(|p| p.name != who && listed(p))
            .find_map(|p| {
                let chain = self.delegates_of(&p.name, now);
                let at = chain.iter().position(|n| *n == who)?;
                let mut out = vec![p.name.clone()];
                out.extend(chain[..=at].iter().map(|n| n.to_string()));
                Some(out)
            })
    }

    /// A directory with `delegation` from `from` set (`now`: when it is
    /// asked). Refused, changing nothing: an unknown person, oneself, a
    /// window already over, a window overlapping another delegate's, a
    /// cycle. A stored delegation to the same person whose window overlaps
    /// is replaced; the person's delegations already over are dropped.
    pub fn delegate(
        &self,
        from: &str,
        delegation: Delegation,
        now: DateTime<Utc>,
    ) -> Result<Directory, PersonError> {
        let mut d = delegation;
        d.to = d.to.trim().to_string();
        d.reason = d
            .reason
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        let Some(person) = self.get(from) else {
            return Err(PersonError::Unknown(from.to_string()));
        };
        if self.get(&d.to).is_none() {
            return Err(PersonError::Unknown(d.to));
        }
        if d.to == from {
            return Err(invalid(from, "cannot delegate to themselves".into()));
        }
        if d.ends <= d.starts {
            return Err(invalid(from, "the window ends before it starts".into()));
        }
        if d.ends <= now {
            return Err(invalid(
                from,
                format!("the window ended on {} (it is over)", d.until_day()),
            ));
        }
        if d.reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > MAX_REASON_CHARS)
        {
            return Err(invalid(
                from,
                format!("the reason is longer than {MAX_REASON_CHARS} characters"),
            ));
        }
        if let Some(other) = person
            .delegations
            .iter()
            .find(|o| o.to != d.to && o.overlaps(d.starts, d.ends))
        {
            return Err(invalid(
                from,
                format!(
                    "already delegates to {other}; one delegate at a time (remove it first: `strands people undelegate {from} --to {}`)",
                    other.to
                ),
            ));
        }
        if let Some(path) = self.path_back(&d.to, from, d.starts, d.ends) {
            return Err(invalid(
                from,
                format!(
                    "delegating to {} would make a cycle ({from} → {}); nothing was stored",
                    d.to,
                    path.join(" → ")
                ),
            ));
        }
        let mut all = self.people.clone();
        if let Some(p) = all.iter_mut().find(|p| p.name == from) {
            // Replaced: the same delegate's overlapping window; dropped:
            // windows already over (the audit keeps what was).
            p.delegations
                .retain(|o| !(o.to == d.to && o.overlaps(d.starts, d.ends)) && o.ends > now);
            p.delegations.push(d);
            p.delegations.sort_by_key(|o| o.starts);
        }
        Directory::new(all)
    }

    /// The delegations from `start`, in force some time in `[starts,
    /// ends)`, that lead to `goal`: the names on the way, or `None`.
    fn path_back(
        &self,
        start: &str,
        goal: &str,
        starts: DateTime<Utc>,
        ends: DateTime<Utc>,
    ) -> Option<Vec<String>> {
        let mut seen = HashSet::new();
        let mut stack = vec![vec![start.to_string()]];
        while let Some(path) = stack.pop() {
            let last = path.last()?.clone();
            if last == goal {
                return Some(path);
            }
            if !seen.insert(last.clone()) {
                continue;
            }
            for d in self
                .get(&last)
                .map(|p| p.delegations.as_slice())
                .unwrap_or(&[])
            {
                if d.overlaps(starts, ends) {
                    let mut next = path.clone();
                    next.push(d.to.clone());
                    stack.push(next);
                }
            }
        }
        None
    }

    /// A directory without `from`'s delegations (to `to` only, when
    /// given), and how many were removed; none is an error.
    pub fn undelegate(
        &self,
        from: &str,
        to: Option<&str>,
    ) -> Result<(Directory, usize), PersonError> {
        let Some(person) = self.get(from) else {
            return Err(PersonError::Unknown(from.to_string()));
        };
        let gone = person
            .delegations
            .iter()
            .filter(|d| to.is_none_or(|t| d.to == t))
            .count();
        if gone == 0 {
            return Err(PersonError::NoDelegation(match to {
                Some(t) => format!("{from} has no delegation to {t}"),
                None => format!("{from} has no delegation"),
            }));
        }
        let mut all = self.people.clone();
        if let Some(p) = all.iter_mut().find(|p| p.name == from) {
            p.delegations.retain(|d| to.is_some_and(|t| d.to != t));
        }
        Ok((Directory::new(all)?, gone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        parse_day(s).expect("a day")
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("a time").to_utc()
    }

    fn people(names: &[&str]) -> Directory {
        Directory::new(names.iter().map(|n| Person::named(n)).collect()).expect("valid")
    }

    fn set(
        d: &Directory,
        from: &str,
        to: &str,
        from_day: &str,
        until: &str,
    ) -> Result<Directory, PersonError> {
        let (starts, ends) = window(day(from_day), day(until)).expect("window");
        d.delegate(
            from,
            Delegation {
                to: to.into(),
                starts,
                ends,
                set_by: from.into(),
                set_at: at("2026-11-25T12:00:00Z"),
                reason: None,
            },
            at("2026-11-25T12:00:00Z"),
        )
    }

    #[test]
    fn the_window_runs_from_midnight_to_the_end_of_the_last_day() {
        let d = set(
            &people(&["alice", "bob"]),
            "alice",
            "bob",
            "2026-12-20",
            "2027-01-03",
        )
        .expect("set");
        let listed = |p: &Person| p.name == "alice";
        let acts = |t: &str| d.acting_for("bob", listed, at(t)).is_some();
        assert!(!acts("2026-12-19T23:59:59Z"), "just before the start");
        assert!(acts("2026-12-20T00:00:00Z"), "at the start");
        assert!(
            acts("2027-01-03T23:59:59Z"),
            "the last second of the last day"
        );
        assert!(!acts("2027-01-04T00:00:00Z"), "at the end");
        assert!(!acts("2027-02-01T00:00:00Z"), "after the end");
        let shown = d.get("alice").expect("alice").delegations[0].to_string();
        assert_eq!(shown, "bob from 2026-12-20 until 2027-01-03");
        assert!(window(day("2026-12-20"), day("2026-12-19")).is_err());
    }

    #[test]
    fn chains_are_followed_three_deep_and_no_further() {
        let mut d = people(&["alice", "bob", "carol", "dave", "erin"]);
        for (a, b) in [("alice", "bob"), ("bob", "carol"), ("carol", "dave")] {
            d = set(&d, a, b, "2026-12-01", "2026-12-31").expect("set");
        }
        let now = at("2026-12-24T10:00:00Z");
        let alice = |p: &Person| p.name == "alice";
        assert_eq!(
            d.acting_for("dave", alice, now),
            Some(vec![
                "alice".into(),
                "bob".into(),
                "carol".into(),
                "dave".into()
            ])
        );
        assert_eq!(d.stand_in(d.get("alice").expect("alice"), now).name, "dave");
        d = set(&d, "dave", "erin", "2026-12-01", "2026-12-31").expect("set");
        assert_eq!(
            d.acting_for("erin", alice, now),
            None,
            "four hops is too deep"
        );
        let carol = |p: &Person| p.name == "carol";
        assert!(d.acting_for("erin", carol, now).is_some());
        // Not in force: nobody acts for anyone.
        assert_eq!(d.acting_for("bob", alice, at("2027-01-01T00:00:00Z")), None);
    }

    #[test]
    fn a_cycle_is_refused_and_nothing_changes() {
        let d = people(&["alice", "bob", "carol"]);
        let d = set(&d, "alice", "bob", "2026-12-20", "2027-01-03").expect("set");
        let d = set(&d, "bob", "carol", "2026-12-01", "2026-12-31").expect("set");
        let e = set(&d, "carol", "alice", "2026-12-30", "2027-01-10")
            .expect_err("a cycle")
            .to_string();
        assert!(
            e.contains("cycle") && e.contains("alice → bob → carol"),
            "{e}"
        );
        assert!(d.get("carol").expect("carol").delegations.is_empty());
        // Windows that never meet make no cycle.
        assert!(set(&d, "carol", "alice", "2027-02-01", "2027-02-10").is_ok());
        // Two people both ways at once: refused too.
        let e = set(&d, "bob", "alice", "2027-01-01", "2027-01-02").expect_err("a cycle");
        assert!(e.to_string().contains("cycle"), "{e}");
    }

    #[test]
    fn one_delegate_at_a_time_the_same_one_is_replaced() {
        let d = people(&["alice", "bob", "carol"]);
        let d = set(&d, "alice", "bob", "2026-12-20", "2027-01-03").expect("set");
        let e = set(&d, "alice", "carol", "2027-01-02", "2027-01-05").expect_err("overlap");
        assert!(
            e.to_string()
                .contains("already delegates to bob from 2026-12-20"),
            "{e}"
        );
        let d = set(&d, "alice", "bob", "2026-12-22", "2027-01-10").expect("replaced");
        let all = &d.get("alice").expect("alice").delegations;
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].until_day(), day("2027-01-10"));
        assert!(set(&d, "alice", "alice", "2027-02-01", "2027-02-02").is_err());
        assert!(set(&d, "alice", "zed", "2027-02-01", "2027-02-02").is_err());
        assert!(set(&d, "alice", "carol", "2026-01-01", "2026-01-02")
            .expect_err("over")
            .to_string()
            .contains("over"));
        let (d, n) = d.undelegate("alice", Some("bob")).expect("removed");
        assert_eq!(n, 1);
        assert!(d.undelegate("alice", None).is_err());
    }

    #[test]
    fn removing_the_delegate_removes_the_delegation() {
        let d = people(&["alice", "bob"]);
        let d = set(&d, "alice", "bob", "2026-12-20", "2027-01-03").expect("set");
        let d = d.without("bob").expect("removed");
        assert!(d.get("alice").expect("alice").delegations.is_empty());
    }
}
