//! The store: where sessions, the messages that asked for their gates,
//! timers, queued answers and the audit chain live — and the one place
//! that knows which database holds them.
//!
//! [`Store`] is the seam every caller uses (the engine, the intake, the
//! channels, the timers, the CLI); its operations are the domain's: create
//! a session, checkpoint it with a compare-and-swap on its revision, record
//! an answer exactly once, index a posted message, arm and fire timers,
//! append to the audit chain, queue an answer for a busy run, keep the
//! webhook outbox (a cursor per endpoint, pending and failed deliveries,
//! the failed ones queued again on an operator's word),
//! keep the mail outbox (each mail queued once, pending, sent or failed).
//! Each backend implements [`Backend`] and keeps every guarantee:
//! [`sled::SledStore`] (the embedded default, one process per store) and
//! [`postgres::PgStore`] (a database several `strands serve` replicas and
//! the CLI share). The keys, trees and tables of a backend are named in
//! that backend's module only.

pub mod awaiting;
pub mod backup;
#[cfg(test)]
mod conformance;
pub mod lane;
pub mod lease;
pub mod migrate;
pub mod outputs;
pub mod postgres;
pub mod sled;
pub mod verify;

pub use crate::model::timer::{Fired, Timer, TimerKind};

use chrono::{DateTime, Utc};
use std::future::Future;
use std::path::PathBuf;

use crate::error::Result;
use crate::model::login::Login;
use crate::model::person::{Directory, Person};
use crate::model::teams::TeamsConversation;
use crate::model::token::TokenRecord;
use crate::model::webhook::{Delivery, Settle};
use crate::model::{Answer, Notification, OpenGate, Refusal, Session, Status, Summary};

/// A change to the people directory: the stored people in, the new ones
/// out (an error changes nothing). Run inside the store's transaction.
pub type PeopleChange = dyn Fn(Vec<Person>) -> Result<Vec<Person>> + Send + Sync;

pub use crate::model::MessageTarget;

/// `~/.local/share/strands/store` (the platform's data directory).
pub fn default_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("strands")
        .join("store")
}

/// Where an escalated request was re-posted.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Escalation {
    pub gate: crate::model::OpenGate,
    pub at: DateTime<Utc>,
    /// `(channel, ts)` of the re-posted requests.
    pub messages: Vec<(String, String)>,
    /// Who it went to, as written in the spec.
    pub targets: Vec<crate::spec::EscalationTarget>,
}
/// When a write has to be on stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the call returns: someone may be told, or something outside
    /// the store may act on it.
    Now,
    /// With this process's next durable write, which the caller makes
    /// before anything outside the store acts: for a state the run reaches
    /// again by itself from the last durable one (carrying out an answer
    /// already recorded). A crash in between loses only the redo. Readers
    /// are told of its events with that next write.
    WithNext,
}

/// What a backend must do. Every operation keeps its guarantee whatever
/// the database: writes are atomic and durable when they return; a
/// checkpoint fails when the session changed since it was read; an answer
/// is recorded at most once per gate (a second is refused, told who
/// decided); the audit chain never forks.
// `Result<_, Refusal>` carries the answer that won; its size does not matter.
#[allow(clippy::result_large_err)]
pub trait Backend: Send + Sync {
    /// Where the store is, for messages (a path, a database URL without
    /// credentials).
    fn location(&self) -> String;

