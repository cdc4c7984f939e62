//! The minijinja sandbox the Slack templates run in, and the filters it
//! registers: `mrkdwn` (escape for Slack mrkdwn, and with a `max` cut the
//! escaped text), `truncate_chars` (cut plain text) and `mention` (a user or
//! group id as a mention, anything else as escaped text). The escaping
//! itself is `escape`'s, which Rust code uses too for text it puts in
//! mrkdwn itself.
//!
//! Nothing here loads templates or checks what they render (that is
//! [`Templates`](super::Templates) and `limits`), and nothing here decides
//! how long a string may be: a template passes each `max`, because only it
//! knows where the string lands.

use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};

use super::escape::{escape_mrkdwn, escaped_len};
use super::limits::cut_for_section;
use crate::model::Approver;

/// Instructions one render may spend: the built-ins need a few thousand.
const FUEL: u64 = 200_000;

/// An environment with no templates yet: strict undefined variables, JSON
/// auto-escaping, the fuel limit and the filters below.
pub(super) fn sandbox() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // A value printed without `tojson` still comes out as a JSON literal.
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    env.set_fuel(Some(FUEL));
    env.add_filter("mrkdwn", mrkdwn_filter);
    env.add_filter("truncate_chars", truncate_chars_filter);
    env.add_filter("mention", mention_filter);
    env
}

/// `text|mrkdwn` escapes; `text|mrkdwn(max)` also cuts so the escaped text
/// (with the closing `…`) is at most `max` chars.
fn mrkdwn_filter(value: &str, max: Option<usize>) -> std::result::Result<String, minijinja::Error> {
    let Some(max) = max else {
        return Ok(escape_mrkdwn(value));
    };
    if max == 0 {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            "mrkdwn(max) needs max >= 1",
        ));
    }
    let total: usize = value.chars().map(escaped_len).sum();
    if total <= max {
        return Ok(escape_mrkdwn(value));
    }
    let (kept, _) = cut_for_section(value, max - 1);
    let mut out = escape_mrkdwn(&kept);
    out.push('…');
    Ok(out)
}

/// `text|truncate_chars(max)`: at most `max` chars, ending with `…` when cut.
fn truncate_chars_filter(value: &str, max: usize) -> std::result::Result<String, minijinja::Error> {
    if max == 0 {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            "truncate_chars(max) needs max >= 1",
        ));
    }
    Ok(truncate_chars(value, max))
}

fn truncate_chars(value: &str, max: usize) -> String {
    if value.chars().count() <= max {
        return value.to_string();
    }
    let mut out: String = value.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `who|mention`: `<@U…>` for a Slack user id, `<!subteam^S…>` for a user
/// group id, escaped text (at most 100
/// chars) for anything else, `someone` for nothing.
fn mention_filter(value: &str) -> String {
    let who = value.trim();
    if let a @ (Approver::SlackUser(_) | Approver::SlackGroup(_)) = Approver::parse(who) {
        crate::slack::words::approver(&a)
    } else if who.is_empty() {
        "someone".to_string()
    } else {
        let (kept, cut) = cut_for_section(who, 99);
        let mut out = escape_mrkdwn(&kept);
        if cut > 0 {
            out.push('…');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::limits::chars;
    use super::*;

    #[test]
    fn filters_escape_cut_and_mention() {
        assert_eq!(
            mrkdwn_filter("<!here> & <@U1>", None).unwrap(),
            "&lt;!here&gt; &amp; &lt;@U1&gt;"
        );
        let cut = mrkdwn_filter("<<<<", Some(9)).unwrap();
        assert_eq!(cut, "&lt;&lt;…");
        assert!(mrkdwn_filter("x", Some(0)).is_err());
        assert_eq!(truncate_chars_filter("héllo", 3).unwrap(), "hé…");
        assert_eq!(truncate_chars_filter("abc", 3).unwrap(), "abc");
        assert_eq!(mention_filter("U04APPROVER"), "<@U04APPROVER>");
        assert_eq!(mention_filter("W012ABCDEF"), "<@W012ABCDEF>");
        assert_eq!(mention_filter("UBUNTUUSER"), "UBUNTUUSER");
        assert_eq!(mention_filter("<@U123>"), "&lt;@U123&gt;");
        assert_eq!(mention_filter(""), "someone");
        assert!(chars(&mention_filter(&"x".repeat(500))) <= 100);
    }
}
