//! E-mail: a room off the service's hub for people who are not at a chat
//! client — on a phone, in another company, in Outlook. When a gate opens,
//! each approver with an address gets a mail (workflow, gate, prompt, the
//! redacted preview, who started the run, the deadline in words) with
//! one-tap links — Approve, Reject (a page with the reason box), Open in
//! browser — that decide nothing when opened: the page's button does
//! (`crate::web::links`). Reminders and the outcome follow in the same
//! thread.
//!
//! - [`config`]: `STRANDS_SMTP_URL`, `STRANDS_EMAIL_FROM` (mail is off
//!   when unset).
//! - [`room`]: the [`crate::channel::hall::Room`]: what is mailed to whom,
//!   queued in the store's mail outbox.
//! - [`compose`]: the words, plain text and HTML.
//! - [`send`]: the outbox drained over SMTP (lettre: STARTTLS or TLS,
//!   AUTH), with retries, once per mail.
//!
//! Like every door, this one uses the hub only — never Slack, Teams, the
//! web inbox or the API.

pub mod compose;
pub mod config;
pub mod room;
pub mod send;

pub use config::Settings;

use std::sync::Arc;

use crate::hub::Hub;

/// The room and its sender, sharing the sender's wake-up.
pub fn open(
    hub: &Hub,
    settings: Settings,
) -> Result<(room::EmailRoom, send::Sender), send::SendError> {
    let wake = Arc::new(tokio::sync::Notify::new());
    let room = room::EmailRoom {
        hub: hub.clone(),
        domain: settings.domain.clone(),
        wake: Arc::clone(&wake),
    };
    let sender = send::Sender::new(hub.clone(), settings, wake)?;
    Ok((room, sender))
}
