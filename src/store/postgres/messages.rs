//! The messages that asked for gates (and the channel + ts index a click
//! finds its session by), chat event dedup, and answers queued for a busy
//! run — in PostgreSQL, each change one statement or one transaction.

use super::prepared::Prepared;
use deadpool_postgres::Transaction;

use super::{decode, encode, PgStore};
use crate::error::{Error, Result};
use crate::model::{Answer, Notification, Refusal, Status};
use crate::store::MessageTarget;

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// Indexes message `channel`/`ts` as asking for `gate` of `session`.
pub(super) async fn index_in(
    tx: &Transaction<'_>,
    channel: &str,
    ts: &str,
    session: &str,
    gate: &str,
) -> Result<()> {
    tx.execute_c(
        "INSERT INTO messages (channel, ts, session, gate) VALUES ($1, $2, $3, $4)
         ON CONFLICT (channel, ts) DO UPDATE SET session = EXCLUDED.session, gate = EXCLUDED.gate",
        &[&channel, &ts, &session, &gate],
    )
    .await
    .map_err(|e| sql("message index", e))?;
    Ok(())
}

impl PgStore {
    pub async fn record_notification(&self, session: &str, n: &Notification) -> Result<()> {
        let body = encode("notification", n)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("record notification", e))?;
        // Ordered with the session's writes, which list its unposted gates
        // (`counts`): a checkpoint in flight commits first, or waits.
        tx.execute_c(
            "SELECT 1 FROM sessions WHERE id = $1 FOR SHARE",
            &[&session],
        )
        .await
        .map_err(|e| self.err("record notification", e))?;
        tx.execute_c(
            "INSERT INTO notifications (session, gate, body, posted) VALUES ($1, $2, $3, $4)
             ON CONFLICT (session, gate) DO UPDATE SET body = EXCLUDED.body, posted = EXCLUDED.posted",
            &[&session, &n.record_key(), &body, &n.ts.is_some()],
        )
        .await
        .map_err(|e| self.err("record notification", e))?;
        if let Some(ts) = &n.ts {
            index_in(&tx, &n.channel, ts, session, &n.gate).await?;
        }
        // The gate is asked when every room that recorded a message for it
        // posted it (each room keeps its own row: `record_key`); a room's
        // failed post puts a paused run's gate back for start-up to ask.
        tx.execute_c(
            "WITH asked AS (
                 SELECT bool_and(posted) AS all_posted FROM notifications
                 WHERE session = $1 AND gate IN ($2, $2 || '@teams')),
             gone AS (
                 DELETE FROM unposted WHERE session = $1 AND gate = $2
                 AND (SELECT all_posted FROM asked))
             INSERT INTO unposted (session, gate)
             SELECT $1, $2 WHERE NOT (SELECT all_posted FROM asked)
                 AND EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND status = 'paused')
             ON CONFLICT DO NOTHING",
            &[&session, &n.gate],
        )
        .await
        .map_err(|e| self.err("record notification", e))?;
        // The copies sent to approvers directly: a click on any finds the gate.
        for (channel, ts) in &n.copies {
            index_in(&tx, channel, ts, session, &n.gate).await?;
        }
        tx.commit()
            .await
            .map_err(|e| self.err("record notification", e))
    }

    pub async fn notifications(&self, session: &str) -> Result<Vec<Notification>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM notifications WHERE session = $1",
                &[&session],
            )
            .await
            .map_err(|e| self.err("notifications", e))?;
        let mut out: Vec<Notification> = Vec::new();
        for r in &rows {
            match serde_json::from_slice(r.get::<_, &[u8]>(0)) {
                Ok(n) => out.push(n),
                Err(e) => tracing::warn!(session, "skipping an unreadable notification: {e}"),
            }
        }
        out.sort_by_key(|n| n.at);
        Ok(out)
    }

    pub async fn message_target(&self, channel: &str, ts: &str) -> Result<Option<MessageTarget>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT session, gate FROM messages WHERE channel = $1 AND ts = $2")
            .await
            .map_err(|e| self.err("message index", e))?;
        let row = client
            .query_opt(&stmt, &[&channel, &ts])
            .await
            .map_err(|e| self.err("message index", e))?;
        Ok(row.map(|r| MessageTarget {
            session: r.get(0),
            gate: r.get(1),
        }))
    }

    pub async fn first_sighting(&self, event_id: &str) -> Result<bool> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO chat_events (event_id, seen_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            )
            .await
            .map_err(|e| self.err("chat events", e))?;
        let n = client
            .execute(&stmt, &[&event_id, &self.clock.now()])
            .await
            .map_err(|e| self.err("chat events", e))?;
        Ok(n == 1)
    }

    #[allow(clippy::result_large_err)]
    pub async fn queue_answer(
        &self,
        id: &str,
        handle: &str,
        answer: &Answer,
    ) -> Result<std::result::Result<(), Refusal>> {
        let body = encode("answer", answer)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("queue answer", e))?;
        // The session's row lock orders this against the engine's writes.
        let Some(row) = tx
            .query_opt_c("SELECT body FROM sessions WHERE id = $1 FOR SHARE", &[&id])
            .await
            .map_err(|e| self.err("queue answer", e))?
        else {
            return Ok(Err(Refusal::NotFound));
        };
        let session = crate::model::wire::decode(row.get::<_, &[u8]>(0))
            .map_err(|e| Error::Store(format!("session {id}: unreadable session: {e}")))?;
        if session.status != Status::Running {
            return Ok(Err(Refusal::NotOpen(session.status)));
        }
        if !session.gates.contains_key(handle) {
            return Ok(Err(Refusal::Stale {
                open: session.first_gate().map(|g| g.handle()),
            }));
        }
        let n = tx
            .execute_c(
                "INSERT INTO queued_answers (session, gate, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&id, &handle, &body],
            )
            .await
            .map_err(|e| self.err("queue answer", e))?;
        if n == 0 {
            let prev = tx
                .query_opt_c(
                    "SELECT body FROM queued_answers WHERE session = $1 AND gate = $2",
                    &[&id, &handle],
                )
                .await
                .map_err(|e| self.err("queue answer", e))?;
            let prev: Option<Answer> =
                prev.and_then(|r| serde_json::from_slice(r.get::<_, &[u8]>(0)).ok());
            return Ok(Err(match prev {
                Some(a) => Refusal::AlreadyAnswered(a),
                None => Refusal::BadAnswer("an answer is already waiting".into()),
            }));
        }
        tx.commit().await.map_err(|e| self.err("queue answer", e))?;
        Ok(Ok(()))
    }

    pub async fn queued_answers(&self, id: &str) -> Result<Vec<(String, Answer)>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT gate, body FROM queued_answers WHERE session = $1 ORDER BY gate",
            )
            .await
            .map_err(|e| self.err("queued answers", e))?;
        let rows = client
            .query(&stmt, &[&id])
            .await
            .map_err(|e| self.err("queued answers", e))?;
        let mut out = Vec::new();
        for r in &rows {
            let handle: String = r.get(0);
            match decode::<Answer>("queued answer", r.get::<_, &[u8]>(1)) {
                Ok(a) => out.push((handle, a)),
                Err(e) => {
                    tracing::error!(session = %id, gate = %handle, "dropping an unreadable queued answer: {e}");
                    self.drop_queued(id, &handle).await?;
                }
            }
        }
        Ok(out)
    }

    pub async fn drop_queued(&self, id: &str, handle: &str) -> Result<()> {
        let client = self.client().await?;
        client
            .execute_c(
                "DELETE FROM queued_answers WHERE session = $1 AND gate = $2",
                &[&id, &handle],
            )
            .await
            .map_err(|e| self.err("queued answers", e))?;
        Ok(())
    }
}
