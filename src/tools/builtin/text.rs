//! Text helpers for tool results: one-line previews, sizes and durations
//! as people write them, UTF-8 that survives a cut, and the note that says
//! how much was cut.
//!
//! They format; they never decide limits (the callers pass them in).

use std::time::Duration;

/// Characters of a value shown in `describe()` and header summaries.
const SHORT_CHARS: usize = 120;
/// The per-call limit used when the configured one is zero ("no limit").
const NO_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// `s` on one line, at most [`SHORT_CHARS`] characters, `…` marking a cut.
pub(crate) fn short(s: &str) -> String {
    short_n(s, SHORT_CHARS)
}

/// `s` on one line (control characters become spaces, line breaks `↵`), at
/// most `max` characters with `…` marking a cut.
pub(crate) fn short_n(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| match c {
            '\n' => '↵',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The first `max` items joined with `, `, then `and N more`.
pub(super) fn list_cut(items: &[String], max: usize) -> String {
    let mut out = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        out.push_str(&format!(" and {} more", items.len() - max));
    }
    out
}

/// `1 byte`, `512 bytes`, `2.1 KB`, `3.0 MB`, `1.2 GB`.
pub(crate) fn human_size(n: u64) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if n == 1 {
        "1 byte".into()
    } else if n < 1024 {
        format!("{n} bytes")
    } else if f < KB * KB {
        format!("{:.1} KB", f / KB)
    } else if f < KB * KB * KB {
        format!("{:.1} MB", f / (KB * KB))
    } else {
        format!("{:.1} GB", f / (KB * KB * KB))
    }
}

/// `5s`, `1.5s`, `250ms`.
pub(crate) fn human_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A zero limit means "no limit".
pub(crate) fn effective_timeout(d: Duration) -> Duration {
    if d.is_zero() {
        NO_LIMIT
    } else {
        d
    }
}

/// `bytes` as text, invalid UTF-8 replaced. When the bytes were cut from a
/// longer text, a character split by the cut is dropped rather than shown
/// as a replacement character.
pub(crate) fn lossy_text(bytes: &[u8], was_cut: bool) -> String {
    let mut end = bytes.len();
    if was_cut {
        for back in 1..=3.min(bytes.len()) {
            let b = bytes[bytes.len() - back];
            if b < 0x80 {
                break;
            }
            if b & 0xC0 == 0xC0 {
                let width = if b >= 0xF0 {
                    4
                } else if b >= 0xE0 {
                    3
                } else {
                    2
                };
                if width > back {
                    end = bytes.len() - back;
                }
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// `[what cut: showing the first N of M bytes; K bytes cut]`.
pub(super) fn cut_note(what: &str, kept: usize, total: u64, exact: bool) -> String {
    let cut = total.saturating_sub(kept as u64);
    let at_least = if exact { "" } else { "at least " };
    format!(
        "[{what} cut: showing the first {kept} of {at_least}{total} bytes; {at_least}{cut} bytes cut]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(2150), "2.1 KB");
        assert_eq!(human_size(3 << 20), "3.0 MB");
        // A multi-byte character split by a cut is dropped, not mangled.
        let bytes = "aé".as_bytes();
        assert_eq!(lossy_text(&bytes[..2], true), "a");
        assert_eq!(lossy_text(&bytes[..2], false), "a\u{fffd}");
        assert_eq!(lossy_text("€".as_bytes(), true), "€");
        assert_eq!(lossy_text(&[0xff, b'a'], true), "\u{fffd}a");
        assert_eq!(human_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(human_duration(Duration::from_secs(5)), "5s");
    }
}
