//! The people directory in PostgreSQL: `people`, one row per person (name
//! → `model::person::Person` as JSON). A change reads and rewrites the
//! whole table in one transaction holding a lock on it (writers queue,
//! readers see the last committed directory), with its audit entry.

use super::chain::finish_audit;
use super::prepared::Prepared;
use super::{decode, encode, PgStore};
use crate::audit::AuditEvent;
use crate::error::Result;
use crate::model::person::Person;

impl PgStore {
    pub async fn people(&self) -> Result<Vec<Person>> {
        let client = self.client().await?;
        let rows = client
            .query_c("SELECT name, body FROM people ORDER BY name", &[])
            .await
            .map_err(|e| self.err("people", e))?;
        rows.iter()
            .map(|r| {
                let name: &str = r.get(0);
                decode(&format!("person {name}"), r.get::<_, &[u8]>(1))
            })
            .collect()
    }

    pub async fn update_people(
        &self,
        change: &crate::store::PeopleChange,
        audit: &AuditEvent,
    ) -> Result<Vec<Person>> {
        let fail = |e| self.err("people", e);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(fail)?;
        tx.batch_execute("LOCK TABLE people IN SHARE ROW EXCLUSIVE MODE")
            .await
            .map_err(fail)?;
        let rows = tx
            .query_c("SELECT name, body FROM people ORDER BY name", &[])
            .await
            .map_err(fail)?;
        let now = rows
            .iter()
            .map(|r| {
                let name: &str = r.get(0);
                decode::<Person>(&format!("person {name}"), r.get::<_, &[u8]>(1))
            })
            .collect::<Result<Vec<_>>>()?;
        // An error here drops the transaction: nothing is written.
        let next = change(now)?;
        tx.execute_c("DELETE FROM people", &[])
            .await
            .map_err(fail)?;
        for p in &next {
            tx.execute_c(
                "INSERT INTO people (name, body) VALUES ($1, $2)",
                &[&p.name, &encode("person", p)?],
            )
            .await
            .map_err(fail)?;
        }
        finish_audit(tx, audit).await?;
        Ok(next)
    }
}
