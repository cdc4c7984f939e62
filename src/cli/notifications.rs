//! `strands notifications failed`: the mails strands gave up on (a `5xx`
//! such as `550 no such user`, or still failing after
//! `STRANDS_EMAIL_MAX_ATTEMPTS`), latest first — from the store, or
//! through the server when one holds it (or `STRANDS_SERVER` is set;
//! `GET /api/v1/notifications/failed`, admins).

use clap::Subcommand;
use serde_json::json;
use serde_json::Value;

use super::Ctx;
use crate::error::{exit, Result};
use crate::model::mail::Mail;

fn row(m: &Mail) -> Value {
    m.listed()
}

#[derive(Subcommand, Debug)]
pub enum NotificationsCommand {
    /// Mails given up on, latest first.
    Failed {
        #[arg(long)]
        json: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

impl NotificationsCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            NotificationsCommand::Failed { json, .. } => *json,
        }
    }
}

pub(super) async fn notifications(ctx: &Ctx, cmd: NotificationsCommand) -> Result<u8> {
    let NotificationsCommand::Failed { json, limit } = cmd;
    let failed: Vec<Value> = match &ctx.remote {
        Some(remote) => super::remote::failed_notifications(remote, limit).await?,
        None => ctx
            .open()
            .await?
            .mail_failed(limit)
            .await?
            .iter()
            .map(row)
            .collect(),
    };
    if json {
        outln!("{}", json!({ "failed": failed, "count": failed.len() }))?;
        return Ok(exit::OK);
    }
    if failed.is_empty() {
        eprintln!("no failed notifications");
        return Ok(exit::OK);
    }
    outln!(
        "{:<19}  {:<8}  {:<32}  {:<36}  {:<20}  {:>8}",
        "LAST ATTEMPT",
        "KIND",
        "TO",
        "SESSION",
        "GATE",
        "ATTEMPTS"
    )?;
    for m in &failed {
        let s = |k: &str| m[k].as_str().unwrap_or("-").to_string();
        let last = m["last_attempt_at"]
            .as_str()
            .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
            .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|| "-".into());
        outln!(
            "{:<19}  {:<8}  {:<32}  {:<36}  {:<20}  {:>8}",
            last,
            s("kind"),
            s("to"),
            s("session"),
            s("gate"),
            m["attempts"].as_u64().unwrap_or(0),
        )?;
        outln!("  error: {}", s("last_error"))?;
    }
    Ok(exit::OK)
}
