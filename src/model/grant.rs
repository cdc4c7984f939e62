//! Trust within limits (issue 43): an approver answers a tool call with
//! "approve, and allow the same for 1 h / for this run / for calls whose
//! arguments match", and later calls it allows run without asking.
//!
//! Two types: [`Limit`], what the answer asks for (a span and argument
//! conditions, carried by `Decision::Trust`), and [`Grant`], the record
//! the intake stores from it (who, which tool of which workflow, until
//! when or for which run, where it came from, whether it was revoked).
//! Both say themselves as one readable rule
//! (`tool http_request where args.url starts with "https://api.example.com/", for 1h`),
//! shown before and after it is saved.
//!
//! Deliberately small: conditions are on top-level arguments only, each
//! an exact value or a text prefix, all of which must hold. Whether a
//! tool may be trusted at all (never `shell`, `!`-negated tools, a host
//! the model chose, a rule with `trust: never`) is the engine's policy
//! (`engine::tools`), not this module's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a time-limited grant lasts when the answer names no duration.
pub const DEFAULT_SECS: u64 = 3600;
/// The longest a time-limited grant may last: 30 days.
pub const MAX_SECS: u64 = 30 * 86_400;

/// How long what an approver allows lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    /// The rest of this run.
    Run,
    /// This long from the answer.
    For { secs: u64 },
}

/// A test on one top-level argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// The argument is exactly this JSON value.
    Equals(Value),
    /// The argument is text starting with this.
    StartsWith(String),
}

/// One condition on a top-level argument of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    pub arg: String,
    #[serde(flatten)]
    pub test: Test,
}

impl Condition {
    /// `url^=https://api.example.com/` (a prefix) or `method=GET` (exact;
    /// the value is read as JSON when it is JSON — `3`, `true`, `"3"` —
    /// else as text).
    pub fn parse(text: &str) -> Result<Condition, String> {
        let bad = || {
            format!(
                "`{text}` is not a match: write NAME=VALUE (exact) or NAME^=PREFIX (text starting with), NAME a top-level argument"
            )
        };
        let eq = text.find('=').ok_or_else(bad)?;
        let (name, prefix) = match text[..eq].strip_suffix('^') {
            Some(n) => (n, true),
            None => (&text[..eq], false),
        };
        let name = name.trim();
        let value = &text[eq + 1..];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad());
        }
        let test = if prefix {
            if value.is_empty() {
                return Err(format!(
                    "`{text}`: an empty prefix would match every text; name the prefix"
                ));
            }
            Test::StartsWith(value.to_string())
        } else {
            Test::Equals(
                serde_json::from_str::<Value>(value)
                    .ok()
                    .filter(|v| !v.is_object() && !v.is_array())
                    .unwrap_or_else(|| Value::String(value.to_string())),
            )
        };
        Ok(Condition {
            arg: name.to_string(),
            test,
        })
    }

    /// Whether the call's arguments satisfy it (a missing argument does not).
    pub fn holds(&self, args: &Value) -> bool {
        let Some(v) = args.get(&self.arg) else {
            return false;
        };
        match &self.test {
            Test::Equals(want) => v == want,
            Test::StartsWith(p) => v.as_str().is_some_and(|s| s.starts_with(p.as_str())),
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.test {
            Test::Equals(v) => write!(f, "args.{} == {v}", self.arg),
            Test::StartsWith(p) => write!(
                f,
                "args.{} starts with {}",
                self.arg,
                Value::from(p.as_str())
            ),
        }
    }
}

/// What a trust answer within limits asks for: how long, and for which
/// arguments (none: every call of the tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    pub span: Span,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
}

impl Limit {
    /// Reads a door's words: `span` is `run`, a duration (`1h`, `30m`,
    /// `2d`; at most 30 days) or absent (1 h); `matches` are
    /// [`Condition::parse`]'s. The error says what would do.
    pub fn parse(span: Option<&str>, matches: &[String]) -> Result<Limit, String> {
        let span = match span.map(str::trim) {
            None => Span::For { secs: DEFAULT_SECS },
            Some("run") => Span::Run,
            Some(t) => {
                let secs = parse_secs(t).ok_or_else(|| {
                    format!(
                        "`for` is `run` or a duration like `30m`, `1h`, `1h30m`, `2d`, not `{t}`"
                    )
                })?;
                if secs == 0 || secs > MAX_SECS {
                    return Err(format!("`for` is more than 0 and at most 30 days, not {t}"));
                }
                Span::For { secs }
            }
        };
        let when = matches
            .iter()
            .map(|m| Condition::parse(m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Limit { span, when })
    }

    /// Whether a call with `args` is one this allows.
    pub fn holds(&self, args: &Value) -> bool {
        self.when.iter().all(|c| c.holds(args))
    }

    /// The rule as people read it: `tool NAME [where …], for 1h`.
    pub fn rule(&self, tool: &str) -> String {
        let span = match self.span {
            Span::Run => "for this run".to_string(),
            Span::For { secs } => format!("for {}", say_secs(secs)),
        };
        format!("{}, {span}", matcher(tool, &self.when))
    }
}

/// `30m`, `1h30m`, `2d`, `90s`: wall-clock seconds (`None` when it does
/// not read).
fn parse_secs(text: &str) -> Option<u64> {
    let mut secs: u64 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().ok()?;
        let unit = rest[digits..].chars().next()?;
        let per = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        secs = secs.checked_add(n.checked_mul(per)?)?;
        rest = &rest[digits + 1..];
    }
    Some(secs)
}

