//! The webhook outbox in PostgreSQL: a cursor per endpoint moved in the
//! transaction that queues its deliveries (locked, so two replicas never
//! queue an event twice), pending deliveries taken for an attempt with
//! `FOR UPDATE SKIP LOCKED` (each attempt goes to one replica, and nobody
//! takes it again before its lease ends), and the ones given up on.

use super::prepared::Prepared;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{decode, encode, millis, PgStore};
use crate::error::{Error, Result};
use crate::model::webhook::{Delivery, Settle};
use crate::model::Event;

/// The `meta` key of the store's random id (in webhook message ids).
const STORE_ID: &str = "store_id";

impl PgStore {
    async fn store_id(&self) -> Result<String> {
        let fresh = uuid::Uuid::new_v4().simple().to_string().into_bytes();
        let v = self.meta_once(STORE_ID, fresh).await?;
        Ok(String::from_utf8_lossy(&v).into_owned())
    }

    pub async fn webhook_pull(
        &self,
        endpoints: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<usize> {
        if endpoints.is_empty() {
            return Ok(0);
        }
        let batch = limit.max(1);
        let store_id = self.store_id().await?;
        let mut queued = 0;
        let mut client = self.client().await?;
        let e = |e| self.err("webhooks", e);
        for endpoint in endpoints {
            let mut for_this = 0;
            loop {
                let room = batch - for_this;
                let tx = client.transaction().await.map_err(e)?;
                let last: i64 = tx
                    .query_one_c("SELECT seq FROM heads WHERE name = 'events'", &[])
                    .await
                    .map_err(e)?
                    .get(0);
                let cur = tx
                    .query_opt_c(
                        "SELECT seq FROM webhook_cursors WHERE endpoint = $1 FOR UPDATE",
                        &[endpoint],
                    )
                    .await
                    .map_err(e)?;
                let Some(cur) = cur else {
                    tx.execute_c(
                        "INSERT INTO webhook_cursors (endpoint, seq) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        &[endpoint, &last],
                    )
                    .await
                    .map_err(e)?;
                    tx.commit().await.map_err(e)?;
                    break;
                };
                let start: i64 = cur.get(0);
                let rows = tx
                    .query_c(
                        "SELECT seq, body FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3",
                        &[&start, &last, &(batch as i64)],
                    )
                    .await
                    .map_err(e)?;
                let mut seq = start;
                let mut made = 0;
                for r in &rows {
                    if made >= room {
                        break;
                    }
                    seq = r.get(0);
                    let event: Event = decode(&format!("event {seq}"), r.get::<_, &[u8]>(1))?;
                    if !event.what.is_webhook() {
                        continue;
                    }
                    let row = Delivery::new(endpoint, &store_id, event, now);
                    tx.execute_c(
                        "INSERT INTO webhook_pending (endpoint, seq, next_ms, body) VALUES ($1, $2, $3, $4)
                         ON CONFLICT DO NOTHING",
                        &[endpoint, &seq, &millis(now), &encode("webhook delivery", &row)?],
                    )
                    .await
                    .map_err(e)?;
                    made += 1;
                }
                // Looked at a whole batch of quiet events: step over them.
                if made < room {
                    if let Some(r) = rows.last() {
                        seq = r.get(0);
                    }
                }
                if seq != start {
                    tx.execute_c(
                        "UPDATE webhook_cursors SET seq = $2 WHERE endpoint = $1",
                        &[endpoint, &seq],
                    )
                    .await
                    .map_err(e)?;
                }
                tx.commit().await.map_err(e)?;
                for_this += made;
                if seq >= last || for_this >= batch {
                    break;
                }
            }
            queued += for_this;
        }
        Ok(queued)
    }

    pub async fn webhook_due(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<Delivery>> {
        let until = now + chrono::TimeDelta::from_std(lease).unwrap_or(chrono::TimeDelta::MAX / 2);
        let mut client = self.client().await?;
        let e = |e| self.err("webhooks", e);
        let tx = client.transaction().await.map_err(e)?;
        let rows = tx
            .query_c(
                "SELECT endpoint, seq, body FROM webhook_pending WHERE next_ms <= $1
                 ORDER BY next_ms, endpoint, seq LIMIT $2 FOR UPDATE SKIP LOCKED",
                &[&millis(now), &(limit as i64)],
            )
            .await
            .map_err(e)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let (endpoint, seq): (String, i64) = (r.get(0), r.get(1));
            let mut taken: Delivery = decode("webhook delivery", r.get::<_, &[u8]>(2))?;
            taken.attempts += 1;
            taken.first_attempt_at.get_or_insert(now);
            taken.last_attempt_at = Some(now);
            taken.next_at = until;
            tx.execute_c(
                "UPDATE webhook_pending SET next_ms = $3, body = $4 WHERE endpoint = $1 AND seq = $2",
                &[&endpoint, &seq, &millis(until), &encode("webhook delivery", &taken)?],
            )
            .await
            .map_err(e)?;
            out.push(taken);
        }
        tx.commit().await.map_err(e)?;
        Ok(out)
    }

    pub async fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        let client = self.client().await?;
        let row = client
            .query_one_c("SELECT min(next_ms) FROM webhook_pending", &[])
            .await
            .map_err(|e| self.err("webhooks", e))?;
        Ok(row
            .get::<_, Option<i64>>(0)
            .and_then(DateTime::from_timestamp_millis))
    }

