//! Sessions in PostgreSQL: the compare-and-swap checkpoint (`UPDATE …
//! WHERE rev = $expected`), answers recorded exactly once under a row lock
//! on their session, summaries and listing.

use super::prepared::Prepared;
use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use super::chain::{finish, Events};
use super::{encode, PgStore};
use crate::error::{Error, Result};
use crate::model::{Answer, OpenGate, Refusal, Session, Status, Summary};

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// What a session write did.
pub(super) struct Wrote {
    /// The number of the last event it appended.
    pub last: Option<u64>,
    /// How many texts it stored apart (`store::outputs`).
    pub outputs: u64,
}

/// Writes the row of `session` (insert, or update at `expected` rev) with
/// its texts kept apart, its audit outbox, its events, the timers of gates
/// it just opened, its unposted gates and the status counters, and commits
/// `tx` (everything else the transaction writes comes before).
/// `Ok(Err(why))`: the compare-and-swap failed (nothing written).
async fn write_in(
    tx: Transaction<'_>,
    session: &Session,
    expected: Option<u64>,
    now: DateTime<Utc>,
) -> Result<std::result::Result<Wrote, String>> {
    let stored = crate::store::outputs::split(session)?;
    let body = stored.body;
    let summary = encode("summary", &session.summary())?;
    let status = session.status.as_str();
    let rev = session.rev as i64;
    let old = match expected {
        None => {
            let insert = tx
                .prepare_cached(
                    "INSERT INTO sessions (id, rev, status, created_at, updated_at, body, summary, workflow)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                )
                .await
                .map_err(|e| sql("create session", e))?;
            let n = tx
                .execute(
                    &insert,
                    &[
                        &session.id,
                        &rev,
                        &status,
                        &session.created_at,
                        &session.updated_at,
                        &body,
                        &summary,
                        &session.workflow,
                    ],
                )
                .await
                .map_err(|e| sql("create session", e))?;
            if n == 0 {
                return Ok(Err(format!("session {} already exists", session.id)));
            }
            None
        }
        Some(old) => {
            // The row is locked at the expected rev first, so the status it
            // had (for the counters) is the one this update replaces.
            let update = tx
                .prepare_cached(
                    "WITH prev AS (SELECT status FROM sessions WHERE id = $1 AND rev = $7 FOR UPDATE)
                     UPDATE sessions SET rev = $2, status = $3, updated_at = $4, body = $5, summary = $6
                     FROM prev WHERE sessions.id = $1 RETURNING prev.status",
                )
                .await
                .map_err(|e| sql("checkpoint", e))?;
            let prev = tx
                .query_opt(
                    &update,
                    &[
                        &session.id,
                        &rev,
                        &status,
                        &session.updated_at,
                        &body,
                        &summary,
                        &(old as i64),
                    ],
                )
                .await
                .map_err(|e| sql("checkpoint", e))?;
            let Some(prev) = prev else {
                let cur = tx
                    .query_opt_c("SELECT rev FROM sessions WHERE id = $1", &[&session.id])
                    .await
                    .map_err(|e| sql("checkpoint", e))?;
                return Ok(Err(match cur {
                    Some(r) => format!(
                        "session {} was changed by another writer (rev {}, expected {old})",
                        session.id,
                        r.get::<_, i64>(0)
                    ),
                    None => format!("session {} was deleted while running", session.id),
                }));
            };
            let prev: &str = prev.get(0);
            Some(Status::parse(prev).ok_or_else(|| {
                Error::Store(format!("session {}: unknown status `{prev}`", session.id))
            })?)
        }
    };
    // The session's own rows in other tables: independent of each other,
    // so sent together (the server runs them in the order sent) instead of
    // a round trip each.
    let (outputs, unposted, awaiting, armed) = futures_util::future::join4(
        super::outputs::put_in(&tx, &session.id, &stored.outputs, expected.is_none()),
        super::counts::track_in(&tx, session, old),
        super::awaiting::track_in(&tx, session),
        async {
            for (gate, timers) in &session.arm {
                super::timer_rows::arm_in(&tx, &session.id, gate, timers).await?;
            }
            Ok::<_, Error>(())
        },
    )
    .await;
    let outputs = outputs?;
    unposted?;
    awaiting?;
    armed?;
    // Last, with the commit: the heads and the counter rows are the most
    // contended (`chain::finish`).
    let events = Events {
        session,
        kinds: &session.events,
        at: now,
    };
    let last = finish(
        tx,
        &session.audit,
        Some(events),
        (old, Some(session.status)),
    )
    .await?;
    Ok(Ok(Wrote { last, outputs }))
}

/// Records `answer` inside `tx` (the session row locked first):
/// `Session::accept`, then the write, and commits. A refusal writes
/// nothing (the transaction is rolled back).
#[allow(clippy::result_large_err)]
pub(super) async fn accept_in(
    tx: Transaction<'_>,
    location: &str,
    id: &str,
    gate: Option<&str>,
    answer: &Answer,
    now: DateTime<Utc>,
) -> Result<std::result::Result<(Session, Wrote), Refusal>> {
    let lock = tx
        .prepare_cached("SELECT body FROM sessions WHERE id = $1 FOR UPDATE")
        .await
        .map_err(|e| sql("record answer", e))?;
    let Some(row) = tx
        .query_opt(&lock, &[&id])
        .await
        .map_err(|e| sql("record answer", e))?
    else {
        return Ok(Err(Refusal::NotFound));
    };
    let mut session =
        super::outputs::decode_one(&*tx, location, id, row.get::<_, &[u8]>(0)).await?;
    if let Err(refusal) = session.accept(gate, answer) {
        return Ok(Err(refusal));
    }
    let expected = session.rev;
    session.rev += 1;
    session.updated_at = now;
    let wrote = write_in(tx, &session, Some(expected), now)
        .await?
        .map_err(Error::Session)?;
    session.audit.clear();
    session.events.clear();
    Ok(Ok((session, wrote)))
}

/// A page cursor as the columns compare it: the time at the column's
/// microsecond precision, and the id (empty: from the start).
fn cursor(after: Option<(DateTime<Utc>, String)>) -> (Option<DateTime<Utc>>, String) {
    match after {
        Some((t, id)) => (DateTime::from_timestamp_micros(t.timestamp_micros()), id),
        None => (None, String::new()),
    }
}

/// The summaries of rows whose first column is one.
fn summaries(rows: &[tokio_postgres::Row]) -> Result<Vec<Summary>> {
    rows.iter()
        .map(|r| super::decode::<Summary>("summary", r.get::<_, &[u8]>(0)))
        .collect()
}

impl PgStore {
    /// After a session write committed: tells subscribers of its events,
    /// counts its texts.
    pub(super) fn settled(&self, wrote: &Wrote) {
        self.announce(wrote.last);
        self.outputs_written
            .fetch_add(wrote.outputs, std::sync::atomic::Ordering::Relaxed);
    }

    async fn write(&self, session: &Session, expected: Option<u64>) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("write session", e))?;
        // Boxed (here and where an answer is recorded): a write's future is
        // large, and every store call's future is as large as its largest
        // backend's (`Store` is an enum), nested deep in the engine's.
        let wrote = match Box::pin(write_in(tx, session, expected, self.clock.now())).await? {
            Ok(wrote) => wrote,
            Err(conflict) => return Err(Error::Session(conflict)),
        };
        self.settled(&wrote);
        Ok(())
    }

    pub async fn create(&self, session: &mut Session) -> Result<()> {
        session.rev = 1;
        self.write(session, None).await?;
        session.audit.clear();
        session.arm.clear();
        session.events.clear();
        Ok(())
    }

    pub async fn checkpoint(&self, session: &mut Session) -> Result<()> {
        let expected = session.rev;
        let mut next = session.clone();
        next.rev = expected + 1;
        next.updated_at = self.clock.now();
        self.write(&next, Some(expected)).await?;
        next.audit.clear();
        next.arm.clear();
        next.events.clear();
        *session = next;
        Ok(())
    }

    pub async fn load(&self, id: &str) -> Result<Option<Session>> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT body FROM sessions WHERE id = $1")
            .await
            .map_err(|e| self.err("load session", e))?;
        let row = client
            .query_opt(&stmt, &[&id])
            .await
            .map_err(|e| self.err("load session", e))?;
        match row {
            None => Ok(None),
            Some(r) => {
                super::outputs::decode_one(&***client, &self.location, id, r.get::<_, &[u8]>(0))
                    .await
                    .map(Some)
            }
        }
    }

    pub async fn resolve(&self, id_or_prefix: &str) -> Result<String> {
        let want = id_or_prefix.trim();
        let client = self.client().await?;
        let exact = client
            .query_opt_c("SELECT id FROM sessions WHERE id = $1", &[&want])
            .await
            .map_err(|e| self.err("resolve", e))?;
        if exact.is_some() {
            return Ok(want.to_string());
        }
        if want.chars().count() >= 4 {
            let rows = client
                .query_c(
                    "SELECT id FROM sessions WHERE left(id, char_length($1)) = $1 ORDER BY id LIMIT 2",
                    &[&want],
                )
                .await
                .map_err(|e| self.err("resolve", e))?;
            match rows.len() {
                1 => return Ok(rows[0].get(0)),
                2 => {
                    return Err(Error::Session(format!(
                        "session id prefix `{want}` is ambiguous; give more characters"
                    )))
                }
                _ => {}
            }
        }
        Err(Error::Session(format!(
            "no session `{want}` in {} (see `strands sessions list`)",
            self.location
        )))
    }

    /// A page of summaries newest first (ties by id) after `after`, read
    /// from the `sessions_*newest` indexes. Times compare at the column's
    /// microsecond precision.
    pub async fn list_page(
        &self,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        let client = self.client().await?;
        let status: Option<&str> = status.map(|s| s.as_str());
        let (at, id) = cursor(after);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query_c(
                "SELECT summary FROM sessions
                 WHERE ($1::text IS NULL OR status = $1)
                   AND ($2::timestamptz IS NULL OR created_at < $2 OR (created_at = $2 AND id > $3))
                 ORDER BY created_at DESC, id ASC LIMIT $4",
                &[&status, &at, &id, &limit],
            )
            .await
            .map_err(|e| self.err("list sessions", e))?;
        summaries(&rows)
    }

    /// A page of workflow `workflow`'s summaries (of `status`, or all)
    /// newest first after `after`, read from the `sessions_workflow_*`
    /// indexes.
    pub async fn workflow_page(
        &self,
        workflow: &str,
        status: Option<Status>,
        after: Option<(DateTime<Utc>, String)>,
        limit: usize,
    ) -> Result<Vec<Summary>> {
        let client = self.client().await?;
        let status: Option<&str> = status.map(|s| s.as_str());
        let (at, id) = cursor(after);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query_c(
                "SELECT summary FROM sessions
                 WHERE workflow = $1 AND ($2::text IS NULL OR status = $2)
                   AND ($3::timestamptz IS NULL OR created_at < $3 OR (created_at = $3 AND id > $4))
                 ORDER BY created_at DESC, id ASC LIMIT $5",
                &[&workflow, &status, &at, &id, &limit],
            )
            .await
            .map_err(|e| self.err("list sessions", e))?;
        summaries(&rows)
    }

    pub async fn list(&self, status: Option<Status>) -> Result<Vec<Summary>> {
        let client = self.client().await?;
        let rows = match status {
            Some(st) => {
                client
                    .query_c(
                        "SELECT summary FROM sessions WHERE status = $1",
                        &[&st.as_str()],
                    )
                    .await
            }
            None => client.query_c("SELECT summary FROM sessions", &[]).await,
        }
        .map_err(|e| self.err("list sessions", e))?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(super::decode::<Summary>("summary", r.get::<_, &[u8]>(0))?);
        }
        out.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(out)
    }

    pub async fn sessions_with_status(&self, status: Status) -> Result<Vec<Session>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT id, body FROM sessions WHERE status = $1 ORDER BY created_at DESC, id",
                &[&status.as_str()],
            )
            .await
            .map_err(|e| self.err("sessions", e))?;
        let stored: Vec<(&str, &[u8])> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        super::outputs::decode_all(&***client, &self.location, &stored).await
    }

    pub async fn count(&self) -> Result<usize> {
        let client = self.client().await?;
        let row = client
            .query_one_c("SELECT count(*) FROM sessions", &[])
            .await
            .map_err(|e| self.err("count sessions", e))?;
        Ok(row.get::<_, i64>(0) as usize)
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("delete", e))?;
        // Its texts kept apart go with it (`ON DELETE CASCADE`).
        let prev = tx
            .query_opt_c(
                "DELETE FROM sessions WHERE id = $1 RETURNING status",
                &[&id],
            )
            .await
            .map_err(|e| self.err("delete", e))?;
        for q in [
            "DELETE FROM leases WHERE session = $1",
            "DELETE FROM gate_approvers WHERE session = $1",
            "DELETE FROM unposted WHERE session = $1",
        ] {
            tx.execute_c(q, &[&id])
                .await
                .map_err(|e| self.err("delete", e))?;
        }
        let prev = prev.and_then(|r| Status::parse(r.get::<_, &str>(0)));
        finish(tx, &[], None, (prev, None)).await.map(|_| ())
    }

    pub async fn cleanup(&self, cutoff: DateTime<Utc>) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for s in self.list(None).await? {
            if s.status.is_terminal() && s.updated_at < cutoff {
                self.delete(&s.id).await?;
                removed.push(s.id);
            }
        }
        Ok(removed)
    }

    #[allow(clippy::result_large_err)]
    pub async fn record_answer(
        &self,
        id: &str,
        gate: Option<&str>,
        answer: &Answer,
    ) -> Result<std::result::Result<Session, Refusal>> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("record answer", e))?;
        let now = self.clock.now();
        match Box::pin(accept_in(tx, &self.location, id, gate, answer, now)).await? {
            Ok((session, wrote)) => {
                self.settled(&wrote);
                Ok(Ok(session))
            }
            Err(refusal) => Ok(Err(refusal)),
        }
    }

    pub async fn update_open_gate(
        &self,
        id: &str,
        gate: &str,
        change: &(dyn Fn(&mut OpenGate) + Send + Sync),
    ) -> Result<Option<Session>> {
        for _ in 0..8 {
            let Some(mut session) = self.load(id).await? else {
                return Ok(None);
            };
            let open = session.status == Status::Paused && session.pending.is_none();
            let Some(g) = session.open_gate_mut(gate).filter(|_| open) else {
                return Ok(None);
            };
            let before = g.clone();
            change(g);
            if *g == before {
                return Ok(Some(session));
            }
            let expected = session.rev;
            session.rev = expected + 1;
            session.updated_at = self.clock.now();
            match self.write(&session, Some(expected)).await {
                Ok(()) => return Ok(Some(session)),
                Err(Error::Session(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Store(format!(
            "session {id} kept changing while its gate was being updated"
        )))
    }
}
