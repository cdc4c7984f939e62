//! The index by approver of open gates ([`crate::store::awaiting`]) in
//! PostgreSQL: the `gate_approvers` table (session, gate, approver,
//! created_at), indexed by approver. [`track_in`] rewrites a session's rows
//! inside the transaction that writes the session (create, checkpoint,
//! answer, timeout), so the rows never disagree with a committed session;
//! a deleted session's rows go in its delete. A database migrated from
//! schema 2 gets the rows of its paused sessions once, at connect
//! ([`build`]), under an advisory lock so two replicas do it once.

use super::prepared::Prepared;
use deadpool_postgres::Transaction;

use super::PgStore;
use crate::error::{Error, Result};
use crate::model::Session;

/// `meta` key: the rows of sessions written before the table are in.
const BUILT: &str = "index/gate_approvers";
/// An arbitrary constant: the advisory lock the build runs under.
const BUILD_LOCK: i64 = 0x5354_5241_4e44_5332; // "STRANDS2"

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// Makes `session`'s rows what its open gates say, inside `tx`.
pub(super) async fn track_in(tx: &Transaction<'_>, session: &Session) -> Result<()> {
    let what = "index open gates by approver";
    let clear = tx
        .prepare_cached("DELETE FROM gate_approvers WHERE session = $1")
        .await
        .map_err(|e| sql(what, e))?;
    let rows = crate::store::awaiting::entries(session);
    if rows.is_empty() {
        tx.execute(&clear, &[&session.id])
            .await
            .map_err(|e| sql(what, e))?;
        return Ok(());
    }
    let (gates, approvers): (Vec<String>, Vec<String>) = rows.into_iter().unzip();
    let insert = tx
        .prepare_cached(
            "INSERT INTO gate_approvers (session, gate, approver, created_at)
             SELECT $1, g, a, $4 FROM unnest($2::text[], $3::text[]) AS t(g, a)",
        )
        .await
        .map_err(|e| sql(what, e))?;
    // Both sent at once, the delete first.
    let (cleared, inserted) = futures_util::future::join(
        tx.execute(&clear, &[&session.id]),
        tx.execute(
            &insert,
            &[&session.id, &gates, &approvers, &session.created_at],
        ),
    )
    .await;
    cleared.map_err(|e| sql(what, e))?;
    inserted.map_err(|e| sql(what, e))?;
    Ok(())
}

/// Indexes the paused sessions of a database migrated from before the
/// table, once (a page of sessions at a time, each locked while read).
pub(super) async fn build(store: &PgStore) -> Result<()> {
    let what = "index open gates by approver";
    let e = |e: tokio_postgres::Error| store.err(what, e);
    let mut client = store.client().await?;
    let done = "SELECT 1 FROM meta WHERE key = $1";
    if client
        .query_opt(done, &[&BUILT])
        .await
        .map_err(e)?
        .is_some()
    {
        return Ok(());
    }
    let tx = client.transaction().await.map_err(e)?;
    tx.execute_c("SELECT pg_advisory_xact_lock($1)", &[&BUILD_LOCK])
        .await
        .map_err(e)?;
    if tx.query_opt(done, &[&BUILT]).await.map_err(e)?.is_some() {
        return Ok(());
    }
    let mut after = String::new();
    let mut indexed = 0usize;
    loop {
        let rows = tx
            .query_c(
                "SELECT id, body FROM sessions WHERE status = 'paused' AND id > $1
                 ORDER BY id LIMIT 500 FOR UPDATE",
                &[&after],
            )
            .await
            .map_err(e)?;
        let Some(last) = rows.last() else { break };
        after = last.get(0);
        for r in &rows {
            let id: &str = r.get(0);
            let s = crate::model::wire::decode(r.get::<_, &[u8]>(1))
                .map_err(|err| Error::Store(format!("session {id} is unreadable: {err}")))?;
            track_in(&tx, &s).await?;
            indexed += 1;
        }
    }
    tx.execute_c(
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        &[&BUILT, &vec![1u8]],
    )
    .await
    .map_err(e)?;
    tx.commit().await.map_err(e)?;
    if indexed > 0 {
        tracing::info!(sessions = indexed, "open gates indexed by approver");
    }
    Ok(())
}

impl PgStore {
    /// Ids of paused sessions with an open gate listing any of `approvers`
    /// (see [`crate::store::Backend::awaiting`]).
    pub async fn awaiting(&self, approvers: &[String]) -> Result<Vec<String>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT DISTINCT session FROM gate_approvers WHERE approver = ANY($1)",
                &[&approvers],
            )
            .await
            .map_err(|e| self.err("sessions awaiting approvers", e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// The group ids listed as approvers of open gates: a skip over the
    /// approver index (one probe per distinct approver starting with `S`).
    pub async fn awaiting_groups(&self) -> Result<Vec<String>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "WITH RECURSIVE g(a) AS (
                   SELECT min(approver) FROM gate_approvers WHERE approver >= 'S' AND approver < 'T'
                   UNION ALL
                   SELECT (SELECT min(approver) FROM gate_approvers WHERE approver > g.a AND approver < 'T')
                   FROM g WHERE g.a IS NOT NULL
                 ) SELECT a FROM g WHERE a IS NOT NULL",
                &[],
            )
            .await
            .map_err(|e| self.err("group approvers", e))?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                crate::model::Approver::parse(&r.get::<_, String>(0))
                    .slack_group()
                    .map(str::to_string)
            })
            .collect())
    }
}
