//! The mail outbox in PostgreSQL: one row per mail ever queued (`INSERT …
//! ON CONFLICT DO NOTHING`: an id is queued once), pending mails taken for
//! an attempt with `FOR UPDATE SKIP LOCKED` (each attempt goes to one
//! replica, nobody takes it again before its lease ends), and a settled
//! mail marked `sent` or `failed` in the write that records its outcome.

use super::prepared::Prepared;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{decode, encode, millis, PgStore};
use crate::error::Result;
use crate::model::mail::{Mail, Settle};

impl PgStore {
    pub async fn mail_queue(&self, mail: &Mail) -> Result<bool> {
        let client = self.client().await?;
        let n = client
            .execute_c(
                "INSERT INTO mail_outbox (id, state, next_ms, body) VALUES ($1, 'pending', $2, $3)
                 ON CONFLICT DO NOTHING",
                &[&mail.id, &millis(mail.next_at), &encode("mail", mail)?],
            )
            .await
            .map_err(|e| self.err("mail", e))?;
        Ok(n == 1)
    }

    pub async fn mail_due(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Mail>> {
        let until = now + chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX / 2);
        let mut client = self.client().await?;
        let e = |e| self.err("mail", e);
        let tx = client.transaction().await.map_err(e)?;
        let rows = tx
            .query_c(
                "SELECT id, body FROM mail_outbox WHERE state = 'pending' AND next_ms <= $1
                 ORDER BY next_ms, id LIMIT $2 FOR UPDATE SKIP LOCKED",
                &[&millis(now), &(limit as i64)],
            )
            .await
            .map_err(e)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: String = r.get(0);
            let mut taken: Mail = decode("mail", r.get::<_, &[u8]>(1))?;
            taken.attempts += 1;
            taken.first_attempt_at.get_or_insert(now);
            taken.last_attempt_at = Some(now);
            taken.next_at = until;
            tx.execute_c(
                "UPDATE mail_outbox SET next_ms = $2, body = $3 WHERE id = $1",
                &[&id, &millis(until), &encode("mail", &taken)?],
            )
            .await
            .map_err(e)?;
            out.push(taken);
        }
        tx.commit().await.map_err(e)?;
        Ok(out)
    }

    pub async fn mail_settle(&self, taken: &Mail, outcome: Settle) -> Result<()> {
        let mut client = self.client().await?;
        let e = |e| self.err("mail", e);
        let tx = client.transaction().await.map_err(e)?;
        let Some(row) = tx
            .query_opt_c(
                "SELECT body FROM mail_outbox WHERE id = $1 AND state = 'pending' FOR UPDATE",
                &[&taken.id],
            )
            .await
            .map_err(e)?
        else {
            return Ok(()); // settled already
        };
        let mut cur: Mail = decode("mail", row.get::<_, &[u8]>(0))?;
        match &outcome {
            Settle::Delivered => {
                tx.execute_c(
                    "UPDATE mail_outbox SET state = 'sent' WHERE id = $1",
                    &[&taken.id],
                )
                .await
                .map_err(e)?;
            }
            _ if cur.attempts != taken.attempts => {}
            Settle::Retry { at, error } => {
                cur.next_at = *at;
                cur.last_error = Some(error.clone());
                tx.execute_c(
                    "UPDATE mail_outbox SET next_ms = $2, body = $3 WHERE id = $1",
                    &[&taken.id, &millis(*at), &encode("mail", &cur)?],
                )
                .await
                .map_err(e)?;
            }
            Settle::GaveUp { error } => {
                cur.last_error = Some(error.clone());
                let at = cur.last_attempt_at.unwrap_or(cur.next_at);
                tx.execute_c(
                    "UPDATE mail_outbox SET state = 'failed', failed_ms = $2, body = $3 WHERE id = $1",
                    &[&taken.id, &millis(at), &encode("mail", &cur)?],
                )
                .await
                .map_err(e)?;
            }
        }
        tx.commit().await.map_err(e)
    }

    pub async fn mail_failed(&self, limit: usize) -> Result<Vec<Mail>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM mail_outbox WHERE state = 'failed'
                 ORDER BY failed_ms DESC, id DESC LIMIT $1",
                &[&(limit as i64)],
            )
            .await
            .map_err(|e| self.err("mail", e))?;
        rows.iter()
            .map(|r| decode("mail", r.get::<_, &[u8]>(0)))
            .collect()
    }
}
