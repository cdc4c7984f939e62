//! Text for people at a terminal: times in their own time zone and in
//! words ("auto-rejects at 16:54 (in 25 min) if nobody answers"), and
//! tables whose columns line up whatever the values' lengths.
//!
//! JSON output keeps RFC 3339 UTC times; only human text goes through here.

use chrono::{DateTime, Local, Utc};

/// `t` in local time, as short as is unambiguous next to `now`: `16:54`
/// today, `Tue 16:54` within a week, else `2025-06-03 16:54`.
pub(super) fn local_time(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let local = t.with_timezone(&Local);
    let today = now.with_timezone(&Local).date_naive();
    let days = (local.date_naive() - today).num_days();
    if days == 0 {
        local.format("%H:%M").to_string()
    } else if (-6..=6).contains(&days) {
        local.format("%a %H:%M").to_string()
    } else {
        local.format("%Y-%m-%d %H:%M").to_string()
    }
}

/// A date and time in local time, for lists: `2025-06-03 16:54`.
pub(super) fn local_stamp(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
}

/// How far `t` is from `now`, in words: `in 25 min`, `3 h 10 min ago`.
pub(super) fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (t - now).num_seconds();
    let span = span(secs.unsigned_abs());
    if secs >= 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// `secs` in words: `less than a minute`, `5 min`, `2 h 30 min`, `3 days`.
pub(super) fn span(secs: u64) -> String {
    let mins = secs / 60;
    match mins {
        0 => "less than a minute".into(),
        1..=59 => format!("{mins} min"),
        60..=1439 if mins.is_multiple_of(60) => format!("{} h", mins / 60),
        60..=1439 => format!("{} h {} min", mins / 60, mins % 60),
        _ => {
            let days = mins / 1440;
            format!("{days} day{}", if days == 1 { "" } else { "s" })
        }
    }
}

/// What a gate's timeout does, as a verb phrase, from the view's
/// `timeout_effect` (`approve`, `reject`, ``answer `x` ``, `skipped`,
/// `aborted`).
fn effect_phrase(effect: Option<&str>) -> String {
    match effect.unwrap_or_default() {
        "approve" | "approved" => "auto-approves".into(),
        "reject" | "rejected" => "auto-rejects".into(),
        "skipped" | "skip" => "skips this gate".into(),
        "aborted" | "abort" => "aborts the run (failed)".into(),
        e if e.starts_with("answer ") => format!("answers {} by itself", &e["answer ".len()..]),
        "" => "applies its fallback".into(),
        other => format!("applies its fallback ({other})"),
    }
}

/// The sentence about a gate's timeout: ``auto-rejects at 16:54 (in 25
/// min) if nobody answers``, or, once passed, what the next resume does.
pub(super) fn timeout_sentence(
    at: DateTime<Utc>,
    effect: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let when = local_time(at, now);
    let rel = relative(at, now);
    let effect = effect_phrase(effect);
    if at > now {
        format!("{effect} at {when} ({rel}) if nobody answers")
    } else {
        format!(
            "timed out at {when} ({rel}): the next `resume` (or `sessions sweep`) {effect} — an answer now comes too late"
        )
    }
}

/// Rows under a header, each column as wide as its widest cell (counted in
/// characters), two spaces apart; the last column is not padded.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                out.push_str(&" ".repeat(pad));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(header.to_vec())];
    for row in rows {
        out.push(line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    #[test]
    fn spans_read_as_words() {
        let now = crate::clock::test_epoch();
        assert_eq!(
            relative(now + TimeDelta::seconds(25 * 60 + 5), now),
            "in 25 min"
        );
        assert_eq!(
            relative(now - TimeDelta::seconds(190 * 60), now),
            "3 h 10 min ago"
        );
        assert_eq!(relative(now + TimeDelta::seconds(2 * 3600), now), "in 2 h");
        assert_eq!(
            relative(now + TimeDelta::seconds(3 * 86400 + 60), now),
            "in 3 days"
        );
        assert_eq!(
            relative(now + TimeDelta::seconds(20), now),
            "in less than a minute"
        );
    }

    #[test]
    fn timeouts_say_what_happens_and_when() {
        let now = crate::clock::test_epoch();
        let at = now + TimeDelta::seconds(30 * 60 + 10);
        let s = timeout_sentence(at, Some("reject"), now);
        assert!(s.starts_with("auto-rejects at "), "{s}");
        assert!(s.ends_with("(in 30 min) if nobody answers"), "{s}");
        assert!(s.contains(&local_time(at, now)), "{s}");
        let s = timeout_sentence(at, Some("answer `ok`"), now);
        assert!(s.starts_with("answers `ok` by itself at "), "{s}");
        let s = timeout_sentence(now - TimeDelta::seconds(120), Some("approve"), now);
        assert!(s.starts_with("timed out at "), "{s}");
        assert!(s.contains("auto-approves"), "{s}");
    }

    #[test]
    fn columns_line_up_whatever_the_lengths() {
        let rows = vec![
            vec!["a".to_string(), "paused".into(), "x".into()],
            vec!["bbbbbb".to_string(), "completed".into(), "y".into()],
        ];
        let lines = table(&["ID", "STATUS", "GATE"], &rows);
        assert_eq!(lines[0], "ID      STATUS     GATE");
        assert_eq!(lines[1], "a       paused     x");
        assert_eq!(lines[2], "bbbbbb  completed  y");
    }
}
