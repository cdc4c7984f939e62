//! The filters strands-cli registers on its Jinja2 sandbox, with its
//! semantics, so its specs render the same text here: `truncate(n)` cuts to
//! `n` characters ending in `...` (not Jinja2's word-aware one), `tojson` is
//! Python's `json.dumps(ensure_ascii=False)` (`", "` and `": "`, no HTML
//! escaping), `regex_search(pattern)` is the first group of a
//! case-insensitive search, or "". minijinja's built-ins (`join`, `title`,
//! `replace`, `default`, `length`, `upper`, ...) cover Jinja2's others;
//! `wordcount` and `striptags` are added for the rest of Jinja2's set.

use minijinja::value::Value;
use minijinja::{Error, ErrorKind};
use serde::Serialize;

/// `truncate(length=100, end="...")`: strands-cli's cut, counted in characters.
pub fn truncate(text: String, length: Option<usize>, end: Option<String>) -> String {
    let length = length.unwrap_or(100);
    let end = end.unwrap_or_else(|| "...".into());
    if text.chars().count() <= length {
        return text;
    }
    let keep = length.saturating_sub(end.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&end);
    out
}

/// Python's `json.dumps` separators, for `tojson`.
struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `tojson(indent=None)` as strands-cli renders it.
pub fn tojson(value: &Value, indent: Option<usize>) -> Result<Value, Error> {
    let fail = |e: serde_json::Error| Error::new(ErrorKind::InvalidOperation, e.to_string());
    let mut out = Vec::new();
    match indent {
        Some(n) => {
            let pad = vec![b' '; n];
            let fmt = serde_json::ser::PrettyFormatter::with_indent(&pad);
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            value.serialize(&mut ser).map_err(fail)?;
        }
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter);
            value.serialize(&mut ser).map_err(fail)?;
        }
    }
    let text = String::from_utf8(out)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    Ok(Value::from_safe_string(text))
}

/// `regex_search(pattern)`: the first capture group of a case-insensitive
/// search, or "" (strands-cli's filter).
pub fn regex_search(text: String, pattern: String) -> Result<String, Error> {
    let re = regex::RegexBuilder::new(&pattern)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("regex_search: {e}")))?;
    Ok(re
        .captures(&text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
        .unwrap_or_default())
}

/// `wordcount`: words separated by whitespace.
pub fn wordcount(text: String) -> usize {
    text.split_whitespace().count()
}

/// `striptags`: the text without `<...>` tags, whitespace collapsed.
pub fn striptags(text: String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_is_strands_clis() {
        assert_eq!(truncate("abcdef".into(), Some(10), None), "abcdef");
        assert_eq!(truncate("abcdefghijkl".into(), Some(8), None), "abcde...");
        assert_eq!(truncate("x".repeat(150), None, None).chars().count(), 100);
        assert_eq!(truncate("ééééé".into(), Some(4), Some("…".into())), "ééé…");
    }

    #[test]
    fn tojson_writes_what_python_writes() {
        let v = Value::from_serialize(serde_json::json!({"a": [1, 2], "b": "<é>"}));
        assert_eq!(
            tojson(&v, None).expect("json").to_string(),
            r#"{"a": [1, 2], "b": "<é>"}"#
        );
        assert!(tojson(&v, Some(2))
            .expect("json")
            .to_string()
            .contains("\n  \"a\""));
    }

    #[test]
    fn regex_search_returns_the_first_group_or_nothing() {
        assert_eq!(
            regex_search("Score: 87/100".into(), r"score:\s*(\d+)".into()).expect("ok"),
            "87"
        );
        assert_eq!(
            regex_search("none".into(), r"(\d+)".into()).expect("ok"),
            ""
        );
        assert!(regex_search("x".into(), "(".into()).is_err());
    }

    #[test]
    fn wordcount_and_striptags() {
        assert_eq!(wordcount(" a b\nc ".into()), 3);
        assert_eq!(striptags("<p>Hi <b>there</b></p>".into()), "Hi there");
    }
}