/// `1h`, `1h30m`, `2d`, `45s`: seconds as [`parse_secs`] reads them.
fn say_secs(secs: u64) -> String {
    let mut out = String::new();
    let mut rest = secs;
    for (per, unit) in [(86_400, 'd'), (3600, 'h'), (60, 'm'), (1, 's')] {
        if rest >= per {
            out.push_str(&format!("{}{unit}", rest / per));
            rest %= per;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// `tool NAME` and its conditions, joined by `and`.
fn matcher(tool: &str, when: &[Condition]) -> String {
    let mut out = format!("tool {tool}");
    for (i, c) in when.iter().enumerate() {
        out.push_str(if i == 0 { " where " } else { " and " });
        out.push_str(&c.to_string());
    }
    out
}

/// Where a grant applies in time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every later call of this run (session).
    Run { session: String },
    /// Every later call of the workflow until this instant.
    Until { at: DateTime<Utc> },
}

/// The answer a grant came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub session: String,
    /// The gate handle (`tools#n`).
    pub gate: String,
    pub call: String,
}

/// Who revoked a grant, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    pub at: DateTime<Utc>,
    pub by: String,
}

/// An approver's standing permission for later calls of one tool of one
/// workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// `gr_` and 16 hex digits, made from the answer's session, gate and
    /// call ([`Grant::id_for`]): an answer makes one grant, however often
    /// it is recorded.
    pub id: String,
    pub workflow: String,
    pub tool: String,
    /// The directory's person when known, else the channel identity.
    pub granted_by: String,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<Condition>,
    pub created_at: DateTime<Utc>,
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

/// Where a grant stands at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Live,
    Expired,
    Revoked,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Live => "live",
            State::Expired => "expired",
            State::Revoked => "revoked",
        }
    }
}

impl Grant {
    /// The id of the grant an answer to `call` at gate `gate` of `session`
    /// makes.
    pub fn id_for(session: &str, gate: &str, call: &str) -> String {
        let h = Sha256::digest(format!("{session}\0{gate}\0{call}").as_bytes());
        let hex: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("gr_{hex}")
    }

    /// The grant `limit` makes, answered `at` by `by`.
    pub fn new(
        limit: &Limit,
        tool: &str,
        workflow: &str,
        by: &str,
        at: DateTime<Utc>,
        origin: Origin,
    ) -> Grant {
        let scope = match limit.span {
            Span::Run => Scope::Run {
                session: origin.session.clone(),
            },
            Span::For { secs } => Scope::Until {
                at: at + chrono::TimeDelta::seconds(secs.min(MAX_SECS) as i64),
            },
        };
        Grant {
            id: Grant::id_for(&origin.session, &origin.gate, &origin.call),
            workflow: workflow.to_string(),
            tool: tool.to_string(),
            granted_by: by.to_string(),
            scope,
            when: limit.when.clone(),
            created_at: at,
            origin,
            revoked: None,
        }
    }

    pub fn state(&self, now: DateTime<Utc>) -> State {
        match (&self.revoked, &self.scope) {
            (Some(_), _) => State::Revoked,
            (None, Scope::Until { at }) if now >= *at => State::Expired,
            _ => State::Live,
        }
    }

    /// Whether this grant lets call `tool(args)` of run `session` of
    /// `workflow` run at `now`: live, same workflow and tool (and run,
    /// for a run's grant), every condition holding.
    pub fn allows(
        &self,
        now: DateTime<Utc>,
        workflow: &str,
        session: &str,
        tool: &str,
        args: &Value,
    ) -> bool {
        self.state(now) == State::Live
            && self.workflow == workflow
            && self.tool == tool
            && match &self.scope {
                Scope::Run { session: s } => s == session,
                Scope::Until { .. } => true,
            }
            && self.when.iter().all(|c| c.holds(args))
    }

