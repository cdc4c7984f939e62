//! API tokens (written with their audit entry in one transaction), web
//! inbox sign-ins, and the service's keys made once for every replica
//! (`INSERT … ON CONFLICT DO NOTHING`, then everyone reads the winner).

use super::prepared::Prepared;
use chrono::{DateTime, Utc};

use super::chain::finish_audit;
use super::{decode, encode, PgStore};
use crate::audit::AuditEvent;
use crate::error::{Error, Result};
use crate::model::login::Login;
use crate::model::token::TokenRecord;

impl PgStore {
    pub async fn create_token(&self, record: &TokenRecord, audit: &AuditEvent) -> Result<bool> {
        let body = encode("token", record)?;
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("tokens", e))?;
        let n = tx
            .execute_c(
                "INSERT INTO tokens (id, name, revoked, body) VALUES ($1, $2, false, $3)
                 ON CONFLICT DO NOTHING",
                &[&record.id, &record.name, &body],
            )
            .await
            .map_err(|e| self.err("tokens", e))?;
        if n == 0 {
            return Ok(false);
        }
        finish_audit(tx, audit).await?;
        Ok(true)
    }

    pub async fn token(&self, id: &str) -> Result<Option<TokenRecord>> {
        let client = self.client().await?;
        let row = client
            .query_opt_c("SELECT body FROM tokens WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.err("tokens", e))?;
        row.map(|r| decode(&format!("token {id}"), r.get::<_, &[u8]>(0)))
            .transpose()
    }

    pub async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        let client = self.client().await?;
        let rows = client
            .query_c("SELECT body FROM tokens", &[])
            .await
            .map_err(|e| self.err("tokens", e))?;
        let mut out: Vec<TokenRecord> = rows
            .iter()
            .map(|r| decode("token", r.get::<_, &[u8]>(0)))
            .collect::<Result<_>>()?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.name.cmp(&b.name)));
        Ok(out)
    }

    pub async fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<Option<TokenRecord>> {
        let mut client = self.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| self.err("tokens", e))?;
        let Some(row) = tx
            .query_opt_c(
                "SELECT body FROM tokens WHERE name = $1 AND NOT revoked FOR UPDATE",
                &[&name],
            )
            .await
            .map_err(|e| self.err("tokens", e))?
        else {
            return Ok(None);
        };
        let mut record: TokenRecord = decode("token", row.get::<_, &[u8]>(0))?;
        record.revoked_at = Some(at);
        tx.execute_c(
            "UPDATE tokens SET revoked = true, body = $2 WHERE id = $1",
            &[&record.id, &encode("token", &record)?],
        )
        .await
        .map_err(|e| self.err("tokens", e))?;
        finish_audit(tx, audit).await?;
        Ok(Some(record))
    }

    pub async fn put_login(&self, login: &Login) -> Result<()> {
        let client = self.client().await?;
        client
            .execute_c(
                "INSERT INTO web_logins (id, body) VALUES ($1, $2)
                 ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
                &[&login.id, &encode("login", login)?],
            )
            .await
            .map_err(|e| self.err("sign-ins", e))?;
        Ok(())
    }

    pub async fn login(&self, id: &str) -> Result<Option<Login>> {
        let client = self.client().await?;
        let row = client
            .query_opt_c("SELECT body FROM web_logins WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.err("sign-ins", e))?;
        row.map(|r| decode(&format!("sign-in {id}"), r.get::<_, &[u8]>(0)))
            .transpose()
    }

    pub async fn end_login(&self, id: &str) -> Result<bool> {
        let client = self.client().await?;
        let n = client
            .execute_c("DELETE FROM web_logins WHERE id = $1", &[&id])
            .await
            .map_err(|e| self.err("sign-ins", e))?;
        Ok(n > 0)
    }

    /// A value in `meta` made once: `fresh` is stored unless a value is
    /// there already; the stored one is returned.
    pub(super) async fn meta_once(&self, key: &str, fresh: Vec<u8>) -> Result<Vec<u8>> {
        let client = self.client().await?;
        client
            .execute_c(
                "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&key, &fresh],
            )
            .await
            .map_err(|e| self.err("meta", e))?;
        let row = client
            .query_one_c("SELECT value FROM meta WHERE key = $1", &[&key])
            .await
            .map_err(|e| self.err("meta", e))?;
        Ok(row.get(0))
    }

    pub async fn key(&self, name: &str) -> Result<Vec<u8>> {
        // One byte per v4 uuid: its first byte is wholly random.
        let fresh: Vec<u8> = (0..32)
            .map(|_| uuid::Uuid::new_v4().as_bytes()[0])
            .collect();
        let v = self.meta_once(&format!("key/{name}"), fresh).await?;
        if v.len() == 32 {
            Ok(v)
        } else {
            Err(Error::Store(format!("the key `{name}` is unreadable")))
        }
    }
}
