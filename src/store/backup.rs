//! `strands store backup DEST` and `POST /api/v1/store/backup`: a copy of
//! a sled store that opens as a store, checked once made.
//!
//! Why this exists (issue 23: no store is ever lost silently): the copy is
//! the way back from a store sled no longer opens. It is made with every
//! sled call of this process quiesced ([`super::sled::quiesced`]: offline
//! there are none; in `strands serve` it waits for the calls in flight and
//! holds the others back), after a flush and a sync, so the files copied
//! are one durable state; the copy is then opened and verified
//! ([`super::verify`]) and the backup recorded in the store's
//! `backups.log`. PostgreSQL is backed up by the database's own means.

use std::path::{Path, PathBuf};

use super::Store;
use crate::error::{Error, Result};

/// What `pg_dump` is for: the refusal on PostgreSQL.
pub const POSTGRES: &str = "strands store backup copies a sled store; a PostgreSQL store is backed up with the database's own tools (`pg_dump`, or your provider's backups and point-in-time recovery)";

/// A backup made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Made {
    pub dest: PathBuf,
    pub files: usize,
    pub bytes: u64,
    /// The checks run on the copy.
    pub verify: super::verify::Report,
}

/// Copies `store` (sled) into `dest` (absolute; new or empty), opens and
/// verifies the copy, and records it in the store's `backups.log`.
pub async fn backup(store: &Store, dest: &Path) -> Result<Made> {
    let Store::Sled(s) = store else {
        return Err(Error::Usage(POSTGRES.into()));
    };
    if !dest.is_absolute() {
        return Err(Error::Usage(format!(
            "the backup's destination must be an absolute path, not {}",
            dest.display()
        )));
    }
    super::sled::backup::check_dest(dest)?;
    let copied = super::sled::quiesced(|| s.copy_to(dest)).await?;
    let copy = super::sled::off_worker(|| Store::open(dest))
        .await
        .map_err(|e| {
            Error::Store(format!(
                "the copy in {} does not open as a store: {e}",
                dest.display()
            ))
        })?;
    let report = super::verify::verify(&copy).await;
    drop(copy);
    let report = report?;
    super::sled::backup::record(s.path(), dest, s.now())?;
    Ok(Made {
        dest: dest.to_path_buf(),
        files: copied.files,
        bytes: copied.bytes,
        verify: report,
    })
}
