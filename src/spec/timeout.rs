//! A duration as people write it in a spec — `30m`, `8h`, `2d`, `90s`,
//! `1h30m` — optionally counted in business time: `8h business` counts
//! only the hours the gate's calendar is open (`crate::gate::calendar::deadline`).
//! Gates (`timeout:`) and approval rules read it the same way.

use std::fmt;

/// A parsed `timeout:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    pub secs: u64,
    /// Only business time counts.
    pub business: bool,
}

impl Timeout {
    /// Parses `8h`, `1h30m`, `45 min`, `2d business`. The error says what
    /// was expected.
    pub fn parse(text: &str) -> Result<Timeout, String> {
        let t = text.trim();
        let (amount, business) = match t.strip_suffix("business") {
            Some(rest) => (rest.trim_end(), true),
            None => (t, false),
        };
        let bad = || {
            format!(
                "`{text}` is not a duration: write a number and a unit (s, m, h, d), e.g. `30m`, `8h`, `1h30m`, optionally followed by `business`"
            )
        };
        if amount.is_empty() {
            return Err(bad());
        }
        let mut secs: u64 = 0;
        let mut rest = amount;
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if digits == 0 {
                return Err(bad());
            }
            let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
            rest = rest[digits..].trim_start();
            let unit_len = rest
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(rest.len());
            let unit = match &rest[..unit_len] {
                "s" | "sec" | "secs" | "second" | "seconds" => 1,
                "m" | "min" | "mins" | "minute" | "minutes" => 60,
                "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
                "d" | "day" | "days" => 86_400,
                _ => return Err(bad()),
            };
            secs = n
                .checked_mul(unit)
                .and_then(|v| secs.checked_add(v))
                .ok_or_else(bad)?;
            rest = rest[unit_len..].trim_start();
        }
        if secs == 0 {
            return Err(format!("`{text}` is zero; leave the timeout out for none"));
        }
        Ok(Timeout { secs, business })
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (d, h, m, s) = (
            self.secs / 86_400,
            self.secs % 86_400 / 3_600,
            self.secs % 3_600 / 60,
            self.secs % 60,
        );
        for (n, u) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
            if n > 0 {
                write!(f, "{n}{u}")?;
            }
        }
        if self.business {
            f.write_str(" business")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Timeout;

    #[test]
    fn durations_read_as_written_and_print_back() {
        for (text, secs, business, shown) in [
            ("30m", 1_800, false, "30m"),
            ("8h business", 28_800, true, "8h business"),
            ("1h30m", 5_400, false, "1h30m"),
            ("2 days", 172_800, false, "2d"),
            ("45 min business", 2_700, true, "45m business"),
            ("90s", 90, false, "1m30s"),
        ] {
            let t = Timeout::parse(text).expect(text);
            assert_eq!((t.secs, t.business), (secs, business), "{text}");
            assert_eq!(t.to_string(), shown);
        }
    }

    #[test]
    fn anything_else_is_refused_saying_what_is_expected() {
        for text in [
            "",
            "8",
            "h",
            "8 hours please",
            "business",
            "0m",
            "-3h",
            "99999999999999999999d",
        ] {
            let e = Timeout::parse(text).expect_err(text);
            assert!(e.contains('`'), "{text}: {e}");
        }
    }
}
