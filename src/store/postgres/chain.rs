//! The audit chain and the event sequence in PostgreSQL: appended inside
//! the transaction of the change they describe, each under a row lock on
//! its head (`heads`), so two replicas writing at once queue behind each
//! other — the chain never forks and event numbers have no gap a reader
//! could skip. Locks are always taken audit first, then events, then the
//! status counters.
//!
//! Every writer of every replica queues on those rows, so how long each
//! holds them is the store's throughput. They are taken last ([`finish`]):
//! one call of the server function `strands_append` (schema migration 8)
//! chains the audit entries, numbers and announces the events and moves
//! the counters, and the commit is sent right behind it, in the same
//! round trip — the rows are held for the server's own work, never for a
//! round trip to this process. (Before, the heads were locked early and
//! held across six round trips; under load at 200 clicks/s writers queued
//! on the audit head for hundreds of milliseconds.) The commit is `COMMIT
//! AND CHAIN`, which leaves an empty transaction open, rolled back behind
//! it without waiting: nothing to write, nothing held.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use super::prepared::Prepared;
use super::{decode, encode, PgStore};
use crate::audit::{AuditEvent, Head};
use crate::error::{Error, Result};
use crate::model::{Event, EventKind, Session, Status};

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// The events one write appends: its session's, at one time.
pub(super) struct Events<'a> {
    pub session: &'a Session,
    pub kinds: &'a [EventKind],
    pub at: DateTime<Utc>,
}

/// A session moved from one status to another in the counters (`None`:
/// created, or deleted; the same on both sides: no move).
pub(super) type Moved = (Option<Status>, Option<Status>);

/// How an event's body begins when written with number 0; the server puts
/// the real number in its place.
const SEQ_ZERO: &[u8] = b"{\"seq\":0,";

/// Appends `audit` to the audit chain and `events` to the event sequence,
/// moves the status counters by `moved`, and commits `tx`; the number of
/// the last event written. See the module's comment for why this is one
/// round trip with the commit.
pub(super) async fn finish(
    tx: Transaction<'_>,
    audit: &[AuditEvent],
    events: Option<Events<'_>>,
    moved: Moved,
) -> Result<Option<u64>> {
    // Each audit event as `audit::entry_hash` hashes it.
    let audit: Vec<Vec<u8>> = audit
        .iter()
        .map(|e| encode("audit event", e))
        .collect::<Result<_>>()?;
    let (session, bodies) = match &events {
        Some(ev) => (Some(ev.session.id.as_str()), event_bodies(ev)?),
        None => (None, Vec::new()),
    };
    let (old, new) = (moved.0.map(|s| s.as_str()), moved.1.map(|s| s.as_str()));
    let append = tx
        .prepare_cached("SELECT strands_append($1, $2, $3, $4, $5, $6)")
        .await
        .map_err(|e| sql("append", e))?;
    let channel = super::listen::CHANNEL;
    // Both sent at once: the server commits as soon as the call returns.
    let (appended, committed) = futures_util::future::join(
        tx.query_one(&append, &[&audit, &session, &bodies, &channel, &old, &new]),
        tx.batch_execute("COMMIT AND CHAIN"),
    )
    .await;
    let last: Option<i64> = appended.map_err(|e| sql("append", e))?.get(0);
    committed.map_err(|e| sql("commit", e))?;
    // The chained transaction is empty. Dropping it queues its `ROLLBACK`
    // on the connection without waiting for the answer (the connection's
    // next user's statements follow it): nothing to undo, and no round
    // trip after the commit.
    drop(tx);
    Ok(last.map(|n| n as u64))
}

/// The bodies of `events`, numbered 0 (the server numbers them).
fn event_bodies(events: &Events<'_>) -> Result<Vec<Vec<u8>>> {
    events
        .kinds
        .iter()
        .map(|what| {
            let body = encode(
                "event",
                &Event {
                    seq: 0,
                    at: events.at,
                    session: events.session.id.clone(),
                    workflow: events.session.workflow.clone(),
                    trace_id: events.session.trace_id().map(str::to_string),
                    what: what.clone(),
                },
            )?;
            if !body.starts_with(SEQ_ZERO) {
                return Err(Error::Internal(
                    "an event's JSON no longer begins with its number".into(),
                ));
            }
            Ok(body)
        })
        .collect()
}

/// Appends `audit` to the audit chain and commits `tx` (a write with
/// nothing else to append: tokens, people).
pub(super) async fn finish_audit(tx: Transaction<'_>, audit: &AuditEvent) -> Result<()> {
    finish(tx, std::slice::from_ref(audit), None, (None, None))
        .await
        .map(|_| ())
}

impl PgStore {
    pub async fn append_audit(&self, events: &[AuditEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("audit", e))?;
        finish(tx, events, None, (None, None)).await.map(|_| ())
    }

    pub async fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT seq, body FROM audit WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&(after.min(i64::MAX as u64) as i64), &(limit as i64)],
            )
            .await
            .map_err(|e| self.err("audit", e))?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, Vec<u8>>(1)))
            .collect())
    }

    pub async fn audit_head(&self) -> Result<Option<Head>> {
        let client = self.client().await?;
        let row = client
            .query_one_c("SELECT seq, hash FROM heads WHERE name = 'audit'", &[])
            .await
            .map_err(|e| self.err("audit head", e))?;
        let seq = row.get::<_, i64>(0) as u64;
        Ok((seq > 0).then(|| Head {
            seq,
            hash: row.get(1),
        }))
    }

    pub async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM events WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&(after.min(i64::MAX as u64) as i64), &(limit as i64)],
            )
            .await
            .map_err(|e| self.err("events", e))?;
        rows.iter()
            .map(|r| decode("event", r.get::<_, &[u8]>(0)))
            .collect()
    }

    pub async fn session_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM events WHERE session = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[
                    &session,
                    &(after.min(i64::MAX as u64) as i64),
                    &(limit as i64),
                ],
            )
            .await
            .map_err(|e| self.err("events", e))?;
        rows.iter()
            .map(|r| decode("event", r.get::<_, &[u8]>(0)))
            .collect()
    }

    pub async fn last_event(&self) -> Result<u64> {
        let client = self.client().await?;
        let row = client
            .query_one_c("SELECT seq FROM heads WHERE name = 'events'", &[])
            .await
            .map_err(|e| self.err("event head", e))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// The number of the last event committed, from this process or
    /// (once listening) any other.
    pub fn subscribe_events(&self) -> tokio::sync::watch::Receiver<u64> {
        self.listen();
        self.event_tx.subscribe()
    }
}
