//! Human durations ("3 h 20 min"): how long a gate has waited, as every
//! door shows it — the web inbox's pages and Slack's App Home word it the
//! same, so it lives here rather than in one door for the other to borrow.
//! Likewise the deadline of a gate that keeps business hours, in its
//! calendar's words ([`business_deadline`]).

use chrono::{DateTime, Utc};

use crate::model::GateHours;

/// The deadline of a gate that keeps business hours, in its calendar's
/// words as seen at `now`: "Monday 09:30 CET, in 2 business hours
/// (calendar `eu-office`)", "… (calendar `eu-office` is closed now; opens
/// Monday 09:00 CET)"; a gate with no deadline, while the calendar is
/// closed: "calendar `eu-office` is closed now; opens Monday 09:00 CET".
/// `None` for other gates (every door keeps its own wording then).
pub fn business_deadline(
    hours: Option<&GateHours>,
    deadline: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<String> {
    let h = hours?;
    let cal = &h.rules;
    let name = &h.calendar;
    let opens = cal.opens_words(now);
    Some(match (deadline, opens) {
        (Some(at), Some(opens)) if at > now => format!(
            "{} (calendar `{name}` is closed now; opens {opens})",
            cal.deadline_words(now, at)
        ),
        (Some(at), _) => format!("{} (calendar `{name}`)", cal.deadline_words(now, at)),
        (None, Some(opens)) => format!("calendar `{name}` is closed now; opens {opens}"),
        (None, None) => return None,
    })
}

/// [`business_deadline`] for a message that stays posted (Slack's): the
/// date without "today" or "in …": "Mon 30 Nov 09:30 CET (business hours
/// of calendar `eu-office`)".
pub fn business_deadline_posted(
    hours: Option<&GateHours>,
    deadline: Option<DateTime<Utc>>,
) -> Option<String> {
    let (h, at) = (hours?, deadline?);
    Some(format!(
        "{} (business hours of calendar `{}`)",
        h.rules.date_words(at),
        h.calendar
    ))
}

/// "3 h 20 min" for a number of seconds (the sign is dropped).
pub fn duration(secs: i64) -> String {
    let s = secs.unsigned_abs();
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 86_400 {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{} d {} h", s / 86_400, (s % 86_400) / 3600)
    }
}

/// How a reminder names itself in every room: "Reminder 2 of 3", or for
/// reminder 0 (`remind_before`) "Last reminder before the timeout".
pub fn reminder(n: u32, of: u32) -> String {
    if n == 0 {
        "Last reminder before the timeout".into()
    } else {
        format!("Reminder {n} of {of}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(59), "59 s");
        assert_eq!(duration(3700), "1 h 1 min");
        assert_eq!(duration(-120), "2 min");
        assert_eq!(duration(90_000), "1 d 1 h");
        assert_eq!(reminder(2, 3), "Reminder 2 of 3");
        assert_eq!(reminder(0, 0), "Last reminder before the timeout");
    }

    #[test]
    fn business_deadlines_read_in_the_calendars_words() {
        let (h, fri, mon) = crate::gate::calendar::office_for_tests();
        let at = |s: &str| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M")
                .expect("time")
                .and_utc()
        };
        assert_eq!(
            business_deadline(Some(&h), Some(mon), fri).as_deref(),
            Some("Monday 09:30 CET, in 2 business hours 30 min (calendar `eu-office`)")
        );
        let sat = at("2026-11-28 10:00");
        assert_eq!(
            business_deadline(Some(&h), None, sat).as_deref(),
            Some("calendar `eu-office` is closed now; opens Monday 09:00 CET")
        );
        assert_eq!(
            business_deadline(Some(&h), Some(mon), sat).as_deref(),
            Some("Monday 09:30 CET, in 30 business minutes (calendar `eu-office` is closed now; opens Monday 09:00 CET)")
        );
        assert_eq!(business_deadline(Some(&h), None, fri), None);
        assert_eq!(business_deadline(None, Some(mon), fri), None);
        assert_eq!(
            business_deadline_posted(Some(&h), Some(mon)).as_deref(),
            Some("Mon 30 Nov 09:30 CET (business hours of calendar `eu-office`)")
        );
    }
}
