//! Escaping for Slack mrkdwn: [`escape_mrkdwn`], and [`escaped_len`], what
//! one character takes once escaped. A leaf: the template filters
//! (`filters`) escape with it and the limits (`limits`) count cuts with
//! it, so neither needs the other for it.

/// Escapes text for Slack mrkdwn: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`,
/// so user text cannot form links, mentions or `<!channel>`.
pub fn escape_mrkdwn(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Characters `c` takes once escaped for mrkdwn.
pub(super) fn escaped_len(c: char) -> usize {
    match c {
        '&' => 5,
        '<' | '>' => 4,
        _ => 1,
    }
}
