//! The audit's decisions (`audit::decided`) in PostgreSQL, for reports:
//! the `decided` table (schema migration 11), built from the chain when
//! read, never in the write that appends an entry — the audit head's lock,
//! which every writer of every replica queues on, is held no longer. The
//! records and the mark of how far the chain was read (`heads`, `decided`)
//! are one statement; replicas reading at once insert the same rows, and
//! the mark only moves forward.

use chrono::{DateTime, Utc};

use super::prepared::Prepared;
use super::PgStore;
use crate::error::{Error, Result};

/// Audit entries read per batch.
const PAGE: usize = 4096;

impl PgStore {
    /// Brings the index up to the audit's head.
    async fn catch_up_decided(&self) -> Result<()> {
        let client = self.client().await?;
        let row = client
            .query_one_c("SELECT seq FROM heads WHERE name = 'decided'", &[])
            .await
            .map_err(|e| self.err("decisions index", e))?;
        let mut done = row.get::<_, i64>(0).max(0) as u64;
        loop {
            let page = self.audit_page(done, PAGE).await?;
            let Some(&(last, _)) = page.last() else {
                return Ok(());
            };
            let (mut seqs, mut ats, mut bodies) = (Vec::new(), Vec::new(), Vec::new());
            for (seq, bytes) in &page {
                if let Some((at, record)) =
                    crate::audit::decided::project(*seq, bytes).map_err(Error::Store)?
                {
                    seqs.push(*seq as i64);
                    ats.push(at);
                    bodies.push(record);
                }
            }
            client
                .execute_c(
                    "WITH added AS (INSERT INTO decided (seq, at, body) \
                     SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::bytea[]) \
                     ON CONFLICT (seq) DO NOTHING) \
                     UPDATE heads SET seq = greatest(seq, $4) WHERE name = 'decided'",
                    &[&seqs, &ats, &bodies, &(last as i64)],
                )
                .await
                .map_err(|e| self.err("decisions index", e))?;
            done = last;
            if page.len() < PAGE {
                return Ok(());
            }
        }
    }

    /// See [`crate::store::Backend::decided`].
    pub async fn decided(
        &self,
        since: DateTime<Utc>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        if after == 0 {
            self.catch_up_decided().await?;
        }
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT seq, body FROM decided WHERE seq > $1 AND at >= $2 ORDER BY seq LIMIT $3",
                &[
                    &(after.min(i64::MAX as u64) as i64),
                    &since,
                    &(limit as i64),
                ],
            )
            .await
            .map_err(|e| self.err("decisions", e))?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, Vec<u8>>(1)))
            .collect())
    }
}
