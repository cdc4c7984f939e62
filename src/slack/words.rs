//! The words and values several parts of the Slack room share: how a
//! person is mentioned, what a refused answer is told, and how a button's
//! value splits into its gate and tool call. A leaf: it uses no other part
//! of the room, so the parts that say these things (clicks, modals,
//! commands, the home tab, timers, updated messages) need not use each
//! other for them.

use crate::model::Refusal;

/// `<@U123>` for Slack user ids, the name otherwise.
pub fn mention(who: &str) -> String {
    crate::model::mention(who)
}

/// What a refused click is told ([`crate::hub::answers::refusal_text`]).
pub fn refusal_text(r: &Refusal) -> String {
    crate::hub::answers::refusal_text(r)
}

/// A button's value: a gate handle (`review#1`), or `handle|call id` on a
/// tool-approval message. A handle is `id#instance`, so the value splits at
/// the first `|` that follows `#digits`; gate ids with a `|` of their own
/// stay whole.
pub fn split_value(value: &str) -> (&str, Option<&str>) {
    for (i, _) in value.match_indices('|') {
        let head = &value[..i];
        let digits = head
            .rsplit_once('#')
            .map(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if digits == Some(true) {
            return (head, Some(&value[i + 1..]));
        }
    }
    (value, None)
}

#[cfg(test)]
mod tests {
    use super::split_value;

    #[test]
    fn button_values_split_into_handle_and_call() {
        assert_eq!(split_value("review#1"), ("review#1", None));
        assert_eq!(split_value("tools#3|call_1"), ("tools#3", Some("call_1")));
        assert_eq!(split_value("tools#3|a|b"), ("tools#3", Some("a|b")));
        assert_eq!(split_value("tools#3|"), ("tools#3", Some("")));
        // A gate id with a `|` of its own stays whole.
        assert_eq!(split_value("a|b#2"), ("a|b#2", None));
        assert_eq!(split_value("a|b#2|c"), ("a|b#2", Some("c")));
        assert_eq!(split_value("x#|y"), ("x#|y", None));
        assert_eq!(split_value(""), ("", None));
    }
}
