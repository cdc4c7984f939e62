//! API tokens in sled: `tokens` (id → `TokenRecord`) and `token_names`
//! (name → id, for tokens not revoked), written with their audit entry in
//! one transaction so a token never exists unaudited.

use chrono::{DateTime, Utc};
use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::{append_in, encode, trees, SledStore};
use crate::audit::AuditEvent;
use crate::error::{Error, Result};
use crate::model::token::TokenRecord;

impl SledStore {
    /// Stores a new token; `false` (nothing written) when a token of that
    /// name is in use.
    pub fn create_token(&self, record: &TokenRecord, audit: &AuditEvent) -> Result<bool> {
        let tokens = self.tree(trees::TOKENS)?;
        let names = self.tree(trees::TOKEN_NAMES)?;
        let bytes = encode("token", record)?;
        let res: std::result::Result<bool, TransactionError<String>> =
            (&tokens, &names, &self.audit, &self.audit_head).transaction(|(t, n, log, head)| {
                if n.get(record.name.as_bytes())?.is_some() {
                    return Ok(false);
                }
                n.insert(record.name.as_bytes(), record.id.as_bytes())?;
                t.insert(record.id.as_bytes(), bytes.as_slice())?;
                append_in(log, head, std::slice::from_ref(audit))
                    .map_err(ConflictableTransactionError::Abort)?;
                Ok(true)
            });
        let created = res.map_err(|e| Error::Store(format!("tokens: {e:?}")))?;
        self.sync()?;
        Ok(created)
    }

    /// The token with public id `id`, revoked or not.
    pub fn token(&self, id: &str) -> Result<Option<TokenRecord>> {
        let tokens = self.tree(trees::TOKENS)?;
        tokens
            .get(id.as_bytes())?
            .map(|b| {
                serde_json::from_slice(&b)
                    .map_err(|e| Error::Store(format!("token {id} is unreadable: {e}")))
            })
            .transpose()
    }

    /// Every token ever made, oldest first.
    pub fn tokens(&self) -> Result<Vec<TokenRecord>> {
        let tokens = self.tree(trees::TOKENS)?;
        let mut out: Vec<TokenRecord> = Vec::new();
        for kv in tokens.iter() {
            let (_, v) = kv?;
            out.push(
                serde_json::from_slice(&v)
                    .map_err(|e| Error::Store(format!("unreadable token: {e}")))?,
            );
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.name.cmp(&b.name)));
        Ok(out)
    }

    /// Revokes the token named `name` at `at`; `None` when no token of
    /// that name is in use.
    pub fn revoke_token(
        &self,
        name: &str,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<Option<TokenRecord>> {
        let tokens = self.tree(trees::TOKENS)?;
        let names = self.tree(trees::TOKEN_NAMES)?;
        let res: std::result::Result<Option<TokenRecord>, TransactionError<String>> =
            (&tokens, &names, &self.audit, &self.audit_head).transaction(|(t, n, log, head)| {
                let Some(id) = n.remove(name.as_bytes())? else {
                    return Ok(None);
                };
                let Some(bytes) = t.get(&id)? else {
                    return Ok(None);
                };
                let mut record: TokenRecord = serde_json::from_slice(&bytes).map_err(|e| {
                    ConflictableTransactionError::Abort(format!("unreadable token: {e}"))
                })?;
                record.revoked_at = Some(at);
                let bytes = serde_json::to_vec(&record)
                    .map_err(|e| ConflictableTransactionError::Abort(e.to_string()))?;
                t.insert(id, bytes)?;
                append_in(log, head, std::slice::from_ref(audit))
                    .map_err(ConflictableTransactionError::Abort)?;
                Ok(Some(record))
            });
        let revoked = res.map_err(|e| Error::Store(format!("tokens: {e:?}")))?;
        self.sync()?;
        Ok(revoked)
    }
}
