//! Business hours: the service's calendars (`calendars:` in the service
//! file, or `STRANDS_CALENDARS`) and the arithmetic gates need from them —
//! whether a calendar is open at an instant, when it next opens, an
//! instant plus so much business time, the business time between two
//! instants, and a deadline in people's words ("Monday 09:30 CET, in 2
//! business hours").
//!
//! A calendar is a time zone, opening hours per weekday in that zone's
//! wall-clock time, and holiday dates:
//!
//! ```yaml
//! calendars:
//!   eu-office:
//!     zone: Europe/Paris            # an IANA time zone
//!     hours:
//!       mon-fri: "09:00-12:30, 13:30-17:30"
//!       sat: "10:00-14:00"          # days not named are closed
//!     holidays: [2026-12-25, 2027-01-01]
//! ```
//!
//! Hours are wall-clock time, so a day across a daylight-saving change
//! still opens at 09:00 local time; the functions take and return UTC
//! instants. A wall-clock time that does not exist (the hour skipped in
//! spring) counts from the instant the clocks jump; one that happens twice
//! (the hour repeated in autumn) opens at the first and closes at the
//! second. Everything here is pure (no clock): callers pass "now".
//!
//! Data with the rules that only read it, so it sits in `model`: the
//! service file (`crate::config::service`), the spec validator and a gate
//! that keeps its calendar (`OpenGate::hours`) all hold one. Not here: a
//! timeout's deadline (`crate::gate::calendar::deadline`), which gate keeps
//! which calendar and what a closed calendar means for it
//! (`crate::engine`, `crate::engine::timers`), and the spec keys
//! (`crate::spec::validate`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// A calendar as written in the service file (and as stored with a gate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarSpec {
    /// An IANA time zone: `Europe/Paris`, `America/New_York`, `UTC`.
    pub zone: String,
    /// Opening hours by day (`mon`, …, `sun`) or range of days (`mon-fri`):
    /// `"09:00-17:30"`, or several intervals, `"09:00-12:00, 13:00-17:00"`.
    pub hours: BTreeMap<String, String>,
    /// Closed all day: `2026-12-25`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holidays: Vec<String>,
}

/// A checked calendar. Built from a [`CalendarSpec`] (which it serializes
/// back to), so a bad one is refused where it is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "CalendarSpec", into = "CalendarSpec")]
pub struct Calendar {
    spec: CalendarSpec,
    zone: Tz,
    /// Open intervals per weekday (Monday first), minutes after local
    /// midnight, `[start, end)`, sorted and apart.
    week: [Vec<(u32, u32)>; 7],
    holidays: BTreeSet<NaiveDate>,
}

/// How far ahead the search for an opening goes before giving up (a
/// calendar always opens within a week after its last holiday; this
/// only bounds a pathological one).
const HORIZON_DAYS: i64 = 3 * 366;

impl TryFrom<CalendarSpec> for Calendar {
    type Error = String;

    /// The error names the key that is wrong and what is expected.
    fn try_from(spec: CalendarSpec) -> Result<Calendar, String> {
        let zone: Tz = spec.zone.trim().parse().map_err(|_| {
            format!(
                "zone: `{}` is not an IANA time zone (e.g. Europe/Paris, America/New_York, UTC)",
                spec.zone
            )
        })?;
        let mut week: [Vec<(u32, u32)>; 7] = Default::default();
        let mut named = [false; 7];
        for (days, text) in &spec.hours {
            for d in parse_days(days)? {
                if named[d] {
                    return Err(format!(
                        "hours: {} is given twice (`{days}` names it again)",
                        DAY_NAMES[d]
                    ));
                }
                named[d] = true;
                week[d] = parse_intervals(text).map_err(|why| format!("hours: {days}: {why}"))?;
            }
        }
        if week.iter().all(Vec::is_empty) {
            return Err("hours: the calendar never opens; give opening hours, e.g. `mon-fri: \"09:00-17:30\"`".into());
        }
        let mut holidays = BTreeSet::new();
        for h in &spec.holidays {
            let d = NaiveDate::parse_from_str(h.trim(), "%Y-%m-%d")
                .map_err(|_| format!("holidays: `{h}` is not a date like 2026-12-25"))?;
            holidays.insert(d);
        }
        Ok(Calendar {
            spec,
            zone,
            week,
            holidays,
        })
    }
}

