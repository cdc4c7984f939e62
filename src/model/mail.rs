//! A mail owed to one person: the store's outbox for the e-mail room
//! (`crate::email`), kept until the mail server took it (or strands gave
//! up), so a mail survives crashes and restarts and is sent once.
//!
//! A row holds what the mail is about — the session, the gate, the kind
//! and the address — never the mail's text: the text, and the one-tap
//! links it carries (bearer credentials), are made when it is sent, from
//! the session as it is then. So no link secret rests in the store, and a
//! reminder that comes due after the gate was answered is not sent.
//!
//! This module is data only; the SMTP, the wording and the retry policy
//! live in `crate::email`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use super::webhook::Settle;

/// What a mail says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MailKind {
    /// The gate opened: please answer (with one-tap links).
    Ask,
    /// Reminder `n` of `of`, while nobody answered.
    Reminder { n: u32, of: u32 },
    /// The gate was decided (or timed out): who decided, and how.
    Outcome,
}

impl MailKind {
    /// `ask`, `reminder`, `outcome`: for ids and listings.
    pub fn name(&self) -> &'static str {
        match self {
            MailKind::Ask => "ask",
            MailKind::Reminder { .. } => "reminder",
            MailKind::Outcome => "outcome",
        }
    }
}

/// One mail owed to one address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mail {
    /// Unique per mail: [`Mail::ident`]. Queuing an id the store has seen
    /// (pending, sent or failed) changes nothing.
    pub id: String,
    /// The recipient's address.
    pub to: String,
    pub session: String,
    /// The gate handle (`id#instance`).
    pub gate: String,
    #[serde(flatten)]
    pub kind: MailKind,
    /// Attempts started, the one in flight included.
    pub attempts: u32,
    pub queued_at: DateTime<Utc>,
    #[serde(default)]
    pub first_attempt_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// When it is due next: the next retry, or the end of the lease of an
    /// attempt in flight.
    pub next_at: DateTime<Utc>,
    /// Why the latest attempt failed (the server's reply, never a
    /// credential).
    #[serde(default)]
    pub last_error: Option<String>,
}

impl Mail {
    /// A mail of `kind` about gate `gate` of `session` to `to`, due `now`.
    pub fn new(session: &str, gate: &str, kind: MailKind, to: &str, now: DateTime<Utc>) -> Mail {
        Mail {
            id: Mail::ident(session, gate, &kind, to),
            to: to.to_string(),
            session: session.to_string(),
            gate: gate.to_string(),
            kind,
            attempts: 0,
            queued_at: now,
            first_attempt_at: None,
            last_attempt_at: None,
            next_at: now,
            last_error: None,
        }
    }

    /// As `strands notifications failed --json` and the API list it: what
    /// it was about and what became of it (never its text or links).
    pub fn listed(&self) -> serde_json::Value {
        serde_json::json!({
            "channel": "email",
            "to": self.to,
            "kind": self.kind.name(),
            "session": self.session,
            "gate": self.gate,
            "id": self.id,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "queued_at": self.queued_at,
            "first_attempt_at": self.first_attempt_at,
            "last_attempt_at": self.last_attempt_at,
        })
    }

    /// `session/gate/kind[.n]/address`: one ask, one outcome and one of
    /// each reminder per gate asking and address.
    pub fn ident(session: &str, gate: &str, kind: &MailKind, to: &str) -> String {
        let kind = match kind {
            MailKind::Reminder { n, .. } => format!("reminder.{n}"),
            k => k.name().to_string(),
        };
        format!("{session}/{gate}/{kind}/{}", to.to_ascii_lowercase())
    }
}

/// `name` as an e-mail address, when it is one. The one check of an
/// address: who is mailed (`crate::hub::recipients`), what a spec's
/// `notify: email` gate may name, and a people directory's entries. (`local@domain.tld`, no
/// spaces, quotes or angle brackets; `mailto:` accepted), lower-cased.
pub fn address(name: &str) -> Option<String> {
    let a = name.trim();
    let a = a.strip_prefix("mailto:").unwrap_or(a);
    let (local, domain) = a.rsplit_once('@')?;
    let ok_char = |c: char| {
        !c.is_whitespace()
            && !c.is_control()
            && !matches!(
                c,
                '<' | '>' | '"' | '(' | ')' | ',' | ';' | ':' | '\\' | '[' | ']' | '@'
            )
    };
    let fine = !local.is_empty()
        && local.len() <= 64
        && local.chars().all(ok_char)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && domain.len() <= 253
        && domain.contains('.')
        && domain
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    fine.then(|| a.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mail_is_named_by_what_it_is_about() {
        let now = crate::clock::test_epoch();
        let m = Mail::new(
            "s1",
            "review#1",
            MailKind::Reminder { n: 2, of: 3 },
            "Carol@Corp.example",
            now,
        );
        assert_eq!(m.id, "s1/review#1/reminder.2/carol@corp.example");
        let json = serde_json::to_string(&m).expect("json");
        assert_eq!(serde_json::from_str::<Mail>(&json).expect("back"), m);
        assert_ne!(
            Mail::ident("s1", "review#1", &MailKind::Ask, "c@x.example"),
            Mail::ident("s1", "review#1", &MailKind::Outcome, "c@x.example")
        );
    }
}
