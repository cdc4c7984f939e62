//! What PostgreSQL keeps so that `/metrics` and start-up never scan the
//! sessions: the number of sessions per status (`session_counts`) and the
//! paused sessions with a gate never posted to a room (`unposted`), both
//! changed in the transaction of the session write that changes them.
//!
//! Counters: a row per status, changed only when a write changes a
//! session's status (a create adds one, a delete takes one away), by the
//! server function every write ends with (`chain::finish`). The rows
//! are updated in status order, so two writers moving sessions in opposite
//! directions (paused → running, running → paused) never deadlock, and
//! after the session row, the audit head and the event head, the order
//! every session write takes its locks in. A counter row stays locked until
//! its transaction commits, so writers changing a status to or from the
//! same one queue on it across replicas; every such write also appends to
//! the event sequence, whose head row already orders them the same way, so
//! the counters add no wait of their own. (Were they to, the next step is
//! a few rows per status, picked by session, summed on read.)
//!
//! Unposted gates, as sled keeps them (`store::sled::unposted`): a write
//! that leaves a session paused lists its open gates whose latest message
//! was not posted; a write that leaves it in any other status clears them;
//! a posted message takes its gate out. The posted message's transaction
//! first takes a share lock on the session row, so it and a checkpoint of
//! the same session are ordered and neither misses the other's change.
//! Unlike sled, an answer recorded clears the entry at once (it is a
//! session write like any other here).

use super::prepared::Prepared;
use deadpool_postgres::Transaction;

use super::PgStore;
use crate::error::{Error, Result};
use crate::model::{Session, Status};

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// Keeps the unposted entries of `session` right after its write; `old`
/// its status before (`None`: new).
pub(super) async fn track_in(
    tx: &Transaction<'_>,
    session: &Session,
    old: Option<Status>,
) -> Result<()> {
    // Entries exist only for paused sessions.
    let paused = session.status == Status::Paused;
    if old != Some(Status::Paused) && !paused {
        return Ok(());
    }
    let open: Vec<String> = if paused {
        session.open_gates().map(|g| g.handle()).collect()
    } else {
        Vec::new()
    };
    // One statement: the gates no longer open go, the open ones never
    // posted come (disjoint rows).
    let stmt = tx
        .prepare_cached(
            "WITH gone AS (DELETE FROM unposted WHERE session = $1 AND NOT (gate = ANY($2)) AND $3)
             INSERT INTO unposted (session, gate)
             SELECT $1, g FROM unnest($2::text[]) AS g
             WHERE NOT EXISTS (SELECT 1 FROM notifications n
                               WHERE n.session = $1 AND n.gate IN (g, g || '@teams') AND n.posted)
                OR EXISTS (SELECT 1 FROM notifications n
                           WHERE n.session = $1 AND n.gate IN (g, g || '@teams') AND NOT n.posted)
             ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(|e| sql("unposted gates", e))?;
    let was_paused = old == Some(Status::Paused);
    tx.execute(&stmt, &[&session.id, &open, &was_paused])
        .await
        .map_err(|e| sql("unposted gates", e))?;
    Ok(())
}

/// Recounts every status (after a bulk import).
pub(super) async fn recount_in(tx: &Transaction<'_>) -> Result<()> {
    let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    tx.execute_c(
        "INSERT INTO session_counts (status, n)
         SELECT st, (SELECT count(*) FROM sessions WHERE status = st) FROM unnest($1::text[]) AS st
         ON CONFLICT (status) DO UPDATE SET n = EXCLUDED.n",
        &[&all],
    )
    .await
    .map_err(|e| sql("session counts", e))?;
    Ok(())
}

impl PgStore {
    /// Sessions per status: five counters read, never a count.
    pub async fn status_counts(&self) -> Result<Vec<(Status, u64)>> {
        let client = self.client().await?;
        let rows = client
            .query_c("SELECT status, n FROM session_counts", &[])
            .await
            .map_err(|e| self.err("count sessions", e))?;
        Ok(Status::ALL
            .iter()
            .map(|st| {
                let n = rows
                    .iter()
                    .find(|r| r.get::<_, &str>(0) == st.as_str())
                    .map(|r| r.get::<_, i64>(1))
                    .unwrap_or(0);
                (*st, u64::try_from(n).unwrap_or(0))
            })
            .collect())
    }

    /// Paused sessions with a gate never posted, by id.
    pub async fn unposted(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let client = self.client().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query_c(
                "SELECT DISTINCT session COLLATE \"C\" AS id FROM unposted
                 WHERE $1::text IS NULL OR session COLLATE \"C\" > $1
                 ORDER BY id LIMIT $2",
                &[&after, &limit],
            )
            .await
            .map_err(|e| self.err("unposted gates", e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}
