//! How long the open gates have waited: counts by age bucket and the gates
//! overdue. What `/metrics` (`strands_gates_open{age}`,
//! `strands_gates_overdue`), the Insights page and `strands report` say
//! about the gates still waiting — one rule for all three, so a dashboard
//! never shows 0 while requests wait a week.
//!
//! A gate is **overdue** when its deadline has passed while it is still
//! open (a timeout kept to business hours, a fallback that could not run
//! yet), its approvers have been reminded, or it has been escalated. Nothing here reads the store or the
//! clock: the caller gives the gates and `now`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The buckets, by their upper bound in seconds: `key` is the metric's
/// `age` label, `label` what pages show.
pub const BUCKETS: [(&str, &str, i64); 4] = [
    ("1h", "under 1 hour", 3_600),
    ("1d", "1 hour to 1 day", 86_400),
    ("1w", "1 day to 1 week", 604_800),
    ("older", "over 1 week", i64::MAX),
];

/// One open gate, as far as its age goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waited {
    pub opened_at: DateTime<Utc>,
    pub timeout_at: Option<DateTime<Utc>>,
    /// Its approvers were reminded (`OpenGate::reminded_at`).
    pub reminded: bool,
    /// An escalation was recorded for it.
    pub escalated: bool,
}

impl Waited {
    /// Past its deadline, reminded or escalated.
    pub fn overdue(&self, now: DateTime<Utc>) -> bool {
        self.reminded || self.escalated || self.timeout_at.is_some_and(|t| t <= now)
    }
}

/// Open gates in one age bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub key: String,
    pub label: String,
    pub count: u64,
}

/// The open gates by age, and those overdue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ages {
    pub open: u64,
    /// Every bucket, in order, empty ones too.
    pub buckets: Vec<Bucket>,
    pub overdue: u64,
    /// How long the oldest has waited, in seconds.
    pub oldest_secs: Option<i64>,
}

impl Default for Ages {
    fn default() -> Self {
        ages([], DateTime::<Utc>::UNIX_EPOCH)
    }
}

/// The ages of `gates` at `now`. A gate opened "after" `now` (another
/// replica's clock) counts as just opened.
pub fn ages(gates: impl IntoIterator<Item = Waited>, now: DateTime<Utc>) -> Ages {
    let mut out = Ages {
        open: 0,
        buckets: BUCKETS
            .iter()
            .map(|(key, label, _)| Bucket {
                key: key.to_string(),
                label: label.to_string(),
                count: 0,
            })
            .collect(),
        overdue: 0,
        oldest_secs: None,
    };
    for g in gates {
        let secs = (now - g.opened_at).num_seconds().max(0);
        out.open += 1;
        let i = BUCKETS
            .iter()
            .position(|(_, _, upper)| secs < *upper)
            .unwrap_or(BUCKETS.len() - 1);
        out.buckets[i].count += 1;
        if g.overdue(now) {
            out.overdue += 1;
        }
        out.oldest_secs = Some(out.oldest_secs.map_or(secs, |o: i64| o.max(secs)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    fn open(now: DateTime<Utc>, ago: TimeDelta) -> Waited {
        Waited {
            opened_at: now - ago,
            timeout_at: None,
            reminded: false,
            escalated: false,
        }
    }

    #[test]
    fn counts_each_gate_in_its_bucket_bounds_going_up() {
        let now = crate::clock::test_epoch();
        let a = ages(
            [
                open(now, TimeDelta::seconds(0)),
                open(now, TimeDelta::seconds(3_599)),
                open(now, TimeDelta::seconds(3_600)),
                open(now, TimeDelta::hours(23)),
                open(now, TimeDelta::days(1)),
                open(now, TimeDelta::days(7)),
                open(now, TimeDelta::days(9)),
                // Another replica's clock ahead of ours.
                open(now, TimeDelta::seconds(-5)),
            ],
            now,
        );
        let counts: Vec<(&str, u64)> = a
            .buckets
            .iter()
            .map(|b| (b.key.as_str(), b.count))
            .collect();
        assert_eq!(
            counts,
            [("1h", 3), ("1d", 2), ("1w", 1), ("older", 2)],
            "{a:?}"
        );
        assert_eq!(a.open, 8);
        assert_eq!(a.oldest_secs, Some(9 * 86_400));
        assert_eq!(a.overdue, 0);
    }

    #[test]
    fn overdue_is_past_the_deadline_reminded_or_escalated() {
        let now = crate::clock::test_epoch();
        let mut late = open(now, TimeDelta::hours(3));
        late.timeout_at = Some(now - TimeDelta::minutes(1));
        let mut due_now = open(now, TimeDelta::hours(3));
        due_now.timeout_at = Some(now);
        let mut later = open(now, TimeDelta::hours(3));
        later.timeout_at = Some(now + TimeDelta::minutes(1));
        let mut escalated = open(now, TimeDelta::hours(3));
        escalated.escalated = true;
        let mut reminded = open(now, TimeDelta::hours(3));
        reminded.reminded = true;
        let a = ages([late, due_now, later, escalated, reminded], now);
        assert_eq!((a.open, a.overdue), (5, 4));
    }

    #[test]
    fn no_gates_has_every_bucket_at_zero() {
        let a = Ages::default();
        assert_eq!(a.open, 0);
        assert_eq!(a.buckets.len(), BUCKETS.len());
        assert!(a.buckets.iter().all(|b| b.count == 0));
        assert_eq!(a.oldest_secs, None);
    }
}
