//! `strands links create SESSION --for PERSON [--gate ID] [--decision
//! approve|reject|open] [--ttl 24h]`: a one-tap link ([`crate::hub::links`])
//! for a person to answer a paused run's gate from a phone or a mail, made
//! by an operator who sends it themselves. It goes through the server when
//! one holds the store (or `STRANDS_SERVER` is set: `POST
//! /api/v1/sessions/{id}/links`), which knows its public URL; offline (a
//! shared PostgreSQL store) it signs the link in the store and needs
//! `STRANDS_PUBLIC_URL`, the service's address the link opens. Either way
//! a session that is not paused, or a person who may not answer the gate
//! (the engine's own rules: [`crate::hub::links::linkable`]), is refused,
//! naming why, and nothing is made.

use clap::Subcommand;
use serde_json::json;
use serde_json::Value;

use super::Ctx;
use crate::error::{exit, Error, Result};
use crate::hub::links::{self, Intent};

#[derive(Subcommand, Debug)]
pub enum LinksCommand {
    /// A one-tap link to a paused run's gate for PERSON; prints its URL.
    Create {
        /// The session (an id or a unique prefix).
        session: String,
        /// Who the link signs in: a directory person or an identity.
        #[arg(long = "for")]
        person: String,
        /// The gate (its id or handle); the first open gate when absent.
        #[arg(long)]
        gate: Option<String>,
        /// What its button does: approve, reject, or open the run's page.
        #[arg(long, default_value = "open", value_parser = ["approve", "reject", "open"])]
        decision: String,
        /// How long it works, in whole hours from 1h to 168h.
        #[arg(long, default_value = "24h")]
        ttl: String,
        #[arg(long)]
        json: bool,
    },
}

impl LinksCommand {
    pub(super) fn json(&self) -> bool {
        match self {
            LinksCommand::Create { json, .. } => *json,
        }
    }
}

/// `--ttl` in whole hours, 1 to 168 (what the API takes).
fn hours(ttl: &str) -> Result<u32> {
    let secs = crate::webhook::parse_span(ttl).map(|d| d.as_secs());
    match secs {
        Some(s) if s % 3600 == 0 && (1..=168).contains(&(s / 3600)) => Ok((s / 3600) as u32),
        _ => Err(Error::Usage(format!(
            "--ttl `{ttl}` must be whole hours from 1h to 168h (e.g. 24h)"
        ))),
    }
}

pub(super) async fn links(ctx: &Ctx, cmd: LinksCommand) -> Result<u8> {
    let LinksCommand::Create {
        session,
        person,
        gate,
        decision,
        ttl,
        json,
    } = cmd;
    let hours = hours(&ttl)?;
    let intent = Intent::parse(&decision).map_err(Error::Usage)?;
    if !crate::model::token::valid_name(&person) {
        return Err(Error::Usage(
            "--for must be a name of letters, digits, `-`, `_`, `.`, `:` or `@`".into(),
        ));
    }
    let made: Value = match &ctx.remote {
        Some(remote) => {
            let body = json!({ "for": person, "gate": gate, "hours": hours, "decision": decision });
            let path = format!("/sessions/{session}/links");
            super::remote::call(remote, reqwest::Method::POST, &path, Some(&body)).await?
        }
        None => offline(ctx, &session, &person, gate.as_deref(), intent, hours).await?,
    };
    if json {
        outln!("{made}")?;
    } else {
        outln!("{}", made["url"].as_str().unwrap_or_default())?;
        eprintln!(
            "a one-tap link for {} to {} gate {} of {}; it works once, until {}",
            person,
            decision,
            made["gate"].as_str().unwrap_or("-"),
            session,
            made["expires_at"].as_str().unwrap_or("-"),
        );
    }
    Ok(exit::OK)
}

/// Signs the link in the store itself: the service's rules (admins,
/// default approvers, self-approval off) from this process's settings.
async fn offline(
    ctx: &Ctx,
    session: &str,
    person: &str,
    gate: Option<&str>,
    intent: Option<Intent>,
    hours: u32,
) -> Result<Value> {
    let public = ctx
        .env
        .get("STRANDS_PUBLIC_URL")
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            Error::Usage(
                "no server holds the store: set STRANDS_PUBLIC_URL to the service's address the link opens (or STRANDS_SERVER to make it there)".into(),
            )
        })?;
    let hub = ctx.hub_on(ctx.open().await?);
    let s = hub.store.get(session).await?;
    let people = hub.fresh_people().await?;
    let nobody = |_: &str| false;
    let asker = hub.asker(person, &nobody);
    let handle = links::linkable(&s, gate, intent, &asker, &people).map_err(|r| match r {
        links::MintRefusal::MayNotAnswer { .. } => Error::Usage(r.to_string()),
        _ => Error::Session(r.to_string()),
    })?;
    let (token, grant) = links::mint_for(
        &hub.store,
        (&s.id, &s.workflow, &handle),
        person,
        chrono::TimeDelta::hours(i64::from(hours)),
        intent,
        (&ctx.who, "cli"),
    )
    .await?;
    Ok(json!({
        "url": crate::hub::pages::one_tap(&public, &token),
        "person": person,
        "gate": handle,
        "expires_at": grant.expires_at(),
        "decision": intent.map(Intent::decision).unwrap_or("open"),
    }))
}