    /// Stores a new session (its `rev` becomes 1).
    fn create(&self, session: &mut Session) -> impl Future<Output = Result<()>> + Send;
    /// Writes a session read at `session.rev` (compare-and-swap), with its
    /// audit outbox; bumps `rev` and `updated_at`.
    fn checkpoint(&self, session: &mut Session) -> impl Future<Output = Result<()>> + Send;
    /// A checkpoint whose flush may wait for this process's next durable
    /// write ([`Durability::WithNext`]); backends whose every commit is
    /// durable anyway just checkpoint.
    fn checkpoint_with(
        &self,
        session: &mut Session,
        durability: Durability,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = durability;
        self.checkpoint(session)
    }
    fn load(&self, id: &str) -> impl Future<Output = Result<Option<Session>>> + Send;
    /// A session id from an id or a unique prefix of 4+ characters (exit 17
    /// when unknown or ambiguous).
    fn resolve(&self, id_or_prefix: &str) -> impl Future<Output = Result<String>> + Send;
    /// Summaries, newest first, optionally of one status.
    fn list(&self, status: Option<Status>) -> impl Future<Output = Result<Vec<Summary>>> + Send;
    /// Full sessions of one status (start-up recovery, sweeps).
    fn sessions_with_status(
        &self,
        status: Status,
    ) -> impl Future<Output = Result<Vec<Session>>> + Send;
    fn count(&self) -> impl Future<Output = Result<usize>> + Send;
    fn delete(&self, id: &str) -> impl Future<Output = Result<()>> + Send;
    /// Deletes finished sessions last updated before `cutoff`.
    fn cleanup(&self, cutoff: DateTime<Utc>) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// Records `answer` for gate `gate` (or the only open gate) exactly
    /// once: `Session::accept` inside a compare-and-swap.
    fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &Answer,
    ) -> impl Future<Output = Result<std::result::Result<Session, Refusal>>> + Send;
    /// Changes open gate `gate` of a paused session waiting for an answer
    /// (compare-and-swap); `None` when it no longer waits.
    fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut OpenGate) + Send + Sync),
    ) -> impl Future<Output = Result<Option<Session>>> + Send;

    /// Records the message that asked for a gate (or why posting failed)
    /// and indexes it (and its direct copies) by channel + ts, atomically.
    fn record_notification(
        &self,
        session: &str,
        n: &Notification,
    ) -> impl Future<Output = Result<()>> + Send;
    /// The messages of a session's gates (the latest per gate), oldest first.
    fn notifications(
        &self,
        session: &str,
    ) -> impl Future<Output = Result<Vec<Notification>>> + Send;
    fn message_target(
        &self,
        channel: &str,
        ts: &str,
    ) -> impl Future<Output = Result<Option<MessageTarget>>> + Send;
    /// True the first time a chat event id is seen.
    fn first_sighting(&self, event_id: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Appends events that belong to no session write (refusals, ...).
    fn append_audit(
        &self,
        events: &[crate::audit::AuditEvent],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Up to `limit` stored audit entries after sequence number `after`.
    fn audit_page(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, Vec<u8>)>>> + Send;
    fn audit_head(&self) -> impl Future<Output = Result<Option<crate::audit::Head>>> + Send;
    /// Up to `limit` of the audit's decisions ([`crate::audit::decided`])
    /// made at or after `since`, numbered above `after`, in order, as
    /// stored. The index is derived from the chain: a read from the start
    /// (`after` 0) first brings it up to the audit's head.
    fn decided(
        &self,
        since: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(u64, Vec<u8>)>>> + Send;

    /// Arms one gate asking's timers, once (false: already armed).
    fn arm_timers(
        &self,
        session: &str,
        gate: &str,
        timers: &[Timer],
    ) -> impl Future<Output = Result<bool>> + Send;
    /// The earliest timer.
    fn next_timer(&self) -> impl Future<Output = Result<Option<Timer>>> + Send;
    /// Every timer, earliest first.
    fn timers(&self) -> impl Future<Output = Result<Vec<Timer>>> + Send;
    /// Removes `done` and adds `next`, atomically.
    fn replace_timer(
        &self,
        done: &Timer,
        next: &[Timer],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Records a timeout's answer exactly once and marks its timer fired,
    /// atomically.
    fn record_timeout(
        &self,
        timer: &Timer,
        answer: &Answer,
        fired: &Fired,
    ) -> impl Future<Output = Result<std::result::Result<Session, Refusal>>> + Send;
    /// Records an escalation's re-posted messages (indexed like the
    /// original) and replaces its timer, atomically.
    fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> impl Future<Output = Result<()>> + Send;
    fn escalation(
        &self,
        session: &str,
        gate: &str,
    ) -> impl Future<Output = Result<Option<Escalation>>> + Send;

    /// Up to `limit` events after number `after`, in order.
    fn events_after(
        &self,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<crate::model::Event>>> + Send;
    /// Up to `limit` events of one session after number `after`.
    fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<crate::model::Event>>> + Send;
    /// The number of the last event written.
    fn last_event(&self) -> impl Future<Output = Result<u64>> + Send;
    /// Told the number of the last event whenever this process writes one
    /// (a reader then reads what it has not seen).
    fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Queues an answer for an open gate of a running session (first one
    /// per gate wins).
    fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &Answer,
    ) -> impl Future<Output = Result<std::result::Result<(), Refusal>>> + Send;
    fn queued_answers(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Vec<(String, Answer)>>> + Send;
    fn drop_queued(&self, id: &str, handle: &str) -> impl Future<Output = Result<()>> + Send;

    /// Stores a new API token with its audit entry, atomically; `false`
    /// (nothing written) when a token of that name is in use.
    fn create_token(
        &self,
        record: &TokenRecord,
        audit: &crate::audit::AuditEvent,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// The token with public id `id` (revoked or not).
    fn token(&self, id: &str) -> impl Future<Output = Result<Option<TokenRecord>>> + Send;
    /// Every token ever made, oldest first.
    fn tokens(&self) -> impl Future<Output = Result<Vec<TokenRecord>>> + Send;
    /// Revokes the token in use named `name`, with its audit entry; `None`
    /// when there is none.
    fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &crate::audit::AuditEvent,
    ) -> impl Future<Output = Result<Option<TokenRecord>>> + Send;

    /// Stores an approver's grant with its audit entry, atomically;
    /// `false` (nothing written) when a grant of that id is there.
    fn put_grant(
        &self,
        grant: &crate::model::grant::Grant,
        audit: &crate::audit::AuditEvent,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// Every grant ever made (revoked and expired too), oldest first.
    fn grants(&self) -> impl Future<Output = Result<Vec<crate::model::grant::Grant>>> + Send;
    /// Revokes grant `id` with its audit entry; the grant as stored after
    /// (one revoked before keeps its first revocation, nothing audited);
    /// `None` when there is no such grant.
    fn revoke_grant(
        &self,
        id: &str,
        revocation: &crate::model::grant::Revocation,
        audit: &crate::audit::AuditEvent,
    ) -> impl Future<Output = Result<Option<crate::model::grant::Grant>>> + Send;

    /// For each webhook endpoint, queues a delivery (due `now`) of each
    /// event after its cursor that webhooks carry, moving the cursor in the
    /// same transaction; an endpoint seen for the first time starts at the
    /// last event (no history). At most `limit` per endpoint per call;
    /// returns how many were queued. May be durable only with the
    /// process's next durable write (sled): lost, it is redone the same.
    fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> impl Future<Output = Result<usize>> + Send;
    /// Up to `limit` pending deliveries due by `now`, each taken for an
    /// attempt as it is read: attempt counted, due again at `now + lease`
    /// (a crashed attempt is retried then; nobody else takes it before).
    /// May be durable only with the process's next durable write, where
    /// one process holds the store (sled): a crash before it makes what
    /// was taken due again at once.
    fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Delivery>>> + Send;
    /// When the earliest pending delivery is due.
    fn webhook_next_due(&self) -> impl Future<Output = Result<Option<DateTime<Utc>>>> + Send;
    /// What became of attempts on deliveries `webhook_due` returned, in
    /// one write: delivered (deleted), retry (re-scheduled), gave up
    /// (moved to the failed ones).
    fn webhook_settle(
        &self,
        settled: &[(Delivery, Settle)],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Up to `limit` deliveries given up on, latest first.
    fn webhook_failed(&self, limit: usize) -> impl Future<Output = Result<Vec<Delivery>>> + Send;
    /// Queues deliveries given up on again, due `now` ([`Delivery::requeued`]:
    /// same message id, attempts counted afresh): those whose message id is
    /// in `msg_ids`, or all. Each leaves the failed ones as it is queued,
    /// atomically (two callers never queue one twice); how many were.
    fn webhook_requeue(
        &self,
        msg_ids: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<usize>> + Send;

    /// Queues `mail` for the e-mail room's sender (due at its `next_at`)
    /// unless a mail with its id was ever queued; whether it was.
    fn mail_queue(
        &self,
        mail: &crate::model::mail::Mail,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// Up to `limit` pending mails due by `now`, each taken for an attempt
    /// as it is read (attempt counted, due again at `now + lease`: nobody
    /// else takes it before; a crashed attempt is retried then).
    fn mail_due(
        &self,
        now: DateTime<Utc>,
        lease: std::time::Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<crate::model::mail::Mail>>> + Send;
    /// What became of an attempt on a mail `mail_due` returned: sent
    /// (marked in the same write, never sent again), retry, gave up.
    fn mail_settle(
        &self,
        taken: &crate::model::mail::Mail,
        outcome: Settle,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Up to `limit` mails given up on, latest first.
    fn mail_failed(
        &self,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<crate::model::mail::Mail>>> + Send;

    /// Up to `limit` summaries of `status` (or all), newest first (ties by
    /// id), strictly after `after` (created time, id). Backends keep an
    /// index for it; this default (a full list) is for those that do not.
    fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Summary>>> + Send {
        async move {
            Ok(self
                .list(status)
                .await?
                .into_iter()
                .filter(|s| match &after {
                    Some((at, id)) => s.created_at < *at || (s.created_at == *at && s.id > *id),
                    None => true,
                })
                .take(limit)
                .collect())
        }
    }
    /// Up to `limit` summaries of workflow `workflow` (of `status`, or
    /// all), newest first (ties by id), strictly after `after`. Backends
    /// keep an index by workflow; this default filters a full list.
    fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Summary>>> + Send {
        async move {
            Ok(self
                .list(status)
                .await?
                .into_iter()
                .filter(|s| s.workflow == workflow)
                .filter(|s| match &after {
                    Some((at, id)) => s.created_at < *at || (s.created_at == *at && s.id > *id),
                    None => true,
                })
                .take(limit)
                .collect())
        }
    }
    /// Ids of paused sessions with an open gate listing any of `approvers`
    /// ([`awaiting::ANYONE`]: gates listing nobody), each once, in no
    /// particular order. Backends keep an index by approver
    /// ([`awaiting`]); this default reads every paused session.
    fn awaiting(&self, approvers: &[String]) -> impl Future<Output = Result<Vec<String>>> + Send {
        async move {
            Ok(self
                .sessions_with_status(Status::Paused)
                .await?
                .into_iter()
                .filter(|s| {
                    awaiting::entries(s)
                        .iter()
                        .any(|(_, a)| approvers.contains(a))
                })
                .map(|s| s.id)
                .collect())
        }
    }
    /// The Slack user group ids ([`crate::model::Approver::SlackGroup`])
    /// listed as approvers of open gates, each once (whose members may have
    /// something waiting).
    fn awaiting_groups(&self) -> impl Future<Output = Result<Vec<String>>> + Send {
        async move {
            let mut out: Vec<String> = self
                .sessions_with_status(Status::Paused)
                .await?
                .iter()
                .flat_map(awaiting::entries)
                .filter_map(|(_, a)| {
                    crate::model::Approver::parse(&a)
                        .slack_group()
                        .map(str::to_string)
                })
                .collect();
            out.sort();
            out.dedup();
            Ok(out)
        }
    }
    /// How many sessions have each status. Backends keep counters; this
    /// default counts a full list.
    fn status_counts(&self) -> impl Future<Output = Result<Vec<(Status, u64)>>> + Send {
        async move {
            let all = self.list(None).await?;
            Ok(Status::ALL
                .into_iter()
                .map(|st| (st, all.iter().filter(|s| s.status == st).count() as u64))
                .collect())
        }
    }

    /// Up to `limit` ids, in order, after `after`, of paused sessions that
    /// may have a gate never posted to a room (start-up asks again for
    /// those, a page at a time). Backends keep an index; this default lists
    /// every paused session for each page.
    fn unposted(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<String>>> + Send {
        async move {
            let mut ids: Vec<String> = self
                .list(Some(Status::Paused))
                .await?
                .into_iter()
                .map(|s| s.id)
                .filter(|id| after.is_none_or(|a| id.as_str() > a))
                .collect();
            ids.sort();
            ids.truncate(limit);
            Ok(ids)
        }
    }

    /// Stores a web inbox sign-in (its secret's hash only).
    fn put_login(&self, login: &Login) -> impl Future<Output = Result<()>> + Send;
    /// The sign-in `id`, expired or not.
    fn login(&self, id: &str) -> impl Future<Output = Result<Option<Login>>> + Send;
    /// Ends sign-in `id` (sign-out); whether there was one.
    fn end_login(&self, id: &str) -> impl Future<Output = Result<bool>> + Send;
    /// The service's secret key `name` (32 bytes), made once and the same
    /// for every process on the store (one-tap links are signed with it).
    fn key(&self, name: &str) -> impl Future<Output = Result<Vec<u8>>> + Send;

    /// Records a Teams conversation reference, or refreshes the one stored
    /// under its id (everything new but its first sighting:
    /// [`TeamsConversation::refreshed_by`]), atomically.
    fn put_teams_conversation(
        &self,
        conversation: &TeamsConversation,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Every Teams conversation reference, by id.
    fn teams_conversations(&self) -> impl Future<Output = Result<Vec<TeamsConversation>>> + Send;

    /// The people directory, by name (small: read whole).
    fn people(&self) -> impl Future<Output = Result<Vec<Person>>> + Send;
    /// Replaces the directory by what `change` makes of the one stored,
    /// with its `audit` entry, in one transaction (an import is
    /// all-or-nothing); an error from `change` writes nothing. The new
    /// directory comes back.
    fn update_people(
        &self,
        change: &PeopleChange,
        audit: &crate::audit::AuditEvent,
    ) -> impl Future<Output = Result<Vec<Person>>> + Send;

    /// Takes or renews the lease on driving running session `session` for
    /// replica `owner`, for `ttl`; whether `owner` holds it. A store only
    /// one process opens (sled) always says yes.
    fn take_lease(
        &self,
        _session: &str,
        _owner: &str,
        _ttl: std::time::Duration,
    ) -> impl Future<Output = Result<bool>> + Send {
        async { Ok(true) }
    }
    /// How many times this process synced the store to stable storage,
    /// for backends that sync themselves (sled); `None` elsewhere.
    fn syncs(&self) -> impl Future<Output = Result<Option<u64>>> + Send {
        async { Ok(None) }
    }
    /// Hands the lease back (the drive stopped).
    fn release_lease(
        &self,
        _session: &str,
        _owner: &str,
    ) -> impl Future<Output = Result<()>> + Send {
        async { Ok(()) }
    }
    /// Who holds a live lease on `session`, if anyone (none with one
    /// process per store).
    fn lease_holder(&self, _session: &str) -> impl Future<Output = Result<Option<String>>> + Send {
        async { Ok(None) }
    }
    /// Up to `limit` running sessions no process holds a live lease on,
    /// oldest first (by creation, then id), strictly after `after`: the
    /// backlog `serve` drives as it has room — runs left running at
    /// start-up, started faster than they are driven, or whose replica
    /// died. With one process per store, every running session. Backends
    /// keep an index; this default lists every running session.
    fn unleased_running(
        &self,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(DateTime<Utc>, String)>>> + Send {
        async move {
            let mut all: Vec<(DateTime<Utc>, String)> = self
                .list(Some(Status::Running))
                .await?
                .into_iter()
                .map(|s| (s.created_at, s.id))
                .filter(|k| after.as_ref().is_none_or(|a| k > a))
                .collect();
            all.sort();
            all.truncate(limit);
            Ok(all)
        }
    }
}

/// The store a process uses: one of the backends.
pub enum Store {
    Sled(sled::SledStore),
    Postgres(postgres::PgStore),
}

/// The operations that write: each runs in a `store.<operation>` span
/// when it is part of a traced operation (`crate::traces`).
const WRITES: &[&str] = &[
    "create",
    "checkpoint",
    "checkpoint_with",
    "delete",
    "cleanup",
    "record_answer",
    "update_open_gate",
    "record_notification",
    "append_audit",
    "arm_timers",
    "replace_timer",
    "record_timeout",
    "record_escalation",
    "queue_answer",
    "drop_queued",
    "create_token",
    "revoke_token",
    "put_grant",
    "revoke_grant",
    "webhook_settle",
    "webhook_requeue",
    "mail_queue",
    "mail_settle",
    "put_login",
    "end_login",
    "put_teams_conversation",
    "update_people",
];

/// The span of store operation `op`: a write inside a traced operation
/// gets one (never a trace of its own), anything else none.
fn write_span(op: &'static str) -> tracing::Span {
    if !WRITES.contains(&op) || tracing::Span::current().is_none() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "store.write",
        otel.name = %format_args!("store.{op}"),
        db.operation.name = op
    )
}

/// Forwards `Store`'s methods to the backend it holds (writes in a span,
/// see [`write_span`]).
macro_rules! forward {
    ($( $(#[$m:meta])* fn $name:ident(&self $(, $arg:ident : $ty:ty)*) -> $ret:ty; )*) => {
        impl Store {
            $(
                $(#[$m])*
                pub async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    use tracing::Instrument as _;
                    let span = write_span(stringify!($name));
                    match self {
                        Store::Sled(s) => Backend::$name(s $(, $arg)*).instrument(span).await,
                        Store::Postgres(s) => Backend::$name(s $(, $arg)*).instrument(span).await,
                    }
                }
            )*
        }
    };
}

forward! {
    fn create(&self, session: &mut Session) -> Result<()>;
    fn checkpoint(&self, session: &mut Session) -> Result<()>;
    fn checkpoint_with(&self, session: &mut Session, durability: Durability) -> Result<()>;
    fn load(&self, id: &str) -> Result<Option<Session>>;
    fn resolve(&self, id_or_prefix: &str) -> Result<String>;
    fn list(&self, status: Option<Status>) -> Result<Vec<Summary>>;
    fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>>;
    fn count(&self) -> Result<usize>;
    fn delete(&self, id: &str) -> Result<()>;
    fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>>;
    #[allow(clippy::result_large_err)]
    fn record_answer(&self, id: &str, gate: Option<&str>, answer: &Answer) -> Result<std::result::Result<Session, Refusal>>;
    fn update_open_gate(&self, id: &str, gate: &str, change: &(dyn Fn(&mut OpenGate) + Send + Sync)) -> Result<Option<Session>>;
    fn record_notification(&self, session: &str, n: &Notification) -> Result<()>;
    fn notifications(&self, session: &str) -> Result<Vec<Notification>>;
    fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>>;
    fn first_sighting(&self, event_id: &str) -> Result<bool>;
    fn append_audit(&self, events: &[crate::audit::AuditEvent]) -> Result<()>;
    fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>>;
    fn audit_head(&self) -> Result<Option<crate::audit::Head>>;
    fn decided(&self, since: DateTime<Utc>, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>>;
    fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool>;
    fn next_timer(&self) -> Result<Option<Timer>>;
    fn timers(&self) -> Result<Vec<Timer>>;
    fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()>;
    #[allow(clippy::result_large_err)]
    fn record_timeout(&self, timer: &Timer, answer: &Answer, fired: &Fired) -> Result<std::result::Result<Session, Refusal>>;
    fn record_escalation(&self, session: &str, esc: &Escalation, done: &Timer, next: &[Timer]) -> Result<()>;
    fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>>;
    #[allow(clippy::result_large_err)]
    fn queue_answer(&self, id: &str, handle: &str, answer: &Answer) -> Result<std::result::Result<(), Refusal>>;
    fn queued_answers(&self, id: &str) -> Result<Vec<(String, Answer)>>;
    fn drop_queued(&self, id: &str, handle: &str) -> Result<()>;
    fn events_after(&self, after: u64, limit: usize) -> Result<Vec<crate::model::Event>>;
    fn session_events_after(&self, session: &str, after: u64, limit: usize) -> Result<Vec<crate::model::Event>>;
    fn last_event(&self) -> Result<u64>;
    fn create_token(&self, record: &TokenRecord, audit: &crate::audit::AuditEvent) -> Result<bool>;
    fn token(&self, id: &str) -> Result<Option<TokenRecord>>;
    fn tokens(&self) -> Result<Vec<TokenRecord>>;
    fn revoke_token(&self, name: &str, at: DateTime<Utc>, audit: &crate::audit::AuditEvent) -> Result<Option<TokenRecord>>;
    fn put_grant(&self, grant: &crate::model::grant::Grant, audit: &crate::audit::AuditEvent) -> Result<bool>;
    fn grants(&self) -> Result<Vec<crate::model::grant::Grant>>;
    fn revoke_grant(&self, id: &str, revocation: &crate::model::grant::Revocation, audit: &crate::audit::AuditEvent) -> Result<Option<crate::model::grant::Grant>>;
    fn webhook_pull(&self, endpoints: &[String], now: DateTime<Utc>, limit: usize) -> Result<usize>;
    fn webhook_due(&self, now: DateTime<Utc>, lease: std::time::Duration, limit: usize) -> Result<Vec<Delivery>>;
    fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>>;
    fn webhook_settle(&self, settled: &[(Delivery, Settle)]) -> Result<()>;
    fn webhook_failed(&self, limit: usize) -> Result<Vec<Delivery>>;
    fn webhook_requeue(&self, msg_ids: Option<&[String]>, now: DateTime<Utc>) -> Result<usize>;
    fn mail_queue(&self, mail: &crate::model::mail::Mail) -> Result<bool>;
    fn mail_due(&self, now: DateTime<Utc>, lease: std::time::Duration, limit: usize) -> Result<Vec<crate::model::mail::Mail>>;
    fn mail_settle(&self, taken: &crate::model::mail::Mail, outcome: Settle) -> Result<()>;
    fn mail_failed(&self, limit: usize) -> Result<Vec<crate::model::mail::Mail>>;
    fn list_page(&self, status: Option<Status>, after: Option<(DateTime<Utc>, String)>, limit: usize) -> Result<Vec<Summary>>;
    fn status_counts(&self) -> Result<Vec<(Status, u64)>>;
    fn workflow_page(&self, workflow: &str, status: Option<Status>, after: Option<(DateTime<Utc>, String)>, limit: usize) -> Result<Vec<Summary>>;
    fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>>;
    fn awaiting_groups(&self) -> Result<Vec<String>>;
    fn unposted(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>>;
    fn syncs(&self) -> Result<Option<u64>>;
    fn put_login(&self, login: &Login) -> Result<()>;
    fn login(&self, id: &str) -> Result<Option<Login>>;
    fn end_login(&self, id: &str) -> Result<bool>;
    fn key(&self, name: &str) -> Result<Vec<u8>>;
    fn put_teams_conversation(&self, conversation: &TeamsConversation) -> Result<()>;
    fn teams_conversations(&self) -> Result<Vec<TeamsConversation>>;
    fn people(&self) -> Result<Vec<Person>>;
    fn update_people(&self, change: &PeopleChange, audit: &crate::audit::AuditEvent) -> Result<Vec<Person>>;
    fn take_lease(&self, session: &str, owner: &str, ttl: std::time::Duration) -> Result<bool>;
    fn release_lease(&self, session: &str, owner: &str) -> Result<()>;
    fn lease_holder(&self, session: &str) -> Result<Option<String>>;
    fn unleased_running(&self, after: Option<(DateTime<Utc>, String)>, limit: usize) -> Result<Vec<(DateTime<Utc>, String)>>;
}

impl Store {
    /// The same store, taking "now" (a session's `updated_at`, its events,
    /// leases) from `clock`: the process's, handed down from start-up.
    /// Until then a store reads the system's time ([`crate::clock::system`]).
    pub fn with_clock(mut self, clock: crate::clock::SharedClock) -> Store {
        self.set_clock(clock);
        self
    }

    /// [`Store::with_clock`] in place.
    pub fn set_clock(&mut self, clock: crate::clock::SharedClock) {
        match self {
            Store::Sled(s) => s.set_clock(clock),
            Store::Postgres(s) => s.set_clock(clock),
        }
    }

    /// Now, by the store's clock.
    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Store::Sled(s) => s.now(),
            Store::Postgres(s) => s.now(),
        }
    }

    /// Opens the sled store in directory `location`.
    pub fn open(location: &std::path::Path) -> Result<Store> {
        Ok(Store::Sled(sled::SledStore::open(location)?))
    }

    /// Opens the store `location` names, with the default settings.
    pub async fn connect(location: &std::path::Path) -> Result<Store> {
        Store::connect_with(location, &crate::config::StoreSettings::default()).await
    }

    /// Opens the store `location` names: a `postgres://` URL (PostgreSQL,
    /// with `settings.postgres`) or a directory (sled, with its cache).
    pub async fn connect_with(
        location: &std::path::Path,
        settings: &crate::config::StoreSettings,
    ) -> Result<Store> {
        match location.to_str().filter(|l| postgres::is_url(l)) {
            Some(url) => Ok(Store::Postgres(
                postgres::PgStore::connect(url, &settings.postgres).await?,
            )),
            None => Ok(Store::Sled(sled::SledStore::open_with(location, settings)?)),
        }
    }

    /// Whether several processes share this store at once (PostgreSQL):
    /// runs are then driven under leases.
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// How many large texts this process has stored apart from their
    /// sessions (`outputs`) since it opened the store.
    pub fn outputs_written(&self) -> u64 {
        match self {
            Store::Sled(s) => s.outputs_written(),
            Store::Postgres(s) => s.outputs_written(),
        }
    }

    /// Whether the database answers (`/healthz`); sled is always there.
    pub async fn ping(&self) -> Result<()> {
        match self {
            Store::Sled(_) => Ok(()),
            Store::Postgres(s) => s.ping().await,
        }
    }

    /// A receiver told the number of the last event this process wrote.
    pub fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        match self {
            Store::Sled(s) => Backend::subscribe_events(s),
            Store::Postgres(s) => Backend::subscribe_events(s),
        }
    }

    /// Where the store is, for messages.
    pub fn location(&self) -> String {
        match self {
            Store::Sled(s) => Backend::location(s),
            Store::Postgres(s) => Backend::location(s),
        }
    }

    /// A session by id or unique prefix; unknown ids are exit 17.
    pub async fn get(&self, id_or_prefix: &str) -> Result<Session> {
        let id = self.resolve(id_or_prefix).await?;
        self.load(&id).await?.ok_or_else(|| {
            crate::error::Error::Session(format!("no session `{id}` in {}", self.location()))
        })
    }

    /// A page of summaries newest first, of `status` and `workflow` when
    /// given: read from the index by workflow when one is named, by
    /// status otherwise.
    pub async fn page(
        &self,
        status: Option<Status>,
        workflow: Option<&str>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        match workflow {
            Some(w) => self.workflow_page(w, status, after, limit).await,
            None => self.list_page(status, after, limit).await,
        }
    }

    /// The people directory, checked and indexed: who each channel
    /// identity is.
    pub async fn directory(&self) -> Result<Directory> {
        Ok(Directory::new(self.people().await?)?)
    }

    /// Deletes a timer (done, or stale).
    pub async fn remove_timer(&self, t: &Timer) -> Result<()> {
        self.replace_timer(t, &[]).await
    }

    /// Every audit entry in order, as stored (verify, export).
    pub async fn audit_entries(&self) -> Result<Vec<(u64, Vec<u8>)>> {
        const PAGE: usize = 4096;
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let page = self.audit_page(after, PAGE).await?;
            let Some((last, _)) = page.last() else {
                return Ok(out);
            };
            after = *last;
            let full = page.len() == PAGE;
            out.extend(page);
            if !full {
                return Ok(out);
            }
        }
    }

    /// The audit's decisions made at or after `since`, in order, handed
    /// to `each` a page at a time (a million fit in no page). The next
    /// page is read while this one is decoded.
    pub async fn decisions(
        &self,
        since: DateTime<Utc>,
        mut each: impl FnMut(crate::audit::decided::Decided),
    ) -> Result<()> {
        use crate::audit::decided::Decided;
        const PAGE: usize = 8192;
        let mut page = self.decided(since, 0, PAGE).await?;
        loop {
            let full = page.len() == PAGE;
            let after = page.last().map_or(0, |(seq, _)| *seq);
            let mut decode = || -> Result<()> {
                for (seq, bytes) in std::mem::take(&mut page) {
                    each(Decided::decode(seq, &bytes).map_err(crate::error::Error::Store)?);
                }
                Ok(())
            };
            if !full {
                return decode();
            }
            let (next, decoded) =
                tokio::join!(self.decided(since, after, PAGE), async { decode() });
            decoded?;
            page = next?;
        }
    }

    /// The audit entries at or after `since` (of sessions whose id starts
    /// with `session`), in order, decoded: what `audit export` and
    /// `GET /api/v1/audit` give. An unreadable entry is an error naming it.
    pub async fn audit_export(
        &self,
        since: Option<DateTime<Utc>>,
        session: Option<&str>,
    ) -> Result<Vec<crate::audit::AuditEntry>> {
        let mut out = Vec::new();
        for (seq, bytes) in self.audit_entries().await? {
            let entry: crate::audit::AuditEntry = serde_json::from_slice(&bytes).map_err(|e| {
                crate::error::Error::Store(format!(
                    "audit entry #{seq} is unreadable ({e}); run `strands audit verify`"
                ))
            })?;
            let e = &entry.event;
            if since.is_some_and(|t| e.at.is_none_or(|at| at < t)) {
                continue;
            }
            if session.is_some_and(|s| !e.session.starts_with(s)) {
                continue;
            }
            out.push(entry);
        }
        Ok(out)
    }
}