impl From<Calendar> for CalendarSpec {
    fn from(c: Calendar) -> CalendarSpec {
        c.spec
    }
}

const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// `mon`, `mon-fri` (a range may wrap: `fri-mon`), `sat,sun`: weekday
/// indexes, Monday 0.
fn parse_days(key: &str) -> Result<Vec<usize>, String> {
    let day = |s: &str| {
        let s = s.trim().to_ascii_lowercase();
        DAY_NAMES
            .iter()
            .position(|d| s.len() >= 3 && (s == *d || full_day(d).starts_with(s.as_str())))
            .ok_or_else(|| {
                format!("hours: `{key}` is not a day or a range of days (mon, tue, …, sun; mon-fri; sat,sun)")
            })
    };
    let mut out = Vec::new();
    for part in key.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (mut i, end) = (day(a)?, day(b)?);
                loop {
                    out.push(i);
                    if i == end {
                        break;
                    }
                    i = (i + 1) % 7;
                }
            }
            None => out.push(day(part)?),
        }
    }
    Ok(out)
}

fn full_day(short: &str) -> &'static str {
    match short {
        "mon" => "monday",
        "tue" => "tuesday",
        "wed" => "wednesday",
        "thu" => "thursday",
        "fri" => "friday",
        "sat" => "saturday",
        _ => "sunday",
    }
}

/// `"09:00-12:00, 13:00-17:30"` (or `closed`): sorted, non-overlapping
/// minute intervals within one day (`24:00` ends at midnight).
fn parse_intervals(text: &str) -> Result<Vec<(u32, u32)>, String> {
    if text.trim().eq_ignore_ascii_case("closed") {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let bad = || format!("`{}` is not an interval like 09:00-17:30", part.trim());
        let (a, b) = part.split_once('-').ok_or_else(bad)?;
        let (a, b) = (minutes(a).ok_or_else(bad)?, minutes(b).ok_or_else(bad)?);
        if b <= a {
            return Err(format!(
                "`{}` ends before it starts; an interval stays within one day (split a night shift at 24:00)",
                part.trim()
            ));
        }
        out.push((a, b));
    }
    out.sort_unstable();
    if out.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(format!("`{text}` has intervals that overlap"));
    }
    Ok(out)
}

/// `HH:MM` as minutes after midnight, `24:00` included.
fn minutes(s: &str) -> Option<u32> {
    let (h, m) = s.trim().split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (m < 60 && (h < 24 || (h == 24 && m == 0)) && s.trim().len() <= 5).then_some(h * 60 + m)
}

