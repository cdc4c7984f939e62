//! The audit chain and the event sequence in PostgreSQL: appended inside
//! the transaction of the change they describe, each under a row lock on
//! its head (`heads`), so two replicas writing at once queue behind each
//! other — the chain never forks and event numbers have no gap a reader
//! could skip. Locks are always taken audit first, then events, and held
//! for as few round trips as can be: statements are prepared once per
//! connection, rows go in as one `unnest` each, and the event head is
//! moved and read in one `UPDATE … RETURNING`.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use super::{decode, encode, PgStore};
use crate::audit::{entry_hash, AuditEntry, AuditEvent, Head};
use crate::error::{Error, Result};
use crate::model::{Event, EventKind, Session};

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// Appends `events` to the audit chain inside `tx`.
pub(super) async fn append_audit_in(tx: &Transaction<'_>, events: &[AuditEvent]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let lock = tx
        .prepare_cached("SELECT seq, hash FROM heads WHERE name = 'audit' FOR UPDATE")
        .await
        .map_err(|e| sql("audit head", e))?;
    let row = tx
        .query_one(&lock, &[])
        .await
        .map_err(|e| sql("audit head", e))?;
    let mut last = Head {
        seq: row.get::<_, i64>(0) as u64,
        hash: row.get(1),
    };
    let (mut seqs, mut bodies) = (Vec::with_capacity(events.len()), Vec::new());
    for event in events {
        let seq = last.seq + 1;
        let hash = entry_hash(seq, &last.hash, event);
        let entry = AuditEntry {
            seq,
            prev: last.hash.clone(),
            hash: hash.clone(),
            event: event.clone(),
        };
        seqs.push(seq as i64);
        bodies.push(encode("audit entry", &entry)?);
        last = Head { seq, hash };
    }
    let write = tx
        .prepare_cached(
            "WITH head AS (UPDATE heads SET seq = $1, hash = $2 WHERE name = 'audit')
             INSERT INTO audit (seq, body) SELECT * FROM unnest($3::bigint[], $4::bytea[])",
        )
        .await
        .map_err(|e| sql("audit", e))?;
    tx.execute(&write, &[&(last.seq as i64), &last.hash, &seqs, &bodies])
        .await
        .map_err(|e| sql("audit append", e))?;
    Ok(())
}

/// Appends `kinds` for `session` inside `tx`; the last number written.
pub(super) async fn append_events_in(
    tx: &Transaction<'_>,
    session: &Session,
    kinds: &[EventKind],
    at: DateTime<Utc>,
) -> Result<Option<u64>> {
    if kinds.is_empty() {
        return Ok(None);
    }
    // Reserves the numbers and locks the head in one round trip.
    let reserve = tx
        .prepare_cached("UPDATE heads SET seq = seq + $1 WHERE name = 'events' RETURNING seq")
        .await
        .map_err(|e| sql("event head", e))?;
    let row = tx
        .query_one(&reserve, &[&(kinds.len() as i64)])
        .await
        .map_err(|e| sql("event head", e))?;
    let last = row.get::<_, i64>(0) as u64;
    let mut seq = last - kinds.len() as u64;
    let (mut seqs, mut bodies) = (Vec::with_capacity(kinds.len()), Vec::new());
    for what in kinds {
        seq += 1;
        let event = Event {
            seq,
            at,
            session: session.id.clone(),
            workflow: session.workflow.clone(),
            trace_id: session.trace_id().map(str::to_string),
            what: what.clone(),
        };
        seqs.push(seq as i64);
        bodies.push(encode("event", &event)?);
    }
    // Other replicas hear of them on commit (`listen`), in one round trip.
    let insert = tx
        .prepare_cached(&format!(
            "WITH ins AS (INSERT INTO events (seq, session, body)
               SELECT s, $2, b FROM unnest($1::bigint[], $3::bytea[]) AS t(s, b))
             SELECT pg_notify('{}', $4)",
            super::listen::CHANNEL
        ))
        .await
        .map_err(|e| sql("events", e))?;
    tx.execute(&insert, &[&seqs, &session.id, &bodies, &seq.to_string()])
        .await
        .map_err(|e| sql("event append", e))?;
    Ok(Some(seq))
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
        append_audit_in(&tx, events).await?;
        tx.commit().await.map_err(|e| self.err("audit", e))
    }

    pub async fn audit_page(&self, after: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        let client = self.client().await?;
        let rows = client
            .query(
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
            .query_one("SELECT seq, hash FROM heads WHERE name = 'audit'", &[])
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
            .query(
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
            .query(
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
            .query_one("SELECT seq FROM heads WHERE name = 'events'", &[])
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
