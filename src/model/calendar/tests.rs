//! Business-time arithmetic on fixed instants: weekends, holidays and the
//! daylight-saving changes of 2026 in Paris and New York.

use super::*;
use chrono::NaiveDateTime;

fn cal(zone: &str, hours: &[(&str, &str)], holidays: &[&str]) -> Calendar {
    Calendar::try_from(CalendarSpec {
        zone: zone.into(),
        hours: hours
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        holidays: holidays.iter().map(|h| h.to_string()).collect(),
    })
    .expect("a good calendar")
}

/// Paris, Monday to Friday, 09:00-17:00 (8 hours a day).
fn paris() -> Calendar {
    cal(
        "Europe/Paris",
        &[("mon-fri", "09:00-17:00")],
        &["2026-12-25"],
    )
}

/// `2026-11-27 15:00` in `c`'s zone, as an instant (the earlier one when
/// ambiguous).
fn local(c: &Calendar, text: &str) -> DateTime<Utc> {
    let n = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").expect("a local time");
    c.zone()
        .from_local_datetime(&n)
        .earliest()
        .expect("exists")
        .with_timezone(&Utc)
}

fn utc(text: &str) -> DateTime<Utc> {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
        .expect("a UTC time")
        .and_utc()
}

const HOUR: u64 = 3600;

#[test]
fn eight_business_hours_from_friday_afternoon_land_on_monday() {
    let c = paris();
    // Friday 15:00 CET: 2 hours on Friday, 6 on Monday.
    let from = local(&c, "2026-11-27 15:00");
    assert_eq!(c.add(from, 8 * HOUR), utc("2026-11-30 14:00"));
    assert_eq!(
        c.business_secs_between(from, utc("2026-11-30 14:00")),
        8 * HOUR
    );
    // Opened on Saturday: counting starts Monday 09:00.
    let sat = local(&c, "2026-11-28 11:00");
    assert!(!c.is_open(sat));
    assert_eq!(c.next_open(sat), local(&c, "2026-11-30 09:00"));
    assert_eq!(c.add(sat, 8 * HOUR), local(&c, "2026-11-30 17:00"));
    // Exactly at closing counts as the close, not the next opening.
    assert_eq!(
        c.add(local(&c, "2026-11-30 09:00"), 8 * HOUR),
        local(&c, "2026-11-30 17:00")
    );
    assert!(c.is_open(local(&c, "2026-11-30 16:59")));
    assert!(!c.is_open(local(&c, "2026-11-30 17:00")));
    // What may not happen outside hours happens at closing, or waits.
    let close = local(&c, "2026-11-27 17:00");
    assert_eq!(c.settle(close), close);
    assert_eq!(
        c.settle(close + Duration::minutes(1)),
        local(&c, "2026-11-30 09:00")
    );
    assert_eq!(c.settle(from), from);
}

#[test]
fn a_holiday_is_skipped_like_a_weekend() {
    let c = paris();
    // Thursday 24 December at closing; Friday 25 is a holiday.
    let from = local(&c, "2026-12-24 17:00");
    assert_eq!(c.add(from, 8 * HOUR), local(&c, "2026-12-28 17:00"));
    assert_eq!(c.add(from, HOUR), local(&c, "2026-12-28 10:00"));
    assert!(!c.is_open(local(&c, "2026-12-25 10:00")));
    assert_eq!(
        c.next_open(local(&c, "2026-12-25 10:00")),
        local(&c, "2026-12-28 09:00")
    );
    // Without the holiday, Friday counts.
    let no_holiday = cal("Europe/Paris", &[("mon-fri", "09:00-17:00")], &[]);
    assert_eq!(no_holiday.add(from, HOUR), local(&c, "2026-12-25 10:00"));
}

