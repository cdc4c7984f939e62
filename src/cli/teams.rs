//! `strands teams conversations`: the Teams conversations the room can
//! post to (recorded when the bot was added, refreshed by every activity),
//! from the store, or through the server when one holds it (or
//! `STRANDS_SERVER` is set; `GET /api/v1/teams/conversations`, admins).

use super::*;

#[derive(Subcommand, Debug)]
pub enum TeamsCommand {
    /// The conversations the Teams room knows, by id.
    Conversations {
        #[arg(long)]
        json: bool,
    },
}

impl TeamsCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            TeamsCommand::Conversations { json } => *json,
        }
    }
}

pub(super) async fn teams(ctx: &Ctx, cmd: TeamsCommand) -> Result<u8> {
    let TeamsCommand::Conversations { json } = cmd;
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