impl Calendar {
    /// The calendar's time zone.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The open intervals of local date `d` as UTC instants (none on a
    /// holiday).
    fn day(&self, d: NaiveDate) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        if self.holidays.contains(&d) {
            return Vec::new();
        }
        self.week[d.weekday().num_days_from_monday() as usize]
            .iter()
            .filter_map(|&(a, b)| {
                let s = self.instant(d, a, true)?;
                let e = self.instant(d, b, false)?;
                (e > s).then_some((s, e))
            })
            .collect()
    }

    /// Local wall-clock time `min` minutes after midnight of `d`, as an
    /// instant: the first of a repeated time when `start`, the second when
    /// not; a skipped time is the instant the clocks jump.
    fn instant(&self, d: NaiveDate, min: u32, start: bool) -> Option<DateTime<Utc>> {
        let midnight = d.and_time(NaiveTime::MIN);
        let local = midnight.checked_add_signed(Duration::minutes(i64::from(min)))?;
        // A skipped time: the first wall-clock time after it that exists.
        for step in 0..=16 {
            let t = local.checked_add_signed(Duration::minutes(15 * step))?;
            let mapped = self.zone.from_local_datetime(&t);
            let found = if start {
                mapped.earliest()
            } else {
                mapped.latest()
            };
            if let Some(f) = found {
                return Some(f.with_timezone(&Utc));
            }
        }
        None
    }

    /// `t` in the calendar's zone; `None` within a day of the ends of
    /// time, where local time cannot be told (chrono would panic).
    fn local(&self, t: DateTime<Utc>) -> Option<DateTime<Tz>> {
        let n = t.naive_utc();
        let room = n.checked_add_signed(Duration::days(1)).is_some()
            && n.checked_sub_signed(Duration::days(1)).is_some();
        room.then(|| t.with_timezone(&self.zone))
    }

    /// The open intervals that end after `t`, in order, starting with the
    /// local day before `t` (an interval never spans two days). Near the
    /// ends of time there are none.
    fn intervals_from(
        &self,
        t: DateTime<Utc>,
    ) -> impl Iterator<Item = (DateTime<Utc>, DateTime<Utc>)> + '_ {
        let first = self
            .local(t)
            .map(|l| l.date_naive())
            .map(|d| d.pred_opt().unwrap_or(d));
        first
            .into_iter()
            .flat_map(|first| {
                (0..HORIZON_DAYS).map_while(move |i| first.checked_add_signed(Duration::days(i)))
            })
            .flat_map(move |d| self.day(d))
            .filter(move |&(_, e)| e > t)
    }

    /// Whether the calendar is open at `t`.
    pub fn is_open(&self, t: DateTime<Utc>) -> bool {
        self.intervals_from(t)
            .next()
            .is_some_and(|(s, e)| s <= t && t < e)
    }

    /// `t` when open then, else the next opening (the end of time for a
    /// calendar that never opens again).
    pub fn next_open(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        self.intervals_from(t)
            .next()
            .map(|(s, _)| s.max(t))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// `t` when the calendar is open then or closes right then (a
    /// business deadline that uses up the day lands on the closing), else
    /// the next opening: when something that must not happen outside hours
    /// (a reminder, an automatic approval) may happen instead.
    pub fn settle(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        if self.is_open(t) || self.is_open(t - Duration::seconds(1)) {
            t
        } else {
            self.next_open(t)
        }
    }

    /// The instant `secs` seconds of business time after `start` (which
    /// may be outside hours: counting begins at the next opening). A
    /// deadline that uses up an interval exactly lands on its closing.
    pub fn add(&self, start: DateTime<Utc>, secs: u64) -> DateTime<Utc> {
        let mut left = i64::try_from(secs).unwrap_or(i64::MAX);
        for (s, e) in self.intervals_from(start) {
            let from = s.max(start);
            let here = (e - from).num_seconds();
            if left <= here {
                return from + Duration::seconds(left);
            }
            left -= here;
        }
        DateTime::<Utc>::MAX_UTC
    }

    /// Business seconds between `a` and `b` (0 when `b` is not after `a`).
    pub fn business_secs_between(&self, a: DateTime<Utc>, b: DateTime<Utc>) -> u64 {
        if b <= a {
            return 0;
        }
        self.intervals_from(a)
            .take_while(|&(s, _)| s < b)
            .map(|(s, e)| (e.min(b) - s.max(a)).num_seconds().max(0) as u64)
            .sum()
    }

    /// A deadline in people's words, in the calendar's local time:
    /// "Monday 09:30 CET, in 2 business hours", "today 17:00 CEST, in 45
    /// business minutes"; while closed it says when it opens.
    pub fn describe(&self, now: DateTime<Utc>, deadline: DateTime<Utc>) -> String {
        let when = self.deadline_words(now, deadline);
        match self.opens_words(now).filter(|_| deadline > now) {
            Some(opens) => format!("{when} (closed now; opens {opens})"),
            None => when,
        }
    }

    /// [`Calendar::describe`] without the note on a closed calendar:
    /// "Monday 09:30 CET, in 2 business hours", "today 09:00 CET, passed".
    pub fn deadline_words(&self, now: DateTime<Utc>, deadline: DateTime<Utc>) -> String {
        let when = self.local_words(now, deadline);
        if deadline <= now {
            return format!("{when}, passed");
        }
        let left = business_words(self.business_secs_between(now, deadline));
        format!("{when}, in {left}")
    }

    /// While the calendar is closed at `now`, when it opens ("Monday 09:00
    /// CET"); `None` while open.
    pub fn opens_words(&self, now: DateTime<Utc>) -> Option<String> {
        (!self.is_open(now)).then(|| self.local_words(now, self.next_open(now)))
    }

    /// "Mon 30 Nov 09:30 CET": `t` in local time, the same whenever it is
    /// read (for messages that stay posted).
    pub fn date_words(&self, t: DateTime<Utc>) -> String {
        match self.local(t) {
            Some(local) => format!("{}{}", local.format("%a %-d %b %H:%M"), self.zone_words(t)),
            None => t.format("%Y-%m-%d %H:%M UTC").to_string(),
        }
    }

    /// " CET", or " (Asia/Dubai)" where the zone's abbreviation is a bare
    /// offset.
    fn zone_words(&self, t: DateTime<Utc>) -> String {
        let abbr = self
            .local(t)
            .map(|l| l.format("%Z").to_string())
            .unwrap_or_default();
        if abbr.starts_with(|c: char| c.is_ascii_alphabetic()) {
            format!(" {abbr}")
        } else {
            format!(" ({})", self.zone.name())
        }
    }

    /// "today 17:00 CET", "tomorrow 09:00 CET", "Monday 09:30 CET", "Fri 8
    /// Jan 09:00 CET": `t` in local time as seen from `now`.
    pub fn local_words(&self, now: DateTime<Utc>, t: DateTime<Utc>) -> String {
        let (Some(local), Some(seen)) = (self.local(t), self.local(now)) else {
            return t.format("%Y-%m-%d %H:%M UTC").to_string();
        };
        let days = (local.date_naive() - seen.date_naive()).num_days();
        let day = match days {
            0 => "today".to_string(),
            1 => "tomorrow".to_string(),
            2..=6 => weekday_name(local.weekday()).to_string(),
            _ => local.format("%a %-d %b").to_string(),
        };
        format!("{day} {}{}", local.format("%H:%M"), self.zone_words(t))
    }
}