#[test]
fn paris_days_across_the_changes_of_2026_count_their_real_hours() {
    let every_day = cal("Europe/Paris", &[("mon-sun", "00:00-24:00")], &[]);
    // 29 March: 23 hours; 25 October: 25 hours.
    let day = |d: &str, next: &str| {
        every_day.business_secs_between(
            local(&every_day, &format!("{d} 00:00")),
            local(&every_day, &format!("{next} 00:00")),
        )
    };
    assert_eq!(day("2026-03-29", "2026-03-30"), 23 * HOUR);
    assert_eq!(day("2026-10-25", "2026-10-26"), 25 * HOUR);
    assert_eq!(day("2026-03-28", "2026-03-29"), 24 * HOUR);
    // 48 business hours from Saturday noon (CET) are 48 real hours: Monday
    // 13:00 CEST, not 12:00.
    let sat = local(&every_day, "2026-03-28 12:00");
    assert_eq!(every_day.add(sat, 48 * HOUR), utc("2026-03-30 11:00"));

    // Opening hours are wall-clock time on either side of the change.
    let daily = cal("Europe/Paris", &[("mon-sun", "09:00-17:00")], &[]);
    let sat = local(&daily, "2026-03-28 16:00");
    // Saturday 16:00-17:00 CET (UTC+1), then Sunday from 09:00 CEST (UTC+2).
    assert_eq!(daily.add(sat, 2 * HOUR), utc("2026-03-29 08:00"));
    let sat = local(&daily, "2026-10-24 16:00");
    // Saturday 16:00-17:00 CEST, then Sunday from 09:00 CET.
    assert_eq!(daily.add(sat, 2 * HOUR), utc("2026-10-25 09:00"));

    // Hours across the skipped and the repeated hour.
    let night = cal("Europe/Paris", &[("sun", "01:00-04:00")], &[]);
    // 29 March: 01:00 CET to 04:00 CEST is 2 hours.
    assert_eq!(
        night.business_secs_between(utc("2026-03-28 12:00"), utc("2026-03-29 12:00")),
        2 * HOUR
    );
    // 25 October: 01:00 CEST to 04:00 CET is 4 hours.
    assert_eq!(
        night.business_secs_between(utc("2026-10-24 12:00"), utc("2026-10-25 12:00")),
        4 * HOUR
    );
    // An opening in the skipped hour opens when the clocks jump (03:00 CEST).
    let skipped = cal("Europe/Paris", &[("sun", "02:30-05:00")], &[]);
    assert_eq!(
        skipped.next_open(utc("2026-03-28 12:00")),
        utc("2026-03-29 01:00")
    );
}

#[test]
fn new_york_days_across_the_changes_of_2026_count_their_real_hours() {
    let every_day = cal("America/New_York", &[("mon-sun", "00:00-24:00")], &[]);
    let day = |d: &str, next: &str| {
        every_day.business_secs_between(
            local(&every_day, &format!("{d} 00:00")),
            local(&every_day, &format!("{next} 00:00")),
        )
    };
    assert_eq!(day("2026-03-08", "2026-03-09"), 23 * HOUR);
    assert_eq!(day("2026-11-01", "2026-11-02"), 25 * HOUR);
    let ny = cal("America/New_York", &[("mon-fri", "09:00-17:00")], &[]);
    // Friday 16:00 EDT (UTC-4) + 2h: Monday 10:00 EST (UTC-5).
    let fri = local(&ny, "2026-10-30 16:00");
    assert_eq!(fri, utc("2026-10-30 20:00"));
    assert_eq!(ny.add(fri, 2 * HOUR), utc("2026-11-02 15:00"));
    // Friday 16:00 EST + 2h: Monday 10:00 EDT.
    let fri = local(&ny, "2026-03-06 16:00");
    assert_eq!(ny.add(fri, 2 * HOUR), utc("2026-03-09 14:00"));
}

#[test]
fn several_intervals_a_day_and_day_lists() {
    let c = cal(
        "UTC",
        &[
            ("mon-fri", "09:00-12:00, 13:00-17:00"),
            ("sat", "10:00-14:00"),
        ],
        &[],
    );
    // Monday 11:00 + 2h: one before lunch, one after.
    assert_eq!(
        c.add(utc("2026-11-30 11:00"), 2 * HOUR),
        utc("2026-11-30 14:00")
    );
    assert!(!c.is_open(utc("2026-11-30 12:30")));
    assert_eq!(
        c.next_open(utc("2026-11-30 12:30")),
        utc("2026-11-30 13:00")
    );
    // Friday 16:00 + 3h: 1 on Friday, 2 on Saturday.
    assert_eq!(
        c.add(utc("2026-12-04 16:00"), 3 * HOUR),
        utc("2026-12-05 12:00")
    );
    let c = cal("UTC", &[("sat,sun", "10:00-11:00")], &[]);
    assert!(c.is_open(utc("2026-12-05 10:30")) && c.is_open(utc("2026-12-06 10:30")));
    assert!(!c.is_open(utc("2026-12-07 10:30")));
    // A range may wrap around the week.
    let c = cal("UTC", &[("fri-mon", "10:00-11:00")], &[]);
    assert!(c.is_open(utc("2026-12-06 10:30")) && c.is_open(utc("2026-12-07 10:30")));
    assert!(!c.is_open(utc("2026-12-08 10:30")));
}

#[test]
fn the_end_of_time_is_no_opening_and_no_panic() {
    let c = paris();
    let end = DateTime::<Utc>::MAX_UTC;
    assert!(!c.is_open(end));
    assert_eq!(c.next_open(end), end);
    assert_eq!(c.settle(end), end);
    assert_eq!(c.add(end - Duration::days(2), 100 * HOUR), end);
    assert!(c.business_secs_between(end - Duration::days(1), end) <= 8 * HOUR);
    let start = DateTime::<Utc>::MIN_UTC;
    assert_eq!(c.business_secs_between(start, start + Duration::days(1)), 0);
    assert!(
        c.describe(start, end)
            .contains("UTC, in under a business minute"),
        "{}",
        c.describe(start, end)
    );
    assert!(c.date_words(end).ends_with("UTC"));
}

