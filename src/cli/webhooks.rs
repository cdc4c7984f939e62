//! `strands webhooks failed`: the webhook deliveries strands gave up on,
//! so an operator can see which events a receiver never got and why; and
//! `strands webhooks retry ID|--all-failed`, which queues them again once
//! the receiver is fixed (the running service sends them, with the same
//! `webhook-id`). Both go through the server when one holds the store (or
//! `STRANDS_SERVER` is set: `GET /api/v1/webhooks/failed`, `POST
//! /api/v1/webhooks/{id}/retry`, admins), to the store otherwise.

use super::*;
use crate::model::webhook::Delivery;

#[derive(Subcommand, Debug)]
pub enum WebhooksCommand {
    /// Deliveries given up on (a 4xx, or still failing at the give-up
    /// time), latest first.
    Failed {
        #[arg(long)]
        json: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Queues deliveries given up on again (due now, the same message id,
    /// attempts counted afresh): message ID (from `webhooks failed`), or
    /// every one with --all-failed.
    Retry {
        /// The message id (`webhook-id`) to send again.
        #[arg(required_unless_present = "all_failed", conflicts_with = "all_failed")]
        id: Option<String>,
        /// Every delivery given up on.
        #[arg(long)]
        all_failed: bool,
        #[arg(long)]
        json: bool,
    },
}

impl WebhooksCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            WebhooksCommand::Failed { json, .. } | WebhooksCommand::Retry { json, .. } => *json,
        }
    }
}

pub(super) async fn webhooks(ctx: &Ctx, cmd: WebhooksCommand) -> Result<u8> {
    let (json, limit) = match cmd {
        WebhooksCommand::Failed { json, limit } => (json, limit),
        WebhooksCommand::Retry { id, json, .. } => return retry(ctx, id, json).await,
    };
    let (failed, location): (Vec<Value>, String) = match &ctx.remote {
        Some(remote) => (
            super::remote::failed_webhooks(remote, limit).await?,
            remote.base().to_string(),
        ),
        None => {
            let store = ctx.open().await?;
            let rows = store.webhook_failed(limit).await?;
            (
                rows.iter().map(Delivery::listed).collect(),
                store.location(),
            )
        }
    };
    if json {
        outln!("{}", json!({ "failed": failed, "count": failed.len() }))?;
        return Ok(exit::OK);
    }
    if failed.is_empty() {
        eprintln!("no failed webhook deliveries in {location}");
        return Ok(exit::OK);
    }
    let time = |v: &Value| {
        v.as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_else(|| "-".into())
    };
    outln!(
        "{:<19}  {:<19}  {:<14}  {:<36}  {:>8}  {:<24}  ENDPOINT",
        "FIRST ATTEMPT",
        "LAST ATTEMPT",
        "EVENT",
        "SESSION",
        "ATTEMPTS",
        "MESSAGE ID"
    )?;
    for d in &failed {
        let s = |k: &str| d[k].as_str().unwrap_or("-").to_string();
        outln!(
            "{:<19}  {:<19}  {:<14}  {:<36}  {:>8}  {:<24}  {}",
            time(&d["first_attempt_at"]),
            time(&d["last_attempt_at"]),
            s("type"),
            s("session"),
            d["attempts"].as_u64().unwrap_or(0),
            s("msg_id"),
            s("endpoint"),
        )?;
        outln!("  error: {}", s("last_error"))?;
    }
    Ok(exit::OK)
}

/// `webhooks retry`: `id` one message, `None` every failed delivery.
async fn retry(ctx: &Ctx, id: Option<String>, json: bool) -> Result<u8> {
    let requeued = match &ctx.remote {
        Some(remote) => super::remote::retry_webhooks(remote, id.as_deref()).await?,
        None => {
            let store = ctx.open().await?;
            let ids = id.clone().map(|i| vec![i]);
            let n = store.webhook_requeue(ids.as_deref(), ctx.now()).await?;
            if n == 0 {
                if let Some(id) = &id {
                    return Err(Error::Usage(format!(
                        "no webhook delivery given up on has message id `{id}` (`strands webhooks failed` lists them)"
                    )));
                }
            }
            n
        }
    };
    if json {
        outln!("{}", json!({ "requeued": requeued }))?;
    } else {
        eprintln!(
            "queued {requeued} webhook deliver{} again; the running service sends {}",
            if requeued == 1 { "y" } else { "ies" },
            if requeued == 1 { "it" } else { "them" }
        );
    }
    Ok(exit::OK)
}
