//! Gate timers in PostgreSQL: one arming mark per gate asking; the earliest
//! due timer claimed with `FOR UPDATE SKIP LOCKED` and a claim that lasts
//! [`CLAIM`], so when several replicas look at once each due timer goes to
//! one of them (a replica that dies while firing leaves the claim to lapse,
//! then another fires it); a timeout's answer recorded with its timer
//! marked fired in one transaction.

use super::prepared::Prepared;
use chrono::TimeDelta;

use super::sessions::accept_in;
use super::timer_rows::{arm_in, insert_in, key, remove_in, sql};
use super::{decode, encode, PgStore};
use crate::error::Result;
use crate::model::Answer;
use crate::model::{Refusal, Session};
use crate::store::{Escalation, Fired, Timer};

/// How long a replica has to fire a timer it claimed before another may.
pub const CLAIM: TimeDelta = TimeDelta::seconds(60);

impl PgStore {
    pub async fn arm_timers(&self, session: &str, gate: &str, timers: &[Timer]) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("arm timers", e))?;
        let armed = arm_in(&tx, session, gate, timers).await?;
        tx.commit().await.map_err(|e| self.err("arm timers", e))?;
        Ok(armed)
    }

    /// The earliest timer not claimed by another replica. When it is due,
    /// it is claimed for this one (for [`CLAIM`]) as it is read.
    pub async fn next_timer(&self) -> Result<Option<Timer>> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("timers", e))?;
        let out = {
            let now = self.clock.now();
            let row = tx
                .query_opt_c(
                    "SELECT due_ms, session, gate, kind, n, body FROM timers
                         WHERE claimed_until IS NULL OR claimed_until < $1
                         ORDER BY due_ms, session, gate, kind, n LIMIT 1
                         FOR UPDATE SKIP LOCKED",
                    &[&now],
                )
                .await
                .map_err(|e| sql("timers", e))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let (due, session, gate, kind, n): (i64, String, String, i16, i32) =
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            let t: Timer = match decode("timer", row.get::<_, &[u8]>(5)) {
                Ok(t) => t,
                Err(e) => {
                    tracing::error!("dropping an unreadable timer: {e}");
                    tx.execute_c(
                            "DELETE FROM timers WHERE due_ms = $1 AND session = $2 AND gate = $3 AND kind = $4 AND n = $5",
                            &[&due, &session, &gate, &kind, &n],
                        )
                        .await
                        .map_err(|e| sql("timers", e))?;
                    tx.commit().await.map_err(|e| self.err("timers", e))?;
                    return Ok(None);
                }
            };
            if t.due <= now {
                tx.execute_c(
                        "UPDATE timers SET claimed_until = $6 WHERE due_ms = $1 AND session = $2 AND gate = $3 AND kind = $4 AND n = $5",
                        &[&due, &session, &gate, &kind, &n, &(now + CLAIM)],
                    )
                    .await
                    .map_err(|e| sql("timers", e))?;
            }
            Some(t)
        };
        tx.commit().await.map_err(|e| self.err("timers", e))?;
        Ok(out)
    }

    pub async fn timers(&self) -> Result<Vec<Timer>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT body FROM timers ORDER BY due_ms, session, gate, kind, n",
                &[],
            )
            .await
            .map_err(|e| self.err("timers", e))?;
        Ok(rows
            .iter()
            .filter_map(|r| serde_json::from_slice(r.get::<_, &[u8]>(0)).ok())
            .collect())
    }

    pub async fn replace_timer(&self, done: &Timer, next: &[Timer]) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("timers", e))?;
        remove_in(&tx, done).await?;
        insert_in(&tx, next).await?;
        tx.commit().await.map_err(|e| self.err("timers", e))
    }

    #[allow(clippy::result_large_err)]
    pub async fn record_timeout(
        &self,
        timer: &Timer,
        answer: &Answer,
        fired: &Fired,
    ) -> Result<std::result::Result<Session, Refusal>> {
        let mut marked = timer.clone();
        marked.fired = Some(fired.clone());
        let body = encode("timer", &marked)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("record timeout", e))?;
        // The timer marked fired first: the answer's write commits (and a
        // refusal rolls both back).
        let (due, s, gate, kind, n) = key(timer);
        tx.execute_c(
            "INSERT INTO timers (due_ms, session, gate, kind, n, body) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (due_ms, session, gate, kind, n) DO UPDATE SET body = EXCLUDED.body",
            &[&due, &s, &gate, &kind, &n, &body],
        )
        .await
        .map_err(|e| sql("timers", e))?;
        let (session, wrote) = match Box::pin(accept_in(
            tx,
            &self.location,
            &timer.session,
            Some(&timer.gate),
            answer,
            self.clock.now(),
        ))
        .await?
        {
            Ok(v) => v,
            Err(refusal) => return Ok(Err(refusal)),
        };
        self.settled(&wrote);
        Ok(Ok(session))
    }

    pub async fn record_escalation(
        &self,
        session: &str,
        esc: &Escalation,
        done: &Timer,
        next: &[Timer],
    ) -> Result<()> {
        let handle = esc.gate.handle();
        let record = encode("escalation", esc)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("record escalation", e))?;
        for (channel, ts) in &esc.messages {
            super::messages::index_in(&tx, channel, ts, session, &handle).await?;
        }
        tx.execute_c(
            "INSERT INTO escalations (session, gate, body) VALUES ($1, $2, $3)
                     ON CONFLICT (session, gate) DO UPDATE SET body = EXCLUDED.body",
            &[&session, &handle, &record],
        )
        .await
        .map_err(|e| sql("escalations", e))?;
        remove_in(&tx, done).await?;
        insert_in(&tx, next).await?;
        tx.commit()
            .await
            .map_err(|e| self.err("record escalation", e))
    }

    pub async fn escalation(&self, session: &str, gate: &str) -> Result<Option<Escalation>> {
        let client = self.client().await?;
        let row = client
            .query_opt_c(
                "SELECT body FROM escalations WHERE session = $1 AND gate = $2",
                &[&session, &gate],
            )
            .await
            .map_err(|e| self.err("escalations", e))?;
        row.map(|r| decode("escalation", r.get::<_, &[u8]>(0)))
            .transpose()
    }
}
