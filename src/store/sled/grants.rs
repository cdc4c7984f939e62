//! Grants (trust within limits, `model::grant`) in sled: `grants` (id →
//! `Grant`), each written with its audit entry in one transaction, so a
//! grant is never made or revoked unaudited.

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::{append_in, encode, trees, SledStore};
use crate::audit::AuditEvent;
use crate::error::{Error, Result};
use crate::model::grant::{Grant, Revocation};

impl SledStore {
    /// Stores a grant; `false` (nothing written) when one with its id is
    /// there already (the same answer, recorded again).
    pub fn put_grant(&self, grant: &Grant, audit: &AuditEvent) -> Result<bool> {
        let grants = self.tree(trees::GRANTS)?;
        let bytes = encode("grant", grant)?;
        let res: std::result::Result<bool, TransactionError<String>> =
            (&grants, &self.audit, &self.audit_head).transaction(|(g, log, head)| {
                if g.get(grant.id.as_bytes())?.is_some() {
                    return Ok(false);
                }
                g.insert(grant.id.as_bytes(), bytes.as_slice())?;
                append_in(log, head, std::slice::from_ref(audit))
                    .map_err(ConflictableTransactionError::Abort)?;
                Ok(true)
            });
        let put = res.map_err(|e| Error::Store(format!("grants: {e:?}")))?;
        self.sync()?;
        Ok(put)
    }

    /// Every grant ever made (revoked and expired too), oldest first.
    pub fn grants(&self) -> Result<Vec<Grant>> {
        let grants = self.tree(trees::GRANTS)?;
        let mut out: Vec<Grant> = Vec::new();
        for kv in grants.iter() {
            let (_, v) = kv?;
            out.push(
                serde_json::from_slice(&v)
                    .map_err(|e| Error::Store(format!("unreadable grant: {e}")))?,
            );
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Revokes grant `id`; the grant as stored after (a grant revoked
    /// before keeps its first revocation, and nothing is audited); `None`
    /// when there is no such grant.
    pub fn revoke_grant(
        &self,
        id: &str,
        revocation: &Revocation,
        audit: &AuditEvent,
    ) -> Result<Option<Grant>> {
        let grants = self.tree(trees::GRANTS)?;
        let res: std::result::Result<Option<Grant>, TransactionError<String>> =
            (&grants, &self.audit, &self.audit_head).transaction(|(g, log, head)| {
                let Some(bytes) = g.get(id.as_bytes())? else {
                    return Ok(None);
                };
                let mut grant: Grant = serde_json::from_slice(&bytes).map_err(|e| {
                    ConflictableTransactionError::Abort(format!("unreadable grant: {e}"))
                })?;
                if grant.revoked.is_some() {
                    return Ok(Some(grant));
                }
                grant.revoked = Some(revocation.clone());
                let bytes = serde_json::to_vec(&grant)
                    .map_err(|e| ConflictableTransactionError::Abort(e.to_string()))?;
                g.insert(id.as_bytes(), bytes)?;
                append_in(log, head, std::slice::from_ref(audit))
                    .map_err(ConflictableTransactionError::Abort)?;
                Ok(Some(grant))
            });
        let revoked = res.map_err(|e| Error::Store(format!("grants: {e:?}")))?;
        self.sync()?;
        Ok(revoked)
    }
}
