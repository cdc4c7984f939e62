//! `strands store migrate --from PATH --to URL`: moves a sled store into
//! PostgreSQL (see `store::migrate`), so replicas can share it.
//! `strands store verify`: checks the store offline (`store::verify`).
//! `strands store backup DEST`: a verified copy of a sled store
//! (`store::backup`), made by `strands serve` when it holds the store.

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
    /// Check the store (--store) offline: every session decodes and has a
    /// summary that agrees, the order index and status counters match the
    /// records, the audit chain verifies. Exit 12 when it is not sound.
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// Copy the sled store (--store) into DEST (new or empty) so that it
    /// opens as a store, then verify the copy. Through `strands serve`
    /// when it holds the store. PostgreSQL: use pg_dump.
    Backup {
        dest: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

impl StoreCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            StoreCommand::Migrate { json, .. }
            | StoreCommand::Verify { json }
            | StoreCommand::Backup { json, .. } => *json,
        }
    }
}

pub(super) async fn store(ctx: &Ctx, cmd: StoreCommand) -> Result<u8> {
    match cmd {
        StoreCommand::Migrate {
            from,
            to,
            force,
            json,
        } => migrate(ctx, from, to, force, json).await,
        StoreCommand::Verify { json } => verify(ctx, json).await,
        StoreCommand::Backup { dest, json } => backup(ctx, &dest, json).await,
    }
}

/// The address of a live `strands serve` holding the (sled) store, if any.
async fn held_by(ctx: &Ctx) -> Option<String> {
    if ctx.store_is_url() {
        return None;
    }
    super::remote::Remote::discover(&ctx.store_path, &ctx.who)
        .await
        .map(|r| r.base().to_string())
}

async fn verify(ctx: &Ctx, json: bool) -> Result<u8> {
    if let Some(url) = held_by(ctx).await {
        return Err(Error::Store(format!(
            "the session store at {} is held by `strands serve` at {url}, which keeps writing to it: verify checks a store nobody writes to. Stop the server and run this again, or back it up through the server (`strands store backup DEST`, which verifies the copy) and verify the copy",
            ctx.store_shown()
        )));
    }
    if !ctx.store_is_url() && !ctx.store_path.exists() {
        return Err(Error::Store(format!(
            "there is no session store at {}",
            ctx.store_shown()
        )));
    }
    let store = ctx.open().await?;
    let report = crate::store::verify::verify(&store).await?;
    let code = if report.ok() { exit::OK } else { exit::IO };
    if json {
        outln!("{}", serde_json::to_value(&report).unwrap_or_default())?;
    } else {
        outln!("{}", report.line())?;
        for p in &report.problems {
            outln!("  ✗ {p}")?;
        }
        if report.ok() {
            outln!("the store is sound")?;
        } else {
            outln!("{} problem(s) found", report.problems.len())?;
        }
    }
    if !report.ok() {
        eprintln!(
            "error: the session store at {} is not sound ({} problem(s))",
            ctx.store_shown(),
            report.problems.len()
        );
    }
    Ok(code)
}

async fn backup(ctx: &Ctx, dest: &std::path::Path, json: bool) -> Result<u8> {
    if ctx.store_is_url() {
        return Err(Error::Usage(crate::store::backup::POSTGRES.into()));
    }
    let dest = std::path::absolute(dest)
        .map_err(|e| Error::io(format!("cannot resolve {}", dest.display()), e))?;
    let made = match super::remote::Remote::discover(&ctx.store_path, &ctx.who).await {
        Some(remote) => {
            eprintln!(
                "the store is held by `strands serve` at {}; it makes the copy",
                remote.base()
            );
            super::remote::store_backup(&remote, &dest).await?
        }
        None => {
            if !ctx.store_path.join("db").exists() {
                return Err(Error::Store(format!(
                    "there is no session store at {}",
                    ctx.store_shown()
                )));
            }
            let store = ctx.open().await?;
            let made = crate::store::backup::backup(&store, &dest).await?;
            serde_json::to_value(&made).unwrap_or_default()
        }
    };
    let problems = made["verify"]["problems"].as_array().map_or(0, |p| p.len());
    let code = if problems == 0 { exit::OK } else { exit::IO };
    if json {
        outln!("{made}")?;
    } else {
        outln!(
            "backed up {} → {}: {} session(s), {} file(s), {} bytes; the copy opens and {}",
            ctx.store_shown(),
            dest.display(),
            made["verify"]["sessions"].as_u64().unwrap_or(0),
            made["files"].as_u64().unwrap_or(0),
            made["bytes"].as_u64().unwrap_or(0),
            if problems == 0 {
                "verifies".to_string()
            } else {
                format!("has {problems} problem(s), as the store has:")
            }
        )?;
        for p in made["verify"]["problems"].as_array().into_iter().flatten() {
            outln!("  ✗ {}", p.as_str().unwrap_or_default())?;
        }
        outln!(
            "restore: move the store aside and copy {} in its place, or run with --store {}",
            dest.display(),
            dest.display()
        )?;
    }
    Ok(code)
}

async fn migrate(ctx: &Ctx, from: PathBuf, to: String, force: bool, json: bool) -> Result<u8> {
    if !crate::store::postgres::is_url(&to) {
        return Err(Error::Usage(format!(
            "--to must be a postgres:// URL, not {}",
            crate::store::postgres::shown(&to)
        )));
    }
    let report = crate::store::migrate::sled_to_postgres(
        &from,
        &to,
        force,
        &ctx.settings.store.postgres,
        &ctx.clock,
    )
    .await?;
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