    /// The rule as people read it: `tool NAME [where …], in workflow W
    /// until T` or `…, in run S`.
    pub fn rule(&self) -> String {
        let scope = match &self.scope {
            Scope::Run { session } => format!("for run {session}"),
            Scope::Until { at } => format!("until {}", at.format("%Y-%m-%d %H:%M:%S UTC")),
        };
        format!(
            "{} of workflow {}, {scope}",
            matcher(&self.tool, &self.when),
            self.workflow
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn conditions_read_as_exact_values_or_prefixes() {
        let c = Condition::parse("url^=https://api.example.com/").unwrap();
        assert_eq!(c.test, Test::StartsWith("https://api.example.com/".into()));
        assert!(c.holds(&json!({"url": "https://api.example.com/v1/x"})));
        assert!(!c.holds(&json!({"url": "https://api.example.com.evil/"})));
        assert!(!c.holds(&json!({"url": 3})));
        assert!(!c.holds(&json!({})));
        let n = Condition::parse("count=3").unwrap();
        assert!(n.holds(&json!({"count": 3})) && !n.holds(&json!({"count": "3"})));
        let s = Condition::parse("count=\"3\"").unwrap();
        assert!(s.holds(&json!({"count": "3"})));
        let t = Condition::parse("method=GET").unwrap();
        assert!(t.holds(&json!({"method": "GET"})) && !t.holds(&json!({"method": "get"})));
        assert!(Condition::parse("no equals").is_err());
        assert!(Condition::parse("=x").is_err());
        assert!(Condition::parse("a.b=x").is_err(), "top-level names only");
        assert!(
            Condition::parse("url^=").is_err(),
            "an empty prefix matches all"
        );
        assert_eq!(
            Condition::parse("body={\"a\":1}").unwrap().test,
            Test::Equals(json!("{\"a\":1}")),
            "objects are compared as text, never structurally"
        );
    }

    #[test]
    fn a_limit_reads_spans_and_says_its_rule() {
        let l = Limit::parse(None, &["url^=https://api.example.com/".into()]).unwrap();
        assert_eq!(l.span, Span::For { secs: 3600 });
        assert_eq!(
            l.rule("http_request"),
            "tool http_request where args.url starts with \"https://api.example.com/\", for 1h"
        );
        let r = Limit::parse(Some("run"), &["a=1".into(), "b=x".into()]).unwrap();
        assert_eq!(r.span, Span::Run);
        assert_eq!(
            r.rule("t"),
            "tool t where args.a == 1 and args.b == \"x\", for this run"
        );
        assert_eq!(
            Limit::parse(Some("90m"), &[]).unwrap().span,
            Span::For { secs: 5400 }
        );
        assert!(Limit::parse(Some("31d"), &[]).is_err());
        assert!(Limit::parse(Some("1h business"), &[]).is_err());
        assert_eq!(
            Limit::parse(Some("1h30m"), &[]).unwrap().rule("t"),
            "tool t, for 1h30m"
        );
        assert!(Limit::parse(Some("soon"), &[]).is_err());
        assert!(r.holds(&json!({"a": 1, "b": "x", "c": 0})));
        assert!(!r.holds(&json!({"a": 1})));
    }

    #[test]
    fn a_grant_allows_until_it_expires_or_is_revoked() {
        let t0 = at("2026-11-27T10:00:00Z");
        let origin = || Origin {
            session: "s1".into(),
            gate: "tools#1".into(),
            call: "c1".into(),
        };
        let limit = Limit::parse(Some("1h"), &["path^=notes/".into()]).unwrap();
        let mut g = Grant::new(&limit, "file_write", "wf", "alice", t0, origin());
        assert_eq!(g.id, Grant::id_for("s1", "tools#1", "c1"));
        assert!(g.id.starts_with("gr_") && g.id.len() == 19);
        let ok = json!({"path": "notes/a.md"});
        let later = t0 + chrono::TimeDelta::minutes(59);
        assert!(g.allows(later, "wf", "other-run", "file_write", &ok));
        assert!(!g.allows(later, "wf", "s1", "file_write", &json!({"path": "etc/x"})));
        assert!(!g.allows(later, "other", "s1", "file_write", &ok));
        assert!(!g.allows(later, "wf", "s1", "file_read", &ok));
        let hour = t0 + chrono::TimeDelta::hours(1);
        assert_eq!(g.state(hour), State::Expired);
        assert!(!g.allows(hour, "wf", "s1", "file_write", &ok));
        g.revoked = Some(Revocation {
            at: later,
            by: "bob".into(),
        });
        assert_eq!(g.state(later), State::Revoked);
        assert!(!g.allows(later, "wf", "s1", "file_write", &ok));

        let run = Grant::new(
            &Limit::parse(Some("run"), &[]).unwrap(),
            "t",
            "wf",
            "a",
            t0,
            origin(),
        );
        assert!(run.allows(
            t0 + chrono::TimeDelta::days(300),
            "wf",
            "s1",
            "t",
            &json!({})
        ));
        assert!(!run.allows(t0, "wf", "s2", "t", &json!({})));
        assert_eq!(run.rule(), "tool t of workflow wf, for run s1");
        let back: Grant = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }
}
