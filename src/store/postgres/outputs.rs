//! The large texts of sessions, apart from their rows (`store::outputs`):
//! `session_outputs` holds (session, SHA-256 hex) → the text (bytea: a text
//! may hold a NUL, which PostgreSQL's `text` refuses), dropped with its
//! session by the foreign key (`ON DELETE CASCADE`). Texts are written in
//! the transaction of the session write that refers to them, so a session
//! never refers to a text that is not there; a checkpoint first asks which
//! of its texts are stored and sends only the others (content-addressed:
//! a stored key always holds the same bytes).

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use tokio_postgres::GenericClient;

use crate::error::{Error, Result};
use crate::model::Session;
use crate::store::outputs::{self, Parsed};

fn sql(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Store(format!("{what}: {}", super::db_message(&e)))
}

/// Writes the texts of `session` not stored yet, after its row; how many.
/// `new`: the session was just inserted (it has none yet).
pub(super) async fn put_in(
    tx: &Transaction<'_>,
    session: &str,
    texts: &[(String, String)],
    new: bool,
) -> Result<u64> {
    if texts.is_empty() {
        return Ok(0);
    }
    let mut hashes: Vec<&str> = texts.iter().map(|(h, _)| h.as_str()).collect();
    if !new {
        let stmt = tx
            .prepare_cached(
                "SELECT hash FROM session_outputs WHERE session = $1 AND hash = ANY($2)",
            )
            .await
            .map_err(|e| sql("session outputs", e))?;
        let stored = tx
            .query(&stmt, &[&session, &hashes])
            .await
            .map_err(|e| sql("session outputs", e))?;
        let stored: Vec<&str> = stored.iter().map(|r| r.get::<_, &str>(0)).collect();
        hashes.retain(|h| !stored.contains(h));
        if hashes.is_empty() {
            return Ok(0);
        }
    }
    let bodies: Vec<&[u8]> = texts
        .iter()
        .filter(|(h, _)| hashes.contains(&h.as_str()))
        .map(|(_, t)| t.as_bytes())
        .collect();
    let stmt = tx
        .prepare_cached(
            "INSERT INTO session_outputs (session, hash, body)
             SELECT $1, h, b FROM unnest($2::text[], $3::bytea[]) AS t(h, b)
             ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(|e| sql("session outputs", e))?;
    let n = tx
        .execute(&stmt, &[&session, &hashes, &bodies])
        .await
        .map_err(|e| sql("session outputs", e))?;
    Ok(n)
}

/// The texts of `(session, hash)` pairs, by pair.
async fn fetch<C: GenericClient>(
    client: &C,
    pairs: &[(&str, &str)],
) -> Result<HashMap<(String, String), String>> {
    let mut out = HashMap::new();
    if pairs.is_empty() {
        return Ok(out);
    }
    let sessions: Vec<&str> = pairs.iter().map(|p| p.0).collect();
    let hashes: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    let rows = client
        .query(
            "SELECT o.session, o.hash, o.body FROM session_outputs o
             JOIN unnest($1::text[], $2::text[]) AS want(session, hash)
               ON o.session = want.session AND o.hash = want.hash",
            &[&sessions, &hashes],
        )
        .await
        .map_err(|e| sql("session outputs", e))?;
    for r in &rows {
        out.insert(
            (r.get(0), r.get(1)),
            String::from_utf8_lossy(r.get::<_, &[u8]>(2)).into_owned(),
        );
    }
    Ok(out)
}

/// Stored sessions (id, row body), whole: their texts fetched in one query.
pub(super) async fn decode_all<C: GenericClient>(
    client: &C,
    location: &str,
    rows: &[(&str, &[u8])],
) -> Result<Vec<Session>> {
    let mut parsed = Vec::with_capacity(rows.len());
    for (id, body) in rows {
        let p = outputs::parse(body)
            .map_err(|e| Error::Store(format!("session {id} in {location} is unreadable: {e}")))?;
        parsed.push((*id, p));
    }
    let pairs: Vec<(&str, &str)> = parsed
        .iter()
        .flat_map(|(id, p)| p.hashes().map(move |h| (*id, h)))
        .collect();
    let mut texts = fetch(client, &pairs).await?;
    drop(pairs);
    let mut out = Vec::with_capacity(parsed.len());
    for (id, p) in parsed {
        let mine: HashMap<String, String> = match &p {
            Parsed::Whole(_) => HashMap::new(),
            Parsed::Refs { hashes, .. } => hashes
                .iter()
                .filter_map(|h| {
                    texts
                        .remove(&(id.to_string(), h.clone()))
                        .map(|t| (h.clone(), t))
                })
                .collect(),
        };
        out.push(p.fill(&mine).map_err(|m| m.error(id, location))?);
    }
    Ok(out)
}

/// One stored session, whole.
pub(super) async fn decode_one<C: GenericClient>(
    client: &C,
    location: &str,
    id: &str,
    body: &[u8],
) -> Result<Session> {
    let mut all = decode_all(client, location, &[(id, body)]).await?;
    all.pop()
        .ok_or_else(|| Error::Internal(format!("session {id}: nothing decoded")))
}

#[cfg(test)]
impl super::PgStore {
    /// Test access: the stored row body of `id` (if any) and how many texts
    /// it has apart.
    pub(crate) async fn stored_raw(&self, id: &str) -> Result<(Option<Vec<u8>>, usize)> {
        let client = self.client().await?;
        let body = client
            .query_opt("SELECT body FROM sessions WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.err("stored body", e))?
            .map(|r| r.get::<_, Vec<u8>>(0));
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM session_outputs WHERE session = $1",
                &[&id],
            )
            .await
            .map_err(|e| self.err("stored outputs", e))?
            .get(0);
        Ok((body, n as usize))
    }

    /// Test access: replaces the stored body of `id` (as an earlier
    /// release wrote it).
    pub(crate) async fn put_raw(&self, id: &str, body: &[u8]) -> Result<()> {
        let client = self.client().await?;
        client
            .execute("UPDATE sessions SET body = $2 WHERE id = $1", &[&id, &body])
            .await
            .map_err(|e| self.err("stored body", e))?;
        Ok(())
    }
}
