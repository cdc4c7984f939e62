//! Managing API tokens — the same for `strands tokens ...` on the store and
//! for `/api/v1/tokens` — and checking a presented one. Every creation and
//! revocation is audited with who did it; a secret is never stored, logged
//! or audited.

use chrono::{DateTime, TimeDelta, Utc};

use crate::audit::{AuditEvent, AuditKind};
use crate::error::Result;
use crate::model::token::{self, NewToken, Role, TokenRecord};
use crate::store::Store;

/// Why a token was not made; nothing was written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenRefusal {
    #[error("`{0}` cannot be a token name: use letters, digits, `-`, `_`, `.`, `:` or `@`, at most 64 characters")]
    BadName(String),
    #[error("a token named `{0}` is in use; revoke it first")]
    NameTaken(String),
    #[error("--expires-days must be between 1 and 3650")]
    BadExpiry,
}

/// An `access` audit entry: who did what to a credential, through what,
/// `at`.
pub(crate) fn access(by: &str, via: &str, detail: String, at: DateTime<Utc>) -> AuditEvent {
    let mut ev = AuditEvent::new(AuditKind::Access, "", "", at);
    ev.who = Some(by.to_string());
    ev.via = Some(via.to_string());
    ev.detail = Some(detail);
    ev
}

/// Makes a token named `name` with `role`, by `by` (through `via`).
pub async fn create(
    store: &Store,
    name: &str,
    role: Role,
    expires_days: Option<u32>,
    delegate: bool,
    by: &str,
    via: &str,
) -> Result<std::result::Result<NewToken, TokenRefusal>> {
    if !token::valid_name(name) {
        return Ok(Err(TokenRefusal::BadName(name.to_string())));
    }
    if expires_days.is_some_and(|d| d == 0 || d > 3650) {
        return Ok(Err(TokenRefusal::BadExpiry));
    }
    let now = store.now();
    let expires_at = expires_days.map(|d| now + TimeDelta::days(i64::from(d)));
    let mut new = NewToken::generate(name, role, now, expires_at);
    new.record.delegate = delegate;
    let detail = format!(
        "created token `{name}` (role {role}{})",
        expires_at
            .map(|t| format!(", expires {}", t.format("%Y-%m-%d")))
            .unwrap_or_default()
    );
    if store
        .create_token(&new.record, &access(by, via, detail, now))
        .await?
    {
        Ok(Ok(new))
    } else {
        Ok(Err(TokenRefusal::NameTaken(name.to_string())))
    }
}

/// Revokes the token in use named `name`; `None` when there is none.
pub async fn revoke(store: &Store, name: &str, by: &str, via: &str) -> Result<Option<TokenRecord>> {
    let now = store.now();
    store
        .revoke_token(
            name,
            now,
            &access(by, via, format!("revoked token `{name}`"), now),
        )
        .await
}

/// The token a request presents, when it is one of ours and usable now.
pub async fn authenticate(store: &Store, presented: &str) -> Result<Option<TokenRecord>> {
    let Some((id, secret)) = token::split(presented) else {
        return Ok(None);
    };
    let Some(record) = store.token(id).await? else {
        return Ok(None);
    };
    Ok((token::matches(&record, secret) && record.usable(store.now())).then_some(record))
}

/// How a token is listed (never its hash), `now`.
pub fn listed(t: &TokenRecord, now: DateTime<Utc>) -> serde_json::Value {
    let state = if t.revoked_at.is_some() {
        "revoked"
    } else if !t.usable(now) {
        "expired"
    } else {
        "active"
    };
    serde_json::json!({
        "name": t.name,
        "id": t.id,
        "role": t.role,
        "state": state,
        "created_at": t.created_at,
        "expires_at": t.expires_at,
        "revoked_at": t.revoked_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{FixedClock, SharedClock};
    use std::sync::Arc;

    /// A hub given a clock hands it to its store: a token made for a day
    /// works until the clock says the day is over, and is listed so.
    #[tokio::test]
    async fn a_token_expires_by_the_clock_the_hub_is_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let clock = Arc::new(FixedClock::at(crate::clock::test_epoch()));
        let shared: SharedClock = clock.clone();
        let hub = crate::hub::Hub::new(store, Arc::default(), None).with_clock(shared);
        assert_eq!(hub.store.now(), crate::clock::test_epoch());
        let new = create(
            &hub.store,
            "ci",
            Role::Approver,
            Some(1),
            false,
            "admin",
            "cli",
        )
        .await
        .expect("io")
        .expect("made");
        assert_eq!(new.record.created_at, crate::clock::test_epoch());
        assert!(authenticate(&hub.store, &new.token)
            .await
            .expect("io")
            .is_some());
        clock.advance(TimeDelta::days(1) + TimeDelta::seconds(1));
        assert!(authenticate(&hub.store, &new.token)
            .await
            .expect("io")
            .is_none());
        assert_eq!(listed(&new.record, hub.clock.now())["state"], "expired");
    }
}