    pub async fn webhook_settle(&self, settled: &[(Delivery, Settle)]) -> Result<()> {
        if settled.is_empty() {
            return Ok(());
        }
        // Rows locked in one order, so replicas settling at once never
        // wait on each other in a circle.
        let mut order: Vec<&(Delivery, Settle)> = settled.iter().collect();
        order.sort_by(|a, b| (&a.0.endpoint, a.0.seq()).cmp(&(&b.0.endpoint, b.0.seq())));
        let mut client = self.client().await?;
        let e = |e| self.err("webhooks", e);
        let tx = client.transaction().await.map_err(e)?;
        const REMOVE: &str = "DELETE FROM webhook_pending WHERE endpoint = $1 AND seq = $2";
        for (taken, outcome) in order {
            let seq = taken.seq() as i64;
            let endpoint = &taken.endpoint;
            let Some(row) = tx
                .query_opt_c(
                    "SELECT body FROM webhook_pending WHERE endpoint = $1 AND seq = $2 FOR UPDATE",
                    &[endpoint, &seq],
                )
                .await
                .map_err(e)?
            else {
                continue; // settled already
            };
            let mut cur: Delivery = decode("webhook delivery", row.get::<_, &[u8]>(0))?;
            match outcome {
                Settle::Delivered => {
                    tx.execute(REMOVE, &[endpoint, &seq]).await.map_err(e)?;
                }
                _ if cur.attempts != taken.attempts => {}
                Settle::Retry { at, error } => {
                    cur.next_at = *at;
                    cur.last_error = Some(error.clone());
                    tx.execute_c(
                        "UPDATE webhook_pending SET next_ms = $3, body = $4 WHERE endpoint = $1 AND seq = $2",
                        &[endpoint, &seq, &millis(*at), &encode("webhook delivery", &cur)?],
                    )
                    .await
                    .map_err(e)?;
                }
                Settle::GaveUp { error } => {
                    tx.execute(REMOVE, &[endpoint, &seq]).await.map_err(e)?;
                    cur.last_error = Some(error.clone());
                    let at = cur.last_attempt_at.unwrap_or(cur.next_at);
                    tx.execute_c(
                        "INSERT INTO webhook_failed (failed_ms, endpoint, seq, body) VALUES ($1, $2, $3, $4)
                         ON CONFLICT DO NOTHING",
                        &[&millis(at), endpoint, &seq, &encode("webhook delivery", &cur)?],
                    )
                    .await
                    .map_err(e)?;
                }
            }
        }
        tx.commit().await.map_err(e)
    }

    pub async fn webhook_requeue(
        &self,
        msg_ids: Option<&[String]>,
        now: DateTime<Utc>,
    ) -> Result<usize> {
        let mut client = self.client().await?;
        let e = |e| self.err("webhooks", e);
        let tx = client.transaction().await.map_err(e)?;
        let rows = tx
            .query_c(
                "SELECT failed_ms, endpoint, seq, body FROM webhook_failed FOR UPDATE",
                &[],
            )
            .await
            .map_err(e)?;
        let mut n = 0;
        for r in &rows {
            let (failed_ms, endpoint, seq): (i64, String, i64) = (r.get(0), r.get(1), r.get(2));
            let d: Delivery = decode("webhook delivery", r.get::<_, &[u8]>(3))?;
            if msg_ids.is_some_and(|ids| !ids.contains(&d.msg_id)) {
                continue;
            }
            tx.execute_c(
                "DELETE FROM webhook_failed WHERE failed_ms = $1 AND endpoint = $2 AND seq = $3",
                &[&failed_ms, &endpoint, &seq],
            )
            .await
            .map_err(e)?;
            tx.execute_c(
                "INSERT INTO webhook_pending (endpoint, seq, next_ms, body) VALUES ($1, $2, $3, $4)
                 ON CONFLICT DO NOTHING",
                &[
                    &endpoint,
                    &seq,
                    &millis(now),
                    &encode("webhook delivery", &d.requeued(now))?,
                ],
            )
            .await
            .map_err(e)?;
            n += 1;
        }
        tx.commit().await.map_err(e)?;
        Ok(n)
    }

    pub async fn webhook_failed(&self, limit: usize) -> Result<Vec<Delivery>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM webhook_failed ORDER BY failed_ms DESC, endpoint DESC, seq DESC LIMIT $1",
                &[&(limit as i64)],
            )
            .await
            .map_err(|e| self.err("webhooks", e))?;
        rows.iter()
            .map(|r| decode("webhook delivery", r.get::<_, &[u8]>(0)))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Error::Store(e.to_string()))
    }
}
