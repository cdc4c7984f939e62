//! `strands teams conversations`: the Teams conversations the room can
//! post to (recorded when the bot was added, refreshed by every activity),
//! read offline from the store (the server must not hold a sled store).
//!
//! Not through a running server yet: there is no API route for them.

use super::*;
use crate::model::teams::TeamsConversation;

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
    let store = ctx.open().await?;
    let all = store.teams_conversations().await?;
    if json {
        let rows: Vec<Value> = all.iter().map(row).collect();
        outln!("{}", json!({ "conversations": rows, "count": rows.len() }))?;
        return Ok(exit::OK);
    }
    if all.is_empty() {
        eprintln!("no Teams conversations in {}", store.location());
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
        outln!(
            "{:<19}  {:<9}  {:<24}  {:<36}  {:<28}  {}",
            c.last_seen.format("%Y-%m-%d %H:%M:%S"),
            c.kind.as_str(),
            c.name.as_deref().unwrap_or("-"),
            c.tenant_id.as_deref().unwrap_or("-"),
            host(&c.service_url),
            c.id,
        )?;
    }
    Ok(exit::OK)
}

/// The host a service URL names (the URL itself when it has none).
fn host(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| url.to_string())
}

/// One conversation as `--json` prints it.
fn row(c: &TeamsConversation) -> Value {
    json!({
        "id": c.id,
        "type": c.kind.as_str(),
        "name": c.name,
        "tenant_id": c.tenant_id,
        "channel_id": c.channel_id,
        "bot_id": c.bot_id,
        "service_url": c.service_url,
        "service_host": host(&c.service_url),
        "first_seen": c.first_seen,
        "last_seen": c.last_seen,
    })
}