#[test]
fn deadlines_read_in_peoples_words() {
    let c = paris();
    let fri_1630 = local(&c, "2026-11-27 16:30");
    assert_eq!(
        c.describe(fri_1630, local(&c, "2026-11-30 10:00")),
        "Monday 10:00 CET, in 1 business hour 30 min"
    );
    let fri_10 = local(&c, "2026-11-27 10:00");
    assert_eq!(
        c.describe(fri_10, local(&c, "2026-11-27 10:45")),
        "today 10:45 CET, in 45 business minutes"
    );
    assert_eq!(
        c.describe(local(&c, "2026-11-26 16:00"), local(&c, "2026-11-27 10:00")),
        "tomorrow 10:00 CET, in 2 business hours"
    );
    assert_eq!(
        c.describe(local(&c, "2026-11-28 12:00"), local(&c, "2026-11-30 11:00")),
        "Monday 11:00 CET, in 2 business hours (closed now; opens Monday 09:00 CET)"
    );
    assert_eq!(
        c.describe(fri_10, local(&c, "2026-12-08 09:30")),
        "Tue 8 Dec 09:30 CET, in 55 business hours 30 min"
    );
    assert_eq!(
        c.describe(fri_10, local(&c, "2026-11-27 09:00")),
        "today 09:00 CET, passed"
    );
    assert_eq!(
        c.date_words(local(&c, "2026-11-30 09:30")),
        "Mon 30 Nov 09:30 CET"
    );
    let dubai = cal("Asia/Dubai", &[("mon-fri", "09:00-17:00")], &[]);
    assert_eq!(
        dubai.date_words(utc("2026-11-30 06:00")),
        "Mon 30 Nov 10:00 (Asia/Dubai)"
    );
    // Summer time names itself.
    assert_eq!(
        c.describe(local(&c, "2026-06-01 09:00"), local(&c, "2026-06-01 11:00")),
        "today 11:00 CEST, in 2 business hours"
    );
}

#[test]
fn a_bad_calendar_is_refused_naming_the_key() {
    let bad = |zone: &str, hours: &[(&str, &str)], holidays: &[&str]| {
        Calendar::try_from(CalendarSpec {
            zone: zone.into(),
            hours: hours
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            holidays: holidays.iter().map(|h| h.to_string()).collect(),
        })
        .expect_err("refused")
    };
    let ok = [("mon-fri", "09:00-17:00")];
    for (e, want) in [
        (bad("Europe/Pariss", &ok, &[]), "zone: `Europe/Pariss`"),
        (
            bad("UTC", &[("mon-fry", "09:00-17:00")], &[]),
            "`mon-fry` is not a day",
        ),
        (
            bad("UTC", &[("mon", "9-17")], &[]),
            "hours: mon: `9-17` is not an interval",
        ),
        (
            bad("UTC", &[("mon", "17:00-09:00")], &[]),
            "ends before it starts",
        ),
        (
            bad("UTC", &[("mon", "09:00-12:00, 11:00-13:00")], &[]),
            "overlap",
        ),
        (
            bad("UTC", &[("mon", "09:00-25:00")], &[]),
            "not an interval",
        ),
        (
            bad(
                "UTC",
                &[("mon-fri", "09:00-17:00"), ("fri", "10:00-11:00")],
                &[],
            ),
            "fri is given twice",
        ),
        (bad("UTC", &[("mon", "closed")], &[]), "never opens"),
        (bad("UTC", &[], &[]), "never opens"),
        (bad("UTC", &ok, &["25/12/2026"]), "holidays: `25/12/2026`"),
    ] {
        assert!(e.contains(want), "{e} (wanted {want})");
    }
}

#[test]
fn a_calendar_is_stored_as_written_and_read_back() {
    let c = paris();
    let json = serde_json::to_string(&c).expect("serializes");
    assert!(
        json.contains("Europe/Paris") && json.contains("2026-12-25"),
        "{json}"
    );
    let back: Calendar = serde_json::from_str(&json).expect("reads back");
    assert_eq!(back, c);
    // What the server logs at start-up.
    assert_eq!(c.to_string(), "Europe/Paris, mon-fri 09:00-17:00");
    assert!(serde_json::from_str::<Calendar>(
        r#"{"zone":"Mars/Olympus","hours":{"mon":"09:00-10:00"}}"#
    )
    .is_err());
}

#[test]
fn a_gate_finds_its_calendar_or_hears_which_exist() {
    let names = vec!["default".to_string(), "us".to_string()];
    assert_eq!(pick(&names, None).expect("default"), "default");
    assert_eq!(pick(&names, Some("us")).expect("named"), "us");
    let e = pick(&names, Some("eu")).expect_err("unknown");
    assert!(e.contains("`eu`") && e.contains("`default`, `us`"), "{e}");
    let one = vec!["eu-office".to_string()];
    assert_eq!(pick(&one, None).expect("the only one"), "eu-office");
    let two = vec!["eu".to_string(), "us".to_string()];
    assert!(pick(&two, None)
        .expect_err("ambiguous")
        .contains("`calendar:`"));
    assert!(pick(&[], None)
        .expect_err("none")
        .contains("defines no calendars"));
}
