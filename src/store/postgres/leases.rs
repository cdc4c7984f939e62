//! Which replica drives a running session: a lease row per session,
//! taken when free or lapsed, renewed while the replica works, handed back
//! when it stops. A replica that dies leaves its lease to lapse; another
//! then takes the session over from its last checkpoint.

use super::prepared::Prepared;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::PgStore;
use crate::error::Result;

impl PgStore {
    /// Takes (or renews) the lease on `session` for `owner` for `ttl`;
    /// whether `owner` holds it now.
    pub async fn take_lease(&self, session: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let now = self.clock.now();
        let until = now + chrono::TimeDelta::from_std(ttl).unwrap_or(chrono::TimeDelta::MAX / 2);
        let client = self.client().await?;
        let n = client
            .execute_c(
                "INSERT INTO leases (session, owner, until) VALUES ($1, $2, $3)
                 ON CONFLICT (session) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
                 WHERE leases.owner = EXCLUDED.owner OR leases.until < $4",
                &[&session, &owner, &until, &now],
            )
            .await
            .map_err(|e| self.err("leases", e))?;
        Ok(n == 1)
    }

    /// Hands the lease on `session` back, if `owner` holds it.
    pub async fn release_lease(&self, session: &str, owner: &str) -> Result<()> {
        let client = self.client().await?;
        client
            .execute_c(
                "DELETE FROM leases WHERE session = $1 AND owner = $2",
                &[&session, &owner],
            )
            .await
            .map_err(|e| self.err("leases", e))?;
        Ok(())
    }

    /// Who holds a live lease on `session`, if anyone.
    pub async fn lease_holder(&self, session: &str) -> Result<Option<String>> {
        let client = self.client().await?;
        let row = client
            .query_opt_c(
                "SELECT owner FROM leases WHERE session = $1 AND until >= $2",
                &[&session, &self.now()],
            )
            .await
            .map_err(|e| self.err("leases", e))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Running sessions nobody holds a live lease on (a replica died
    /// driving them, or none ever took them).
    pub async fn unleased_running(
        &self,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<(DateTime<Utc>, String)>> {
        let client = self.client().await?;
        let (at, id) = match after {
            Some((at, id)) => (Some(at), Some(id)),
            None => (None, None),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query_c(
                "SELECT s.created_at, s.id FROM sessions s
                 WHERE s.status = 'running'
                   AND ($2::timestamptz IS NULL OR (s.created_at, s.id) > ($2, $3))
                   AND NOT EXISTS (SELECT 1 FROM leases l
                                   WHERE l.session = s.id AND l.until >= $1)
                 ORDER BY s.created_at, s.id
                 LIMIT $4",
                &[&self.clock.now(), &at, &id, &limit],
            )
            .await
            .map_err(|e| self.err("leases", e))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
