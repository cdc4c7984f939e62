//! Sending: the store's mail outbox, drained by [`Sender::run`] in
//! `strands serve` (every replica runs one; the store gives each attempt to
//! one of them, `mail_due`).
//!
//! A mail's text is made when it is sent ([`super::compose`]), from the
//! session as it is then, with fresh one-tap links (minted here, audited,
//! never stored or logged): an asking mail or a reminder for a gate that
//! was answered meanwhile is not sent. Each attempt is settled in one
//! write: sent (marked: never sent twice), retried with exponential
//! backoff and jitter after a transient failure (a connection that fails,
//! a timeout, a 4xx reply such as `421`), or given up after a permanent one
//! (`5xx`, e.g. `550 no such user`) or the last of
//! `STRANDS_EMAIL_MAX_ATTEMPTS` — kept for `strands notifications failed`
//! and logged as a warning.

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use secrecy::ExposeSecret;

use super::compose::{self, Composed, Links};
use super::config::{Security, Settings};
use crate::hub::links::{self, Intent};
use crate::hub::Hub;
use crate::model::mail::{Mail, MailKind, Settle};
use crate::model::GateKind;

/// How long a mail taken for an attempt is not taken again (well over a
/// send's time limit).
pub const LEASE: Duration = Duration::from_secs(120);
/// The time limit of one SMTP conversation.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// No backoff is longer.
pub const MAX_DELAY: Duration = Duration::from_secs(600);
/// Mails taken per round (sent one after another: 3 × 30 s < the lease).
const TAKE: usize = 3;
/// The longest the sender sleeps without looking at the store.
const POLL: Duration = Duration::from_secs(1);
/// Links in a mail last until the gate's deadline, at most a week.
const MAX_LINK: TimeDelta = TimeDelta::hours(168);

/// Why a mail could not be made or sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("the mail server: {0}")]
    Transport(String),
    #[error("the mail could not be built: {0}")]
    Build(String),
}

