//! `strands store migrate --from PATH --to URL`: moves a sled store into
//! PostgreSQL (see `store::migrate`), so replicas can share it.

use super::*;

#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Copy a sled store into a PostgreSQL database and verify its audit
    /// chain there; again against the same database it does nothing.
    Migrate {
        /// The sled store directory.
        #[arg(long, value_name = "PATH")]
        from: PathBuf,
        /// postgres://USER:PASSWORD@HOST:PORT/DATABASE
        #[arg(long, value_name = "URL")]
        to: String,
        /// Replace what the database holds when it holds another store.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
    },
}

impl StoreCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            StoreCommand::Migrate { json, .. } => *json,
        }
    }
}

pub(super) async fn store(cmd: StoreCommand) -> Result<u8> {
    let StoreCommand::Migrate {
        from,
        to,
        force,
        json,
    } = cmd;
    if !crate::store::postgres::is_url(&to) {
        return Err(Error::Usage(format!(
            "--to must be a postgres:// URL, not {}",
            crate::store::postgres::shown(&to)
        )));
    }
    let report = crate::store::migrate::sled_to_postgres(&from, &to, force).await?;
    if json {
        outln!("{}", serde_json::to_value(&report).unwrap_or_default())?;
    } else if report.copied {
        outln!(
            "migrated {} → {}: {} session(s), {} timer(s), {} token(s), {} event(s); audit chain verified ({} entries)",
            report.from,
            report.to,
            report.sessions,
            report.timers,
            report.tokens,
            report.events,
            report.audit_entries
        )?;
    } else {
        outln!(
            "{} already holds {} ({} session(s)); nothing copied; audit chain verified ({} entries)",
            report.to,
            report.from,
            report.sessions,
            report.audit_entries
        )?;
    }
    Ok(exit::OK)
}
