//! `strands tokens create|list|revoke`: API tokens, on the store or, when
//! a server holds it (or `STRANDS_SERVER` is set), through the server. The
//! secret is printed once, on stdout; everything else goes to stderr.

use super::*;
use crate::model::token::Role;

pub(super) async fn tokens(ctx: &Ctx, cmd: TokensCommand) -> Result<u8> {
    match cmd {
        TokensCommand::Create {
            name,
            role,
            expires_days,
            json,
        } => {
            let made = match &ctx.remote {
                Some(remote) => {
                    super::remote::create_token(remote, &name, &role, expires_days).await?
                }
                None => {
                    let role = Role::parse(&role).ok_or_else(|| {
                        Error::Usage(format!(
                            "--role `{role}` is not one of approver, operator, admin"
                        ))
                    })?;
                    let store = ctx.open().await?;
                    let new = crate::hub::tokens::create(
                        &store,
                        &name,
                        role,
                        expires_days,
                        false,
                        &ctx.who,
                        "cli",
                    )
                    .await?
                    .map_err(|r| Error::Usage(r.to_string()))?;
                    crate::api::admin::TokenCreated {
                        name: new.record.name.clone(),
                        role: role.to_string(),
                        id: new.record.id.clone(),
                        expires_at: new.record.expires_at,
                        token: new.token,
                    }
                }
            };
            if json {
                outln!(
                    "{}",
                    json!({ "token": made.token, "name": made.name, "role": made.role, "id": made.id, "expires_at": made.expires_at })
                )?;
            } else {
                outln!("{}", made.token)?;
                eprintln!(
                    "token `{}` ({}) created{}; it is shown this once — keep it secret",
                    made.name,
                    made.role,
                    made.expires_at
                        .map(|t| format!(", expires {}", t.format("%Y-%m-%d")))
                        .unwrap_or_default()
                );
            }
            Ok(exit::OK)
        }
        TokensCommand::List { json } => {
            let list: Vec<Value> = match &ctx.remote {
                Some(remote) => super::remote::list_tokens(remote).await?,
                None => ctx
                    .open()
                    .await?
                    .tokens()
                    .await?
                    .iter()
                    .map(|t| crate::hub::tokens::listed(t, ctx.now()))
                    .collect(),
            };
            if json {
                outln!("{}", json!({ "count": list.len(), "tokens": list }))?;
            } else if list.is_empty() {
                eprintln!("no tokens; make one with `strands tokens create NAME --role ROLE`");
            } else {
                outln!(
                    "{:<24}  {:<9}  {:<8}  {:<20}  EXPIRES",
                    "NAME",
                    "ROLE",
                    "STATE",
                    "CREATED"
                )?;
                for t in &list {
                    let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
                    let day = |k: &str| {
                        t[k].as_str()
                            .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok())
                            .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_else(|| "-".into())
                    };
                    outln!(
                        "{:<24}  {:<9}  {:<8}  {:<20}  {}",
                        s("name"),
                        s("role"),
                        s("state"),
                        day("created_at"),
                        day("expires_at")
                    )?;
                }
            }
            Ok(exit::OK)
        }
        TokensCommand::Revoke { name } => {
            match &ctx.remote {
                Some(remote) => super::remote::revoke_token(remote, &name).await?,
                None => {
                    let store = ctx.open().await?;
                    if crate::hub::tokens::revoke(&store, &name, &ctx.who, "cli")
                        .await?
                        .is_none()
                    {
                        return Err(Error::Session(format!("no token named `{name}` is in use")));
                    }
                }
            }
            eprintln!("revoked token `{name}`");
            Ok(exit::OK)
        }
    }
}
