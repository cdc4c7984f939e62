//! Teams conversation references: one row per conversation, refreshed in
//! a transaction holding the row ([`TeamsConversation::refreshed_by`]).
//! The first sighting is the `first_seen` column's (the earliest written,
//! also when two first sightings race), put back into the body as read.

use super::prepared::Prepared;
use super::{decode, encode, PgStore};
use crate::error::Result;
use crate::model::teams::TeamsConversation;

impl PgStore {
    pub async fn put_teams_conversation(&self, c: &TeamsConversation) -> Result<()> {
        let fail = |e| self.err("Teams conversations", e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        let old = tx
            .query_opt_c(
                "SELECT body FROM teams_conversations WHERE id = $1 FOR UPDATE",
                &[&c.id],
            )
            .await
            .map_err(fail)?;
        let merged = match old {
            Some(row) => decode::<TeamsConversation>(
                &format!("Teams conversation {}", c.id),
                row.get::<_, &[u8]>(0),
            )?
            .refreshed_by(c),
            None => c.clone(),
        };
        tx.execute_c(
            "INSERT INTO teams_conversations (id, first_seen, body) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET
                     first_seen = LEAST(teams_conversations.first_seen, EXCLUDED.first_seen),
                     body = EXCLUDED.body",
            &[
                &merged.id,
                &merged.first_seen,
                &encode("Teams conversation", &merged)?,
            ],
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)
    }

    pub async fn teams_conversations(&self) -> Result<Vec<TeamsConversation>> {
        let client = self.client().await?;
        let rows = client
            .query_c(
                "SELECT id, first_seen, body FROM teams_conversations ORDER BY id",
                &[],
            )
            .await
            .map_err(|e| self.err("Teams conversations", e))?;
        rows.iter()
            .map(|r| {
                let id: &str = r.get(0);
                let mut c: TeamsConversation =
                    decode(&format!("Teams conversation {id}"), r.get::<_, &[u8]>(2))?;
                c.first_seen = r.get(1);
                Ok(c)
            })
            .collect()
    }
}
