//! `strands trust list|revoke`: approvers' grants (trust within limits,
//! made by `strands resume ID --trust --for 1h --match 'url^=https://…'`),
//! on the store or, when a server holds it (or `STRANDS_SERVER` is set),
//! through the server. Lists go to stdout; what was done, to stderr.

use reqwest::Method;
use serde_json::{json, Value};

use super::{Ctx, TrustCommand};
use crate::error::{exit, Error, Result};
use crate::hub::grants::{self, Revoked};

pub(super) async fn trust(ctx: &Ctx, cmd: TrustCommand) -> Result<u8> {
    match cmd {
        TrustCommand::List { all, json } => {
            let list: Vec<Value> = match &ctx.remote {
                Some(remote) => {
                    let path = if all { "/grants?all=true" } else { "/grants" };
                    let v = super::remote::call(remote, Method::GET, path, None).await?;
                    v["grants"].as_array().cloned().unwrap_or_default()
                }
                None => {
                    let store = ctx.open().await?;
                    grants::list(&store, all, ctx.now())
                        .await?
                        .iter()
                        .map(|g| grants::listed(g, ctx.now()))
                        .collect()
                }
            };
            if json {
                outln!("{}", json!({ "count": list.len(), "grants": list }))?;
            } else if list.is_empty() {
                eprintln!(
                    "no {}grants; an approver makes one with `strands resume ID --trust --for 1h|run [--match NAME=VALUE]`",
                    if all { "" } else { "live " }
                );
            } else {
                outln!(
                    "{:<19}  {:<8}  {:<16}  {:<20}  RULE",
                    "ID",
                    "STATE",
                    "GRANTED BY",
                    "CREATED"
                )?;
                for g in &list {
                    let s = |k: &str| g[k].as_str().unwrap_or_default().to_string();
                    let created = g["created_at"]
                        .as_str()
                        .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
                        .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
                        .unwrap_or_else(|| "-".into());
                    outln!(
                        "{:<19}  {:<8}  {:<16}  {:<20}  {}",
                        s("id"),
                        s("state"),
                        s("granted_by"),
                        created,
                        s("rule")
                    )?;
                }
            }
            Ok(exit::OK)
        }
        TrustCommand::Revoke { id } => {
            let rule = match &ctx.remote {
                Some(remote) => {
                    let v =
                        super::remote::call(remote, Method::DELETE, &format!("/grants/{id}"), None)
                            .await?;
                    v["rule"].as_str().unwrap_or_default().to_string()
                }
                None => {
                    let store = ctx.open().await?;
                    match grants::revoke(&store, &id, &ctx.who, "cli").await? {
                        Revoked::Now(g) => g.rule(),
                        Revoked::Before(g) => {
                            let r = g.revoked.as_ref();
                            eprintln!(
                                "grant {id} was already revoked by {} at {}",
                                r.map(|r| r.by.as_str()).unwrap_or("?"),
                                r.map(|r| r.at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
                                    .unwrap_or_default()
                            );
                            return Ok(exit::OK);
                        }
                        Revoked::Unknown => {
                            return Err(Error::Session(format!(
                                "no grant `{id}` (see `strands trust list --all`)"
                            )))
                        }
                    }
                }
            };
            eprintln!("revoked grant {id}: {rule}");
            Ok(exit::OK)
        }
    }
}
