//! The people directory in sled: `people` holds one entry, `directory` →
//! the whole directory as a JSON list of `model::person::Person`. It is
//! small (hundreds of people), and one key makes every change — an import
//! of a whole file too — one transaction, written with its audit entry.

use sled::transaction::{ConflictableTransactionError, TransactionError};
use sled::Transactional;

use super::{append_in, encode, trees, SledStore};
use crate::audit::AuditEvent;
use crate::error::{Error, Result};
use crate::model::person::Person;

const DIRECTORY: &[u8] = b"directory";

impl SledStore {
    /// Every person, by name.
    pub fn people(&self) -> Result<Vec<Person>> {
        match self.tree(trees::PEOPLE)?.get(DIRECTORY)? {
            Some(bytes) => read(&bytes),
            None => Ok(Vec::new()),
        }
    }

    /// Replaces the directory by what `change` makes of it, with `audit`,
    /// in one transaction; an error from `change` writes nothing.
    pub fn update_people(
        &self,
        change: &super::super::PeopleChange,
        audit: &AuditEvent,
    ) -> Result<Vec<Person>> {
        let tree = self.tree(trees::PEOPLE)?;
        let res: std::result::Result<Vec<Person>, TransactionError<Error>> =
            (&tree, &self.audit, &self.audit_head).transaction(|(t, log, head)| {
                let now = match t.get(DIRECTORY)? {
                    Some(bytes) => read(&bytes).map_err(ConflictableTransactionError::Abort)?,
                    None => Vec::new(),
                };
                let next = change(now).map_err(ConflictableTransactionError::Abort)?;
                let bytes = encode("people", &next).map_err(ConflictableTransactionError::Abort)?;
                t.insert(DIRECTORY, bytes)?;
                append_in(log, head, std::slice::from_ref(audit))
                    .map_err(|e| ConflictableTransactionError::Abort(Error::Store(e)))?;
                Ok(next)
            });
        let next = res.map_err(|e| match e {
            TransactionError::Abort(e) => e,
            TransactionError::Storage(e) => Error::Store(format!("people: {e}")),
        })?;
        self.sync()?;
        Ok(next)
    }
}

fn read(bytes: &[u8]) -> Result<Vec<Person>> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::Store(format!("the people directory is unreadable: {e}")))
}
