//! `strands teams conversations`: the Teams conversations the room can
//! post to (recorded when the bot was added, refreshed by every activity),
//! from the store, or through the server when one holds it (or
//! `STRANDS_SERVER` is set; `GET /api/v1/teams/conversations`, admins).
//!
//! `strands teams package`: the app package to upload to Teams (the
//! manifest filled with the app ID, and the icons), written as a zip;
//! offline, no store.

use super::*;

#[derive(Subcommand, Debug)]
pub enum TeamsCommand {
    /// The conversations the Teams room knows, by id.
    Conversations {
        #[arg(long)]
        json: bool,
    },
    /// Write the app package to upload to Teams (manifest.json, color.png, outline.png).
    Package {
        /// The bot's Entra app ID (default: TEAMS_APP_ID).
        #[arg(long, value_name = "ID")]
        app_id: Option<String>,
        /// Where to write the zip.
        #[arg(long, value_name = "FILE", default_value = "strands-teams-app.zip")]
        out: PathBuf,
        /// The host strands is reached at, for the manifest's developer
        /// URLs and validDomains.
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
    },
}

impl TeamsCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            TeamsCommand::Conversations { json } => *json,
            TeamsCommand::Package { .. } => false,
        }
    }

    /// Whether the command may go through a server.
    pub(super) fn remote(&self) -> bool {
        matches!(self, TeamsCommand::Conversations { .. })
    }
}

/// `strands teams package`: the zip, written to `out`.
fn package(
    ctx: &Ctx,
    app_id: Option<String>,
    out: &std::path::Path,
    host: Option<&str>,
) -> Result<u8> {
    use crate::teams::package;
    let app_id = app_id
        .filter(|id| !id.trim().is_empty())
        .or_else(|| crate::teams::TeamsSettings::app_id_from_lookup(ctx.env.lookup()))
        .ok_or_else(|| {
            Error::Usage(
                "no app ID: pass --app-id ID or set TEAMS_APP_ID (the Entra app's Application (client) ID)"
                    .into(),
            )
        })?;
    let manifest = package::manifest(package::Fill {
        app_id: &app_id,
        version: env!("CARGO_PKG_VERSION"),
        host,
    })
    .map_err(|e| match e {
        package::PackageError::AppId(_) | package::PackageError::Host(_) => {
            Error::Usage(e.to_string())
        }
        _ => Error::Internal(e.to_string()),
    })?;
    let zip = package::zip(&manifest).map_err(|e| Error::Internal(e.to_string()))?;
    std::fs::write(out, zip).map_err(|e| Error::io(format!("writing {}", out.display()), e))?;
    outln!("{}", out.display())?;
    eprintln!(
        "the Teams app package for app ID {app_id}: in Teams, Apps → Manage your apps → Upload an app"
    );
    if host.is_none() {
        eprintln!(
            "its developer URLs name {}; pass --host HOST to name yours",
            package::HOST_PLACEHOLDER
        );
    }
    Ok(exit::OK)
}

pub(super) async fn teams(ctx: &Ctx, cmd: TeamsCommand) -> Result<u8> {
    let json = match cmd {
        TeamsCommand::Conversations { json } => json,
        TeamsCommand::Package { app_id, out, host } => {
            return package(ctx, app_id, &out, host.as_deref())
        }
    };
    // One shape either way: `TeamsConversation::listed`.
    let all: Vec<Value> = match &ctx.remote {
        Some(remote) => super::remote::teams_conversations(remote).await?,
        None => ctx
            .open()
            .await?
            .teams_conversations()
            .await?
            .iter()
            .map(|c| c.listed())
            .collect(),
    };
    if json {
        outln!("{}", json!({ "conversations": all, "count": all.len() }))?;
        return Ok(exit::OK);
    }
    if all.is_empty() {
        eprintln!("no Teams conversations yet (they are recorded when the bot is added to one)");
        return Ok(exit::OK);
    }
    outln!(
        "{:<19}  {:<9}  {:<24}  {:<36}  {:<28}  ID",
        "LAST SEEN",
        "TYPE",
        "NAME",
        "TENANT",
        "SERVICE HOST",
    )?;
    for c in &all {
        let s = |k: &str| c[k].as_str().unwrap_or("-").to_string();
        let last_seen = c["last_seen"]
            .as_str()
            .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
            .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|| "-".into());
        outln!(
            "{:<19}  {:<9}  {:<24}  {:<36}  {:<28}  {}",
            last_seen,
            s("type"),
            s("name"),
            s("tenant_id"),
            s("service_host"),
            s("id"),
        )?;
    }
    Ok(exit::OK)
}
