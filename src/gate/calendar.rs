//! Business time for gates: the one deadline rule gates and approval
//! rules share ([`deadline`]: `timeout: 8h business` counts only the hours
//! the calendar is open). The calendars themselves — their shape in the
//! service file and their arithmetic (`is_open`, `next_open`, `add`,
//! `business_secs_between`, `describe`) — are data every layer holds, so
//! they live in [`crate::model::calendar`] and are re-exported here.

use chrono::{DateTime, Duration, Utc};

pub use crate::model::calendar::{pick, Calendar, CalendarSpec};
use crate::spec::timeout::Timeout;

/// When a gate opened at `opened_at` with `timeout` times out: business
/// time on `calendar` when the timeout says `business` (and there is a
/// calendar), else plain elapsed time. The one deadline rule for gates and
/// approval rules alike.
pub fn deadline(
    opened_at: DateTime<Utc>,
    timeout: &Timeout,
    calendar: Option<&Calendar>,
) -> DateTime<Utc> {
    match calendar.filter(|_| timeout.business) {
        Some(c) => c.add(opened_at, timeout.secs),
        None => i64::try_from(timeout.secs)
            .ok()
            .and_then(Duration::try_seconds)
            .and_then(|d| opened_at.checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
    }
}

/// For other modules' tests: the gate hours of calendar `eu-office`,
/// Paris, Monday to Friday 09:00-17:00, and Friday 27 November 2026 15:00
/// CET with a deadline on Monday 30 November 09:30 CET.
#[cfg(test)]
pub(crate) fn office_for_tests() -> (crate::model::GateHours, DateTime<Utc>, DateTime<Utc>) {
    let rules = Calendar::try_from(CalendarSpec {
        zone: "Europe/Paris".into(),
        hours: [("mon-fri".to_string(), "09:00-17:00".to_string())].into(),
        holidays: Vec::new(),
    })
    .expect("calendar");
    let hours = crate::model::GateHours {
        calendar: "eu-office".into(),
        when_closed: crate::model::WhenClosed::Wait,
        auto_approve_outside_hours: true,
        timers_outside_hours: false,
        opened_closed: false,
        rules,
    };
    let at = |s: &str| {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M")
            .expect("time")
            .and_utc()
    };
    (hours, at("2026-11-27 14:00"), at("2026-11-30 08:30"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_rule_counts_business_time_only_when_asked() {
        let (hours, fri_15, _) = office_for_tests();
        let c = &hours.rules;
        let at = |s: &str| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M")
                .expect("time")
                .and_utc()
        };
        let business = Timeout::parse("8h business").expect("parses");
        let plain = Timeout::parse("8h").expect("parses");
        // Friday 15:00 CET: 2 hours on Friday, 6 on Monday (15:00 CET).
        assert_eq!(deadline(fri_15, &business, Some(c)), at("2026-11-30 14:00"));
        assert_eq!(deadline(fri_15, &plain, Some(c)), at("2026-11-27 22:00"));
        assert_eq!(deadline(fri_15, &business, None), at("2026-11-27 22:00"));
    }
}
