//! Grants (trust within limits, `model::grant`): one row per grant, the
//! document as in sled, each written with its audit entry in one
//! transaction.

use super::prepared::Prepared;

use super::chain::finish_audit;
use super::{decode, encode, PgStore};
use crate::audit::AuditEvent;
use crate::error::Result;
use crate::model::grant::{Grant, Revocation};

impl PgStore {
    pub async fn put_grant(&self, grant: &Grant, audit: &AuditEvent) -> Result<bool> {
        let body = encode("grant", grant)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("grants", e))?;
        let n = tx
            .execute_c(
                "INSERT INTO grants (id, body) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&grant.id, &body],
            )
            .await
            .map_err(|e| self.err("grants", e))?;
        if n == 0 {
            return Ok(false);
        }
        finish_audit(tx, audit).await?;
        Ok(true)
    }

    pub async fn grants(&self) -> Result<Vec<Grant>> {
        let client = self.client().await?;
        let rows = client
            .query_c("SELECT body FROM grants", &[])
            .await
            .map_err(|e| self.err("grants", e))?;
        let mut out: Vec<Grant> = rows
            .iter()
            .map(|r| decode("grant", r.get::<_, &[u8]>(0)))
            .collect::<Result<_>>()?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    pub async fn revoke_grant(
        &self,
        id: &str,
        revocation: &Revocation,
        audit: &AuditEvent,
    ) -> Result<Option<Grant>> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("grants", e))?;
        let Some(row) = tx
            .query_opt_c("SELECT body FROM grants WHERE id = $1 FOR UPDATE", &[&id])
            .await
            .map_err(|e| self.err("grants", e))?
        else {
            return Ok(None);
        };
        let mut grant: Grant = decode("grant", row.get::<_, &[u8]>(0))?;
        if grant.revoked.is_some() {
            return Ok(Some(grant));
        }
        grant.revoked = Some(revocation.clone());
        tx.execute_c(
            "UPDATE grants SET body = $2 WHERE id = $1",
            &[&grant.id, &encode("grant", &grant)?],
        )
        .await
        .map_err(|e| self.err("grants", e))?;
        finish_audit(tx, audit).await?;
        Ok(Some(grant))
    }
}
