//! `strands store migrate --from PATH --to URL`: copies a sled store into
//! PostgreSQL — sessions, the message index, timers, escalations, queued
//! answers, the audit chain, events, tokens, sign-ins, keys, the webhook
//! outbox and the Teams conversation references — in one database
//! transaction, then verifies the audit chain as it arrived.
//!
//! [`Dump`] is what passes between the two backends, in neither's layout:
//! the sled side fills it (`sled::export`), the PostgreSQL side writes it
//! (`postgres::import`); documents stay the same JSON bytes. Running it
//! again against the database it filled changes nothing (it says so); a
//! database holding anything else is refused unless `force`, which
//! replaces what it holds.

use std::path::Path;

use crate::audit::{Head, Verdict};
use crate::error::{Error, Result};
use crate::store::MessageTarget;

/// Everything a store holds, backend-neutral.
#[derive(Debug, Default)]
pub struct Dump {
    /// (session JSON, summary JSON).
    pub sessions: Vec<(Vec<u8>, Vec<u8>)>,
    /// (channel, ts, target).
    pub messages: Vec<(String, String, MessageTarget)>,
    pub chat_events: Vec<String>,
    /// `model::Event` JSON, in order.
    pub events: Vec<Vec<u8>>,
    pub last_event: u64,
    /// (seq, `audit::AuditEntry` JSON), in order.
    pub audit: Vec<(u64, Vec<u8>)>,
    pub audit_head: Option<Head>,
    /// `Timer` JSON.
    pub timers: Vec<Vec<u8>>,
    /// (session, gate handle) whose timers were armed.
    pub timer_marks: Vec<(String, String)>,
    /// (session, gate handle, JSON) — escalations, notifications, queued answers.
    pub escalations: Vec<(String, String, Vec<u8>)>,
    pub notifications: Vec<(String, String, Vec<u8>)>,
    pub queued: Vec<(String, String, Vec<u8>)>,
    /// The store's id and keys (`store_id`, `key/NAME`).
    pub meta: Vec<(String, Vec<u8>)>,
    /// `TokenRecord` JSON.
    pub tokens: Vec<Vec<u8>>,
    /// (endpoint, last queued event).
    pub webhook_cursors: Vec<(String, u64)>,
    /// `Delivery` JSON, pending and given up on.
    pub webhook_pending: Vec<Vec<u8>>,
    pub webhook_failed: Vec<Vec<u8>>,
    /// (login id, `Login` JSON).
    pub logins: Vec<(String, Vec<u8>)>,
    /// `TeamsConversation` JSON.
    pub teams_conversations: Vec<Vec<u8>>,
    /// `Person` JSON (the people directory).
    pub people: Vec<Vec<u8>>,
    /// `model::grant::Grant` JSON (approvers' grants, revoked ones too).
    pub grants: Vec<Vec<u8>>,
}

/// What a migration did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub sessions: usize,
    pub timers: usize,
    pub audit_entries: u64,
    pub events: u64,
    pub tokens: usize,
    /// False when the target already held exactly this store.
    pub copied: bool,
}

/// Copies the sled store at `from` into the PostgreSQL database `to`,
/// stamping what it stamps by `clock`.
pub async fn sled_to_postgres(
    from: &Path,
    to: &str,
    force: bool,
    settings: &crate::config::PgSettings,
    clock: &crate::clock::SharedClock,
) -> Result<Report> {
    if !from.join("db").exists() && !from.join("conf").exists() {
        return Err(Error::Usage(format!(
            "--from {}: no sled store there",
            from.display()
        )));
    }
    let source = super::sled::SledStore::open(from)?;
    let dump = source.export()?;
    drop(source);
    let mut target = super::postgres::PgStore::connect(to, settings).await?;
    target.set_clock(std::sync::Arc::clone(clock));
    let mut report = Report {
        from: from.display().to_string(),
        to: target.location(),
        sessions: dump.sessions.len(),
        timers: dump.timers.len(),
        audit_entries: dump.audit.len() as u64,
        events: dump.last_event,
        tokens: dump.tokens.len(),
        copied: true,
    };
    let held = target.holds(&dump).await?;
    match held {
        Holds::Nothing => target.import(&dump, false).await?,
        Holds::This if !force => report.copied = false,
        Holds::This | Holds::Other => {
            if !force {
                return Err(Error::Usage(format!(
                    "{} is not empty (it holds another store's sessions or audit trail); pass --force to replace what it holds",
                    target.location()
                )));
            }
            target.import(&dump, true).await?
        }
    }
    // Verify what arrived: the whole chain, and that it ends where the
    // source's did.
    let entries = {
        let store = super::Store::Postgres(target);
        let entries = store.audit_entries().await?;
        let head = store.audit_head().await?;
        if head != dump.audit_head {
            return Err(Error::Store(format!(
                "the audit head in {} is {head:?}, the source's {:?}",
                store.location(),
                dump.audit_head
            )));
        }
        match crate::audit::verify(entries.into_iter(), head) {
            Verdict::Intact { entries } => entries,
            Verdict::Broken { seq, why } => {
                return Err(Error::Store(format!(
                    "the audit chain in {} does not verify at #{seq}: {why}",
                    store.location()
                )))
            }
        }
    };
    report.audit_entries = entries;
    Ok(report)
}

/// What a target database holds, compared with a dump.
pub enum Holds {
    Nothing,
    /// The same sessions and audit head: a migration already done.
    This,
    Other,
}
