//! Approvers' grants (trust within limits, `model::grant`) as every door
//! lists and revokes them — `strands trust list|revoke` on the store,
//! `GET/DELETE /api/v1/grants` through the server. A grant is made only
//! by the intake, from a recorded trust answer; here it is read and
//! ended. Revoking is audited with who did it and takes effect at the
//! next call the engine judges.

use chrono::{DateTime, Utc};

use crate::audit::{AuditEvent, AuditKind};
use crate::error::Result;
use crate::model::grant::{Grant, Revocation, Scope, State};
use crate::store::Store;

/// The grants, newest last: the live ones, or every one (`all`) with
/// expired and revoked ones.
pub async fn list(store: &Store, all: bool, now: DateTime<Utc>) -> Result<Vec<Grant>> {
    let mut grants = store.grants().await?;
    if !all {
        grants.retain(|g| g.state(now) == State::Live);
    }
    Ok(grants)
}

/// What became of a revocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Revoked {
    /// Revoked now.
    Now(Grant),
    /// It was revoked before (by whom it says); nothing changed.
    Before(Grant),
    /// No grant has that id.
    Unknown,
}

/// Revokes grant `id`, by `by` through `via`, audited.
pub async fn revoke(store: &Store, id: &str, by: &str, via: &str) -> Result<Revoked> {
    let now = store.now();
    let revocation = Revocation {
        at: now,
        by: by.to_string(),
    };
    let Some(known) = store.grants().await?.into_iter().find(|g| g.id == id) else {
        return Ok(Revoked::Unknown);
    };
    let mut ev = AuditEvent::new(
        AuditKind::Grant,
        &known.origin.session,
        &known.workflow,
        now,
    );
    ev.who = Some(by.to_string());
    ev.via = Some(via.to_string());
    ev.grant = Some(id.to_string());
    ev.detail = Some(
        crate::audit::redact::Redactor::default().redact(&format!("revoked: {}", known.rule())),
    );
    Ok(match store.revoke_grant(id, &revocation, &ev).await? {
        Some(g) if g.revoked.as_ref() == Some(&revocation) => Revoked::Now(g),
        Some(g) => Revoked::Before(g),
        None => Revoked::Unknown,
    })
}

/// A grant as the API and `--json` show it.
pub fn listed(g: &Grant, now: DateTime<Utc>) -> serde_json::Value {
    let (session, expires_at) = match &g.scope {
        Scope::Run { session } => (Some(session), None),
        Scope::Until { at } => (None, Some(at)),
    };
    serde_json::json!({
        "id": g.id,
        "state": g.state(now).as_str(),
        "rule": g.rule(),
        "workflow": g.workflow,
        "tool": g.tool,
        "when": g.when,
        "granted_by": g.granted_by,
        "created_at": g.created_at,
        "run": session,
        "expires_at": expires_at,
        "revoked_at": g.revoked.as_ref().map(|r| r.at),
        "revoked_by": g.revoked.as_ref().map(|r| &r.by),
        "origin": g.origin,
    })
}