/// What an attempt came to.
enum Attempt {
    Sent,
    /// Nothing to send any more (the gate was answered, the run is gone).
    Moot(&'static str),
    Transient(String),
    Permanent(String),
}

/// Drains the mail outbox.
pub struct Sender {
    hub: Hub,
    settings: Settings,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// Rung when the room queues mail.
    pub wake: Arc<tokio::sync::Notify>,
}

impl Sender {
    pub fn new(
        hub: Hub,
        settings: Settings,
        wake: Arc<tokio::sync::Notify>,
    ) -> Result<Sender, SendError> {
        // lettre's rustls shares ring with the other clients.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = match settings.security {
            Security::StartTls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&settings.host)
            }
            Security::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&settings.host),
            Security::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(
                settings.host.clone(),
            )),
        }
        .map_err(|e| SendError::Transport(e.to_string()))?;
        let hello = whoami::fallible::hostname()
            .ok()
            .filter(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
            })
            .unwrap_or_else(|| settings.domain.clone());
        let mut builder = builder
            .port(settings.port)
            .timeout(Some(SEND_TIMEOUT))
            .hello_name(ClientId::Domain(hello));
        if let (Some(user), Some(pass)) = (&settings.user, &settings.password) {
            builder = builder.credentials(Credentials::new(
                user.clone(),
                pass.expose_secret().to_string(),
            ));
        }
        let from: Mailbox = settings
            .from
            .parse()
            .map_err(|e| SendError::Build(format!("STRANDS_EMAIL_FROM: {e}")))?;
        Ok(Sender {
            hub,
            transport: builder.build(),
            settings,
            from,
            wake,
        })
    }

    /// Sends mail until `stop` completes: when the room queues some, when
    /// a retry is due, and at least every second.
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        tracing::info!(server = %self.settings.server_shown(), "the e-mail room sends through this server");
        loop {
            let busy = match self.run_once().await {
                Ok(n) => n > 0,
                Err(e) => {
                    tracing::warn!("mail: {e}");
                    false
                }
            };
            if busy {
                continue;
            }
            tokio::select! {
                biased;
                () = &mut stop => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }

    /// One round: every due mail sent and settled. How many were taken.
    pub async fn run_once(&self) -> crate::Result<usize> {
        let due = self
            .hub
            .store
            .mail_due(self.hub.clock.now(), LEASE, TAKE)
            .await?;
        let n = due.len();
        for mail in due {
            let attempt = self.attempt(&mail).await;
            let outcome = self.judge(&mail, attempt);
            self.hub.store.mail_settle(&mail, outcome).await?;
        }
        Ok(n)
    }

    async fn attempt(&self, mail: &Mail) -> Attempt {
        let composed = match self.compose(mail).await {
            Ok(Some(c)) => c,
            Ok(None) => return Attempt::Moot("the gate was answered before it was sent"),
            Err(e) => return Attempt::Transient(e.to_string()),
        };
        let message = match self.message(mail, &composed) {
            Ok(m) => m,
            Err(e) => return Attempt::Permanent(e.to_string()),
        };
        match self.transport.send(message).await {
            Ok(_) => Attempt::Sent,
            Err(e) if e.is_permanent() => Attempt::Permanent(e.to_string()),
            Err(e) => Attempt::Transient(e.to_string()),
        }
    }

    /// What to record for `attempt` on `mail`.
    fn judge(&self, mail: &Mail, attempt: Attempt) -> Settle {
        let moot = matches!(attempt, Attempt::Moot(_));
        let settle = match attempt {
            Attempt::Sent => Settle::Delivered,
            Attempt::Moot(why) => {
                tracing::debug!(mail = %mail.id, "mail not sent: {why}");
                Settle::Delivered
            }
            Attempt::Permanent(error) => Settle::GaveUp { error },
            Attempt::Transient(error) if mail.attempts >= self.settings.max_attempts => {
                Settle::GaveUp {
                    error: format!("{error} (after {} attempts)", mail.attempts),
                }
            }
            Attempt::Transient(error) => {
                let wait = backoff(self.settings.retry_base, mail.attempts);
                let at =
                    self.hub.clock.now() + TimeDelta::from_std(wait).unwrap_or(TimeDelta::MAX / 4);
                Settle::Retry { at, error }
            }
        };
        self.hub.metrics.mail(match (&settle, &moot) {
            (Settle::Delivered, true) => "not_needed",
            (Settle::Delivered, false) => "sent",
            (Settle::Retry { .. }, _) => "retried",
            (Settle::GaveUp { .. }, _) => "gave_up",
        });
        match &settle {
            Settle::Delivered => {
                tracing::debug!(mail = %mail.id, attempts = mail.attempts, "mail sent")
            }
            Settle::Retry { at, error } => tracing::info!(
                to = %mail.to, mail = %mail.id, attempts = mail.attempts, retry_at = %at,
                "mail not sent, will retry: {error}"
            ),
            Settle::GaveUp { error } => tracing::warn!(
                to = %mail.to, mail = %mail.id, attempts = mail.attempts,
                "mail given up (see `strands notifications failed`): {error}"
            ),
        }
        settle
    }

    /// The mail's text, from the session as it is now; `None` when there
    /// is nothing to say any more.
    async fn compose(&self, mail: &Mail) -> crate::Result<Option<Composed>> {
        let Some(session) = self.hub.store.load(&mail.session).await? else {
            return Ok(None);
        };
        let open = crate::hub::pages::session(&self.hub.public_url, &session.id);
        let domain = &self.settings.domain;
        let now = self.hub.clock.now();
        match mail.kind {
            MailKind::Outcome => Ok(compose::decided(&session, &mail.gate)
                .map(|answer| compose::outcome(&session, &mail.gate, answer, &open, domain))),
            MailKind::Ask | MailKind::Reminder { .. } => {
                let Some(gate) = session.open_gate(&mail.gate) else {
                    return Ok(None);
                };
                let ttl = gate
                    .timeout_at
                    .map(|t| (t - now).max(TimeDelta::hours(1)))
                    .unwrap_or(MAX_LINK)
                    .min(MAX_LINK);
                let at = (
                    session.id.as_str(),
                    session.workflow.as_str(),
                    mail.gate.as_str(),
                );
                let by = ("strands", "email");
                let mint = |intent| links::mint_for(&self.hub.store, at, &mail.to, ttl, intent, by);
                let one_tap = |t: &str| crate::hub::pages::one_tap(&self.hub.public_url, t);
                let mut links = Links {
                    open: one_tap(&mint(None).await?.0),
                    ..Links::default()
                };
                if gate.kind != GateKind::ToolCall {
                    // A form's values are filled in on the run's page: its
                    // mail has no one-tap Approve.
                    if gate.form.is_none() {
                        links.approve = Some(one_tap(&mint(Some(Intent::Approve)).await?.0));
                    }
                    links.reject = Some(one_tap(&mint(Some(Intent::Reject)).await?.0));
                }
                let reminder = match mail.kind {
                    MailKind::Reminder { n, of } => Some((n, of)),
                    _ => None,
                };
                Ok(Some(compose::ask(
                    &session, gate, &links, reminder, domain, now,
                )))
            }
        }
    }

    fn message(&self, mail: &Mail, c: &Composed) -> Result<Message, SendError> {
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|e| SendError::Build(format!("the address `{}`: {e}", mail.to)))?;
        let mut b = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(c.subject.clone())
            .date_now()
            .message_id(Some(c.message_id.clone()))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii("Auto-Submitted".to_string())
                    .map_err(|e| SendError::Build(e.to_string()))?,
                "auto-generated".to_string(),
            ));
        if let Some(parent) = &c.in_reply_to {
            b = b.in_reply_to(parent.clone()).references(parent.clone());
        }
        b.multipart(MultiPart::alternative_plain_html(
            c.text.clone(),
            c.html.clone(),
        ))
        .map_err(|e| SendError::Build(e.to_string()))
    }
}

/// The wait before retry number `attempts` (1 after the first): `base`
/// doubled per earlier attempt, capped at [`MAX_DELAY`], jittered down to
/// between half and all of it.
fn backoff(base: Duration, attempts: u32) -> Duration {
    let doublings = attempts.saturating_sub(1).min(31);
    let full = base
        .checked_mul(1u32 << doublings)
        .unwrap_or(MAX_DELAY)
        .min(MAX_DELAY);
    full.mul_f64(0.5 + fastrand::f64() * 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let base = Duration::from_secs(2);
        for (n, full) in [(1, 2), (2, 4), (3, 8)] {
            let w = backoff(base, n);
            assert!(
                w >= Duration::from_secs(full) / 2 && w <= Duration::from_secs(full),
                "{n}: {w:?}"
            );
        }
        assert!(backoff(base, 30) <= MAX_DELAY);
    }
}
