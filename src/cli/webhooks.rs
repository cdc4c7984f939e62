//! `strands webhooks failed`: the webhook deliveries strands gave up on,
//! read offline from the store (the bot must not hold it), so an operator
//! can see which events a receiver never got and why.

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
}

impl WebhooksCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            WebhooksCommand::Failed { json, .. } => *json,
        }
    }
}

pub(super) async fn webhooks(ctx: &Ctx, cmd: WebhooksCommand) -> Result<u8> {
    let WebhooksCommand::Failed { json, limit } = cmd;
    let store = ctx.open().await?;
    let failed = store.webhook_failed(limit).await?;
    if json {
        let rows: Vec<Value> = failed.iter().map(row).collect();
        outln!("{}", json!({ "failed": rows, "count": rows.len() }))?;
        return Ok(exit::OK);
    }
    if failed.is_empty() {
        eprintln!("no failed webhook deliveries in {}", store.location());
        return Ok(exit::OK);
    }
    let time = |t: Option<chrono::DateTime<Utc>>| {
        t.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
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
        outln!(
            "{:<19}  {:<19}  {:<14}  {:<36}  {:>8}  {:<24}  {}",
            time(d.first_attempt_at),
            time(d.last_attempt_at),
            d.event.what.name(),
            d.event.session,
            d.attempts,
            d.msg_id,
            d.endpoint_shown(),
        )?;
        outln!("  error: {}", d.last_error.as_deref().unwrap_or("-"))?;
    }
    Ok(exit::OK)
}

/// One failed delivery as `--json` prints it (the endpoint without
/// credentials).
fn row(d: &Delivery) -> Value {
    json!({
        "endpoint": d.endpoint_shown(),
        "type": d.event.what.name(),
        "session": d.event.session,
        "workflow": d.event.workflow,
        "seq": d.seq(),
        "msg_id": d.msg_id,
        "attempts": d.attempts,
        "last_error": d.last_error,
        "queued_at": d.queued_at,
        "first_attempt_at": d.first_attempt_at,
        "last_attempt_at": d.last_attempt_at,
    })
}
