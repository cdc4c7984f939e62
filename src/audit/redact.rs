//! Redaction of what humans are shown and what the audit log keeps:
//! the spec's `security.redact` patterns, plus obvious secrets (API keys,
//! tokens, private keys, `password=...`) whatever the spec says.

use regex::Regex;
use std::sync::OnceLock;

const MASK: &str = "[REDACTED]";

/// Patterns for secrets that are redacted in every run.
fn builtin() -> &'static [Regex] {
    static PATTERNS: OnceLock<Vec<Regex>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
            r"\bxapp-[A-Za-z0-9-]{10,}",
            r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"\bAIza[0-9A-Za-z_-]{30,}",
            r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}",
            r#"(?i)\b(password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b(\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;]+)"#,
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    })
}

/// A redactor with the spec's own patterns added to the built-in ones.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    extra: Vec<Regex>,
}

impl Redactor {
    /// Compiles the spec's patterns; an invalid one is an error naming it.
    pub fn new(patterns: &[String]) -> Result<Redactor, String> {
        let mut extra = Vec::new();
        for p in patterns {
            extra.push(
                Regex::new(p).map_err(|e| {
                    format!("security.redact pattern `{p}` is not a valid regex: {e}")
                })?,
            );
        }
        Ok(Redactor { extra })
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for re in builtin() {
            out = re
                .replace_all(&out, |c: &regex::Captures<'_>| match (c.get(1), c.get(2)) {
                    // key=value forms keep the key so the reader knows what was hidden
                    (Some(k), Some(sep)) => format!("{}{}{MASK}", k.as_str(), sep.as_str()),
                    _ => MASK.to_string(),
                })
                .into_owned();
        }
        for re in &self.extra {
            out = re.replace_all(&out, MASK).into_owned();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obvious_secrets_are_redacted_without_configuration() {
        let r = Redactor::default();
        let text = "token xoxb-1234567890-abcdefghij and sk-proj-ABCDEFGHIJKLMNOPQRSTUV, \
                    AKIAABCDEFGHIJKLMNOP, password=hunter2, Authorization: Bearer abcdefghijklmnopqrstu";
        let out = r.redact(text);
        for secret in [
            "xoxb-1234567890",
            "sk-proj-ABCD",
            "AKIAABCDEFGHIJKLMNOP",
            "hunter2",
            "abcdefghijklmnopqrstu",
        ] {
            assert!(!out.contains(secret), "{secret} leaked: {out}");
        }
        assert!(out.contains("password=[REDACTED]"), "{out}");
        assert_eq!(r.redact("nothing secret here"), "nothing secret here");
    }

    #[test]
    fn spec_patterns_are_applied_and_bad_ones_refused() {
        let r = Redactor::new(&[r"\b\d{4}-\d{4}-\d{4}-\d{4}\b".into()]).expect("valid");
        assert_eq!(
            r.redact("card 4111-1111-1111-1111 ok"),
            "card [REDACTED] ok"
        );
        assert!(Redactor::new(&["(unclosed".into()]).is_err());
    }
}
