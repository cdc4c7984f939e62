//! Writes a [`Dump`] (another store's contents) into the tables, in one
//! transaction (for `strands store migrate`).

use super::{decode, millis, PgStore};
use crate::error::{Error, Result};
use crate::model::teams::TeamsConversation;
use crate::model::token::TokenRecord;
use crate::model::webhook::Delivery;
use crate::model::{Event, Summary};
use crate::store::migrate::{Dump, Holds};
use crate::store::Timer;

/// Every table holding data (not the schema's own), cleared by `--force`
/// (`session_counts` is recounted instead).
const TABLES: &str = "meta, sessions, session_outputs, unposted, leases, messages, notifications, chat_events, audit, events, timers, timer_marks, escalations, queued_answers, gate_approvers, tokens, webhook_cursors, webhook_pending, webhook_failed, web_logins, teams_conversations, people, mail_outbox, grants, decided";

impl PgStore {
    /// Whether the database is empty, holds this dump already, or other data.
    pub async fn holds(&self, dump: &Dump) -> Result<Holds> {
        let sessions = self.count().await?;
        let head = self.audit_head().await?;
        let tokens = self.tokens().await?.len();
        if sessions == 0 && head.is_none() && tokens == 0 && self.last_event().await? == 0 {
            return Ok(Holds::Nothing);
        }
        if sessions == dump.sessions.len() && head == dump.audit_head && tokens == dump.tokens.len()
        {
            return Ok(Holds::This);
        }
        Ok(Holds::Other)
    }