fn weekday_name(d: Weekday) -> &'static str {
    match d {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

/// "2 business hours", "1 business hour 30 min", "45 business minutes",
/// "under a business minute".
fn business_words(secs: u64) -> String {
    let (h, m) = (secs / 3600, secs % 3600 / 60);
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    match (h, m) {
        (0, 0) => "under a business minute".into(),
        (0, m) => plural(m, "business minute", "business minutes"),
        (h, 0) => plural(h, "business hour", "business hours"),
        (h, m) => format!("{} {m} min", plural(h, "business hour", "business hours")),
    }
}

impl fmt::Display for Calendar {
    /// `Europe/Paris, mon-fri 09:00-17:30`: what the calendar is, briefly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.zone.name())?;
        for (days, hours) in &self.spec.hours {
            write!(f, ", {days} {hours}")?;
        }
        Ok(())
    }
}

/// Which calendar a gate keeps, of the service's `names`: the one it
/// names, else the one named `default`, else the only one. `Err` says
/// which exist.
pub fn pick(names: &[String], named: Option<&str>) -> Result<String, String> {
    let found = match named {
        Some(n) => names.iter().find(|k| *k == n),
        None => names
            .iter()
            .find(|k| *k == "default")
            .or_else(|| names.first().filter(|_| names.len() == 1)),
    };
    found.cloned().ok_or_else(|| {
        let known = if names.is_empty() {
            "the service defines no calendars (`calendars:` in STRANDS_SERVICE_FILE, or STRANDS_CALENDARS)".to_string()
        } else {
            let listed: Vec<String> = names.iter().map(|k| format!("`{k}`")).collect();
            format!("the service's calendars are {}", listed.join(", "))
        };
        match named {
            Some(n) => format!("there is no calendar `{n}`: {known}"),
            None => format!(
                "no calendar is named `default` (nor is there only one): {known}; name one with `calendar:`"
            ),
        }
    })
}

#[cfg(test)]
mod tests;