    /// Writes `dump`; `replace`: first clears what the tables hold.
    pub async fn import(&self, dump: &Dump, replace: bool) -> Result<()> {
        let mut client = self.client().await?;
        let e = |e| self.err("migrate", e);
        let tx = client.transaction().await.map_err(e)?;
        if replace {
            tx.batch_execute(&format!("TRUNCATE {TABLES}"))
                .await
                .map_err(e)?;
        }
        // Paused sessions: their unposted gates, once the messages are in.
        let mut paused = Vec::new();
        for (body, summary) in &dump.sessions {
            let s: Summary = decode("summary", summary)?;
            let session = crate::model::wire::decode(body)
                .map_err(|err| Error::Store(format!("session {}: {err}", s.id)))?;
            // Whole in the dump; stored here with its large texts apart.
            let stored = crate::store::outputs::split(&session)?;
            tx.execute(
                "INSERT INTO sessions (id, rev, status, created_at, updated_at, body, summary, workflow)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    &session.id,
                    &(session.rev as i64),
                    &session.status.as_str(),
                    &session.created_at,
                    &session.updated_at,
                    &stored.body,
                    summary,
                    &session.workflow,
                ],
            )
            .await
            .map_err(e)?;
            super::awaiting::track_in(&tx, &session).await?;
            super::outputs::put_in(&tx, &session.id, &stored.outputs, true).await?;
            if session.status == crate::model::Status::Paused {
                paused.push(session);
            }
        }
        for (channel, ts, t) in &dump.messages {
            tx.execute(
                "INSERT INTO messages (channel, ts, session, gate) VALUES ($1, $2, $3, $4)",
                &[channel, ts, &t.session, &t.gate],
            )
            .await
            .map_err(e)?;
        }
        let now = self.clock.now();
        for id in &dump.chat_events {
            tx.execute(
                "INSERT INTO chat_events (event_id, seen_at) VALUES ($1, $2)",
                &[id, &now],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.events {
            let ev: Event = decode("event", body)?;
            tx.execute(
                "INSERT INTO events (seq, session, body) VALUES ($1, $2, $3)",
                &[&(ev.seq as i64), &ev.session, body],
            )
            .await
            .map_err(e)?;
        }
        tx.execute(
            "UPDATE heads SET seq = $1 WHERE name = 'events'",
            &[&(dump.last_event as i64)],
        )
        .await
        .map_err(e)?;
        for (seq, body) in &dump.audit {
            tx.execute(
                "INSERT INTO audit (seq, body) VALUES ($1, $2)",
                &[&(*seq as i64), body],
            )
            .await
            .map_err(e)?;
        }
        let (seq, hash) = match &dump.audit_head {
            Some(h) => (h.seq as i64, h.hash.clone()),
            None => (0, crate::audit::GENESIS.to_string()),
        };
        tx.execute(
            "UPDATE heads SET seq = $1, hash = $2 WHERE name = 'audit'",
            &[&seq, &hash],
        )
        .await
        .map_err(e)?;
        // The decisions index is built again from this audit when read.
        tx.execute("UPDATE heads SET seq = 0 WHERE name = 'decided'", &[])
            .await
            .map_err(e)?;
        for body in &dump.timers {
            let t: Timer = decode("timer", body)?;
            let kind: i16 = match t.kind {
                crate::store::TimerKind::Timeout => 1,
                crate::store::TimerKind::Reminder => 2,
                crate::store::TimerKind::Escalation => 3,
            };
            tx.execute(
                "INSERT INTO timers (due_ms, session, gate, kind, n, body) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT DO NOTHING",
                &[&millis(t.due), &t.session, &t.gate, &kind, &(t.n as i32), body],
            )
            .await
            .map_err(e)?;
        }
        for (s, g) in &dump.timer_marks {
            tx.execute(
                "INSERT INTO timer_marks (session, gate) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[s, g],
            )
            .await
            .map_err(e)?;
        }
        for (table, rows) in [
            ("escalations", &dump.escalations),
            ("queued_answers", &dump.queued),
        ] {
            let q = format!("INSERT INTO {table} (session, gate, body) VALUES ($1, $2, $3)");
            for (s, g, body) in rows {
                tx.execute(&q, &[s, g, body]).await.map_err(e)?;
            }
        }
        for (s, g, body) in &dump.notifications {
            let posted = serde_json::from_slice::<crate::model::Notification>(body)
                .is_ok_and(|n| n.ts.is_some());
            tx.execute(
                "INSERT INTO notifications (session, gate, body, posted) VALUES ($1, $2, $3, $4)",
                &[s, g, body, &posted],
            )
            .await
            .map_err(e)?;
        }
        for session in &paused {
            super::counts::track_in(&tx, session, None).await?;
        }
        super::counts::recount_in(&tx).await?;
        for (k, v) in &dump.meta {
            tx.execute("INSERT INTO meta (key, value) VALUES ($1, $2)", &[k, v])
                .await
                .map_err(e)?;
        }
        for body in &dump.tokens {
            let t: TokenRecord = decode("token", body)?;
            tx.execute(
                "INSERT INTO tokens (id, name, revoked, body) VALUES ($1, $2, $3, $4)",
                &[&t.id, &t.name, &t.revoked_at.is_some(), body],
            )
            .await
            .map_err(e)?;
        }
        for (endpoint, seq) in &dump.webhook_cursors {
            tx.execute(
                "INSERT INTO webhook_cursors (endpoint, seq) VALUES ($1, $2)",
                &[endpoint, &(*seq as i64)],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.webhook_pending {
            let d: Delivery = decode("webhook delivery", body)?;
            tx.execute(
                "INSERT INTO webhook_pending (endpoint, seq, next_ms, body) VALUES ($1, $2, $3, $4)",
                &[&d.endpoint, &(d.seq() as i64), &millis(d.next_at), body],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.webhook_failed {
            let d: Delivery = decode("webhook delivery", body)?;
            let at = d.last_attempt_at.unwrap_or(d.next_at);
            tx.execute(
                "INSERT INTO webhook_failed (failed_ms, endpoint, seq, body) VALUES ($1, $2, $3, $4)
                 ON CONFLICT DO NOTHING",
                &[&millis(at), &d.endpoint, &(d.seq() as i64), body],
            )
            .await
            .map_err(e)?;
        }
        for (id, body) in &dump.logins {
            tx.execute(
                "INSERT INTO web_logins (id, body) VALUES ($1, $2)",
                &[id, body],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.teams_conversations {
            let c: TeamsConversation = decode("Teams conversation", body)?;
            tx.execute(
                "INSERT INTO teams_conversations (id, first_seen, body) VALUES ($1, $2, $3)",
                &[&c.id, &c.first_seen, body],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.people {
            let p: crate::model::person::Person = decode("person", body)?;
            tx.execute(
                "INSERT INTO people (name, body) VALUES ($1, $2)",
                &[&p.name, body],
            )
            .await
            .map_err(e)?;
        }
        for body in &dump.grants {
            let g: crate::model::grant::Grant = decode("grant", body)?;
            tx.execute(
                "INSERT INTO grants (id, body) VALUES ($1, $2)",
                &[&g.id, body],
            )
            .await
            .map_err(e)?;
        }
        tx.commit().await.map_err(e)
    }
}
